"""The public functions over the ops: `import tensorlab.functional as F`.

Each function builds its op (a Function from tensorlab.ops) and applies it. Tensor
methods and operators (`x + y`, `x.sum(axis=0)`) call these too. Arguments follow
NumPy's names for array operations (axis, keepdims) and PyTorch's for the network
ones (eps, p, training, ignore_index, approximate, reduction); where a name is PyTorch's
(var's correction, squeeze, unsqueeze, flatten, clamp) so is its meaning.
"""

import math

import numpy as np

from tensorlab import backend
from tensorlab.ops import elementwise as _ew
from tensorlab.ops import losses as _losses
from tensorlab.ops import shape as _shape
from tensorlab.ops.attention import CausalAttention
from tensorlab.ops.axes import normalize_axes, normalize_axis
from tensorlab.ops.compare import compare
from tensorlab.ops.convert import AsType, ToDevice
from tensorlab.ops.cross_entropy import CrossEntropy, check_targets
from tensorlab.ops.dropout import Dropout
from tensorlab.ops.dtypes import cast, check_floating, check_same_dtype, floating, result_type
from tensorlab.ops.embedding import Embedding, check_ids
from tensorlab.ops.linear import Linear
from tensorlab.ops.matmul import MatMul
from tensorlab.ops.norm import LayerNorm, RMSNorm
from tensorlab.ops.reduce import Max, Mean, Min, Std, Sum, Var, arg_extreme
from tensorlab.ops.rope import Rope
from tensorlab.ops.select import MaskedFill, Where
from tensorlab.ops.softmax import LogSoftmax, Softmax
from tensorlab.tensor import Tensor

__all__ = [
    "add",
    "sub",
    "mul",
    "div",
    "neg",
    "pow",
    "exp",
    "log",
    "sqrt",
    "tanh",
    "sigmoid",
    "logsigmoid",
    "softplus",
    "maximum",
    "minimum",
    "clamp",
    "relu",
    "leaky_relu",
    "silu",
    "gelu",
    "sum",
    "mean",
    "max",
    "min",
    "var",
    "std",
    "all",
    "any",
    "argmax",
    "argmin",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "reshape",
    "broadcast_to",
    "squeeze",
    "unsqueeze",
    "flatten",
    "transpose",
    "swapaxes",
    "getitem",
    "concatenate",
    "stack",
    "split",
    "chunk",
    "matmul",
    "linear",
    "where",
    "masked_fill",
    "softmax",
    "log_softmax",
    "cross_entropy",
    "nll_loss",
    "mse_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "embedding",
    "rms_norm",
    "layer_norm",
    "dropout",
    "causal_attention",
    "rope",
    "to",
    "astype",
]


def add(a, b):
    return _ew.Add()(a, b)


def sub(a, b):
    return _ew.Sub()(a, b)


def mul(a, b):
    return _ew.Mul()(a, b)


def div(a, b):
    return _ew.Div()(a, b)


def neg(x):
    return _ew.Neg()(x)


def pow(x, exponent):  # noqa: A001 (NumPy's name)
    """x ** exponent. A Python number exponent takes no gradient; a tensor one does (and x may be a number)."""
    if isinstance(exponent, (int, float)) and isinstance(x, Tensor):
        return _ew.Pow(exponent)(cast("pow", x, result_type(x, exponent)))
    return _ew.PowTensor()(x, exponent)


def maximum(a, b):
    """The larger of a and b elementwise (they broadcast); at a tie each gets half the gradient, as PyTorch."""
    return _ew.Maximum()(a, b)


def minimum(a, b):
    """The smaller of a and b elementwise (they broadcast); at a tie each gets half the gradient, as PyTorch."""
    return _ew.Minimum()(a, b)


def clamp(x, min=None, max=None):  # noqa: A002 (PyTorch's names)
    """x limited to [min, max] (Python numbers; None: unbounded on that side), as torch.clamp: the gradient
    passes where min <= x <= max, limits included."""
    op = _ew.Clamp(min, max)
    return op(cast("clamp", x, result_type(x, min, max)))


def exp(x):
    return _ew.Exp()(_floating(x))


def log(x):
    return _ew.Log()(_floating(x))


def sqrt(x):
    return _ew.Sqrt()(_floating(x))


def tanh(x):
    return _ew.Tanh()(_floating(x))


def sigmoid(x):
    return _ew.Sigmoid()(_floating(x))


def logsigmoid(x):
    """log(sigmoid(x)), computed as min(x, 0) - log(1 + e^-|x|): finite and exact for any x."""
    check_floating("logsigmoid", _data(x))  # as PyTorch, which has no integer kernel for it
    return _ew.LogSigmoid()(x)


def softplus(x, beta=1.0, threshold=20.0):
    """log(1 + e^(beta x)) / beta, and x where beta x > threshold, as torch.nn.functional.softplus."""
    check_floating("softplus", _data(x))  # as PyTorch, which has no integer kernel for it
    return _ew.Softplus(beta, threshold)(x)


def relu(x):
    return _ew.Relu()(x)


def leaky_relu(x, negative_slope=0.01):
    """x where x > 0, else negative_slope * x (PyTorch's default slope)."""
    check_floating("leaky_relu", _data(x))  # as PyTorch, which has no integer kernel for it
    return _ew.LeakyRelu(negative_slope)(x)


def silu(x):
    check_floating("silu", _data(x))  # as PyTorch, which has no integer kernel for it
    return _ew.Silu()(x)  # x * sigmoid(x)


def to(x, device):
    """x on 'cpu' or 'cuda', in the graph: the gradient comes back to x's device (x itself if already there)."""
    backend.check_device_name(device)
    return x if device == x.device else ToDevice(device)(x)


def astype(x, dtype):
    """A copy of x in another dtype. To a floating dtype it stays in the graph (the gradient comes back in
    x's dtype); to an integer or bool dtype it takes no gradient (none is defined), as in PyTorch."""
    if np.dtype(dtype).kind != "f":
        return Tensor(x.data.astype(dtype))
    return AsType(dtype)(x)


def gelu(x, approximate="none"):
    """x * Phi(x) (exact, erf form, PyTorch's default) or its tanh approximation (approximate='tanh')."""
    check_floating("gelu", _data(x))  # as PyTorch, which has no integer kernel for it
    return _ew.Gelu(approximate)(x)


def sum(x, axis=None, keepdims=False):  # noqa: A001 (NumPy's name)
    """Sum over `axis` (None: all axes; an int or a tuple; negatives count from the end)."""
    return Sum(axis, keepdims)(x)


def mean(x, axis=None, keepdims=False):
    """Mean over `axis`, like `sum`."""
    return Mean(axis, keepdims)(x)


def max(x, axis=None, keepdims=False):  # noqa: A001 (NumPy's name)
    """Maximum over `axis`; tied maxima share the gradient equally (like torch.amax)."""
    return Max(axis, keepdims)(x)


def min(x, axis=None, keepdims=False):  # noqa: A001 (NumPy's name)
    """Minimum over `axis`; tied minima share the gradient equally (like torch.amin)."""
    return Min(axis, keepdims)(x)


def var(x, axis=None, keepdims=False, correction=1):
    """Variance over `axis`: sum (x - mean)^2 / (n - correction). correction=1 (unbiased) is PyTorch's
    default and meaning; NumPy's default is ddof=0, which is correction=0 here."""
    return Var(axis, keepdims, correction)(x)


def std(x, axis=None, keepdims=False, correction=1):
    """sqrt(var(x, axis, keepdims, correction)); correction=1 by default, as PyTorch."""
    return Std(axis, keepdims, correction)(x)


def all(x, axis=None, keepdims=False):  # noqa: A001 (NumPy's name)
    """Whether every element (along `axis`) is nonzero: a boolean tensor that takes no gradient."""
    return _truth("all", _data(x), axis, keepdims)


def any(x, axis=None, keepdims=False):  # noqa: A001 (NumPy's name)
    """Whether some element (along `axis`) is nonzero: a boolean tensor that takes no gradient."""
    return _truth("any", _data(x), axis, keepdims)


def _truth(op_name, x, axis, keepdims):
    axes = normalize_axes(op_name, axis, x.ndim)
    return Tensor(backend.array_module(x).asarray(getattr(x, op_name)(axis=axes, keepdims=keepdims)))


def argmax(x, axis=None, keepdims=False):
    """The index (int64) of the first maximum along one `axis`, or in the flattened x (axis None); no gradient."""
    return Tensor(arg_extreme("argmax", _data(x), axis, keepdims))


def argmin(x, axis=None, keepdims=False):
    """The index (int64) of the first minimum along one `axis`, or in the flattened x (axis None); no gradient."""
    return Tensor(arg_extreme("argmin", _data(x), axis, keepdims))


def eq(a, b):
    """a == b elementwise (they broadcast): a boolean tensor that takes no gradient."""
    return compare("eq", a, b)


def ne(a, b):
    """a != b elementwise: a boolean tensor that takes no gradient."""
    return compare("ne", a, b)


def lt(a, b):
    """a < b elementwise: a boolean tensor that takes no gradient."""
    return compare("lt", a, b)


def le(a, b):
    """a <= b elementwise: a boolean tensor that takes no gradient."""
    return compare("le", a, b)


def gt(a, b):
    """a > b elementwise: a boolean tensor that takes no gradient."""
    return compare("gt", a, b)


def ge(a, b):
    """a >= b elementwise: a boolean tensor that takes no gradient."""
    return compare("ge", a, b)


def reshape(x, shape):
    """The same elements in a new shape (one entry may be -1)."""
    return _shape.Reshape(shape)(x)


def broadcast_to(x, shape):
    """x repeated to `shape` by broadcasting (as torch.broadcast_to and Tensor.expand, -1 keeps x's size there)."""
    shape = tuple(shape)
    offset = len(shape) - x.ndim
    if offset < 0:
        raise ValueError(f"broadcast_to: shape {shape} has fewer axes than x's shape {x.shape}")
    if -1 in shape[:offset]:
        raise ValueError(f"broadcast_to: -1 (keep the size) cannot stand for a new leading axis in {shape}")
    shape = tuple(x.shape[i - offset] if n == -1 else n for i, n in enumerate(shape))
    return _shape.BroadcastTo(shape)(x)


def squeeze(x, axis=None):
    """x without its size-1 axes (axis None), or without those of `axis` (an int or tuple) that have size 1:
    as PyTorch, a named axis of another size stays (NumPy would raise)."""
    axes = normalize_axes("squeeze", axis, x.ndim)
    return _shape.Reshape([n for i, n in enumerate(x.shape) if not (i in axes and n == 1)])(x)


def unsqueeze(x, axis):
    """x with a new size-1 axis at position `axis` of the result (-1: last), as torch.unsqueeze."""
    axis = normalize_axis("unsqueeze", axis, x.ndim + 1)
    return _shape.Reshape(x.shape[:axis] + (1,) + x.shape[axis:])(x)


def flatten(x, start_axis=0, end_axis=-1):
    """Axes start_axis..end_axis (both included) merged into one, as torch.flatten; a 0-d x becomes (1,)."""
    if x.ndim == 0:
        for axis in (start_axis, end_axis):
            normalize_axes("flatten", axis, 0)  # only 0 and -1 pass
        return _shape.Reshape((1,))(x)
    start, end = normalize_axis("flatten", start_axis, x.ndim), normalize_axis("flatten", end_axis, x.ndim)
    if start > end:
        raise ValueError(f"flatten: start_axis {start_axis} comes after end_axis {end_axis} (x has shape {x.shape})")
    return _shape.Reshape(x.shape[:start] + (math.prod(x.shape[start : end + 1]),) + x.shape[end + 1 :])(x)


def transpose(x, axes=None):
    """Permute the axes (None reverses them)."""
    return _shape.Transpose(axes)(x)


def swapaxes(x, axis1, axis2):
    """Exchange two axes; of a 0-d x, axes 0 and -1 are x itself (as torch.transpose)."""
    if x.ndim == 0:
        for axis in (axis1, axis2):
            normalize_axes("swapaxes", axis, 0)  # only 0 and -1 pass
        return _shape.Transpose(())(x)
    axes = list(range(x.ndim))
    axis1, axis2 = normalize_axis("swapaxes", axis1, x.ndim), normalize_axis("swapaxes", axis2, x.ndim)
    axes[axis1], axes[axis2] = axes[axis2], axes[axis1]
    return _shape.Transpose(axes)(x)


def getitem(x, index):
    """x[index]: slices, ints, None, ..., boolean masks and integer arrays (repeats add up in backward)."""
    return _shape.GetItem(index)(x)


def concatenate(tensors, axis=0):
    """Join tensors along an existing axis."""
    _check_nonempty("concatenate", tensors)
    return _shape.Concatenate(axis)(*tensors)


def stack(tensors, axis=0):
    """Join same-shaped tensors along a new axis."""
    _check_nonempty("stack", tensors)
    return _shape.Stack(axis)(*tensors)


def split(x, split_size_or_sections, axis=0):
    """Cut x along `axis` into pieces, as torch.split: an int is the size of each piece (the last one may be
    smaller), a list gives every piece's size. Returns a tuple; `chunk` asks for a number of pieces instead."""
    length = x.shape[normalize_axis("split", axis, x.ndim)]
    if isinstance(split_size_or_sections, int):
        size = split_size_or_sections
        if size < 0 or size == 0 < length:  # 0 only for an empty axis, as torch.split: one empty piece
            raise ValueError(
                f"split: the piece size must be a positive int (0 only for an empty axis), got {size} "
                f"for an axis of {length} (for a number of pieces use chunk)"
            )
        whole, rest = divmod(length, size or 1)
        sizes = [size] * whole + [rest] * (rest > 0) or [0]  # the last may be short
    else:
        sizes = list(split_size_or_sections)
    pieces = _shape.Split(sizes, axis)(x)
    return pieces if isinstance(pieces, tuple) else (pieces,)


def chunk(x, chunks, axis=0):
    """Cut x along `axis` into `chunks` pieces, as torch.chunk: each ceil(length / chunks) long, the last one
    shorter (so fewer pieces come back when the length is too short to make them all; an empty axis gives
    `chunks` empty pieces)."""
    if not isinstance(chunks, int) or chunks <= 0:
        raise ValueError(f"chunk: the number of pieces must be a positive int, got {chunks!r}")
    length = x.shape[normalize_axis("chunk", axis, x.ndim)]
    if length == 0:  # as torch.chunk: `chunks` empty pieces
        return split(x, [0] * chunks, axis)
    return split(x, -(-length // chunks), axis)  # ceil(length / chunks)


def matmul(a, b):
    """Matrix product a @ b; leading (batch) axes broadcast, 1-D operands are vectors, as in NumPy."""
    return MatMul()(a, b)


def linear(x, weight, bias=None):
    """x W^T + b with weight (out, in), as torch.nn.functional.linear; one fused op."""
    return Linear()(x, weight) if bias is None else Linear()(x, weight, bias)


def where(condition, a, b):
    """a where `condition` (a boolean array) is True, else b; all three broadcast."""
    return Where()(condition, a, b)


def masked_fill(x, mask, value):
    """x with `value` wherever the boolean `mask` (broadcast to x) is True."""
    return MaskedFill(value)(x, mask)


def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along `axis`, stable; a fully -inf row gives zeros."""
    return Softmax(axis)(x)


def log_softmax(x, axis=-1):
    """log(softmax(x)) along `axis`, computed without forming softmax."""
    return LogSoftmax(axis)(x)


def cross_entropy(logits, targets, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """-log softmax(logits)[target] over the last axis, rows whose target is ignore_index (any int) left out:
    their mean ('mean', over the rows not ignored), 'sum', or each row's ('none', 0 where ignored), as
    PyTorch. label_smoothing e aims at (1 - e) onehot + e / V instead of the one-hot target.

    Targets given on the host for logits on a GPU are checked on the host, then moved: no GPU sync.
    """
    options = ignore_index, reduction, label_smoothing
    moved = _checked_on_host(targets, logits, lambda t: check_targets(_data(logits), t, ignore_index))
    if moved is None:
        return CrossEntropy(*options)(logits, targets)
    return CrossEntropy(*options, targets_checked=True)(logits, moved)


def nll_loss(log_probs, targets, ignore_index=-100, reduction="mean"):
    """-log_probs[..., target] over the last axis (class ids; ignore_index rows left out), reduced as
    cross_entropy: cross_entropy(x, t) is nll_loss(log_softmax(x), t)."""
    return _losses.NllLoss(ignore_index, reduction)(log_probs, targets)


def mse_loss(x, target, reduction="mean"):
    """(x - target)^2, averaged ('mean'), added ('sum') or elementwise ('none'); same shapes."""
    return _losses.MseLoss(reduction)(x, target)


def binary_cross_entropy(p, target, reduction="mean"):
    """-(t log p + (1 - t) log(1 - p)) for probabilities p in [0, 1], each log clamped at -100 (as PyTorch)."""
    return _losses.BinaryCrossEntropy(reduction)(p, target)


def binary_cross_entropy_with_logits(x, target, reduction="mean"):
    """binary_cross_entropy(sigmoid(x), target) computed from the logits x, stable for any |x|."""
    return _losses.BinaryCrossEntropyWithLogits(reduction)(x, target)


def embedding(ids, weight):
    """Rows of `weight` (V, C) picked by integer `ids`: output shape ids.shape + (C,).

    Ids given on the host for a weight on a GPU are checked on the host, then moved: no GPU sync.
    """
    moved = _checked_on_host(ids, weight, lambda i: check_ids(i, weight.shape))
    return Embedding()(ids, weight) if moved is None else Embedding(ids_checked=True)(moved, weight)


def _floating(x):
    """x itself if it holds floats; an integer or bool tensor in the default float dtype (float32): exp, log, sqrt,
    tanh and sigmoid of integers give float32 in PyTorch, where NumPy gives float64."""
    return cast("float", x, floating(x.dtype)) if isinstance(x, Tensor) else x


def _data(x):
    return x.data if isinstance(x, Tensor) else x


def _checked_on_host(ids, like, check):
    """Host `ids` for an op whose other input `like` is on a GPU: check(ids) on the host, then move them.

    None when there is nothing to gain (both on one device): the op checks the ids itself.
    Checking ids on the GPU needs their verdict on the host, a sync that stalls the GPU.
    """
    ids, device = _data(ids), backend.device_of(_data(like))
    if device == "cpu" or backend.device_of(ids) != "cpu":
        return None
    ids = np.asarray(ids)
    check(ids)
    return backend.to_device(ids, device)


def rms_norm(x, weight=None, eps=1e-5):
    """x / sqrt(mean(x^2) + eps) * weight, over the last axis."""
    _check_normalizable("rms_norm", x)
    weight = _filled_like_last_axis(x, 1) if weight is None else cast("rms_norm", weight, x.dtype)  # x's, as PyTorch
    return x * weight if x.shape[-1] == 0 else RMSNorm(eps)(x, weight)  # no features: empty, as PyTorch


def layer_norm(x, weight=None, bias=None, eps=1e-5):
    """(x - mean) / sqrt(var + eps) * weight + bias, over the last axis."""
    _check_normalizable("layer_norm", x)
    weight = _filled_like_last_axis(x, 1) if weight is None else weight
    bias = _filled_like_last_axis(x, 0) if bias is None else bias
    if x.shape[-1] == 0:  # no features: empty, as PyTorch, which checks the dtypes still
        check_same_dtype("layer_norm", *(_data(v) for v in (x, weight, bias)))
        return x * weight + bias
    return LayerNorm(eps)(x, weight, bias)


def _check_normalizable(op_name, x):
    """A floating x with a last axis to normalise over: PyTorch refuses integers, bools and 0-d tensors too."""
    check_floating(op_name, _data(x))
    if x.ndim == 0:
        raise ValueError(f"{op_name}: x must have a last axis to normalise over, got a 0-d tensor (as PyTorch)")


def dropout(x, p=0.5, training=True):
    """Zero each element with probability p and scale the rest by 1/(1-p); identity when not training.

    As PyTorch: p is checked, training or not; x is returned as it is when nothing is dropped (not training,
    p = 0, or x empty), and zeros of its dtype when all is (p = 1); only a scaling mask needs a floating x."""
    op = Dropout(p)  # checks p
    if not training or p == 0 or x.size == 0:
        return x
    if p == 1 and x.dtype.kind != "f":
        return Tensor(backend.array_module(_data(x)).zeros_like(_data(x)))  # no gradient: an int or bool x has none
    check_floating("dropout", _data(x))  # as PyTorch, whose mask of floats cannot scale an integer or bool x
    return op(x)


def _filled_like_last_axis(x, value):
    """A constant (C,) tensor for a missing weight or bias; x is (..., C)."""
    xp = backend.array_module(x.data)
    return Tensor(xp.full(x.shape[-1:], value, dtype=x.dtype))


def _check_nonempty(op_name, tensors):
    if len(tensors) == 0:
        raise ValueError(f"{op_name}: needs at least one tensor, got an empty sequence")


def causal_attention(q, k, v, dropout_p=0.0, training=False):
    """softmax(q k^T / sqrt(D) + causal mask) (dropout) v for (B, H, T, D) inputs, as one fused op."""
    return CausalAttention(dropout_p, training)(q, k, v)


def rope(x, cos, sin):
    """Rotary position embedding of x (..., T, D) with (T, D) tables: x cos + rotate_half(x) sin, one fused op."""
    return Rope()(x, cos, sin)
