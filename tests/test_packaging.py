"""What `pip install -e .` promises: the engine needs NumPy only, and only `tensorlab` is installed."""

import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_engine_module_imports_with_numpy_alone():
    """Block the train and test extras (and CuPy) from being imported, then import every tensorlab module."""
    code = textwrap.dedent("""
        import importlib, pkgutil, sys
        train_and_test = ("tokenizers", "matplotlib", "tqdm", "safetensors", "threadpoolctl", "torch", "scipy")
        for name in train_and_test + ("cupy", "cupyx", "models"):
            sys.modules[name] = None          # `import name` now raises ImportError
        import tensorlab
        names = [m.name for m in pkgutil.walk_packages(tensorlab.__path__, "tensorlab.")
                 if not m.name.endswith("__main__")]
        for name in names:
            importlib.import_module(name)
        print(len(names))
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) > 50  # measured: 74 modules


def test_pyproject_installs_the_engine_with_numpy_and_not_models():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert [d.split(">")[0].split("=")[0] for d in project["project"]["dependencies"]] == ["numpy"]
    extras = project["project"]["optional-dependencies"]
    train = {d.split(">")[0].split("=")[0] for d in extras["train"]}
    assert train == {"tokenizers", "matplotlib", "tqdm", "safetensors", "threadpoolctl"}
    assert "torch==2.13.0" in extras["test"] and "tensorlab[train]" in extras["test"]
    include = project["tool"]["setuptools"]["packages"]["find"]["include"]
    assert all(pattern.startswith("tensorlab") for pattern in include), include
