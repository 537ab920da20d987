"""Exercise `sum`: the gradient of a sum over some axes.

Forward (written for you):  y = x.sum(axis=axis, keepdims=keepdims)
`axis` is None (every axis), an int or a tuple of ints; `keepdims=True` keeps the summed
axes as size 1. For x of shape (3, 4, 5) and axis=1, y has shape (3, 5), or (3, 1, 5) with
keepdims.

Your task: write `backward(gy)`. `gy` is dL/dy (shape of y); return gx = dL/dx, which has
x's shape (3, 4, 5), not y's.

Hint: y[i, k] = sum_j x[i, j, k], so dy[i, k]/dx[i, j, k] = 1 for every j. Every x[i, j, k]
gets the gradient of the one output it was added into. Put the summed axes back as size 1
(np.expand_dims; `self.axes` lists them), then copy along them (np.broadcast_to(...).copy()).

Check it:  python -m tensorlab.exercises check sum THIS_FILE.py
"""
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
        # TODO: gx = ... (shape self.x_shape)
        raise NotImplementedError("Sum.backward: compute gx, then return it")
