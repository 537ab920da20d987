"""Elementwise ops: arithmetic and the pointwise functions.

Notation: x, y are inputs (or the output y of a unary op), gy the gradient flowing
back from the output, gx / gy_ the gradients flowing to each input.
"""

import math

import numpy as np

from tensorlab import backend, kernels
from tensorlab.kernels import gelu as fast
from tensorlab.ops.broadcast import broadcast_shape, unbroadcast
from tensorlab.ops.dtypes import floating, promote, result_type
from tensorlab.tensor import Function


class BinaryOp(Function):
    """Shared by the ops of two operands: casts them to PyTorch's result dtype (tensorlab.ops.dtypes; true division
    of integers gives the default float); when NumPy refuses their shapes, the error names the op."""

    def __call__(self, a, b):
        dtype = getattr(a, "dtype", None)
        if dtype is None or dtype.kind != "f" or getattr(b, "dtype", None) is not dtype:  # not two floats of one
            a, b = self._promoted(a, b)  # dtype (most ops of a step: nothing to check, nothing to cast)
        try:
            return super().__call__(a, b)
        except ValueError:  # were the shapes why? Asked only on failure: ops whose shapes fit pay nothing for it
            broadcast_shape(self.name or type(self).__name__.lower(), a.shape, b.shape)
            raise

    def _promoted(self, a, b):
        name, dtype = self.name or type(self).__name__.lower(), result_type(a, b)
        if self.refuses_bool(_is_bool(a), _is_bool(b)):
            raise TypeError(f"{name}: not defined for these bool operands, as in PyTorch; convert them to int first")
        return promote(name, a, b, dtype=floating(dtype) if isinstance(self, Div) else dtype)

    def refuses_bool(self, a_is_bool, b_is_bool):
        """Whether PyTorch refuses the op for these operands (sub: any bool, pow: two bools)."""
        return False


def _is_bool(v):
    return v.dtype.kind == "b" if hasattr(v, "dtype") else type(v) is bool


class Add(BinaryOp):
    def forward(self, a, b):
        self.shapes = a.shape, b.shape
        return a + b

    def backward(self, gy):
        # z = a + b  =>  ga = gy, gb = gy (each summed over its broadcast axes)
        return unbroadcast(gy, self.shapes[0]), unbroadcast(gy, self.shapes[1])


class Sub(BinaryOp):
    def refuses_bool(self, a_is_bool, b_is_bool):
        return a_is_bool or b_is_bool

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
        self.z = a / b
        return self.z

    def backward(self, gy):
        # z = a / b  =>  ga = gy / b, gb = -gy * a / b^2 = -gy * (z / b)  (z / b: no underflow of gy / b at 1e30)
        return unbroadcast(gy / self.b, self.a.shape), unbroadcast(-gy * (self.z / self.b), self.b.shape)


class Neg(Function):
    def forward(self, x):
        if x.dtype.kind == "b":
            raise TypeError("neg: -x of a bool tensor is not defined, as in PyTorch; for the opposite mask: x == False")
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
        if x.dtype.kind in "iu" and self.exponent < 0:
            raise ValueError(
                f"pow: {x.dtype} ** {self.exponent}: integers to negative integer powers are not defined, as in "
                f"PyTorch; convert x to float first"
            )
        self.x = x
        return _power(x, self.exponent).astype(x.dtype, copy=False)  # bool ** True: NumPy's int8, PyTorch's bool

    def backward(self, gy):
        # y = x^p  =>  gx = gy * p * x^(p-1)  (and 0 for p = 0, where x^-1 would give 0 * inf at x = 0)
        p = self.exponent
        if p == 0:
            return backend.array_module(gy).zeros_like(gy)
        return gy * (p * _power(self.x, p - 1))


def _power(x, p):
    """x ** p for a Python number p, as PyTorch's kernel: 1 / sqrt(x) for p = -0.5 (so (-inf) ** -0.5 is NaN and
    (-0.0) ** -0.5 is -inf, where C's pow gives 0 and inf), sqrt for 0.5 (NumPy's ** too), else C's pow."""
    if p == -0.5:
        with np.errstate(divide="ignore", invalid="ignore"):
            return 1 / backend.array_module(x).sqrt(x)
    return x**p


class PowTensor(BinaryOp):
    """a ** b with a tensor exponent b (either operand may be a Python number); both take a gradient."""

    name = "pow"

    def refuses_bool(self, a_is_bool, b_is_bool):
        return a_is_bool and b_is_bool

    def forward(self, a, b):
        if a.dtype.kind in "iu" and (b < 0).any():
            raise ValueError(
                f"pow: integers to negative integer powers are not computed ({a.dtype} tensors); convert to float first"
            )
        self.a, self.b = a, b
        self.y = _c_pow(a, b)
        return self.y

    def backward(self, gy):
        # y = a^b  =>  ga = gy * b a^(b-1), 0 where b = 0;  gb = gy * y ln(a), 0 where a = 0 and b >= 0
        # (the zeros as PyTorch: a^0 = 1 is flat in a, and 0^b = 0 for b > 0; a < 0 gives gb = NaN there too;
        # gb's zeros are multiplied by gy, so an inf or NaN gy gives NaN there, ga's not, both as PyTorch's)
        xp = backend.array_module(gy)
        a, b, zero = self.a, self.b, gy.dtype.type(0)
        with np.errstate(divide="ignore", invalid="ignore"):
            ga = xp.where(b == 0, zero, gy * (b * _c_pow(a, b - 1)))  # b a^(b-1) first, as PyTorch: inf alike
            gb = gy * xp.where((a == 0) & (b >= 0), zero, self.y * xp.log(a))
        return unbroadcast(ga, a.shape), unbroadcast(gb, b.shape)


def _c_pow(a, b):
    """C's pow elementwise, as PyTorch's pow of two tensors. NumPy's power takes sqrt for an exponent of 0.5 that
    repeats (stride 0, a 0-d array's too), which parts from pow at -inf (NaN, not inf), so the exponent is given in
    full, at least one axis long."""
    xp = backend.array_module(a)
    shape = np.broadcast_shapes(a.shape, b.shape)
    return xp.power(a, xp.array(xp.broadcast_to(b, shape), ndmin=1)).reshape(shape)


class Maximum(BinaryOp):
    """The larger of a and b, elementwise; Minimum changes only `pick`."""

    pick = "maximum"

    def forward(self, a, b):
        self.a, self.b = a, b
        return getattr(backend.array_module(a), self.pick)(a, b)

    def backward(self, gy):
        # z = max(a, b)  =>  ga = gy where a > b, gb = gy where b > a; at a tie a = b each gets gy / 2
        # (as torch.maximum: the two halves add up to gy, and neither operand is preferred); the loser's 0 is
        # selected, not gy * 0, so an inf or NaN gy gives it an exact 0
        xp, zero = backend.array_module(gy), gy.dtype.type(0)
        a_loses, b_loses = (self.a < self.b, self.a > self.b)
        if self.pick == "minimum":
            a_loses, b_loses = b_loses, a_loses
        share = xp.where(self.a == self.b, gy / 2, gy)
        ga, gb = xp.where(a_loses, zero, share), xp.where(b_loses, zero, share)
        return unbroadcast(ga, self.a.shape), unbroadcast(gb, self.b.shape)


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
        # else 0 (as torch.clamp; with low > high no x passes, as there), selected: an inf or NaN gy gives 0 there
        return backend.array_module(gy).where(self.passes, gy, gy.dtype.type(0))


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


def sigmoid(x):
    """1 / (1 + e^-x), and e^x / (1 + e^x) for x < 0: the exponent e^-|x| never overflows, and a tiny sigmoid
    keeps its digits (1 - 1 / (1 + e) would lose them, as would 0.5 (tanh(x / 2) + 1))."""
    xp = backend.array_module(x)
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e))


class Sigmoid(Function):
    def forward(self, x):
        self.y = sigmoid(x)
        return self.y

    def backward(self, gy):
        # y = sigmoid(x)  =>  gx = gy * y * (1 - y)
        return gy * self.y * (1 - self.y)


def log_sigmoid(x):
    """log sigmoid(x) = min(x, 0) - log(1 + e^-|x|): the exponent is never positive, and log1p keeps a tiny
    e^-|x| (log sigmoid(30) = -9.4e-14, where log(sigmoid(30)) in float64 gives that and in float32 gives 0)."""
    xp = backend.array_module(x)
    return xp.minimum(x, x.dtype.type(0)) - xp.log1p(xp.exp(-xp.abs(x)))


class LogSigmoid(Function):
    name = "logsigmoid"

    def forward(self, x):
        self.x = x
        return log_sigmoid(x)

    def backward(self, gy):
        # y = log sigmoid(x)  =>  gx = gy * sigmoid'(x) / sigmoid(x) = gy * (1 - sigmoid(x)) = gy * sigmoid(-x)
        return gy * sigmoid(-self.x)


class Softplus(Function):
    """log(1 + e^(beta x)) / beta, and x itself where beta x > threshold, as torch.nn.functional.softplus."""

    def __init__(self, beta=1.0, threshold=20.0):
        self.beta, self.threshold = beta, threshold

    def forward(self, x):
        xp = backend.array_module(x)
        self.linear = x * self.beta > self.threshold
        with np.errstate(over="ignore"):  # e^(beta x) overflows only where the linear branch is taken
            self.z = xp.exp(x * self.beta)
        return xp.where(self.linear, x, xp.log1p(self.z) / self.beta)

    def backward(self, gy):
        # y = log(1 + z) / beta, z = e^(beta x)  =>  gx = gy * z / (1 + z); gy where y = x (beta x > threshold)
        with np.errstate(invalid="ignore"):  # inf / inf where the linear branch is taken
            return backend.array_module(gy).where(self.linear, gy, gy * self.z / (self.z + 1))


class Relu(Function):
    def forward(self, x):
        if x.dtype.kind == "b":
            raise TypeError("relu: bool input is not supported (as PyTorch); convert it first, e.g. x.astype('int64')")
        xp = backend.array_module(x)
        # not x * (x > 0): that gives NaN at -inf. A row of zeros, not the number 0: NumPy 2.4's maximum has a
        # vector loop for two arrays only (84 against 216 us on (256, 1024) float32), and gives the same bits.
        y = xp.maximum(x, xp.zeros(x.shape[-1:], x.dtype))
        self.passes = y != 0  # y > 0, and NaN (y is never negative): PyTorch passes gy on where x is NaN
        return y

    def backward(self, gy):
        # y = max(x, 0)  =>  gx = gy where y > 0, else 0 (0 at x = 0, as PyTorch), selected: an inf or NaN gy gives 0
        xp = backend.array_module(gy)
        gx = gy * self.passes  # 15 times faster than where (NumPy 2.4); equal wherever gy is finite
        return gx if xp.isfinite(gx).all() else xp.where(self.passes, gy, gy.dtype.type(0))


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
        self.s = sigmoid(x)
        return x * self.s

    def backward(self, gy):
        # y = x s, s = sigmoid(x), s' = s (1 - s)  =>  gx = gy * s * (1 + x (1 - s))
        return gy * self.s * (1 + self.x * (1 - self.s))


def gelu_and_slope(x):
    """y = x Phi(x) and its slope dy/dx = Phi(x) + x phi(x), which the forward keeps for the backward.

    Phi is the standard normal CDF, Phi(x) = (1 + erf(x / sqrt 2)) / 2, and phi = Phi' its density,
    phi(x) = exp(-x^2/2) / sqrt(2 pi) (the product rule: d/dx x Phi(x) = Phi(x) + x phi(x)).
    """
    xp = backend.array_module(x)
    cdf = 0.5 * (1 + erf(x / math.sqrt(2)))
    pdf = xp.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    return x * cdf, cdf + x * pdf


def gelu_backward(gy, slope):
    # y = x Phi(x)  =>  gx = gy * (Phi(x) + x phi(x)),  phi(x) = exp(-x^2/2) / sqrt(2 pi)  (the slope, from forward)
    return gy * slope


def erf(x):
    """The error function, in x's dtype: CuPy's on a GPU; NumPy has none, so on the CPU Python's exact math.erf,
    one element at a time (slow: on the CPU in float32 the op's kernel, tensorlab/kernels/gelu.py, approximates it)."""
    if backend.is_cupy_array(x):
        return backend.cupy_erf(x)
    return np.asarray(_erf_exact(x), dtype=x.dtype)


_erf_exact = np.frompyfunc(math.erf, 1, 1)


class Gelu(Function):
    """GELU: x * Phi(x) with Phi the standard normal CDF ('none'), or its tanh approximation ('tanh').

    The exact form is gelu_and_slope and gelu_backward; on the CPU their kernels (tensorlab/kernels/gelu.py).
    """

    def __init__(self, approximate="none"):
        if approximate not in ("none", "tanh"):
            raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x):
        if self.approximate == "tanh":
            self.x = x
            self.t = backend.array_module(x).tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x**3))
            return 0.5 * x * (1 + self.t)
        y, self.slope = kernels.choose(fast.gelu_and_slope, gelu_and_slope, x)(x)
        return y

    def backward(self, gy):
        if self.approximate == "tanh":
            # y = x/2 (1 + t), t = tanh(u), u = c (x + 0.044715 x^3)
            #   =>  gx = gy * (1/2 (1 + t) + x/2 (1 - t^2) c (1 + 3 * 0.044715 x^2))
            x = self.x
            du = _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * x * x)
            return gy * (0.5 * (1 + self.t) + 0.5 * x * (1 - self.t * self.t) * du)
        return kernels.choose(fast.gelu_backward, gelu_backward, gy)(gy, self.slope)


_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
