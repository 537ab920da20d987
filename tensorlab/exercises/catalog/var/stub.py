"""Exercise `var`: the gradient of a variance over some axes.

Forward (written for you):  y = sum_i (x_i - m)^2 / (n - correction),  m = x.mean(axis, keepdims=True)
as x.var(axis=axis, keepdims=keepdims, correction=correction) in PyTorch (correction=1, the
unbiased estimate, by default; NumPy's ddof). `axis` is None (every axis), an int or a tuple.

Your task: write `backward(gy)`. `gy` is dL/dy (shape of y); return gx = dL/dx, with x's
shape.

Hint: each x_j enters y twice: in its own square (x_j - m)^2, and through the mean m, which
moves every square (dm/dx_j = 1/n). Differentiate both paths, then add up the second one over
all i: what is sum_i (x_i - m)? The forward keeps x - m as `self.centered` and n - correction
as `self.dof`. Do `sum` and `mean` first.

Check it:  python -m tensorlab.exercises check var THIS_FILE.py
"""
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
        # TODO: gx = ... (shape self.x_shape)
        raise NotImplementedError("Var.backward: compute gx, then return it")
