"""train.py on --device cuda, through its command line: train, eval, generate and resume.

Each command runs in a subprocess through tests/strict_cupy/run.py, which installs the
strict CuPy stand-in as `cupy` unless a real GPU is there (then the real one is used). The stand-in
adds atomics in a random order, as a GPU may, so the exact resumes below hold on a GPU's scheduling too.
Only the CLI is used, so these tests hold whatever train.py looks like inside.
"""

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import strict_cupy

import tensorlab
from models.checkpoint import read_checkpoint
from models.trainer import is_evaluation

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "tests" / "strict_cupy" / "run.py"
TINY = ROOT / "configs" / "tiny.json"
STEPS = 12  # tiny.json evaluates every 10 steps: rows at 0, 10 and 12
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        os.environ.get(strict_cupy.ENV) == "0" and not strict_cupy.real_gpu_present(),
        reason=f"no CUDA GPU with CuPy available, and {strict_cupy.ENV}=0",
    ),
]


def train_py(*args, device="cuda"):
    """Run `train.py ARGS` (on the stand-in for cuda): its stdout; fails the test on a non-zero exit."""
    command = [sys.executable, str(RUN) if device == "cuda" else "", str(ROOT / "train.py"), *map(str, args)]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env[strict_cupy.cupy_standin.ATOMICS_ENV] = "random"  # the stand-in adds atomics in a random order, as a GPU may
    done = subprocess.run([c for c in command if c], capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    if device == "cuda" and not strict_cupy.real_gpu_present():
        assert "strict-cupy transfers:" in done.stderr  # it really ran on the stand-in
    return done.stdout


def metrics(run_dir, evaluations=True):
    """The evaluation rows of a run's metrics.jsonl (evaluations=False: its train-loss rows)."""
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [row for row in rows if is_evaluation(row) == evaluations]


def tiny(corpus, out, *extra):
    """A tiny run without dropout (the devices draw other masks) at a constant lr (no horizon, so resumable)."""
    return ["--config", TINY, "--data", corpus, "--out", out, "--dropout", 0, "--schedule", "constant", *extra]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, corpus_file):
    """The same tiny run on cpu and on cuda, STEPS steps each (the two processes side by side)."""
    out = tmp_path_factory.mktemp("gpu_runs")
    with ThreadPoolExecutor(2) as pool:
        cpu = pool.submit(train_py, *tiny(corpus_file, out / "cpu", "--max-steps", STEPS, "--no-report"), device="cpu")
        cuda = pool.submit(train_py, *tiny(corpus_file, out / "cuda", "--max-steps", STEPS, "--device", "cuda"))
        cpu.result(), cuda.result()
    return out / "cpu", out / "cuda"


def test_training_on_cuda_follows_the_cpu_run(runs):
    cpu, cuda = metrics(runs[0]), metrics(runs[1])
    assert [r["step"] for r in cuda] == [0, 10, STEPS]
    assert cuda[-1]["val_loss"] < cuda[0]["val_loss"] - 0.3
    assert [r["step"] for r in cpu] == [r["step"] for r in cuda]
    for a, b in zip(cpu, cuda):  # float32: achieved 3e-8 relative (the GPU path computes GELU with erf)
        assert b["val_loss"] == pytest.approx(a["val_loss"], rel=1e-5)
        assert (a["grad_norm"] is None) == (b["grad_norm"] is None) == (a["step"] == 0)  # no step before step 0's row
        if a["step"]:
            assert b["grad_norm"] == pytest.approx(a["grad_norm"], rel=1e-5, abs=0)


def test_the_report_of_a_cuda_run_is_whole(runs):
    """The figures, samples and report.md of a run on the device (drawn from arrays copied to the host)."""
    cuda = runs[1]
    figures = sorted(path.name for path in (cuda / "figures").iterdir())
    assert len(figures) == 8 and all((cuda / "figures" / name).read_bytes()[:4] == b"\x89PNG" for name in figures)
    assert sorted(re.findall(r"figures/(\w+\.png)", (cuda / "report.md").read_text())) == figures  # each shown
    assert (cuda / "samples.txt").read_text().count("=== prompt") == 6  # 3 prompts x 2 settings
    assert (runs[0] / "metrics.jsonl").is_file() and not (runs[0] / "report.md").exists()  # the cpu run: --no-report


def test_eval_on_cuda_matches_the_final_evaluation(runs):
    out = train_py("eval", runs[1], "--checkpoint", "latest")
    assert f"val loss {metrics(runs[1])[-1]['val_loss']:.4f}" in out


def test_generate_on_cuda_continues_the_prompt(runs):
    out = train_py("generate", runs[1], "--prompt", "ROMEO:", "--max-new-tokens", 12, "--top-k", 5)
    assert out.startswith("ROMEO:") and len(out) > len("ROMEO:") + 5


def test_resume_on_cuda_is_exact(runs, tmp_path, corpus_file):
    resumed = tmp_path / "resumed"
    train_py(*tiny(corpus_file, resumed, "--max-steps", 8, "--device", "cuda", "--no-report"))
    train_py("--resume", resumed, "--max-steps", STEPS, "--no-report")
    assert [r["step"] for r in metrics(resumed)] == [0, 8, 10, STEPS]
    a = read_checkpoint(runs[1] / "checkpoints" / "latest")["model"]
    b = read_checkpoint(resumed / "checkpoints" / "latest")["model"]
    assert sorted(a) == sorted(b) and all(np.array_equal(a[k], b[k]) for k in a)


def test_resume_on_cuda_with_dropout_is_exact(tmp_path, corpus_file):
    """Dropout draws on the device; the draw count in the checkpoint makes the resumed masks the same."""
    args = ("--dropout", 0.2, "--device", "cuda", "--no-report")
    whole, resumed = tmp_path / "whole", tmp_path / "resumed"
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(train_py, *tiny(corpus_file, whole, "--max-steps", STEPS, *args))
        second = pool.submit(train_py, *tiny(corpus_file, resumed, "--max-steps", 8, *args))
        first.result(), second.result()
    train_py("--resume", resumed, "--max-steps", STEPS, "--no-report")
    assert [r["step"] for r in metrics(resumed)] == [0, 8, 10, STEPS]
    got, want = untimed_metrics(resumed), untimed_metrics(whole)
    del got[2]["train_loss"], want[1]["train_loss"]  # step 10's: the mean since step 8's evaluation in the resumed run
    assert [r for r in got if r["step"] != 8] == want  # every other number, bitwise
    assert metrics(resumed, evaluations=False) == metrics(whole, evaluations=False)  # the mean of every 2 steps
    a = read_checkpoint(whole / "checkpoints" / "latest")
    b = read_checkpoint(resumed / "checkpoints" / "latest")
    assert a["tensorlab_rng"]["device_draws"]["cuda"] > 0  # the run really drew masks on the device
    assert a["tensorlab_rng"] == b["tensorlab_rng"]
    assert_bitwise_equal(a["model"], b["model"])
    assert_bitwise_equal(a["optimizer"], b["optimizer"])


def untimed_metrics(run_dir):
    return [{k: v for k, v in row.items() if k not in ("tokens_per_s", "elapsed_s")} for row in metrics(run_dir)]


def assert_bitwise_equal(a, b, where=""):
    """Nested dicts/lists of arrays and numbers are equal bit for bit."""
    if isinstance(a, dict):
        assert sorted(a) == sorted(b), where
        for k in a:
            assert_bitwise_equal(a[k], b[k], f"{where}/{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_bitwise_equal(x, y, f"{where}/{i}")
    else:
        assert np.array_equal(np.asarray(a), np.asarray(b)) and np.asarray(a).dtype == np.asarray(b).dtype, where


def test_the_random_state_covers_the_cuda_generator(cuda):
    tensorlab.manual_seed(0)
    first = tensorlab.random.generator("cuda").random(1000).get()
    state = tensorlab.random.get_state()
    second = tensorlab.random.generator("cuda").random(1000).get()
    assert state["device_draws"] == {"cuda": 1} and json.loads(json.dumps(state)) == state
    assert not np.array_equal(first, second)  # each draw continues the stream
    tensorlab.random.set_state(state)
    assert np.array_equal(tensorlab.random.generator("cuda").random(1000).get(), second)
    tensorlab.manual_seed(0)
    assert np.array_equal(tensorlab.random.generator("cuda").random(1000).get(), first)
