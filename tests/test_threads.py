"""tensorlab.threads: block loops and Linear's products on a thread pool give the serial results, bit for bit.

GELU, attention, RMSNorm and cross-entropy compute each block with the same code on whichever thread takes it;
Linear's products are cut into the same row parts on any thread count, with or without a pool. So every
result, a whole training step included, is compared bit for bit across thread counts.
"""

import os
import subprocess
import sys
import threading

import numpy as np
import pytest
import torch

import tensorlab
import tensorlab.functional as F
from tensorlab import threads
from tensorlab.tensor import Tensor

threadpoolctl = pytest.importorskip("threadpoolctl", reason="use_threads needs threadpoolctl (the train extra)")


@pytest.fixture
def two_threads():
    threads.use_threads(2)
    yield
    threads.release()


def _grads(fn, *arrays):
    inputs = [Tensor(a.copy(), requires_grad=True) for a in arrays]
    out = fn(*inputs)
    out.backward(np.random.default_rng(9).standard_normal(out.shape).astype(out.data.dtype))
    return [out.data] + [t.grad for t in inputs]


def _serial_and_threaded(fn, *arrays):
    results = []
    for count in (1, 2):
        threads.use_threads(count)
        try:
            results.append(_grads(fn, *arrays))
        finally:
            threads.release()
    return results


def test_block_loops_are_bitwise_the_same_on_two_threads():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 64, 512)).astype(np.float32)  # 8 cache blocks
    q, k, v = (rng.standard_normal((64, 8, 64, 32)).astype(np.float32) for _ in range(3))
    w = rng.standard_normal(512).astype(np.float32)
    targets = rng.integers(0, 512, (64, 64))
    cross_entropy = lambda logits: F.cross_entropy(logits, targets)  # noqa: E731
    for fn, arrays in ((F.gelu, (x,)), (F.causal_attention, (q, k, v)), (F.rms_norm, (x, w)), (cross_entropy, (x,))):
        serial, threaded = _serial_and_threaded(fn, *arrays)
        for a, b in zip(serial, threaded):
            np.testing.assert_array_equal(a, b)


def _torch_grads(fn, *arrays):
    inputs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*inputs)
    out.backward(torch.tensor(np.random.default_rng(9).standard_normal(out.shape).astype(arrays[0].dtype)))
    return [out.detach().numpy()] + [t.grad.numpy() for t in inputs]


@pytest.mark.parametrize("pool", [1, 2])
def test_ops_cut_into_many_blocks_agree_with_pytorch(pool):
    """Every block of a multi-block op is right, not only the same on one or two threads (float32; achieved ~1e-6)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 64, 512)).astype(np.float32)  # RMSNorm: 8 blocks, cross-entropy: 4
    w = rng.standard_normal(512).astype(np.float32)
    targets = rng.integers(0, 512, (64, 64))
    cases = [
        (lambda x, w: F.rms_norm(x, w), lambda x, w: torch.nn.functional.rms_norm(x, (512,), w, eps=1e-5)),
        (
            lambda x: F.cross_entropy(x, targets),
            lambda x: torch.nn.functional.cross_entropy(x.reshape(-1, 512), torch.tensor(targets).reshape(-1)),
        ),
    ]
    threads.use_threads(pool)
    try:
        for (ours, theirs), arrays in zip(cases, [(x, w), (x,)]):
            for a, b in zip(_grads(ours, *arrays), _torch_grads(theirs, *arrays)):
                np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5 * np.abs(b).max())
    finally:
        threads.release()


def test_linear_on_two_threads_is_bitwise_the_serial_result():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 64, 256)).astype(np.float32)
    w = rng.standard_normal((512, 256)).astype(np.float32) / 16
    b = rng.standard_normal(512).astype(np.float32)
    serial, threaded = _serial_and_threaded(F.linear, x, w, b)
    for a, t in zip(serial, threaded):
        np.testing.assert_array_equal(t, a)


def _one_training_step(n_threads):
    """The parameters after one AdamW step of a model big enough that its products are cut into parts."""
    from models.config import ModelConfig
    from models.transformer import TinyTransformerLM
    from tensorlab.optim import AdamW

    tensorlab.manual_seed(0)
    model = TinyTransformerLM(ModelConfig(vocab_size=300, context_len=64, d_model=128, n_layers=2, n_heads=4, d_ff=512))
    ids = np.random.default_rng(2).integers(0, 300, size=(16, 65))
    optimizer = AdamW(model.parameters(), lr=1e-3)
    threads.use_threads(n_threads)
    try:
        _, loss = model(ids[:, :-1], ids[:, 1:])
        loss.backward()
        optimizer.step()
    finally:
        threads.release()
    return {name: p.data.copy() for name, p in model.named_parameters()}


def test_a_training_step_is_bitwise_the_same_on_any_thread_count():
    """1, 2 and 3 threads: the same bits (a resume under another thread count continues exactly)."""
    results = [_one_training_step(n) for n in (1, 2, 3)]
    for other in results[1:]:
        assert [k for k in results[0] if not np.array_equal(results[0][k], other[k])] == []


def test_blocks_really_run_on_two_threads(two_threads):
    seen = []
    gate = threading.Barrier(2, timeout=10)  # each of the two shares waits for the other: both run at once

    def work(block):
        seen.append(threading.get_ident())
        if block < 2:
            gate.wait()

    threads.for_each_block(work, list(range(6)))
    assert len(seen) == 6 and len(set(seen)) == 2


def test_a_worker_exception_reaches_the_caller(two_threads):
    def work(block):
        if block == 1:  # block 1 is the second thread's
            raise ZeroDivisionError(f"block {block}")

    with pytest.raises(ZeroDivisionError, match="block 1"):
        threads.for_each_block(work, [0, 1, 2, 3])
    threads.for_each_block(lambda block: None, [0, 1])  # the pool still works afterwards


def test_a_block_loop_inside_a_block_runs_serially(two_threads):
    inner = []

    def work(block):
        threads.for_each_block(lambda i: inner.append((block, i, threading.get_ident())), [0, 1, 2])

    threads.for_each_block(work, [0, 1])
    for block in (0, 1):
        assert len({ident for b, _, ident in inner if b == block}) == 1  # on the thread that ran the block


def _blas_threads():
    return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]


@pytest.mark.parametrize("count", [1, 2])
def test_openblas_is_held_to_one_thread_and_given_back(count):
    """On one thread too: OpenBLAS's own threads would change the products' bits (tests/fuzz_kernels.py)."""
    before = _blas_threads()
    threads.use_threads(count)
    try:
        assert threads.threads() == count and set(_blas_threads()) == {1}
    finally:
        threads.release()
    assert _blas_threads() == before and threads.threads() == 1


def test_bad_thread_counts_are_refused():
    for bad in (0, -1, 1.5, "2"):
        with pytest.raises(ValueError, match="use_threads: n must be a positive int"):
            threads.use_threads(bad)


@pytest.mark.parametrize("blas_threads", ["1", "2"])
def test_the_default_thread_count_is_openblas_own(blas_threads):
    code = "import tensorlab.threads as t; print(t.use_threads(), t.threads())"
    out = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        capture_output=True,
        text=True,
        env=_env(OPENBLAS_NUM_THREADS=blas_threads),
    )
    assert out.stdout.split() == [blas_threads, blas_threads]


def test_importing_tensorlab_leaves_openblas_alone():
    code = (
        "import threadpoolctl, numpy\n"
        "before = [i['num_threads'] for i in threadpoolctl.threadpool_info()]\n"
        "import tensorlab, tensorlab.threads, models.transformer\n"
        "after = [i['num_threads'] for i in threadpoolctl.threadpool_info()]\n"
        "assert before == after, (before, after)\n"
        "assert tensorlab.threads.threads() == 1\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env=_env(OPENBLAS_NUM_THREADS="2"))


def _env(**settings):
    root = os.path.dirname(os.path.dirname(os.path.abspath(tensorlab.__file__)))
    return {**os.environ, "PYTHONPATH": root, **settings}
