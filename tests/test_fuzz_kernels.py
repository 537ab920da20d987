"""Drawn kernel cases (tests/fuzz_kernels.py): 300 scenarios, each kernel against its formula on drawn shapes,
layouts and plans, bit for bit the same on 1, 2 and 3 threads. A longer run is one command:
`python -m tests.fuzz_kernels --scenarios 5000`.

Planted to see it fail: a backward cut by the batch's rows into as many parts as there are threads, the
use_threads(1) before this generator found it, which left OpenBLAS its own threads, and a weight gradient off by
1e-4 where its sum cancels (judged against the exact result).
"""

import numpy as np
import pytest
import threadpoolctl
from fuzz_kernels import run_scenarios, scenario

from tensorlab import threads
from tensorlab.kernels import norm as fast_norm
from tensorlab.kernels import plan

# Cross-entropy's all -inf rows give 0/0 in the pool's threads, whose NumPy error state is their own (the scenarios'
# np.errstate holds in this thread only)
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered in divide:RuntimeWarning")

# Linear float64 scenarios whose products OpenBLAS 0.3.31 cuts differently on one thread and on two (this machine's
# SkylakeX kernel, 2 CPUs): found by `--scenarios 5000 --seed 0` before use_threads(1) held OpenBLAS to one thread
ON_OPENBLAS_THREADS = [3748, 4320, 4863]


def test_drawn_kernel_cases_match_their_formulas_bit_for_bit_on_every_thread_count():
    failures = run_scenarios(300, seed=0, report=lambda line: None)
    assert not failures, "\n".join(f"{what}: {'; '.join(problems)}" for what, problems in failures)


def test_a_cut_by_the_thread_count_is_caught(monkeypatch):
    def by_threads(rows, n_out, n_in):
        count = threads.threads()
        return [slice(rows * i // count, rows * (i + 1) // count) for i in range(count)] if count > 1 else []

    monkeypatch.setattr(plan, "batch_row_parts", by_threads)
    failures = run_scenarios(100, seed=0, report=lambda line: None)
    assert any("threads give other bits" in " ".join(problems) for _, problems in failures)


def test_openblas_on_its_own_threads_is_caught(monkeypatch):
    """With OpenBLAS given two threads, as NumPy has on a 2-CPU machine (tests/conftest.py gives it one)."""
    a, b = np.random.default_rng(0).standard_normal((2, 429, 429))
    products = []
    for count in (1, 2):
        with threadpoolctl.threadpool_limits(count, user_api="blas"):
            products.append(a[:33] @ b[:, :246])
    if np.array_equal(*products):  # another CPU's kernel, or an OpenBLAS that cuts these products alike
        pytest.skip("OpenBLAS's bits here do not depend on its thread count: there is nothing to plant")
    use_threads = threads.use_threads

    def before(n=None):  # use_threads as it was: on one thread, OpenBLAS kept its own threads
        if n == 1:
            threads.release()
            return 1
        return use_threads(n)

    monkeypatch.setattr(threads, "use_threads", before)
    with threadpoolctl.threadpool_limits(2, user_api="blas"), np.errstate(all="ignore"):
        broke = [problems for problems in (scenario(n)[1] for n in ON_OPENBLAS_THREADS) if problems]
    assert broke and all("threads give other bits than 1" in " ".join(problems) for problems in broke)


def test_a_kernel_off_where_a_sum_cancels_is_still_caught(monkeypatch):
    """Scenario 3663, RMSNorm over one feature in float32: the kernel's gw, a sum over 282 rows that cancels, is 7e-6
    from the formula's, far beyond the tolerance, and within what rounding the inputs does to it. Planted: that gw
    off by a further 1e-4 of itself: caught against the exact result."""
    assert scenario(3663)[1] == []
    backward = fast_norm.rms_norm_backward

    def off(gy, xhat, r, weight):
        gx, gw = backward(gy, xhat, r, weight)
        return gx, gw * (1 + 1e-4)

    monkeypatch.setattr(fast_norm, "rms_norm_backward", off)
    problems = " ".join(scenario(3663)[1])
    assert "gw: off by" in problems and "further from the exact result" in problems
