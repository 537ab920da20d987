"""The same run gives the same bits on a GPU: the embedding and indexing backwards use no atomic adds.

On a GPU an atomic scatter-add (cupyx.scatter_add, cupy.add.at) adds the rows of a repeated id
in whatever order the threads arrive, and float addition is not associative, so two identical
runs drift apart. tensorlab.backend.segment_sum sorts the ids and sums each run with
add.reduceat instead. The CuPy stand-in's `atomic_order = "random"` adds in a random order, as
atomicAdd may: under it, identical steps and identical train.py runs must still be bitwise equal,
and they are not once an atomic add is planted back.
"""

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import strict_cupy
from strict_cupy import cupy_standin

import tensorlab
from models.checkpoint import read_checkpoint
from models.config import ModelConfig
from models.transformer import TinyTransformerLM
from tensorlab import backend

ROOT = Path(__file__).resolve().parent.parent
V, T, B = 12, 16, 8  # a small vocabulary: every batch repeats ids many times


def reference_segment_sum(ids, rows, n):
    out = np.zeros((n,) + rows.shape[1:], dtype=rows.dtype)
    np.add.at(out, ids, rows)
    return out


def atomic_segment_sum(ids, rows, n):
    """The bug to plant: a scatter-add with atomics (cupy.add.at), as the GPU path had before."""
    xp = backend.array_module(rows)
    out = xp.zeros((n,) + rows.shape[1:], dtype=rows.dtype)
    xp.add.at(out, ids, rows)
    return out


@pytest.mark.parametrize(
    "ids",
    [[3, 1, 3, 3, 0, 1], [5, 5, 5], [0], [], [6, 6, 2]],  # repeats; one id; none; absent ids first, between, last
    ids=["repeats", "one-id", "single", "empty", "gaps"],
)
@pytest.mark.parametrize("width", [(), (4,)])
def test_segment_sum_adds_every_repeated_row(backend, ids, width):
    rng = np.random.default_rng(0)
    ids = np.array(ids, dtype=np.int64)
    rows = rng.standard_normal((len(ids),) + width)
    want = reference_segment_sum(ids, rows, 7)
    got = tensorlab.backend.segment_sum(backend.xp.asarray(ids), backend.xp.asarray(rows), 7)
    got = got.get() if hasattr(got, "get") else got
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-15, atol=1e-15)  # achieved: 0 (the same additions in order)


@pytest.fixture
def random_atomics(cuda, monkeypatch):
    """The stand-in, adding atomics in a random order (a real GPU's order is its own)."""
    if cuda.xp is not cupy_standin:
        pytest.skip("the atomic order is the stand-in's to randomise; this machine has a real GPU")
    monkeypatch.setattr(cupy_standin, "atomic_order", "random")
    return cuda


def gradients_of_one_step():
    """Every parameter's gradient after one forward and backward of a tiny model on cuda, plus an indexing's."""
    tensorlab.manual_seed(0)
    config = ModelConfig(vocab_size=V, context_len=T, d_model=16, n_layers=1, n_heads=2, d_ff=32, dropout=0.0)
    model = TinyTransformerLM(config).to("cuda")
    ids = np.random.default_rng(1).integers(0, V, size=(B, T + 1))
    _, loss = model(ids[:, :-1], ids[:, 1:])
    h = tensorlab.tensor(np.linspace(-1, 1, 6 * 5).reshape(6, 5), requires_grad=True, device="cuda")
    rows = np.array([2] * 30 + [0, 5])  # row 2 picked 30 times: its gradient is a sum of 30 terms
    scales = 10.0 ** np.linspace(-8, 8, 32 * 3).reshape(32, 3)  # of very different sizes, so their order shows
    picked = h[rows, 1:4] * tensorlab.tensor(scales * np.random.default_rng(2).standard_normal((32, 3)), device="cuda")
    (loss + picked.sum()).backward()
    grads = {name: p.grad.get() for name, p in model.named_parameters()}
    grads["indexed"] = h.grad.get()
    return grads


def assert_bitwise_equal(a, b):
    """{name: array} dicts equal bit for bit (dtype too)."""
    assert sorted(a) == sorted(b)
    different = [name for name in a if not (np.array_equal(a[name], b[name]) and a[name].dtype == b[name].dtype)]
    assert not different, f"differ between two identical runs: {different}"


@pytest.mark.gpu
def test_two_identical_steps_give_the_same_gradients_bit_for_bit(random_atomics):
    assert_bitwise_equal(gradients_of_one_step(), gradients_of_one_step())


@pytest.mark.gpu
def test_an_atomic_scatter_planted_back_makes_them_differ(random_atomics, monkeypatch):
    monkeypatch.setattr(backend, "segment_sum", atomic_segment_sum)
    runs = [gradients_of_one_step() for _ in range(5)]
    for name in ("tok_emb.weight", "indexed"):  # the embedding's and the indexing's scatter
        assert any(not np.array_equal(runs[0][name], run[name]) for run in runs[1:]), name


def train_py(*args, env=None):
    """Run train.py on the stand-in (tests/strict_cupy/run.py); fails the test on a non-zero exit."""
    command = [sys.executable, str(ROOT / "tests" / "strict_cupy" / "run.py"), str(ROOT / "train.py"), *map(str, args)]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT), **env),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.mark.gpu
@pytest.mark.skipif(strict_cupy.real_gpu_present(), reason="two runs on a real GPU: see bench/RESULTS.md")
def test_two_identical_training_runs_on_cuda_end_bitwise_equal(tmp_path, corpus_file):
    """train.py --device cuda twice, atomics in a random order: the same weights and optimizer state, bit for bit."""
    args = ["--config", ROOT / "configs" / "tiny.json", "--data", corpus_file, "--device", "cuda", "--max-steps", 6]
    args.append("--no-report")  # the checkpoints are compared
    env = {cupy_standin.ATOMICS_ENV: "random"}
    with ThreadPoolExecutor(2) as pool:
        runs = [pool.submit(train_py, *args, "--out", tmp_path / name, env=env) for name in ("a", "b")]
        [run.result() for run in runs]
    a, b = (read_checkpoint(tmp_path / name / "checkpoints" / "latest") for name in ("a", "b"))
    assert_bitwise_equal(a["model"], b["model"])
    moments = [
        {f"{i}/{k}": np.asarray(v) for i, s in a_or_b["optimizer"]["state"].items() for k, v in s.items()}
        for a_or_b in (a, b)
    ]
    assert len(moments[0]) > 0
    assert_bitwise_equal(*moments)
