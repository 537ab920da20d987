"""Shape ops: they move elements around, so their backward moves gradients back."""

import math

import numpy as np

from tensorlab import backend
from tensorlab.ops.axes import normalize_axis
from tensorlab.ops.broadcast import broadcast_shape, unbroadcast
from tensorlab.ops.dtypes import promote
from tensorlab.tensor import Function


class Reshape(Function):
    def __init__(self, shape):
        self.shape = tuple(shape)

    def forward(self, x):
        self.x_shape = x.shape
        try:
            return x.reshape(self.shape)
        except ValueError:
            raise ValueError(
                f"reshape: cannot reshape an array of shape {x.shape} ({x.size} elements) into shape {self.shape}"
            ) from None

    def backward(self, gy):
        # y = x viewed with another shape  =>  gx = gy viewed with x's shape
        return gy.reshape(self.x_shape)


class BroadcastTo(Function):
    """x repeated along new leading axes and along its size-1 axes, as NumPy's broadcast_to (torch.expand)."""

    name = "broadcast_to"

    def __init__(self, shape):
        self.shape = tuple(shape)

    def forward(self, x):
        self.x_shape = x.shape
        if broadcast_shape("broadcast_to", x.shape, self.shape) != self.shape:
            raise ValueError(
                f"broadcast_to: an array of shape {x.shape} cannot be broadcast to shape {self.shape}; "
                f"each axis must match or be 1 in x"
            )
        return backend.array_module(x).broadcast_to(x, self.shape).copy()  # a copy: a broadcast view is read-only

    def backward(self, gy):
        # y = x copied along the broadcast axes  =>  gx = gy summed over the copies (page 3's unbroadcast)
        return unbroadcast(gy, self.x_shape)


class Transpose(Function):
    """Permute axes; axes=None reverses them."""

    def __init__(self, axes=None):
        self.axes = axes

    def forward(self, x):
        axes = (
            tuple(range(x.ndim))[::-1]
            if self.axes is None
            else tuple(normalize_axis("transpose", a, x.ndim) for a in self.axes)
        )
        if sorted(axes) != list(range(x.ndim)):
            raise ValueError(
                f"transpose: axes {self.axes} are not a permutation of the {x.ndim} axes of shape {x.shape}"
            )
        self.perm = axes
        return x.transpose(axes)

    def backward(self, gy):
        # y = x with axes permuted by p  =>  gx = gy permuted by the inverse of p
        inverse = [0] * len(self.perm)
        for i, a in enumerate(self.perm):
            inverse[a] = i
        return gy.transpose(inverse)


class GetItem(Function):
    """x[index] for slices, ints, None, Ellipsis, boolean masks and integer arrays."""

    name = "getitem"

    def __init__(self, index):
        self.index = index

    def forward(self, x):
        self.index = _index_on_device(self.index, x)
        _check_integer_arrays_in_bounds(self.index, x.shape)
        _check_axis_order_is_pytorchs(self.index, x.ndim)
        self.x_shape = x.shape
        try:
            return x[self.index]
        except IndexError as error:
            raise IndexError(f"getitem: index {_shown(self.index)} does not fit shape {x.shape}: {error}") from None

    def backward(self, gy):
        # y = x[i]  =>  gx[i] += gy; an integer array may repeat an index, whose gradients then add up
        xp = backend.array_module(gy)
        if not _has_integer_array(self.index):  # slices, ints, masks: each element of x is picked at most once
            gx = xp.zeros(self.x_shape, dtype=gy.dtype)
            gx[self.index] = gy
            return gx
        size = math.prod(self.x_shape)
        picked = xp.arange(size).reshape(self.x_shape)[self.index]  # the flat position in x of each element of y
        return backend.segment_sum(picked.reshape(-1), gy.reshape(-1), size).reshape(self.x_shape)


def _has_integer_array(index):
    parts = index if isinstance(index, tuple) else (index,)
    return any(getattr(getattr(part, "dtype", None), "kind", None) in ("i", "u") for part in parts)


def _index_on_device(index, x):
    """Move integer or boolean index arrays (and Tensors) onto the device of x."""
    from tensorlab.tensor import Tensor

    parts = index if isinstance(index, tuple) else (index,)
    moved = []
    for part in parts:
        if isinstance(part, Tensor):
            part = part.data
        if isinstance(part, list) or hasattr(part, "dtype"):
            part = backend.array_module(x).asarray(
                backend.to_device(part, backend.device_of(x)) if hasattr(part, "dtype") else part
            )
        moved.append(part)
    return tuple(moved) if isinstance(index, tuple) else moved[0]


def _check_axis_order_is_pytorchs(index, ndim):
    """Raise where NumPy and PyTorch put the axes of an integer-array index in different places.

    Both put the array's axes where the array was when the advanced indices sit side by side, else first.
    They differ on ints: NumPy counts an int among the advanced indices, PyTorch applies it first (it only
    drops its axis). So x[1, :, 2:4, idx] has idx's axes first in NumPy (1 and idx are apart) and last in
    PyTorch (after the int, idx is alone): one line, instead of a silently different shape.
    """
    parts = index if isinstance(index, tuple) else (index,)
    kinds = [_index_kind(part) for part in parts]
    if "array" not in kinds:
        return
    numpy_group = [i for i, kind in enumerate(kinds) if kind in ("array", "int")]
    torch_kinds = [kind for kind in kinds if kind != "int"]
    torch_group = [i for i, kind in enumerate(torch_kinds) if kind == "array"]
    if _side_by_side(numpy_group) or not _side_by_side(torch_group):
        return  # both keep the arrays' place (an int in the group drops the same axis), or both put them first
    used = 0  # the axes of x the index consumes, so the axes an Ellipsis stands for are the rest
    for part, kind in zip(parts, kinds):
        if kind == "array":
            used += part.ndim if part.dtype.kind == "b" else 1
        elif kind == "int" or isinstance(part, slice):
            used += 1
    before = 0  # the axes PyTorch's result has before the arrays' axes
    for part, kind in zip(parts, kinds):
        if kind == "array":
            break
        if part is Ellipsis:
            before += ndim - used
        elif kind == "other":
            before += 1  # a slice keeps an axis, None adds one
    if before > 0:
        raise IndexError(
            f"getitem: index {_shown(index)} mixes ints and integer arrays apart from each other; NumPy puts the "
            f"arrays' axes first, PyTorch in place of the arrays: index in two steps, the ints first "
            f"(x[1, :, idx] as x[1][:, idx]), or move the axes yourself"
        )


def _shown(index):
    """The index's repr on one line, for an error (an array's repr spans lines; a long one is cut short)."""
    with np.printoptions(threshold=8, edgeitems=3):
        return " ".join(repr(index).split())


def _index_kind(part):
    """'array' (an integer or boolean array of 1 or more dimensions), 'int' (an int or 0-d integer array) or
    'other' (a slice, None, Ellipsis, a 0-d boolean)."""
    if hasattr(part, "dtype") and part.dtype.kind in "iub" and part.ndim > 0:
        return "array"
    if isinstance(part, int) and not isinstance(part, bool) or hasattr(part, "dtype") and part.dtype.kind in "iu":
        return "int"
    return "other"


def _side_by_side(positions):
    return positions == list(range(positions[0], positions[0] + len(positions)))


def _check_integer_arrays_in_bounds(index, shape):
    """Raise for an integer-array index outside [-n, n): NumPy would, but CuPy wraps it silently (i % n)."""
    parts = index if isinstance(index, tuple) else (index,)
    width = [
        0 if p is None or p is Ellipsis else p.ndim if getattr(getattr(p, "dtype", None), "kind", None) == "b" else 1
        for p in parts
    ]
    axis = 0
    for i, part in enumerate(parts):
        if part is Ellipsis:
            axis = len(shape) - sum(width[i + 1 :])
            continue
        if hasattr(part, "dtype") and part.dtype.kind in "iu" and part.size and axis < len(shape):
            n, low, high = shape[axis], int(part.min()), int(part.max())
            if low < -n or high >= n:
                bad = low if low < -n else high
                raise IndexError(
                    f"getitem: index {bad} is out of bounds for axis {axis} of size {n} "
                    f"(x has shape {shape}); indices must be in [-{n}, {n - 1}]"
                )
        axis += width[i]


class Concatenate(Function):
    def __init__(self, axis=0):
        self.axis = axis

    def __call__(self, *xs):  # in PyTorch's common dtype (tensorlab.ops.dtypes): int64 with float32 is float32
        return super().__call__(*promote("concatenate", *xs))

    def forward(self, *xs):
        axis = normalize_axis("concatenate", self.axis, xs[0].ndim)
        _check_same_shape_except("concatenate", xs, axis)
        self.axis, self.sizes = axis, [x.shape[axis] for x in xs]
        return backend.array_module(xs[0]).concatenate(xs, axis=axis)

    def backward(self, gy):
        # y = [x_1 | x_2 | ...] along axis  =>  gx_k = the k-th slice of gy along that axis
        return tuple(_split_at(gy, self.sizes, self.axis))


class Stack(Function):
    def __init__(self, axis=0):
        self.axis = axis

    def __call__(self, *xs):  # in PyTorch's common dtype, as concatenate
        return super().__call__(*promote("stack", *xs))

    def forward(self, *xs):
        axis = normalize_axis("stack", self.axis, xs[0].ndim + 1)
        _check_same_shape_except("stack", xs, None)
        self.axis = axis
        return backend.array_module(xs[0]).stack(xs, axis=axis)

    def backward(self, gy):
        # y[..., k, ...] = x_k  =>  gx_k = gy[..., k, ...]
        xp = backend.array_module(gy)
        return tuple(xp.take(gy, k, axis=self.axis) for k in range(gy.shape[self.axis]))


class Split(Function):
    """Split along an axis into consecutive pieces of the given sizes (a list that adds up to the axis length)."""

    def __init__(self, sizes, axis=0):
        self.sizes, self.axis = list(sizes), axis

    def forward(self, x):
        axis = normalize_axis("split", self.axis, x.ndim)
        length = x.shape[axis]
        if sum(self.sizes) != length or min(self.sizes, default=0) < 0:
            raise ValueError(
                f"split: sizes {self.sizes} must be non-negative and add up to {length}, "
                f"the length of axis {axis} of shape {x.shape}"
            )
        self.axis = axis
        return tuple(_split_at(x, self.sizes, axis))

    def backward(self, *gys):
        # y_k = k-th slice of x  =>  gx = [gy_1 | gy_2 | ...] along the axis
        return backend.array_module(gys[0]).concatenate(gys, axis=self.axis)


def _split_at(x, sizes, axis):
    """Slices of x along `axis` with the given lengths."""
    pieces, start = [], 0
    for size in sizes:
        index = [slice(None)] * x.ndim
        index[axis] = slice(start, start + size)
        pieces.append(x[tuple(index)])
        start += size
    return pieces


def _check_same_shape_except(op_name, xs, axis):
    """Every array must have the first one's shape, except along `axis` (None: on every axis)."""
    first = xs[0].shape
    for x in xs[1:]:
        same = len(x.shape) == len(first) and all(a == b for i, (a, b) in enumerate(zip(x.shape, first)) if i != axis)
        if not same:
            along = f" except along axis {axis}" if axis is not None else ""
            shapes = ", ".join(str(x.shape) for x in xs)
            raise ValueError(f"{op_name}: all inputs must have the same shape{along}; got {shapes}")
