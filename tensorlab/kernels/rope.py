"""RoPE's formulas (rope_forward and rope_backward in tensorlab/ops/rope.py), fast on the CPU.

The same arithmetic as the formulas, bit for bit, a block of batch elements at a time, the blocks spread
over tensorlab.threads (an x of one sequence, (T, D), is one batch element). The swap of the two halves
reads runs of D/2 numbers (16 for a head of 32), so NumPy spends more time starting its inner loops than
computing: sharing the blocks out is what pays.
"""

import numpy as np

from tensorlab import threads
from tensorlab.kernels import plan
from tensorlab.layout import halves


def rope_forward(x, cos, signed_sin):
    """y = x cos + S(x) s, as the formula gives it, written batch block by batch block into y."""
    y = np.empty_like(x)  # laid out as x is (q and k are transposed views)
    xs, ys = _batched(x), _batched(y)

    def forward_block(b):
        x2, y2 = halves(xs[b]), halves(ys[b])
        np.multiply(x2, cos, out=y2)
        y2 += x2[..., ::-1, :] * signed_sin

    threads.for_each_block(forward_block, _batch_blocks(xs))
    return y


def rope_backward(gy, cos, signed_sin):
    """gx = gy cos + S(gy s), as the formula gives it, batch block by batch block."""
    gx = np.empty_like(gy)
    gys, gxs = _batched(gy), _batched(gx)

    def backward_block(b):
        g2, gx2 = halves(gys[b]), halves(gxs[b])
        np.multiply(g2, cos, out=gx2)
        gx2 += (g2 * signed_sin)[..., ::-1, :]

    threads.for_each_block(backward_block, _batch_blocks(gys))
    return gx


def _batched(a):
    """a (..., T, D) as a view with at least one axis before (T, D): the axis the blocks cut."""
    return a.reshape((1,) * (3 - a.ndim) + a.shape)


def _batch_blocks(a):
    """Blocks of the first axis of a, about three arrays of each block fitting in cache."""
    return plan.cache_blocks(a.shape[0], 3 * (a.size // max(a.shape[0], 1)) * a.itemsize)
