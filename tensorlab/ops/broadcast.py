"""Broadcasting, and undoing it in backward.

When `x` of shape (3,) is added to `y` of shape (2, 3), NumPy repeats `x` along a new
leading axis. Each copy of x[j] contributes to the output, so the gradient of x[j] is
the sum of the upstream gradient over the copies: sum over the axes that broadcasting
added (leading ones) and over the axes where x had size 1. Every binary op's backward
calls `unbroadcast` for that.
"""

import numpy as np


def broadcast_shape(op_name, *shapes):
    """The shape NumPy broadcasting gives `shapes`, or a ValueError that names the op."""
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        listed = " and ".join(str(tuple(s)) for s in shapes)
        raise ValueError(
            f"{op_name}: shapes {listed} cannot be broadcast together; trailing axes must be "
            f"equal or 1 (NumPy broadcasting rules)"
        ) from None


def broadcast_axes(grad_shape, shape):
    """The axes of `grad_shape` to sum over to bring a gradient back to `shape`."""
    leading = len(grad_shape) - len(shape)
    stretched = tuple(leading + i for i, n in enumerate(shape) if n == 1 and grad_shape[leading + i] != 1)
    return tuple(range(leading)) + stretched


def unbroadcast(grad, shape):
    """Sum `grad` over the broadcast axes so it has `shape` again."""
    shape = tuple(shape)
    if grad.shape == shape:
        return grad
    # keepdims where no axis was added: the size-1 axes stay, and only a sum over both kinds needs a reshape
    return reshaped(grad.sum(axis=broadcast_axes(grad.shape, shape), keepdims=grad.ndim == len(shape)), shape)


def reshaped(grad, shape):
    """grad in `shape`, as itself where it has that shape already: a fresh array stays fresh, not a view, which a
    leaf keeps as its .grad without a copy (Tensor.backward copies a view: its memory may be another's too)."""
    return grad if grad.shape == shape else grad.reshape(shape)
