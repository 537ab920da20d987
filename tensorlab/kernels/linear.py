"""Linear's formulas (linear_forward and linear_backward in tensorlab/ops/linear.py), fast on the CPU.

Each large matrix product is cut by rows (or columns) into up to ROW_PARTS parts, spread over tensorlab.threads, each
part one OpenBLAS call on one thread (tensorlab/threads.py explains why OpenBLAS keeps one thread
of its own); the bias is added in place.
"""

import numpy as np

from tensorlab import threads

# A product is cut into at most this many parts whatever the thread count (enough for 16 threads),
ROW_PARTS = 16
# each of at least this many rows (or columns) and multiply-adds: every part packs its own copy of the other
# matrix, so thin parts cost more than they share (an MLP's batch of 256 in 16 parts of 16 rows took 25% longer
# than in 2 parts of 128), while a weight's gradient (128, 4096) @ (4096, 128) still wants 2 parts of 64 rows.
MIN_PART_ROWS = 64
MIN_PART_WORK = 1 << 25


def linear_forward(x, weight, bias=None):
    """y = x W^T + b for x (N, IN), as the formula gives it."""
    y = matmul(x, weight.T)  # (N, OUT)
    if bias is not None:
        y += bias
    return y


def linear_backward(gy, x, weight, input_grad=True):
    """gx = gy W (None unless input_grad), gW = gy^T x, gb = the sum over rows of gy, as the formula gives them."""
    return matmul(gy, weight) if input_grad else None, matmul(gy.T, x), gy.sum(axis=0)


def row_parts(length, work):
    """range(length) cut into up to ROW_PARTS slices, each of MIN_PART_ROWS or more and MIN_PART_WORK
    multiply-adds or more (of the product's `work`): fixed by the shapes, not the threads."""
    parts = max(1, min(ROW_PARTS, length // MIN_PART_ROWS, work // MIN_PART_WORK))
    edges = [length * i // parts for i in range(parts + 1)]
    return [slice(a, b) for a, b in zip(edges[:-1], edges[1:]) if b > a]


def matmul(a, b):
    """a @ b for a 2-D (N, K) and b (K, M), cut into row_parts over the threads (one OpenBLAS thread each): the
    rows of a, or the columns of b when they are more (a weight's gradient gy^T x has few rows and a long K).

    Each element's sum over K stays whole in one part, in OpenBLAS's order, and a large product is cut the same
    way with or without a pool, so its bits never depend on the thread count.
    """
    by_rows = a.shape[0] >= b.shape[1]
    parts = row_parts(a.shape[0] if by_rows else b.shape[1], a.shape[0] * a.shape[1] * b.shape[1])
    if len(parts) == 1:  # too small to share: one OpenBLAS call, no buffer
        return a @ b
    out = np.empty((a.shape[0], b.shape[1]), dtype=np.result_type(a, b))
    if by_rows:
        threads.for_each_block(lambda rows: np.matmul(a[rows], b, out=out[rows]), parts)
    else:
        threads.for_each_block(lambda cols: np.matmul(a, b[:, cols], out=out[:, cols]), parts)
    return out
