"""Shared fixtures: the `backend` fixture runs a test on NumPy, and on CuPy when a GPU is there.

A test that takes `backend` runs once per array backend. It builds its inputs with
`tensorlab.tensor(..., device=backend.device)`, so the same test checks the same op
code on the CPU (NumPy) and on an NVIDIA GPU (CuPy). Without a GPU the CuPy run is
reported as skipped, with the reason, rather than silently missing.
"""
import os
import sys
from pathlib import Path
from types import SimpleNamespace

# Test arrays are small: one BLAS/OpenMP thread is faster, and it keeps OpenBLAS's and
# PyTorch's thread pools from spinning against each other on a 2-core machine.
# (Set before NumPy and PyTorch are imported; an explicit setting in the environment wins.)
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

# the repository root, so a plain `pytest` finds tensorlab without installing it
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tensorlab import backend as _backend  # noqa: E402

NO_GPU_REASON = "no CUDA GPU with CuPy available"
SMALL_CORPUS = Path(__file__).resolve().parent / "data" / "small_corpus.txt"


@pytest.fixture(scope="session")
def corpus_file():
    """The 64 KB test corpus shipped in tests/data (Tiny Shakespeare's layout, made by make_small_corpus.py).

    Every clone has it, so no test needs ../shared or a download.
    """
    return SMALL_CORPUS


def pytest_configure(config):
    # also declared in pyproject.toml; repeated here so the marker is known from any rootdir
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU with CuPy (skipped otherwise)")


def _backends():
    yield pytest.param("numpy", id="numpy")
    gpu = _backend.gpu_available()
    yield pytest.param("cupy", id="cupy",
                       marks=[pytest.mark.gpu, pytest.mark.skipif(not gpu, reason=NO_GPU_REASON)])


@pytest.fixture(params=list(_backends()))
def backend(request):
    """The array backend under test: .name ('numpy' or 'cupy'), .device ('cpu' or 'cuda'), .xp (the module)."""
    if request.param == "numpy":
        return SimpleNamespace(name="numpy", device="cpu", xp=np)
    return SimpleNamespace(name="cupy", device="cuda", xp=_backend.module_for("cuda"))
