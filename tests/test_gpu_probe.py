"""A stranger's GPU: the probe runs a kernel of each kind, and `--device cuda` that cannot work is one line.

CuPy imports without a driver and without the CUDA libraries it loads on first use (NVRTC,
cuBLAS, cuRAND), so counting devices says nothing about whether an op will run. The probe
(tensorlab.backend.gpu_problem) compiles and runs a kernel, a matmul and a random draw. These
tests make each thing missing: real CuPy without a driver (this machine: CI installs
cupy-cuda12x, which imports without a GPU), and each library on the stand-in.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import strict_cupy
from strict_cupy import cupy_standin

from tensorlab import backend

ROOT = Path(__file__).resolve().parent.parent
INSTALL = 'pip install -e ".[gpu]" brings CuPy and the CUDA libraries it needs'
no_real_gpu = pytest.mark.skipif(strict_cupy.real_gpu_present(), reason="a real GPU is present and works")


@no_real_gpu
@pytest.mark.parametrize(
    ("library", "named"), [("nvrtc", "NVRTC"), ("cublas", "cuBLAS"), ("curand", "cuRAND")], ids=str.lower
)
def test_the_probe_names_a_missing_cuda_library(monkeypatch, library, named):
    monkeypatch.setattr(cupy_standin, "missing_library", library)
    with strict_cupy.active():  # probed afresh on the stand-in
        problem = backend.gpu_problem()
        assert not backend.gpu_available()
        with pytest.raises(RuntimeError, match="device 'cuda' was asked for, but CuPy sees 1 GPU"):
            backend.module_for("cuda")
    assert problem.startswith("CuPy sees 1 GPU(s) but cannot run a kernel: ")
    assert f"the CUDA library {named} is missing or unusable" in problem and problem.endswith(INSTALL)


@no_real_gpu
def test_the_probe_passes_a_working_gpu():
    with strict_cupy.active():
        assert backend.gpu_problem() is None and backend.gpu_available()


def train_py(*args, runner=(), env=None):
    command = [sys.executable, *runner, str(ROOT / "train.py"), *map(str, args)]
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT), **(env or {})),
    )


def assert_one_line_error(done, *words):
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if not line.startswith("strict-cupy transfers:")]
    assert len(lines) == 1 and lines[0].startswith("train.py: error: --device cuda: "), done.stderr
    for word in words:
        assert word in lines[0], lines[0]


@no_real_gpu
def test_train_on_cuda_without_nvrtc_is_one_line(tmp_path, corpus_file):
    done = train_py(
        "--config",
        ROOT / "configs" / "tiny.json",
        "--data",
        corpus_file,
        "--out",
        tmp_path / "run",
        "--device",
        "cuda",
        runner=[str(ROOT / "tests" / "strict_cupy" / "run.py")],
        env={cupy_standin.MISSING_ENV: "nvrtc"},
    )
    assert_one_line_error(done, "the CUDA library NVRTC is missing", INSTALL, "use --device cpu")
    assert not (tmp_path / "run").exists()  # refused before anything was made


@pytest.mark.skipif(sys.platform == "darwin", reason="CuPy publishes no wheel for macOS")
@no_real_gpu
def test_train_on_cuda_with_real_cupy_and_no_driver_is_one_line(tmp_path, corpus_file):
    """Real CuPy (the test extra installs it), no stand-in: this machine has no NVIDIA driver."""
    import cupy  # noqa: F401 - fails here, not in the subprocess, if the test extra was not installed

    done = train_py("--data", corpus_file, "--out", tmp_path / "run", "--device", "cuda", "--max-steps", 1)
    assert_one_line_error(done, "CuPy finds no usable NVIDIA driver (", "use --device cpu")
    assert not (tmp_path / "run").exists()
