"""Exercise `matmul`: the gradient of a matrix product.

Forward (written for you):  y = a @ b,  a of shape (n, k), b of shape (k, m), y of shape (n, m)

Your task: write `backward(gy)`. `gy` is dL/dy, the gradient of some loss L with respect
to y (shape (n, m)). Return `ga, gb`: dL/da of shape (n, k) and dL/db of shape (k, m).

Hint: write one element, y[i, j] = sum_p a[i, p] * b[p, j], and differentiate:
    dL/da[i, p] = sum_j gy[i, j] * b[p, j]
    dL/db[p, j] = sum_i ...
then recognise each sum as a matrix product (which factor is transposed, and in what
order?). Check the shapes: only one arrangement gives (n, k) for ga.

Check it:  python -m tensorlab.exercises check matmul THIS_FILE.py
"""
import numpy as np  # noqa: F401 (for your backward)

from tensorlab.tensor import Function


class MatMul(Function):
    def forward(self, a, b):
        self.a, self.b = a, b
        return a @ b

    def backward(self, gy):
        # TODO: ga = ..., gb = ...
        raise NotImplementedError("MatMul.backward: compute ga and gb, then return ga, gb")
