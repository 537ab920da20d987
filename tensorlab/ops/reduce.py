"""Reductions: sum, mean, max, min, var and std over one or several axes; argmax and argmin."""

import numpy as np

from tensorlab import backend
from tensorlab.ops.axes import expand_reduced, normalize_axes
from tensorlab.ops.dtypes import check_floating, check_not_bool
from tensorlab.tensor import Function


class Reduction(Function):
    """Shared by the reductions: the axes to reduce and whether to keep them as size 1."""

    def __init__(self, axis=None, keepdims=False):
        self.axis, self.keepdims = axis, keepdims

    def forward(self, x):
        self.axes = normalize_axes(type(self).__name__.lower(), self.axis, x.ndim)
        self.x_shape = x.shape
        return self.reduce(x)

    def count(self):
        """How many elements each output element reduces over."""
        n = 1
        for a in self.axes:
            n *= self.x_shape[a]
        return n


class Sum(Reduction):
    def reduce(self, x):  # integers and bools add up in int64, as PyTorch (NumPy: uint8 in uint64)
        return x.sum(axis=self.axes, keepdims=self.keepdims, dtype=x.dtype if x.dtype.kind == "f" else "int64")

    def backward(self, gy):
        # y = sum_i x_i  =>  gx_i = gy (copied back along the summed axes)
        xp = backend.array_module(gy)
        return xp.broadcast_to(expand_reduced(gy, self.x_shape, self.axes), self.x_shape).copy()


class Mean(Reduction):
    def reduce(self, x):
        check_floating("mean", x)
        return x.mean(axis=self.axes, keepdims=self.keepdims)

    def backward(self, gy):
        # y = (1/n) sum_i x_i  =>  gx_i = gy / n, n = number of elements averaged
        xp = backend.array_module(gy)
        return xp.broadcast_to(expand_reduced(gy, self.x_shape, self.axes) / self.count(), self.x_shape).copy()


class Max(Reduction):
    pick = "max"  # the array method that reduces; Min changes only this

    def reduce(self, x):
        empty = [a for a in self.axes if x.shape[a] == 0]
        if empty:
            raise ValueError(f"{self.pick}: cannot reduce an empty array of shape {x.shape} along axis {empty[0]}")
        self.x = x
        self.y = getattr(x, self.pick)(axis=self.axes, keepdims=True)
        return self.y if self.keepdims else self.y.reshape([n for i, n in enumerate(x.shape) if i not in self.axes])

    def backward(self, gy):
        # y = max_i x_i  =>  gx_i = gy where x_i is the max, shared equally among ties (as torch.amax), exactly 0
        # elsewhere: selected, so an inf or NaN gy gives no NaN there (torch.amax multiplies: NaN)
        picked = self.x == self.y
        count = picked.sum(axis=self.axes, keepdims=True, dtype=gy.dtype)
        share = expand_reduced(gy, self.x.shape, self.axes) / count
        return backend.array_module(gy).where(picked, share, gy.dtype.type(0))


class Min(Max):
    """The smallest element: Max's backward, where the picked elements are the minima (as torch.amin)."""

    pick = "min"


class Var(Reduction):
    """Variance with PyTorch's `correction` (1: the unbiased estimate, PyTorch's default; 0: NumPy's default).

    As PyTorch's CPU kernel, it is accumulated in float64: a float32 std of 1e30 and -1e30 is 1.4e30, not inf.
    """

    def __init__(self, axis=None, keepdims=False, correction=1):
        super().__init__(axis, keepdims)
        self.correction = correction

    def reduce(self, x):
        return self.variance(x).astype(x.dtype, copy=False)

    def variance(self, x):
        """The variance in float64 (or wider)."""
        check_floating(type(self).__name__.lower(), x)
        x = x.astype(np.promote_types(x.dtype, np.float64), copy=False)
        self.centered = x - corrected_mean(x, self.axes)
        self.dof = self.count() - self.correction
        if self.dof <= 0 and (self.axis is None or x.ndim == 0):  # the backward's case below: PyTorch's test
            self.at_mean = x == x.mean(axis=self.axes, keepdims=True)
        squares = (self.centered * self.centered).sum(axis=self.axes, keepdims=self.keepdims)
        with np.errstate(divide="ignore", invalid="ignore"):
            return squares / x.dtype.type(max(self.dof, 0))  # n - c <= 0: inf or NaN, as PyTorch

    def backward(self, gy):
        # y = sum_i (x_i - m)^2 / (n - c), m the mean  =>  gx_i = gy * 2 (x_i - m) / (n - c)
        # (the terms through m cancel: sum_i (x_i - m) = 0). With n - c <= 0, as PyTorch: over some axes the
        # same formula (n - c < 0 gives a finite gradient, 0 gives inf or NaN); over all, gy * (NaN where
        # x_i == m, else inf). Computed in float64 as the forward, returned in gy's dtype.
        xp, g = backend.array_module(gy), expand_reduced(gy, self.x_shape, self.axes)
        wide = self.centered.dtype.type
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.dof <= 0 and (self.axis is None or len(self.x_shape) == 0):
                gx = g * xp.where(self.at_mean, wide("nan"), wide("inf"))
            else:
                gx = 2 / wide(self.dof) * g * self.centered
        return gx.astype(gy.dtype, copy=False)


class Std(Var):
    def reduce(self, x):
        self.y = backend.array_module(x).sqrt(self.variance(x))  # in float64: the variance may not fit x's dtype
        return self.y.astype(x.dtype, copy=False)

    def backward(self, gy):
        # y = sqrt(v)  =>  gv = gy / (2 y), 0 where y = 0 (as PyTorch), then var's backward
        xp = backend.array_module(gy)
        with np.errstate(divide="ignore", invalid="ignore"):
            gv = xp.where(self.y == 0, gy.dtype.type(0), gy / (2 * self.y))  # in float64, as self.y
        return super().backward(gv).astype(gy.dtype, copy=False)


def corrected_mean(x, axes):
    """The mean, corrected by the mean of the deviations from it (the corrected two-pass algorithm): equal values
    give their value exactly (so a variance of 0, as PyTorch's Welford kernel), where sum / n may round off it.
    Where the correction is not finite (inf, NaN, overflow) the plain mean stays."""
    xp = backend.array_module(x)
    mean = x.mean(axis=axes, keepdims=True)
    with np.errstate(invalid="ignore", over="ignore"):
        corrected = mean + (x - mean).mean(axis=axes, keepdims=True)
    return xp.where(xp.isfinite(corrected), corrected, mean)


def arg_extreme(op_name, x, axis=None, keepdims=False):
    """argmax or argmin (op_name) of array x: the index of the first extreme element along `axis`,
    of the flattened array when axis is None, as int64, as torch.argmax. No gradient: an index is a
    piecewise constant function of x (PyTorch gives none either)."""
    if axis is not None and not isinstance(axis, int):
        raise TypeError(f"{op_name}: axis must be None or one int, got {axis!r}")
    axes = normalize_axes(op_name, axis, x.ndim)
    check_not_bool(op_name, x)
    xp = backend.array_module(x)
    if x.ndim == 0:  # axis None, 0 or -1: the index of the only element
        return xp.zeros((), dtype=xp.int64)
    empty = [a for a in axes if x.shape[a] == 0]
    if empty:
        raise ValueError(f"{op_name}: cannot reduce an empty array of shape {x.shape} along axis {empty[0]}")
    index = getattr(x, op_name)(axis=axis, keepdims=keepdims)
    return xp.asarray(index, dtype=xp.int64)
