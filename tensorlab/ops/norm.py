"""Normalisation over the last axis: RMSNorm and LayerNorm, each with a hand-derived backward.

Shared notation: x has C features on its last axis, r = 1 / sqrt(s + eps) is the inverse
scale (s = mean(x^2) for RMSNorm, the variance for LayerNorm), xhat the normalised x,
and g = gy * w the gradient arriving at xhat.

The formulas are written out below as plain NumPy. On the CPU the ops run the same formulas from
tensorlab/kernels/norm.py: with an einsum for each mean of a product, and for RMSNorm a block of
rows at a time, on every core, into buffers allocated once; tests/test_kernels.py checks them
against the ones here.
"""

from tensorlab import backend, kernels
from tensorlab.kernels import norm as fast
from tensorlab.layout import as_rows
from tensorlab.ops.dtypes import check_same_dtype
from tensorlab.tensor import Function


def rms_norm_forward(x, weight, eps):
    """y = xhat w with xhat = x r, r = (mean(x^2) + eps)^(-1/2); returns y, xhat and r for the backward."""
    xp = backend.array_module(x)
    r = 1 / xp.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)
    xhat = x * r
    return xhat * weight, xhat, r


def rms_norm_backward(gy, xhat, r, weight):
    # y = xhat * w, xhat = x r, r = (mean(x^2) + eps)^(-1/2)
    #   =>  gx = r * (g - xhat * mean(g * xhat)),  gw = sum over rows of gy * xhat
    g = gy * weight
    gx = r * (g - xhat * (g * xhat).mean(axis=-1, keepdims=True))
    return gx, _sum_over_rows(gy * xhat)


def layer_norm_forward(x, weight, bias, eps):
    """y = xhat w + b with xhat = (x - mean x) r, r = (var x + eps)^(-1/2); returns y, xhat and r."""
    xp = backend.array_module(x)
    centered = x - x.mean(axis=-1, keepdims=True)
    r = 1 / xp.sqrt((centered * centered).mean(axis=-1, keepdims=True) + eps)
    xhat = centered * r
    return xhat * weight + bias, xhat, r


def layer_norm_backward(gy, xhat, r, weight):
    # y = xhat * w + b, xhat = (x - mean x) r, r = (var x + eps)^(-1/2)
    #   =>  gx = r * (g - mean(g) - xhat * mean(g * xhat)),  gw = sum gy * xhat,  gb = sum gy
    g = gy * weight
    gx = r * (g - g.mean(axis=-1, keepdims=True) - xhat * (g * xhat).mean(axis=-1, keepdims=True))
    return gx, _sum_over_rows(gy * xhat), _sum_over_rows(gy)


def _sum_over_rows(a):
    """Sum over every axis but the last: how a per-feature weight or bias gathers its gradient."""
    return as_rows(a).sum(axis=0)


def _check_params(op_name, x, *params):
    check_same_dtype(op_name, x, *params)  # PyTorch's layer_norm refuses mixed dtypes (rms_norm casts its weight)
    for p in params:
        if p.shape != x.shape[-1:]:
            raise ValueError(
                f"{op_name}: weight/bias of shape {p.shape} must be ({x.shape[-1]},), "
                f"the size of the last axis of x {x.shape}"
            )


class RMSNorm(Function):
    """rms_norm_forward and rms_norm_backward; on the CPU their kernels (tensorlab/kernels/norm.py)."""

    name = "rms_norm"

    def __init__(self, eps=1e-5):
        self.eps = eps

    def forward(self, x, weight):
        _check_params("rms_norm", x, weight)
        forward = kernels.choose(fast.rms_norm_forward, rms_norm_forward, x)
        y, self.xhat, self.r = forward(x, weight, self.eps)
        self.w = weight
        return y

    def backward(self, gy):
        backward = kernels.choose(fast.rms_norm_backward, rms_norm_backward, gy)
        return backward(gy, self.xhat, self.r, self.w)


class LayerNorm(Function):
    """layer_norm_forward and layer_norm_backward; on the CPU their kernels (tensorlab/kernels/norm.py)."""

    name = "layer_norm"

    def __init__(self, eps=1e-5):
        self.eps = eps

    def forward(self, x, weight, bias):
        _check_params("layer_norm", x, weight, bias)
        forward = kernels.choose(fast.layer_norm_forward, layer_norm_forward, x)
        y, self.xhat, self.r = forward(x, weight, bias, self.eps)
        self.w = weight
        return y

    def backward(self, gy):
        backward = kernels.choose(fast.layer_norm_backward, layer_norm_backward, gy)
        return backward(gy, self.xhat, self.r, self.w)
