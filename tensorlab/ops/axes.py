"""Checking and normalising `axis` arguments, shared by the reductions and the shape ops."""

import operator


def normalize_axes(op_name, axis, ndim):
    """`axis` (None, an int or a tuple, negatives allowed) as a sorted tuple of non-negative axes.

    A 0-d array has no axes, but axis 0 and -1 name the array itself, as in PyTorch: they give ().
    """
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    for a in axes:
        if not -max(ndim, 1) <= a < max(ndim, 1):
            raise ValueError(f"{op_name}: axis {a} is out of range for an array with {ndim} dimensions")
    if ndim == 0:
        return ()
    normalized = tuple(sorted(a % ndim for a in axes))
    if len(set(normalized)) != len(normalized):
        raise ValueError(f"{op_name}: axis {axis} names the same axis twice")
    return normalized


def axis_tuple(op_name, axis, ndim):
    """One axis as a 1-tuple of a non-negative int; () for a 0-d array, whose axis 0 and -1 name itself."""
    try:
        axis = operator.index(axis)
    except TypeError:
        raise TypeError(f"{op_name}: axis must be one int, got {axis!r}") from None
    return normalize_axes(op_name, axis, ndim)


def normalize_axis(op_name, axis, ndim):
    """One axis (negatives allowed) as a non-negative int; a 0-d array has none (PyTorch refuses it too)."""
    if ndim == 0:
        raise ValueError(f"{op_name}: needs an array with at least one dimension, got a 0-d array (axis {axis})")
    return normalize_axes(op_name, int(axis), ndim)[0]


def expand_reduced(g, shape, axes):
    """Give a reduced gradient back its reduced axes as size 1, so it broadcasts against `shape`."""
    kept = [1 if i in axes else n for i, n in enumerate(shape)]
    return g.reshape(kept)
