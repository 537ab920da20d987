"""Reference solution for exercise `mul`: y = a * b with broadcasting."""
from tensorlab.tensor import Function


class Mul(Function):
    def forward(self, a, b):
        self.a, self.b = a, b
        return a * b

    def backward(self, gy):
        # y = a * b  =>  ga = gy * b, gb = gy * a, each summed over the axes broadcasting stretched
        return unbroadcast(gy * self.b, self.a.shape), unbroadcast(gy * self.a, self.b.shape)


def unbroadcast(g, shape):
    """Sum g over the axes broadcasting added in front or stretched from size 1, giving `shape`."""
    leading = g.ndim - len(shape)
    stretched = tuple(leading + i for i, n in enumerate(shape) if n == 1 and g.shape[leading + i] != 1)
    return g.sum(axis=tuple(range(leading)) + stretched, keepdims=True).reshape(shape)
