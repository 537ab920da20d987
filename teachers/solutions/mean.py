"""Reference solution for exercise `mean`: y = x.mean(axis, keepdims)."""
import math

import numpy as np

from tensorlab.tensor import Function


class Mean(Function):
    def __init__(self, axis=None, keepdims=False):
        self.axis, self.keepdims = axis, keepdims

    def forward(self, x):
        self.x_shape = x.shape
        averaged = range(x.ndim) if self.axis is None else np.atleast_1d(self.axis)
        self.axes = tuple(sorted(int(a) % x.ndim for a in averaged))  # e.g. axis=-1 on 3-D x: (2,)
        return x.mean(axis=self.axis, keepdims=self.keepdims)

    def backward(self, gy):
        # y = (1/n) sum_j x_j  =>  gx_j = gy / n,  n = the number of elements averaged
        n = math.prod(self.x_shape[a] for a in self.axes)
        if not self.keepdims:
            gy = np.expand_dims(gy, self.axes)                  # the averaged axes back, as size 1
        return np.broadcast_to(gy / n, self.x_shape).copy()      # copied along them, (x's shape)
