"""Checking and normalising `axis` arguments, shared by the reductions and the shape ops."""


def normalize_axes(op_name, axis, ndim):
    """`axis` (None, an int or a tuple, negatives allowed) as a sorted tuple of non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    for a in axes:
        if not -ndim <= a < max(ndim, 1):
            raise ValueError(f"{op_name}: axis {a} is out of range for an array with {ndim} dimensions")
    normalized = tuple(sorted(a % max(ndim, 1) for a in axes))
    if len(set(normalized)) != len(normalized):
        raise ValueError(f"{op_name}: axis {axis} names the same axis twice")
    return normalized


def normalize_axis(op_name, axis, ndim):
    """One axis (negatives allowed) as a non-negative int."""
    return normalize_axes(op_name, int(axis), ndim)[0]


def expand_reduced(g, shape, axes):
    """Give a reduced gradient back its reduced axes as size 1, so it broadcasts against `shape`."""
    kept = [1 if i in axes else n for i, n in enumerate(shape)]
    return g.reshape(kept)
