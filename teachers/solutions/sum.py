"""Reference solution for exercise `sum`: y = x.sum(axis, keepdims)."""
import numpy as np

from tensorlab.tensor import Function


class Sum(Function):
    def __init__(self, axis=None, keepdims=False):
        self.axis, self.keepdims = axis, keepdims

    def forward(self, x):
        self.x_shape = x.shape
        summed = range(x.ndim) if self.axis is None else np.atleast_1d(self.axis)
        self.axes = tuple(sorted(int(a) % x.ndim for a in summed))  # e.g. axis=-1 on 3-D x: (2,)
        return x.sum(axis=self.axis, keepdims=self.keepdims)

    def backward(self, gy):
        # y = sum_j x_j  =>  gx_j = gy: each x_j gets the gradient of the sum it went into
        if not self.keepdims:
            gy = np.expand_dims(gy, self.axes)                  # the summed axes back, as size 1
        return np.broadcast_to(gy, self.x_shape).copy()          # copied along them, (x's shape)
