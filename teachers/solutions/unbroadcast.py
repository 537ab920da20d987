"""Reference solution for exercise `unbroadcast`."""


def unbroadcast(grad, shape):
    """Sum `grad` over the axes broadcasting added or stretched, so that it has `shape`."""
    leading = grad.ndim - len(shape)                                  # axes added in front
    stretched = tuple(leading + i for i, n in enumerate(shape) if n == 1 and grad.shape[leading + i] != 1)
    return grad.sum(axis=tuple(range(leading)) + stretched, keepdims=True).reshape(shape)
