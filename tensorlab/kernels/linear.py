"""Linear's formulas (linear_forward and linear_backward in tensorlab/ops/linear.py), fast on the CPU.

Each large matrix product is cut by rows (or columns) into up to plan.ROW_PARTS parts, spread over
tensorlab.threads, each part one OpenBLAS call on one thread (tensorlab/threads.py explains why OpenBLAS keeps
one thread of its own), which adds its share of the bias in place. The backward of a batch of many rows, next to the
layer's width, is cut by the batch's rows instead: each part works on its own rows of gy and x alone.
"""

import functools

import numpy as np

from tensorlab import kernels, threads
from tensorlab.kernels import plan


def linear_forward(x, weight, bias=None):
    """y = x W^T + b for x (N, IN), as the formula gives it."""
    out, parts = _product(x, weight.T, bias)  # (N, OUT)
    threads.for_each_block(lambda part: part(), parts)
    return out


def linear_backward(gy, x, weight, input_grad=True):
    """gx = gy W (None unless input_grad), gW = gy^T x, gb = the sum over rows of gy, as the formula gives them.

    A batch of many rows next to the layer's width is cut by its rows (plan.batch_row_parts). Otherwise the parts of
    the products that are cut and the bias sum go to the threads as one batch of tasks, so that no thread waits
    for the others between the products. Products too small to cut are made by `_product` at once, so for a
    small layer the batch is the sum alone, and no thread is woken.
    """
    batch_parts = plan.batch_row_parts(*gy.shape, x.shape[1])
    if batch_parts:
        return _backward_by_batch_rows(gy, x, weight, input_grad, batch_parts)
    gw, gw_parts = _product(gy.T, x)
    gx, gx_parts = _product(gy, weight) if input_grad else (None, [])
    gb = np.empty(gy.shape[1], gy.dtype)
    threads.for_each_block(lambda task: task(), gw_parts + gx_parts + [lambda: gy.sum(axis=0, out=gb)])
    return gx, gw, gb


def _backward_by_batch_rows(gy, x, weight, input_grad, parts):
    """linear_backward a part of the batch's rows at a time: gy_p^T x_p, the sum of gy_p's rows (by OpenBLAS,
    kernels.column_sums) and gy_p W, each part from its own rows of gy and x while they are in cache; the parts'
    gW and gb are then added in part order (gW = gy^T x = the sum over parts of gy_p^T x_p)."""
    gx = np.empty((gy.shape[0], weight.shape[1]), np.result_type(gy, weight)) if input_grad else None
    gw_parts = np.empty((len(parts), gy.shape[1], x.shape[1]), np.result_type(gy, x))
    gb_parts = np.empty((len(parts), gy.shape[1]), gy.dtype)

    def backward_part(i):
        rows = parts[i]
        np.matmul(gy[rows].T, x[rows], out=gw_parts[i])
        kernels.column_sums(gy[rows], out=gb_parts[i])
        if input_grad:
            np.matmul(gy[rows], weight, out=gx[rows])

    threads.for_each_block(backward_part, list(range(len(parts))))
    return gx, gw_parts.sum(axis=0), gb_parts.sum(axis=0)


def _product(a, b, bias=None):
    """a @ b (+ bias) for a 2-D (N, K) and b (K, M), and the tasks still to run for it.

    A product that plan.row_parts leaves whole is one plain OpenBLAS call, made here: no tasks, no buffer. A larger
    one gets its buffer and one task per plan.row_parts slice of the rows of a, or of the columns of b when they
    are more (a weight's gradient gy^T x has few rows and a long K): each task is one OpenBLAS call on one
    thread, or with a bias one per block of its rows (plan.bias_block_rows), each block adding its bias while it
    is in cache.

    Each element's sum over K stays whole in one part, in OpenBLAS's order, and a large product is cut the same
    way with or without a pool, so its bits never depend on the thread count.
    """
    by_rows = a.shape[0] >= b.shape[1]
    slices = plan.row_parts(a.shape[0] if by_rows else b.shape[1], a.shape[0] * a.shape[1] * b.shape[1])
    if len(slices) == 1:
        out = a @ b
        if bias is not None:
            out += bias
        return out, []
    out = np.empty((a.shape[0], b.shape[1]), dtype=np.result_type(a, b))

    def product_rows(rows):
        if bias is None:
            np.matmul(a[rows], b, out=out[rows])
            return
        block_rows = plan.bias_block_rows(out.shape[1] * out.itemsize)
        for start in range(rows.start, rows.stop, block_rows):
            block = slice(start, min(start + block_rows, rows.stop))
            np.matmul(a[block], b, out=out[block])
            out[block] += bias

    def product_columns(cols):
        np.matmul(a, b[:, cols], out=out[:, cols])
        if bias is not None:
            out[:, cols] += bias[cols]

    part = product_rows if by_rows else product_columns
    return out, [functools.partial(part, piece) for piece in slices]
