"""The normalisations' formulas (tensorlab/ops/norm.py), fast on the CPU.

Every mean of a product over a row, and the weight gradient's sum over rows of a product, comes from
one einsum, without the (rows, C) product as a temporary. RMSNorm, in the transformer's every block,
also works on x flattened to rows (N, C) a block of rows at a time: each block stays in cache across
the passes, and the blocks are spread over tensorlab.threads; its weight gradient is summed per
block and the per-block sums added at the end, in block order.
"""

import numpy as np

from tensorlab import threads
from tensorlab.kernels import plan
from tensorlab.layout import as_rows


def rms_norm_forward(x, weight, eps):
    """y, xhat, r as the formula gives them: r = (mean(x^2) + eps)^(-1/2), xhat = x r, y = xhat w."""
    x_rows = as_rows(x)  # (N, C)
    r = np.empty((x_rows.shape[0], 1), x.dtype)
    xhat, y = np.empty_like(x_rows), np.empty_like(x_rows)

    def rows(b):
        r[b] = 1 / (_row_mean_of_product(x_rows[b], x_rows[b]) + eps) ** 0.5
        np.multiply(x_rows[b], r[b], out=xhat[b])
        np.multiply(xhat[b], weight, out=y[b])

    threads.for_each_block(rows, _row_blocks(x_rows))
    return y.reshape(x.shape), xhat.reshape(x.shape), r.reshape(x.shape[:-1] + (1,))


def rms_norm_backward(gy, xhat, r, weight):
    """gx = r (g - xhat mean(g xhat)) with g = gy w, and gw = the sum over rows of gy xhat."""
    gy_rows, xhat_rows, r_rows = as_rows(gy), as_rows(xhat), as_rows(r)
    gx = np.empty_like(gy_rows)
    blocks = _row_blocks(gy_rows)
    gw_parts = np.empty((len(blocks), gy_rows.shape[1]), gy.dtype)  # one partial sum per block

    def rows(i):
        b = blocks[i]
        g = np.multiply(gy_rows[b], weight, out=gx[b])  # g = gy w, in gx's rows
        g -= xhat_rows[b] * _row_mean_of_product(g, xhat_rows[b])
        g *= r_rows[b]
        gw_parts[i] = np.einsum("ni,ni->i", gy_rows[b], xhat_rows[b])

    threads.for_each_block(rows, list(range(len(blocks))))
    return gx.reshape(gy.shape), gw_parts.sum(axis=0)


def layer_norm_forward(x, weight, bias, eps):
    """y, xhat, r as the formula gives them: r = (var x + eps)^(-1/2), xhat = (x - mean x) r, y = xhat w + b."""
    centered = x - x.mean(axis=-1, keepdims=True)
    r = 1 / (_row_mean_of_product(centered, centered) + eps) ** 0.5
    xhat = centered * r
    return xhat * weight + bias, xhat, r


def layer_norm_backward(gy, xhat, r, weight):
    """gx = r (g - mean(g) - xhat mean(g xhat)) with g = gy w, gw = the sum over rows of gy xhat, gb of gy."""
    g = gy * weight
    gx = g - g.mean(axis=-1, keepdims=True) - xhat * _row_mean_of_product(g, xhat)
    gx *= r
    rows = as_rows(gy)
    return gx, np.einsum("ni,ni->i", rows, xhat.reshape(rows.shape)), rows.sum(axis=0)


def _row_mean_of_product(a, b):
    """mean over the last axis of a * b, kept as a size-1 axis (einsum: no (rows, C) temporary)."""
    return np.einsum("...i,...i->...", a, b)[..., None] / a.shape[-1]


def _row_blocks(rows):
    """Blocks of rows of a 2-D array, about 4 arrays of each block fitting in cache together."""
    return plan.cache_blocks(rows.shape[0], 4 * rows.shape[1] * rows.itemsize)
