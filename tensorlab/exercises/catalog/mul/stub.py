"""Exercise `mul`: the gradient of an elementwise product, with broadcasting.

Forward (written for you):  y = a * b

NumPy broadcasting may repeat a or b to match the other's shape: with a of shape (3, 4)
and b of shape (4,), every row of y uses the same b[j], so y[i, j] = a[i, j] * b[j].

Your task: write `backward(gy)`. `gy` is dL/dy, the gradient of some loss L with respect
to y (it has y's shape). Return `ga, gb`: dL/da and dL/db, with the shapes of a and b.

Hint: start from one element. y[i, j] = a[i, j] * b[j] gives dL/da[i, j] = gy[i, j] * b[j].
b[j] was used in every row, and each use adds to the loss, so dL/db[j] is a sum over the
rows. In general: sum over the axes broadcasting added in front, and over the axes where
the input had size 1 (keep those as size 1).

Check it:  python -m tensorlab.exercises check mul THIS_FILE.py
"""
import numpy as np  # noqa: F401 (for your backward)

from tensorlab.tensor import Function


class Mul(Function):
    def forward(self, a, b):
        self.a, self.b = a, b
        return a * b

    def backward(self, gy):
        # TODO: ga = ..., gb = ..., each summed back to the shape of its input
        raise NotImplementedError("Mul.backward: compute ga and gb, then return ga, gb")
