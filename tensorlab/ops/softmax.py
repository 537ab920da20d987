"""Softmax and log-softmax along one axis, computed stably.

softmax(x)_i = exp(x_i - m) / sum_j exp(x_j - m) for any m; taking m = max_j x_j keeps
every exponent <= 0, so nothing overflows.
"""

import numpy as np

from tensorlab import backend
from tensorlab.ops.axes import axis_tuple
from tensorlab.ops.dtypes import check_floating
from tensorlab.tensor import Function


def exp_and_max(x, axis, out=None):
    """The pair (exp(x - m), m), m = max of x along `axis` (kept); a row that is all -inf uses m = 0. A row
    holding +inf keeps m = +inf, so x - m is NaN there (inf - inf) and the row's softmax is NaN, as PyTorch's.

    The one stable softmax core of the engine: softmax, log_softmax, cross_entropy and causal_attention
    use it. `out` (x itself is fine) receives exp(x - m) instead of a new array. An axis of length 0
    gives empty results. Its kernel, for cross_entropy's and causal_attention's: tensorlab/kernels/softmax.py.
    """
    xp = backend.array_module(x)
    if x.size == 0:
        return xp.exp(x, out=out), xp.zeros(x.sum(axis=axis, keepdims=True).shape, x.dtype)
    m = x.max(axis=axis, keepdims=True)
    m = xp.where(m == -np.inf, 0, m).astype(x.dtype, copy=False)
    e = xp.subtract(x, m, out=xp.empty_like(x) if out is None else out)  # an array even when x is 0-d
    return xp.exp(e, out=e), m


class Softmax(Function):
    """A row that is entirely -inf (fully masked) gives all zeros and passes no gradient.

    PyTorch gives NaN there; zeros are what attention over nothing should contribute. The axis of
    a 0-d x (0 or -1) is x itself, and softmax gives 1, as in PyTorch.
    """

    def __init__(self, axis=-1):
        self.axis = axis

    def forward(self, x):
        self.axis = axis_tuple("softmax", self.axis, x.ndim)
        check_floating("softmax", x)
        e, _ = exp_and_max(x, self.axis)
        total = e.sum(axis=self.axis, keepdims=True)
        total += total == 0  # fully masked rows: 0 / 1 = 0 instead of 0 / 0 (no boolean mask: a GPU would sync)
        self.y = e / total
        return self.y

    def backward(self, gy):
        # y = softmax(x)  =>  gx = y * (gy - sum_j gy_j y_j)
        y = self.y
        return y * (gy - (gy * y).sum(axis=self.axis, keepdims=True))


class LogSoftmax(Function):
    """log(softmax(x)) = x - m - log(sum_j exp(x_j - m)). A row that is all -inf gives NaN, as in PyTorch."""

    name = "log_softmax"

    def __init__(self, axis=-1):
        self.axis = axis

    def forward(self, x):
        self.axis = axis_tuple("log_softmax", self.axis, x.ndim)
        check_floating("log_softmax", x)
        xp = backend.array_module(x)
        e, m = exp_and_max(x, self.axis)
        with np.errstate(divide="ignore"):  # log 0 = -inf: an empty axis, or a row all -inf (then NaN)
            self.y = x - m - xp.log(e.sum(axis=self.axis, keepdims=True))
        return self.y

    def backward(self, gy):
        # y = log softmax(x)  =>  gx = gy - softmax(x) * sum_j gy_j,  softmax(x) = exp(y)
        xp = backend.array_module(gy)
        return gy - xp.exp(self.y) * gy.sum(axis=self.axis, keepdims=True)
