"""Normalisation over the last axis: RMSNorm and LayerNorm, each with a hand-derived backward.

Shared notation: x has C features on its last axis, r = 1 / sqrt(s + eps) is the inverse
scale (s = mean(x^2) for RMSNorm, the variance for LayerNorm), xhat the normalised x,
and g = gy * w the gradient arriving at xhat.
"""

from tensorlab import backend
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


def _check_params(op_name, x, *params):
    for p in params:
        if p.shape != x.shape[-1:]:
            raise ValueError(
                f"{op_name}: weight/bias of shape {p.shape} must be ({x.shape[-1]},), "
                f"the size of the last axis of x {x.shape}"
            )


class RMSNorm(Function):
    name = "rms_norm"

    def __init__(self, eps=1e-5):
        self.eps = eps

    def forward(self, x, weight):
        _check_params("rms_norm", x, weight)
        self.r = 1 / (_row_mean_of_product(x, x) + self.eps) ** 0.5  # (..., 1)
        self.xhat, self.w = x * self.r, weight
        return self.xhat * weight

    def backward(self, gy):
        # y = xhat * w, xhat = x r, r = (mean(x^2) + eps)^(-1/2)
        #   =>  gx = r * (g - xhat * mean(g * xhat)),  gw = sum over rows of gy * xhat
        g = gy * self.w
        gx = g - self.xhat * _row_mean_of_product(g, self.xhat)
        gx *= self.r
        return gx, _column_sum_of_product(gy, self.xhat)


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
