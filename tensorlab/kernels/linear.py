"""Linear's formulas (linear_forward and linear_backward in tensorlab/ops/linear.py), fast on the CPU.

Each large matrix product is cut by rows (or columns) into up to ROW_PARTS parts, spread over tensorlab.threads, each
part one OpenBLAS call on one thread (tensorlab/threads.py explains why OpenBLAS keeps one thread
of its own), which adds its share of the bias in place. The backward of a batch of many rows, next to the
layer's width, is cut by the batch's rows instead: each part works on its own rows of gy and x alone.
"""

import functools

import numpy as np

from tensorlab import kernels, threads

# A product is cut into at most this many parts whatever the thread count (enough for 16 threads), a power of two
# of them, so that 2, 4, 8 or 16 threads get equal shares (7 parts on 2 threads made one of them do 4),
ROW_PARTS = 16
# each of at least this many rows (or columns) and multiply-adds: every part packs its own copy of the other
# matrix, so thin parts cost more than they share. On 2 threads, one layer's and the head's products of the three
# bench configs took 3-4% less time in 2 parts than in parts of 2^25 multiply-adds (4 to 16 of them), and 6-8%
# less than in the 3 to 13 parts cut before (bench/RESULTS.md, bench/kernel_choices.py); an MLP's batch of 256
# in 16 parts of 16 rows took 25% longer than in 2 parts of 128.
MIN_PART_ROWS = 64
MIN_PART_WORK = 1 << 27
# The backward is cut by the batch's rows when the parts' partial weight gradients, which must then be added up
# (parts x OUT x IN numbers), are at most this share of the rows the parts read (N x (IN + OUT)). The backwards
# of the three bench configs (4096 rows; shares 0.03 to 0.19) took 1.5-4% less time in the training step cut so;
# an MLP's and square backwards (shares 3.5 to 4), timed alone, took 6-12% more (bench/RESULTS.md).
BATCH_CUT_MAX_SHARE = 0.5
# A part adds the bias to its rows a block of about this many bytes of output at a time, right after the product
# made them, while they are in the core's own cache (1 MiB of L2 on the 2-core EPYC): added over the whole part at
# once (3 MiB of seed_d128's qkv), they came from memory again. Linear.forward took 1 to 7% less time in the three
# bench configs' training steps (bench/RESULTS.md).
BIAS_BLOCK_BYTES = 1 << 20


def linear_forward(x, weight, bias=None):
    """y = x W^T + b for x (N, IN), as the formula gives it."""
    return matmul(x, weight.T, bias)  # (N, OUT)


def linear_backward(gy, x, weight, input_grad=True):
    """gx = gy W (None unless input_grad), gW = gy^T x, gb = the sum over rows of gy, as the formula gives them.

    A batch of many rows next to the layer's width is cut by its rows (batch_row_parts). Otherwise the parts of
    the products that are cut and the bias sum go to the threads as one batch of tasks, so that no thread waits
    for the others between the products. Products too small to cut are made by `product` at once, so for a
    small layer the batch is the sum alone, and no thread is woken.
    """
    batch_parts = batch_row_parts(*gy.shape, x.shape[1])
    if batch_parts:
        return _backward_by_batch_rows(gy, x, weight, input_grad, batch_parts)
    gw, gw_parts = product(gy.T, x)
    gx, gx_parts = product(gy, weight) if input_grad else (None, [])
    gb = np.empty(gy.shape[1], gy.dtype)
    threads.for_each_block(lambda task: task(), gw_parts + gx_parts + [lambda: gy.sum(axis=0, out=gb)])
    return gx, gw, gb


def batch_row_parts(rows, n_out, n_in):
    """The row_parts of a batch of `rows` whose backward is cut by them (BATCH_CUT_MAX_SHARE), else []."""
    parts = row_parts(rows, rows * n_out * n_in)
    small_sums = len(parts) * n_out * n_in <= BATCH_CUT_MAX_SHARE * rows * (n_in + n_out)
    return parts if len(parts) > 1 and small_sums else []


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


def row_parts(length, work):
    """range(length) cut into a power of two of equal slices, at most ROW_PARTS, each of MIN_PART_ROWS or more and
    MIN_PART_WORK multiply-adds or more (of the product's `work`), except that a product of half that work is
    still cut in two (every machine this runs on has two cores): fixed by the shapes, not the threads."""
    by_work = max(work // MIN_PART_WORK, 2 if 2 * work >= MIN_PART_WORK else 1)
    parts = kernels.power_of_two_at_most(min(ROW_PARTS, length // MIN_PART_ROWS, by_work))
    edges = [length * i // parts for i in range(parts + 1)]
    return [slice(a, b) for a, b in zip(edges[:-1], edges[1:]) if b > a]


def matmul(a, b, bias=None):
    """a @ b (+ bias), its parts spread over the threads (product)."""
    out, parts = product(a, b, bias)
    threads.for_each_block(lambda part: part(), parts)
    return out


def product(a, b, bias=None):
    """a @ b (+ bias) for a 2-D (N, K) and b (K, M), and the tasks still to run for it.

    A product that row_parts leaves whole is one plain OpenBLAS call, made here: no tasks, no buffer. A larger
    one gets its buffer and one task per row_parts slice of the rows of a, or of the columns of b when they
    are more (a weight's gradient gy^T x has few rows and a long K): each task is one OpenBLAS call on one
    thread, or with a bias one per block of its rows (BIAS_BLOCK_BYTES), each block adding its bias while it
    is in cache.

    Each element's sum over K stays whole in one part, in OpenBLAS's order, and a large product is cut the same
    way with or without a pool, so its bits never depend on the thread count.
    """
    by_rows = a.shape[0] >= b.shape[1]
    slices = row_parts(a.shape[0] if by_rows else b.shape[1], a.shape[0] * a.shape[1] * b.shape[1])
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
        block_rows = max(MIN_PART_ROWS, BIAS_BLOCK_BYTES // (out.shape[1] * out.itemsize))
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
