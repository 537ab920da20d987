"""Linear's formulas (linear_forward and linear_backward in tensorlab/ops/linear.py), fast on the CPU.

Each large matrix product is cut by rows into ROW_PARTS parts, spread over tensorlab.threads, each
part one OpenBLAS call on one thread (tensorlab/threads.py explains why OpenBLAS keeps one thread
of its own); the bias is added in place.
"""

import numpy as np

from tensorlab import threads

# A product smaller than this many multiply-adds runs whole: splitting it costs more than it saves.
_MIN_SPLIT_WORK = 1 << 20
# A larger one is cut into at most this many parts of rows whatever the thread count (enough for 16 threads),
ROW_PARTS = 16
# each of at least this many rows: every part repacks the whole other matrix, so thin parts cost more than
# they share (an MLP's batch of 256 in 16 parts of 16 rows took 25% longer than in 2 of 128).
MIN_PART_ROWS = 128


def linear_forward(x, weight, bias=None):
    """y = x W^T + b for x (N, IN), as the formula gives it."""
    y = matmul(x, weight.T)  # (N, OUT)
    if bias is not None:
        y += bias
    return y


def linear_backward(gy, x, weight, input_grad=True):
    """gx = gy W (None unless input_grad), gW = gy^T x, gb = the sum over rows of gy, as the formula gives them."""
    return matmul(gy, weight) if input_grad else None, matmul(gy.T, x), gy.sum(axis=0)


def row_parts(length):
    """range(length) cut into up to ROW_PARTS slices of MIN_PART_ROWS rows or more: fixed by the length, not the
    threads."""
    parts = max(1, min(ROW_PARTS, length // MIN_PART_ROWS))
    edges = [length * i // parts for i in range(parts + 1)]
    return [slice(a, b) for a, b in zip(edges[:-1], edges[1:]) if b > a]


def matmul(a, b):
    """a @ b for a 2-D (N, K) and b (K, M), the rows of a in row_parts over the threads (one OpenBLAS thread each).

    A large product is cut the same way with or without a pool, so its bits never depend on the thread count.
    """
    if a.shape[0] * a.shape[1] * b.shape[1] < _MIN_SPLIT_WORK:
        return a @ b
    out = np.empty((a.shape[0], b.shape[1]), dtype=np.result_type(a, b))
    threads.for_each_block(lambda rows: np.matmul(a[rows], b, out=out[rows]), row_parts(a.shape[0]))
    return out
