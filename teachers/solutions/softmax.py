"""Reference solution for exercise `softmax`: y = softmax(x) along one axis."""
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
        # dy_i/dx_j = y_i (delta_ij - y_j)  =>  gx_j = sum_i gy_i y_i (delta_ij - y_j) = y_j (gy_j - sum_i gy_i y_i)
        return self.y * (gy - (gy * self.y).sum(axis=self.axis, keepdims=True))
