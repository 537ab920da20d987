"""Reductions: sum, mean and max over one or several axes."""

from tensorlab import backend
from tensorlab.ops.axes import expand_reduced, normalize_axes
from tensorlab.tensor import Function


class Reduction(Function):
    """Shared by the reductions: the axes to reduce and whether to keep them as size 1."""

    def __init__(self, axis=None, keepdims=False):
        self.axis, self.keepdims = axis, keepdims

    def forward(self, x):
        self.axes = normalize_axes(type(self).__name__.lower(), self.axis, x.ndim)
        self.x_shape = x.shape
        return self.reduce(x)


class Sum(Reduction):
    def reduce(self, x):
        return x.sum(axis=self.axes, keepdims=self.keepdims)

    def backward(self, gy):
        # y = sum_i x_i  =>  gx_i = gy (copied back along the summed axes)
        xp = backend.array_module(gy)
        return xp.broadcast_to(expand_reduced(gy, self.x_shape, self.axes), self.x_shape).copy()


class Mean(Reduction):
    def reduce(self, x):
        return x.mean(axis=self.axes, keepdims=self.keepdims)

    def backward(self, gy):
        # y = (1/n) sum_i x_i  =>  gx_i = gy / n, n = number of elements averaged
        count = 1
        for a in self.axes:
            count *= self.x_shape[a]
        xp = backend.array_module(gy)
        return xp.broadcast_to(expand_reduced(gy, self.x_shape, self.axes) / count, self.x_shape).copy()


class Max(Reduction):
    def reduce(self, x):
        if x.size == 0:
            raise ValueError(f"max: cannot reduce an empty array of shape {x.shape}")
        self.x = x
        self.y = x.max(axis=self.axes, keepdims=True)
        return self.y if self.keepdims else self.y.reshape([n for i, n in enumerate(x.shape) if i not in self.axes])

    def backward(self, gy):
        # y = max_i x_i  =>  gx_i = gy where x_i is the max, shared equally among ties (as PyTorch)
        share = (self.x == self.y).astype(gy.dtype)
        share /= share.sum(axis=self.axes, keepdims=True)
        return expand_reduced(gy, self.x.shape, self.axes) * share
