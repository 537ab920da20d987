"""Reference solution for exercise `var`: y = sum (x - m)^2 / (n - correction), m the mean."""
import numpy as np

from tensorlab.tensor import Function


class Var(Function):
    def __init__(self, axis=None, keepdims=False, correction=1):
        self.axis, self.keepdims, self.correction = axis, keepdims, correction

    def forward(self, x):
        self.x_shape = x.shape
        reduced = range(x.ndim) if self.axis is None else np.atleast_1d(self.axis)
        self.axes = tuple(sorted(int(a) % x.ndim for a in reduced))  # e.g. axis=-1 on 3-D x: (2,)
        n = int(np.prod([x.shape[a] for a in self.axes]))
        self.dof = n - self.correction
        self.centered = x - x.mean(axis=self.axis, keepdims=True)
        return (self.centered**2).sum(axis=self.axis, keepdims=self.keepdims) / self.dof

    def backward(self, gy):
        # y = sum_i (x_i - m)^2 / (n - c)  =>  gx_j = gy * 2 (x_j - m) / (n - c)
        # (the path through m adds -2/(n (n - c)) sum_i (x_i - m) = 0: the deviations sum to zero)
        if not self.keepdims:
            gy = np.expand_dims(gy, self.axes)  # the reduced axes back, as size 1
        return gy * 2 * self.centered / self.dof  # broadcasts along them: x's shape
