"""Choosing between values elementwise: where and masked_fill."""

import math

import numpy as np

from tensorlab import backend
from tensorlab.ops.broadcast import broadcast_shape, unbroadcast
from tensorlab.ops.dtypes import promote
from tensorlab.tensor import Function


def _as_bool_mask(op_name, mask):
    if mask.dtype.kind != "b":
        raise TypeError(f"{op_name}: the condition/mask must be a boolean array, got dtype {mask.dtype}")
    return mask


def _fits(value, dtype):
    """Whether an integer dtype holds the number `value` once truncated toward 0 (as PyTorch converts it)."""
    return math.isfinite(value) and np.iinfo(dtype).min <= math.trunc(value) <= np.iinfo(dtype).max


class Where(Function):
    """where(condition, a, b): a where condition is True, else b (condition takes no gradient); a and b in
    PyTorch's common dtype (tensorlab.ops.dtypes)."""

    def __call__(self, condition, a, b):
        return super().__call__(condition, *promote("where", a, b))

    def forward(self, condition, a, b):
        self.condition = _as_bool_mask("where", condition)
        broadcast_shape("where", condition.shape, a.shape, b.shape)
        self.a_shape, self.b_shape = a.shape, b.shape
        return backend.array_module(a).where(condition, a, b)

    def backward(self, gy):
        # y = c ? a : b  =>  ga = gy where c, gb = gy where not c
        xp = backend.array_module(gy)
        zero = xp.zeros((), dtype=gy.dtype)
        ga = xp.where(self.condition, gy, zero)
        gb = xp.where(self.condition, zero, gy)
        return None, unbroadcast(ga, self.a_shape), unbroadcast(gb, self.b_shape)


class MaskedFill(Function):
    """masked_fill(x, mask, value): x with `value` (in x's dtype) wherever mask is True. x and mask broadcast, as
    in PyTorch: a mask wider than x gives the wider result."""

    name = "masked_fill"

    def __init__(self, value):
        self.value = value

    def forward(self, x, mask):
        self.mask = _as_bool_mask("masked_fill", mask)
        broadcast_shape("masked_fill", x.shape, mask.shape)
        if x.dtype.kind in "iu" and not _fits(self.value, x.dtype):  # a bool x takes any value's truth
            raise ValueError(f"masked_fill: the value {self.value} cannot be held by x's dtype {x.dtype} (as PyTorch)")
        self.x_shape = x.shape
        return backend.array_module(x).where(mask, x.dtype.type(self.value), x)

    def backward(self, gy):
        # y = mask ? value : x  =>  gx = gy where the mask is False, 0 where it is True (selected: an inf or NaN gy
        # gives 0 there), summed over the axes the mask added
        return unbroadcast(backend.array_module(gy).where(self.mask, gy.dtype.type(0), gy), self.x_shape), None
