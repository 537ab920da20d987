"""Exercise `mean`: the gradient of a mean over some axes.

Forward (written for you):  y = x.mean(axis=axis, keepdims=keepdims)
`axis` is None (every axis), an int or a tuple of ints; `keepdims=True` keeps the averaged
axes as size 1.

Your task: write `backward(gy)`. `gy` is dL/dy (shape of y); return gx = dL/dx, with x's
shape.

Hint: a mean is a sum divided by n, the number of elements averaged. For x of shape
(3, 4, 5) and axis=1, y[i, k] = (1/4) sum_j x[i, j, k]. With axis=(0, 2), how many
elements go into each y? Do the `sum` exercise first: this one differs by one factor.

Check it:  python -m tensorlab.exercises check mean THIS_FILE.py
"""
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
        # TODO: gx = ... (shape self.x_shape)
        raise NotImplementedError("Mean.backward: compute gx, then return it")
