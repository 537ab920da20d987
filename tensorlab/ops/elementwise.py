"""Elementwise ops: arithmetic and the pointwise functions.

Notation: x, y are inputs (or the output y of a unary op), gy the gradient flowing
back from the output, gx / gy_ the gradients flowing to each input.
"""

import math

import numpy as np

from tensorlab import backend, threads
from tensorlab.ops.broadcast import broadcast_shape, unbroadcast
from tensorlab.ops.dtypes import promote
from tensorlab.tensor import Function


class BinaryOp(Function):
    """Shared by the ops of two operands: casts them to PyTorch's result dtype, checks that they broadcast."""

    def __call__(self, a, b):
        a, b = promote(a, b, true_divide=isinstance(self, Div))
        shapes = [getattr(v, "shape", ()) for v in (a, b)]
        broadcast_shape(type(self).__name__.lower(), *shapes)
        return super().__call__(a, b)


class Add(BinaryOp):
    def forward(self, a, b):
        self.shapes = a.shape, b.shape
        return a + b

    def backward(self, gy):
        # z = a + b  =>  ga = gy, gb = gy (each summed over its broadcast axes)
        return unbroadcast(gy, self.shapes[0]), unbroadcast(gy, self.shapes[1])


class Sub(BinaryOp):
    def forward(self, a, b):
        self.shapes = a.shape, b.shape
        return a - b

    def backward(self, gy):
        # z = a - b  =>  ga = gy, gb = -gy
        return unbroadcast(gy, self.shapes[0]), unbroadcast(-gy, self.shapes[1])


class Mul(BinaryOp):
    def forward(self, a, b):
        self.a, self.b = a, b
        return a * b

    def backward(self, gy):
        # z = a * b  =>  ga = gy * b, gb = gy * a
        return unbroadcast(gy * self.b, self.a.shape), unbroadcast(gy * self.a, self.b.shape)


class Div(BinaryOp):
    def forward(self, a, b):
        self.a, self.b = a, b
        return a / b

    def backward(self, gy):
        # z = a / b  =>  ga = gy / b, gb = -gy * a / b^2
        ga = gy / self.b
        return unbroadcast(ga, self.a.shape), unbroadcast(-ga * self.a / self.b, self.b.shape)


class Neg(Function):
    def forward(self, x):
        return -x

    def backward(self, gy):
        # y = -x  =>  gx = -gy
        return -gy


class Pow(Function):
    """x ** p for a Python number p (the exponent takes no gradient); PowTensor takes a tensor p."""

    def __init__(self, exponent):
        if not isinstance(exponent, (int, float)):
            raise TypeError(f"pow: the exponent must be a Python int or float, got {type(exponent).__name__}")
        self.exponent = exponent

    def forward(self, x):
        self.x = x
        return x**self.exponent

    def backward(self, gy):
        # y = x^p  =>  gx = gy * p * x^(p-1)  (and 0 for p = 0, where x^-1 would give 0 * inf at x = 0)
        p = self.exponent
        if p == 0:
            return backend.array_module(gy).zeros_like(gy)
        return gy * (p * self.x ** (p - 1))


class PowTensor(BinaryOp):
    """a ** b with a tensor exponent b (either operand may be a Python number); both take a gradient."""

    name = "pow"

    def forward(self, a, b):
        self.a, self.b = a, b
        self.y = a**b
        return self.y

    def backward(self, gy):
        # y = a^b  =>  ga = gy * b a^(b-1), 0 where b = 0;  gb = gy * y ln(a), 0 where a = 0 and b >= 0
        # (the zeros as PyTorch: a^0 = 1 is flat in a, and 0^b = 0 for b > 0; a < 0 gives gb = NaN there too)
        xp = backend.array_module(gy)
        a, b, zero = self.a, self.b, gy.dtype.type(0)
        with np.errstate(divide="ignore", invalid="ignore"):
            ga = xp.where(b == 0, zero, gy * b * a ** (b - 1))
            gb = xp.where((a == 0) & (b >= 0), zero, gy * self.y * xp.log(a))
        return unbroadcast(ga, a.shape), unbroadcast(gb, b.shape)


class Maximum(BinaryOp):
    """The larger of a and b, elementwise; Minimum changes only `pick`."""

    pick = "maximum"

    def forward(self, a, b):
        self.a, self.b = a, b
        return getattr(backend.array_module(a), self.pick)(a, b)

    def backward(self, gy):
        # z = max(a, b)  =>  ga = gy where a > b, gb = gy where b > a; at a tie a = b each gets gy / 2
        # (as torch.maximum: the two halves add up to gy, and neither operand is preferred)
        a_wins = self.a > self.b if self.pick == "maximum" else self.a < self.b
        share_a = a_wins.astype(gy.dtype) + (self.a == self.b).astype(gy.dtype) / 2
        ga = gy * share_a
        return unbroadcast(ga, self.a.shape), unbroadcast(gy - ga, self.b.shape)


class Minimum(Maximum):
    """The smaller of a and b, elementwise: Maximum's backward with the smaller one winning (ties share)."""

    pick = "minimum"


class Clamp(Function):
    """x limited to [min, max], Python numbers (None: no limit on that side), as torch.clamp.

    min > max gives max everywhere, as in PyTorch. Tensor limits: use maximum and minimum, whose ties
    share the gradient (torch.clamp with tensor limits gives it all to x; see differences-from-pytorch.md).
    """

    def __init__(self, min=None, max=None):  # noqa: A002 (PyTorch's names)
        for side, limit in (("min", min), ("max", max)):
            if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, float))):
                raise TypeError(
                    f"clamp: {side} must be a Python number or None, got {type(limit).__name__}; "
                    f"for tensor limits use maximum(x, low) and minimum(x, high)"
                )
        if min is None and max is None:
            raise ValueError("clamp: at least one of min and max must be a number (both are None)")
        self.low, self.high = min, max

    def forward(self, x):
        xp = backend.array_module(x)
        y, self.passes = x, xp.ones(x.shape, dtype=bool)
        if self.low is not None:
            y, self.passes = xp.maximum(y, self.low), self.passes & (x >= self.low)
        if self.high is not None:
            y, self.passes = xp.minimum(y, self.high), self.passes & (x <= self.high)
        return y

    def backward(self, gy):
        # y = min(max(x, low), high)  =>  gx = gy where low <= x <= high (the limits themselves included),
        # else 0 (as torch.clamp; with low > high no x passes, as there)
        return gy * self.passes


class Exp(Function):
    def forward(self, x):
        self.y = backend.array_module(x).exp(x)
        return self.y

    def backward(self, gy):
        # y = exp(x)  =>  gx = gy * y
        return gy * self.y


class Log(Function):
    def forward(self, x):
        self.x = x
        return backend.array_module(x).log(x)

    def backward(self, gy):
        # y = log(x)  =>  gx = gy / x
        return gy / self.x


class Sqrt(Function):
    def forward(self, x):
        self.y = backend.array_module(x).sqrt(x)
        return self.y

    def backward(self, gy):
        # y = sqrt(x)  =>  gx = gy / (2 y)
        return gy / (2 * self.y)


class Tanh(Function):
    def forward(self, x):
        self.y = backend.array_module(x).tanh(x)
        return self.y

    def backward(self, gy):
        # y = tanh(x)  =>  gx = gy * (1 - y^2)
        return gy * (1 - self.y * self.y)


class Sigmoid(Function):
    def forward(self, x):
        xp = backend.array_module(x)
        # 1 / (1 + e^-x) written through tanh, which never overflows for large |x|
        self.y = 0.5 * (xp.tanh(0.5 * x) + 1)
        return self.y

    def backward(self, gy):
        # y = sigmoid(x)  =>  gx = gy * y * (1 - y)
        return gy * self.y * (1 - self.y)


class Relu(Function):
    def forward(self, x):
        self.positive = x > 0
        return backend.array_module(x).maximum(x, 0)  # not x * (x > 0): that gives NaN at -inf

    def backward(self, gy):
        # y = max(x, 0)  =>  gx = gy where x > 0, else 0 (0 at x = 0, as PyTorch)
        return gy * self.positive


class LeakyRelu(Function):
    """x where x > 0, negative_slope * x elsewhere."""

    name = "leaky_relu"

    def __init__(self, negative_slope=0.01):
        self.slope = negative_slope

    def forward(self, x):
        self.positive = x > 0
        return backend.array_module(x).where(self.positive, x, x * self.slope)

    def backward(self, gy):
        # y = x if x > 0 else a x  =>  gx = gy where x > 0, else a gy (a at x = 0, as PyTorch)
        return backend.array_module(gy).where(self.positive, gy, gy * self.slope)


class Silu(Function):
    """SiLU (swish): x * sigmoid(x), the gate of the SwiGLU feed-forward block (PaLM, LLaMA)."""

    def forward(self, x):
        self.x = x
        self.s = 0.5 * (backend.array_module(x).tanh(0.5 * x) + 1)  # sigmoid(x), overflow-free as in Sigmoid
        return x * self.s

    def backward(self, gy):
        # y = x s, s = sigmoid(x), s' = s (1 - s)  =>  gx = gy * s * (1 + x (1 - s))
        return gy * self.s * (1 + self.x * (1 - self.s))


class Gelu(Function):
    """GELU: x * Phi(x) with Phi the standard normal CDF ('none'), or its tanh approximation ('tanh')."""

    def __init__(self, approximate="none"):
        if approximate not in ("none", "tanh"):
            raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x):
        xp = backend.array_module(x)
        if self.approximate == "tanh":
            self.x = x
            self.t = xp.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x**3))
            return 0.5 * x * (1 + self.t)
        # about fifteen passes per element: done block by block so each block stays in cache
        x = xp.ascontiguousarray(x).reshape(x.shape)  # ascontiguousarray makes a 0-d x 1-d
        y, self.slope = xp.empty_like(x), xp.empty_like(x)
        flat_x, flat_y, flat_slope = x.reshape(-1), y.reshape(-1), self.slope.reshape(-1)
        threads.for_each_block(
            lambda b: _gelu_and_slope(flat_x[b], flat_y[b], flat_slope[b]),
            backend.cache_blocks(x.size, 8 * x.itemsize, x),
        )
        return y

    def backward(self, gy):
        if self.approximate == "tanh":
            # y = x/2 (1 + t), t = tanh(u), u = c (x + 0.044715 x^3)
            #   =>  gx = gy * (1/2 (1 + t) + x/2 (1 - t^2) c (1 + 3 * 0.044715 x^2))
            x = self.x
            du = _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * x * x)
            return gy * (0.5 * (1 + self.t) + 0.5 * x * (1 - self.t * self.t) * du)
        # y = x Phi(x)  =>  gx = gy * (Phi(x) + x phi(x)),  phi(x) = exp(-x^2/2) / sqrt(2 pi)
        # (the slope came from forward)
        return gy * self.slope


_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)


def _gelu_and_slope(x, y, slope):
    """Write y = x Phi(x) and slope = dy/dx = Phi(x) + x phi(x) for one block of x.

    Phi(x) = (1 + erf(x / sqrt 2)) / 2 and phi(x) = exp(-x^2/2) / sqrt(2 pi). NumPy has no
    erf: float64 uses the exact math.erf (slow, for gradient checks); float32 uses
    Abramowitz & Stegun 7.1.26, erf(z) = 1 - t (a1 + t (a2 + ... a5 t)) exp(-z^2) with
    t = 1 / (1 + 0.3275911 z), whose error (below 1.5e-7) is under float32's resolution
    near 1. With z = |x| / sqrt 2, its exp(-z^2) is exp(-x^2/2): the pdf comes for free.
    """
    xp = backend.array_module(x)
    gauss = xp.exp(-0.5 * x * x)  # exp(-x^2/2)
    if backend.is_cupy_array(x):
        cdf = 0.5 * (1 + backend.cupy_erf(x * x.dtype.type(1 / math.sqrt(2))))
    elif x.dtype == np.float64:
        cdf = 0.5 * (1 + _erf_exact(x / math.sqrt(2)).astype(np.float64))
    else:
        t = np.abs(x)
        t *= 0.3275911 / math.sqrt(2)
        t += 1
        np.reciprocal(t, out=t)  # t = 1 / (1 + p |x| / sqrt 2)
        cdf = t * 1.061405429  # Horner: t (a1 + t (a2 + ... a5 t))
        for a in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
            cdf += a
            cdf *= t
        cdf *= gauss
        cdf *= -0.5
        cdf += 0.5  # 1/2 - tail, tail = 1 - Phi(|x|)
        np.copysign(cdf, x, out=cdf)  # Phi(x) - 1/2 keeps the sign of x
        cdf += 0.5
    xp.multiply(x, cdf, out=y)
    gauss *= x.dtype.type(1 / math.sqrt(2 * math.pi))  # phi(x)
    gauss *= x
    xp.add(cdf, gauss, out=slope)


_erf_exact = np.frompyfunc(math.erf, 1, 1)
