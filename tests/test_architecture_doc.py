"""The maps of the code stay true: every path docs/architecture.md and CONTRIBUTING.md name exists,
and the op CONTRIBUTING.md quotes as its worked example is the engine's code, character for character."""

import ast
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


def test_the_resume_walk_goes_from_train_py_through_run_alone():
    """docs/architecture.md draws train.py -> Run -> Trainer: cmd_train uses nothing else of models/ (planted: a
    call of run_dir.saved_config in cmd_train, as before, fails here), and the drawing names what it uses."""
    tree = ast.parse((ROOT / "train.py").read_text())
    from_models = {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("models")
        for alias in node.names
    } | {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.Import)
        for alias in node.names
        if alias.name.startswith("models")
    }
    cmd_train = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "cmd_train")
    used = {node.id for node in ast.walk(cmd_train) if isinstance(node, ast.Name)} & from_models
    assert used == {"Run", "UsageError", "STOP", "flag_values"}
    walk = (ROOT / "docs/architecture.md").read_text().split("## The resume walk", 1)[1].split("```text", 1)[1]
    walk = walk.split("```", 1)[0]
    for name in ("train.py cmd_train", "Run.resume", "models/run.py Run", "models/trainer.py Trainer", "saved_config"):
        assert name in walk, name
