"""Shared fixtures: the `backend` fixture runs a test on NumPy, and on CuPy when a GPU is there.

A test that takes `backend` runs once per array backend. It builds its inputs with
`tensorlab.tensor(..., device=backend.device)`, so the same test checks the same op
code on the CPU (NumPy) and on an NVIDIA GPU (CuPy). Without a GPU the CuPy run is
run on the strict CuPy stand-in in tests/strict_cupy (NumPy underneath, CuPy's rules on top).
"""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

# Test arrays are small: one BLAS/OpenMP thread is faster, and it keeps OpenBLAS's and
# PyTorch's thread pools from spinning against each other on a 2-core machine.
# (Set before NumPy and PyTorch are imported; an explicit setting in the environment wins.)
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

# Every command a test runs meets Python as a user's shell has it: this machine's environment sets
# PYTHONUNBUFFERED=1 and PYTHONDONTWRITEBYTECODE=1, a bare shell sets neither (a broken pipe or a signal inside
# a print behaves differently with Python's buffers; .ci/run also runs the suite from a bare environment).
for _var in ("PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE"):
    os.environ.pop(_var, None)

# A root checker runs the student's code as nobody where nobody can run this Python (a system Python, a container's);
# the exercise tests check the guards of a teacher's own user, which need the student's code to act with the
# checker's rights: the tests that say so run it as nobody (tests/test_exercise_isolation.py, test_hostile_class.py).
os.environ["TENSORLAB_STUDENT_USER"] = ""

import numpy as np  # noqa: E402
import pytest  # noqa: E402

# the repository root, so a plain `pytest` finds tensorlab without installing it
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tensorlab import backend as _backend  # noqa: E402
from tensorlab import threads as _threads  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/, for the strict_cupy package
import strict_cupy  # noqa: E402

NO_GPU_REASON = "no CUDA GPU with CuPy available"
SMALL_CORPUS = Path(__file__).resolve().parent / "data" / "small_corpus.txt"


@pytest.fixture(autouse=True)
def _no_threads_left_behind():
    """No test leaves tensorlab's pool, or its hold on OpenBLAS's threads, to the next one in its process: a bench step
    calls use_threads as train.py does, and a stale hold's release would give OpenBLAS this module's one thread back
    where a later test had given it two (tests/test_fuzz_kernels.py's plant then saw no other bits)."""
    yield
    _threads.release()


@pytest.fixture(scope="session")
def corpus_file():
    """The 64 KB test corpus shipped in tests/data (Tiny Shakespeare's layout, made by make_small_corpus.py).

    Every clone has it, so no test needs ../shared or a download.
    """
    return SMALL_CORPUS


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, corpus_file):
    """A copy of the test corpus's first 30 KB, one per test module (a test may change it: its module's alone)."""
    path = tmp_path_factory.mktemp("data") / "small.txt"
    path.write_bytes(corpus_file.read_bytes()[:30_000])
    return path


def pytest_configure(config):
    # also declared in pyproject.toml; repeated here so the marker is known from any rootdir
    config.addinivalue_line("markers", "gpu: runs on CuPy: a real GPU, else the strict stand-in in tests/strict_cupy")


def _backends():
    yield pytest.param("numpy", id="numpy")
    gpu = [pytest.mark.gpu]
    if _backend.gpu_available():
        yield pytest.param("cupy", id="cupy", marks=gpu)
    elif os.environ.get(strict_cupy.ENV) == "0":
        yield pytest.param("cupy", id="cupy", marks=gpu + [pytest.mark.skip(reason=NO_GPU_REASON)])
    else:
        yield pytest.param("strict-cupy", id="strict-cupy", marks=gpu)


def _cuda_backend(param):
    """The 'cuda' backend: real CuPy on a GPU, else the strict stand-in (tests/strict_cupy) for this test."""
    if param == "cupy":
        yield SimpleNamespace(name="cupy", device="cuda", xp=_backend.module_for("cuda"))
        return
    with strict_cupy.active() as cupy:
        yield SimpleNamespace(name="cupy", device="cuda", xp=cupy)


@pytest.fixture(params=list(_backends()))
def backend(request):
    """The array backend under test: .name ('numpy' or 'cupy'), .device ('cpu' or 'cuda'), .xp (the module).

    Without a GPU the 'cupy' run uses the strict CuPy stand-in (tests/strict_cupy/README.md),
    unless TENSORLAB_STRICT_CUPY=0, which skips it. A real GPU is never hidden.
    """
    if request.param == "numpy":
        yield SimpleNamespace(name="numpy", device="cpu", xp=np)
    else:
        yield from _cuda_backend(request.param)


@pytest.fixture(params=list(_backends())[1:])
def cuda(request):
    """The 'cuda' backend alone, for tests that only make sense on a GPU (real, or the stand-in)."""
    yield from _cuda_backend(request.param)


@pytest.fixture
def python_nobody_can_run():
    """(folder, python): a venv of Debian's Python of this version, outside /root (mode 700, where this machine's
    Python lives), with this NumPy copied in and the rest of this Python's packages after it: a Python the user
    nobody can run, as on Gradescope and in containers, where the student's code then runs as nobody
    (tensorlab.exercises.student.student_user). Needs root, as those do."""
    debian = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")
    if os.geteuid() != 0 or not debian.exists():
        pytest.skip(f"needs root and {debian}: only a root checker runs the student's code as nobody")
    folder = Path(tempfile.mkdtemp())
    folder.chmod(0o755)
    subprocess.run([debian, "-m", "venv", "--without-pip", folder / "venv"], check=True)
    (packages,) = (folder / "venv" / "lib").glob("python*/site-packages")
    for found in Path(np.__file__).parents[1].glob("numpy*"):
        if found.is_dir() and not found.name.endswith("-info"):
            shutil.copytree(found, packages / found.name)
    theirs = [path for path in sys.path if path.endswith("-packages")]  # pytest and the rest: root's
    (packages / "this_pythons.pth").write_text("".join(path + "\n" for path in theirs))
    yield folder, folder / "venv" / "bin" / "python"
    shutil.rmtree(folder)
