"""The layering is checked by a tool: import-linter's contracts in pyproject.toml, run as `lint-imports`.

The contracts: backend < tensor, layout < kernels < ops < functional < nn, optim < the teaching tools
(gradcheck, graph, exercises), which import no model, test, benchmark or torch; tensorlab < models < bench;
neither tensorlab nor models imports tests, bench or teachers/ (the exercise solutions, kept out of the wheel);
bench never imports tests; only tensorlab.backend imports CuPy. train.py is a script, not a package, so
import-linter cannot see it: test_train_py_imports_neither_tests_nor_bench checks it here.
Each planted test copies the checked packages, adds one forbidden import and watches lint-imports fail.
"""

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tools import installed_tool

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = installed_tool("lint-imports")


def lint_imports(root):
    """Run lint-imports on the checkout at `root`; return (exit code, its report)."""
    done = subprocess.run(
        [LINT_IMPORTS, "--no-cache"],
        cwd=root,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(root), "PATH": str(Path(sys.executable).parent)},
        timeout=120,
    )
    return done.returncode, done.stdout + done.stderr


def test_every_contract_is_kept():
    code, report = lint_imports(ROOT)
    assert code == 0 and " 0 broken" in report, report


@pytest.fixture(scope="module")
def tree_copy(tmp_path_factory):
    """A copy of the three packages import-linter reads and of pyproject.toml, for planting imports into."""
    root = tmp_path_factory.mktemp("layers")
    for package in ("tensorlab", "models", "bench"):
        shutil.copytree(ROOT / package, root / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", root)
    return root


@pytest.mark.parametrize(
    "module, planted, contract",
    [
        ("tensorlab/ops/softmax.py", "import tensorlab.nn", "kernels < ops < functional"),  # a layer reaching up
        ("tensorlab/backend.py", "from tensorlab import tensor", "kernels < ops < functional"),
        ("tensorlab/kernels/rope.py", "from tensorlab.ops import rope", "kernels < ops < functional"),  # a cycle
        ("tensorlab/layout.py", "from tensorlab import kernels", "kernels < ops < functional"),
        ("tensorlab/graph/dot.py", "import models.transformer", "The teaching tools stand on the engine alone"),
        (
            "models/data.py",
            "import tests.reference",
            "Neither the engine nor the model imports tests, bench or the teachers",
        ),
        ("tensorlab/ops/elementwise.py", "import cupy", "Only tensorlab.backend knows CuPy exists"),
        ("tensorlab/exercises/check.py", "import teachers.solutions", "the teachers' solutions"),
    ],
)
def test_a_planted_forbidden_import_breaks_its_contract(tree_copy, module, planted, contract):
    path = tree_copy / module
    original = path.read_text()
    path.write_text(original + f"\n{planted}  # planted by tests/test_layering.py\n")
    try:
        code, report = lint_imports(tree_copy)
    finally:
        path.write_text(original)
    broken = report.split("Broken contracts")[-1]  # the details, after the kept/broken summary
    importer = module.removesuffix(".py").replace("/", ".")
    assert code != 0 and contract in broken and f"{importer} -> " in broken, report


ALLOWED_BY_TRAIN_PY = {"tensorlab", "models"}
FORBIDDEN_TO_TRAIN_PY = {"tests", "bench"}


def first_party_imports(source):
    """The top-level names of the first-party packages (tensorlab, models, tests, bench) a source imports."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    return names & (ALLOWED_BY_TRAIN_PY | FORBIDDEN_TO_TRAIN_PY)


def test_train_py_imports_neither_tests_nor_bench():
    imported = first_party_imports((ROOT / "train.py").read_text())
    assert "models" in imported and not imported & FORBIDDEN_TO_TRAIN_PY, imported


def test_the_train_py_check_sees_an_import_inside_a_function():
    planted = "import json\n\ndef main():\n    from tests.torch_twin import TorchTinyLM\n"
    assert first_party_imports(planted) == {"tests"}
