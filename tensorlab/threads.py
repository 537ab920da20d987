"""Every CPU core for the work NumPy does on one: a small thread pool over blocks of rows.

NumPy runs each element-wise pass (exp, multiply, ...) on one core, and its matrix products
on OpenBLAS's threads. PyTorch runs both on every core. After `use_threads(n)` the kernels of
tensorlab/kernels/, which walk an array block by block (GELU, attention, RMSNorm, RoPE, cross-entropy's
softmax, the Linear products), hand their blocks to n threads. The threads really run at once:
NumPy releases the GIL inside its loops over arrays and inside OpenBLAS.

OpenBLAS is held to one thread meanwhile, on any n, 1 included. Its idle threads spin for a while after every
product to catch the next one, and spinning against the pool's threads made a step slower, not faster
(bench/RESULTS.md). The big products are split by rows across the pool instead
(tensorlab/kernels/linear.py), so every core still shares them. And OpenBLAS's own threads change a product's
bits: it cuts the work by its thread count (NumPy 2.4's OpenBLAS 0.3.31: a float64 (33, 429) @ (429, 246) differs
in 78% of its elements between one thread and two; tests/fuzz_kernels.py found it).

Like tensorlab.memory.keep_freed_memory, this is process-wide, so tensorlab never does it on its
own: `import tensorlab` leaves NumPy and OpenBLAS as they were. A program that trains asks once
(train.py and the bench/ scripts do; `release()` undoes it). It needs threadpoolctl, which
the `train` extra installs.

After use_threads, results do not depend on the thread count, bit for bit: the kernels cut their blocks by the
data alone (cache-sized blocks, or a fixed number of parts of a product's rows), never by the number of threads,
each block is computed by the same code on whichever thread takes it, and each product on one OpenBLAS thread.
So a run resumed under another thread count continues exactly (tests/test_threads.py). Without it, the products
run on as many OpenBLAS threads as NumPy has, and their bits are OpenBLAS's for that many.
"""

import os
import threading

_pool = None  # ThreadPoolExecutor with n - 1 workers; the calling thread is the n-th
_threads = 1
_blas_limit = None  # threadpoolctl's handle on OpenBLAS's thread count, to restore it
_inside = threading.local()  # a block already running on the pool runs its inner work serially


def use_threads(n=None):
    """Run block loops and big matrix products on n threads, each product on one OpenBLAS thread; return n.

    The default is as many threads as OpenBLAS was given (OPENBLAS_NUM_THREADS, else one per CPU).
    """
    global _pool, _threads, _blas_limit
    if n is not None and (not isinstance(n, int) or isinstance(n, bool) or n < 1):
        raise ValueError(f"use_threads: n must be a positive int, got {n!r}")
    release()
    try:
        import threadpoolctl
    except ImportError as e:
        raise ImportError(
            "use_threads: needs threadpoolctl to hold OpenBLAS to one thread; pip install threadpoolctl "
            "(or the 'train' extra)"
        ) from e
    if n is None:
        blas = [lib["num_threads"] for lib in threadpoolctl.threadpool_info() if lib["user_api"] == "blas"]
        n = max(blas, default=os.cpu_count() or 1)
    _threads, _blas_limit = n, threadpoolctl.threadpool_limits(1, user_api="blas")
    if n > 1:
        from concurrent.futures import ThreadPoolExecutor  # here: its import (logging) is a fifth of tensorlab's

        _pool = ThreadPoolExecutor(max_workers=n - 1, thread_name_prefix="tensorlab")
    return n


def release():
    """Undo use_threads: no pool, and OpenBLAS given back the threads it had (NumPy as it was)."""
    global _pool, _threads, _blas_limit
    if _pool is not None:
        _pool.shutdown()
        _pool = None
    if _blas_limit is not None:
        _blas_limit.restore_original_limits()
        _blas_limit = None
    _threads = 1


def threads():
    """How many threads the block loops use now (1 until use_threads is called)."""
    return _threads


def for_each_block(work, blocks):
    """Call work(block) for every block, spread over the pool's threads; returns when all are done.

    The blocks must not overlap in what they write. Thread t takes blocks t, t + n, t + 2n, ...;
    the calling thread takes its share too, so nothing waits idle.
    """
    if _pool is None or len(blocks) < 2 or getattr(_inside, "busy", False):
        for block in blocks:
            work(block)
        return
    shares = [blocks[t::_threads] for t in range(min(_threads, len(blocks)))]
    futures = [_pool.submit(_run_share, work, share) for share in shares[1:]]
    try:
        _run_share(work, shares[0])
    finally:
        for f in futures:
            f.result()  # waits for every share, and re-raises a worker's exception here


def _run_share(work, share):
    _inside.busy = True
    try:
        for block in share:
            work(block)
    finally:
        _inside.busy = False
