"""Matrix product with NumPy's rules: the last two axes multiply, leading axes broadcast."""

from tensorlab.ops.broadcast import broadcast_shape, reshaped, unbroadcast
from tensorlab.ops.dtypes import check_same_dtype
from tensorlab.tensor import Function


class MatMul(Function):
    def forward(self, a, b):
        if a.ndim == 0 or b.ndim == 0:
            raise ValueError(f"matmul: operands must have at least 1 dimension, got shapes {a.shape} and {b.shape}")
        check_same_dtype("matmul", a, b)
        # A 1-D operand is a row (left) or column (right) vector, dropped again from the result.
        self.a_shape, self.b_shape = a.shape, b.shape
        a2 = a.reshape(1, -1) if a.ndim == 1 else a
        b2 = b.reshape(-1, 1) if b.ndim == 1 else b
        if a2.shape[-1] != b2.shape[-2]:
            raise ValueError(
                f"matmul: shapes {a.shape} and {b.shape} do not fit: the last axis of the first ({a2.shape[-1]}) "
                f"must equal the second-to-last axis of the second ({b2.shape[-2]})"
            )
        if a2.shape[:-2] != b2.shape[:-2]:  # the batch axes (none, for two matrices) must broadcast
            broadcast_shape(f"matmul of {a.shape} and {b.shape}: batch axes", a2.shape[:-2], b2.shape[:-2])
        self.a, self.b = a2, b2
        y = a2 @ b2
        self.y_shape = y.shape
        if a2 is a and b2 is b:  # no vector axis to drop (and no reshape: a view costs a memory check per op)
            return y
        return y.reshape(_drop_vector_axes(y.shape, a.ndim == 1, b.ndim == 1))

    def backward(self, gy):
        # Y = A B  =>  gA = gY B^T,  gB = A^T gY  (then summed over broadcast batch axes)
        gy = reshaped(gy, self.y_shape)
        ga = unbroadcast(gy @ self.b.swapaxes(-1, -2), self.a.shape)
        gb = unbroadcast(self.a.swapaxes(-1, -2) @ gy, self.b.shape)
        return reshaped(ga, self.a_shape), reshaped(gb, self.b_shape)


def _drop_vector_axes(shape, a_was_vector, b_was_vector):
    """The result's shape once the axes added for 1-D operands are removed."""
    if a_was_vector and b_was_vector:
        return shape[:-2]
    if a_was_vector:
        return shape[:-2] + shape[-1:]
    if b_was_vector:
        return shape[:-1]
    return shape
