"""RoPE's formulas (rope_forward and rope_backward in tensorlab/ops/rope.py), fast on the CPU.

The same arithmetic as the formulas, bit for bit, a block of batch elements at a time, the blocks spread
over tensorlab.threads. The swap of the two halves reads runs of D/2 numbers (16 for a head of 32), so
NumPy spends more time starting its inner loops than computing: sharing the blocks out is what pays.
"""

import numpy as np

from tensorlab import kernels, threads
from tensorlab.ops import rope as formula  # the module: it imports this one


def applies_to(x):
    """The kernel cuts the first axis into blocks: it needs a batch axis before (T, D), on the CPU."""
    return kernels.applies_to(x) and x.ndim >= 3


def rope_forward(x, cos, signed_sin):
    """y = x cos + S(x) s, as the formula gives it, written batch block by batch block into y."""
    y = np.empty_like(x)  # laid out as x is (q and k are transposed views)

    def forward_block(b):
        x2, y2 = formula.halves(x[b]), formula.halves(y[b])
        np.multiply(x2, cos, out=y2)
        y2 += x2[..., ::-1, :] * signed_sin

    threads.for_each_block(forward_block, _batch_blocks(x))
    return y


def rope_backward(gy, cos, signed_sin):
    """gx = gy cos + S(gy s), as the formula gives it, batch block by batch block."""
    gx = np.empty_like(gy)

    def backward_block(b):
        g2, gx2 = formula.halves(gy[b]), formula.halves(gx[b])
        np.multiply(g2, cos, out=gx2)
        gx2 += (g2 * signed_sin)[..., ::-1, :]

    threads.for_each_block(backward_block, _batch_blocks(gy))
    return gx


def _batch_blocks(a):
    """Blocks of the first axis of a, about three arrays of each block fitting in cache."""
    return kernels.cache_blocks(a.shape[0], 3 * (a.size // max(a.shape[0], 1)) * a.itemsize)
