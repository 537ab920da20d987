"""Normalisation over the last axis: RMSNorm and LayerNorm, each with a hand-derived backward.

Shared notation: x has C features on its last axis, r = 1 / sqrt(s + eps) is the inverse
scale (s = mean(x^2) for RMSNorm, the variance for LayerNorm), xhat the normalised x,
and g = gy * w the gradient arriving at xhat.
"""

from tensorlab import backend, threads
from tensorlab.tensor import Function


def _row_mean_of_product(a, b):
    """mean over the last axis of a * b, kept as a size-1 axis (einsum: no (..., C) temporary)."""
    xp = backend.array_module(a)
    return xp.einsum("...i,...i->...", a, b)[..., None] / a.shape[-1]


def _column_sum_of_product(a, b):
    """sum over every axis but the last of a * b: how the per-feature weight gathers gradient."""
    xp = backend.array_module(a)
    return xp.einsum("ni,ni->i", a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1]))


def _sum_to_last_axis(a):
    """Sum over every axis but the last: how the per-feature bias gathers gradient."""
    return a.reshape(-1, a.shape[-1]).sum(axis=0)


def _row_blocks(rows):
    """Blocks of rows of a 2-D array, about 4 arrays of each block fitting in cache together."""
    return backend.cache_blocks(rows.shape[0], 4 * rows.shape[1] * rows.itemsize, rows)


def _check_params(op_name, x, *params):
    for p in params:
        if p.shape != x.shape[-1:]:
            raise ValueError(
                f"{op_name}: weight/bias of shape {p.shape} must be ({x.shape[-1]},), "
                f"the size of the last axis of x {x.shape}"
            )


class RMSNorm(Function):
    """Computed a block of rows at a time (each block stays in cache across the passes), the blocks spread over
    tensorlab.threads; the formulas are the same for every row."""

    name = "rms_norm"

    def __init__(self, eps=1e-5):
        self.eps = eps

    def forward(self, x, weight):
        _check_params("rms_norm", x, weight)
        xp = backend.array_module(x)
        x_rows = x.reshape(-1, x.shape[-1])  # (N, C)
        self.r = xp.empty((x_rows.shape[0], 1), x.dtype)
        self.xhat, self.w = xp.empty_like(x_rows), weight
        y = xp.empty_like(x_rows)

        def rows(b):  # r = (mean(x^2) + eps)^(-1/2),  xhat = x r,  y = xhat w
            self.r[b] = 1 / (_row_mean_of_product(x_rows[b], x_rows[b]) + self.eps) ** 0.5
            xp.multiply(x_rows[b], self.r[b], out=self.xhat[b])
            xp.multiply(self.xhat[b], weight, out=y[b])

        threads.for_each_block(rows, _row_blocks(x_rows))
        return y.reshape(x.shape)

    def backward(self, gy):
        # y = xhat * w, xhat = x r, r = (mean(x^2) + eps)^(-1/2)
        #   =>  gx = r * (g - xhat * mean(g * xhat)),  gw = sum over rows of gy * xhat
        xp = backend.array_module(gy)
        gy_rows = gy.reshape(self.xhat.shape)
        gx = xp.empty_like(gy_rows)
        blocks = _row_blocks(gy_rows)
        gw_parts = xp.empty((len(blocks), gy_rows.shape[1]), gy.dtype)  # one partial sum per block

        def rows(i):
            b = blocks[i]
            g = gy_rows[b] * self.w
            gx[b] = g - self.xhat[b] * _row_mean_of_product(g, self.xhat[b])
            gx[b] *= self.r[b]
            gw_parts[i] = _column_sum_of_product(gy_rows[b], self.xhat[b])

        threads.for_each_block(rows, list(range(len(blocks))))
        return gx.reshape(gy.shape), gw_parts.sum(axis=0)


class LayerNorm(Function):
    name = "layer_norm"

    def __init__(self, eps=1e-5):
        self.eps = eps

    def forward(self, x, weight, bias):
        _check_params("layer_norm", x, weight, bias)
        centered = x - x.mean(axis=-1, keepdims=True)
        self.r = 1 / (_row_mean_of_product(centered, centered) + self.eps) ** 0.5
        self.xhat, self.w = centered * self.r, weight
        return self.xhat * weight + bias

    def backward(self, gy):
        # y = xhat * w + b, xhat = (x - mean x) r, r = (var x + eps)^(-1/2)
        #   =>  gx = r * (g - mean(g) - xhat * mean(g * xhat)),  gw = sum gy * xhat,  gb = sum gy
        g = gy * self.w
        gx = g - g.mean(axis=-1, keepdims=True) - self.xhat * _row_mean_of_product(g, self.xhat)
        gx *= self.r
        return gx, _column_sum_of_product(gy, self.xhat), _sum_to_last_axis(gy)
