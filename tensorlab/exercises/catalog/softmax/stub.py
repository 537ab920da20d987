"""Exercise `softmax`: the gradient of softmax along one axis.

Forward (written for you):  y = softmax(x) along `axis`:  y_i = exp(x_i) / sum_j exp(x_j)
(the forward subtracts the max first so exp never overflows; that changes nothing in y).

Your task: write `backward(gy)`. `gy` is dL/dy (shape of y); return gx = dL/dx (shape of x).

Hint: every y_i depends on every x_j of its row. Derive the Jacobian
    dy_i/dx_j = y_i * (delta_ij - y_j)        (delta_ij = 1 if i == j else 0)
then gx_j = sum_i gy_i * dy_i/dx_j. Simplify that sum on paper: you need no (n, n) matrix,
only y, gy and one sum along `self.axis` (keepdims=True keeps it broadcastable).

Check it:  python -m tensorlab.exercises check softmax THIS_FILE.py
"""
import numpy as np

from tensorlab.tensor import Function


class Softmax(Function):
    def __init__(self, axis=-1):
        self.axis = axis

    def forward(self, x):
        e = np.exp(x - x.max(axis=self.axis, keepdims=True))    # minus the max: nothing overflows
        self.y = e / e.sum(axis=self.axis, keepdims=True)
        return self.y

    def backward(self, gy):
        # TODO: gx = ...
        raise NotImplementedError("Softmax.backward: compute gx, then return it")
