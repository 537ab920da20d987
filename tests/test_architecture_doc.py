"""The maps of the code stay true: every path docs/architecture.md and CONTRIBUTING.md name exists,
and the op CONTRIBUTING.md quotes as its worked example is the engine's code, character for character."""

import inspect
import re
from pathlib import Path

import pytest

from tensorlab.ops.elementwise import Silu

ROOT = Path(__file__).resolve().parent.parent
MAPS = ["docs/architecture.md", "CONTRIBUTING.md"]
PATH = re.compile(
    r"(?<![\w./-])((?:tensorlab|models|tests|bench|docs|configs|teachers|\.ci)/[\w./-]*"
    r"|train\.py|pyproject\.toml|CONTRIBUTING\.md|README\.md)"
)


def paths_named(text):
    """Every repository path in `text` (a trailing '.' or ',' of the sentence dropped)."""
    return sorted({match.rstrip(".,") for match in PATH.findall(text)})


def test_the_path_finder_sees_paths_in_prose_code_and_diagrams_and_ignores_other_words():
    text = 'see `models/trainer.py`, tensorlab/ops/ and ["bench/speed.py<br/>x"] or train.py. not mymodels/x'
    assert paths_named(text) == ["bench/speed.py", "models/trainer.py", "tensorlab/ops/", "train.py"]


@pytest.mark.parametrize("page", MAPS)
def test_every_path_a_map_names_exists(page):
    named = paths_named((ROOT / page).read_text())
    assert len(named) >= 10, f"{page}: only {named}: did the path pattern stop matching?"
    missing = [path for path in named if not (ROOT / path).exists()]
    assert not missing, f"{page} names paths that do not exist: {missing}"


def test_the_architecture_diagram_is_mermaid_and_draws_every_engine_layer():
    text = (ROOT / "docs/architecture.md").read_text()
    diagram = text.split("```mermaid", 1)[1].split("```", 1)[0]
    for layer in ["backend.py", "tensor.py", "ops/", "functional.py", "nn/", "optim/", "models/", "train.py"]:
        assert layer in diagram, layer


def test_contributing_quotes_the_engines_silu_as_it_is():
    text = (ROOT / "CONTRIBUTING.md").read_text()
    quoted = next(block for block in re.findall(r"```python\n(.*?)```", text, re.S) if "class Silu" in block)
    assert quoted == inspect.getsource(Silu)
