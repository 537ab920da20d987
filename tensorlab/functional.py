"""The public functions over the ops: `import tensorlab.functional as F`.

Each function builds its op (a Function from tensorlab.ops) and applies it. Tensor
methods and operators (`x + y`, `x.sum(axis=0)`) call these too. Arguments follow
NumPy's names for array operations (axis, keepdims) and PyTorch's for the network
ones (eps, p, training, ignore_index, approximate).
"""

import numpy as np

from tensorlab import backend
from tensorlab.ops import elementwise as _ew
from tensorlab.ops import shape as _shape
from tensorlab.ops.attention import CausalAttention
from tensorlab.ops.axes import normalize_axis
from tensorlab.ops.convert import AsType, ToDevice
from tensorlab.ops.cross_entropy import CrossEntropy, check_targets
from tensorlab.ops.dropout import Dropout
from tensorlab.ops.embedding import Embedding, check_ids
from tensorlab.ops.linear import Linear
from tensorlab.ops.matmul import MatMul
from tensorlab.ops.norm import LayerNorm, RMSNorm
from tensorlab.ops.reduce import Max, Mean, Sum
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
    "relu",
    "silu",
    "gelu",
    "sum",
    "mean",
    "max",
    "reshape",
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


def pow(x, exponent):
    return _ew.Pow(exponent)(x)  # noqa: A001 (NumPy's name)


def exp(x):
    return _ew.Exp()(x)


def log(x):
    return _ew.Log()(x)


def sqrt(x):
    return _ew.Sqrt()(x)


def tanh(x):
    return _ew.Tanh()(x)


def sigmoid(x):
    return _ew.Sigmoid()(x)


def relu(x):
    return _ew.Relu()(x)


def silu(x):
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


def reshape(x, shape):
    """The same elements in a new shape (one entry may be -1)."""
    return _shape.Reshape(shape)(x)


def transpose(x, axes=None):
    """Permute the axes (None reverses them)."""
    return _shape.Transpose(axes)(x)


def swapaxes(x, axis1, axis2):
    """Exchange two axes."""
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
        if size <= 0:
            raise ValueError(
                f"split: the piece size must be a positive int, got {size} (for a number of pieces use chunk)"
            )
        sizes = [min(size, length - start) for start in range(0, length, size)] or [0]
    else:
        sizes = list(split_size_or_sections)
    pieces = _shape.Split(sizes, axis)(x)
    return pieces if isinstance(pieces, tuple) else (pieces,)


def chunk(x, chunks, axis=0):
    """Cut x along `axis` into `chunks` pieces, as torch.chunk: each ceil(length / chunks) long, the last one
    shorter (so fewer pieces come back when the length is too short to make them all)."""
    if not isinstance(chunks, int) or chunks <= 0:
        raise ValueError(f"chunk: the number of pieces must be a positive int, got {chunks!r}")
    length = x.shape[normalize_axis("chunk", axis, x.ndim)]
    return split(x, -(-length // chunks) or 1, axis)  # ceil(length / chunks)


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


def cross_entropy(logits, targets, ignore_index=-100):
    """Mean of -log softmax(logits)[target] over the last axis, skipping targets equal to ignore_index.

    Targets given on the host for logits on a GPU are checked on the host, then moved: no GPU sync.
    """
    moved = _checked_on_host(targets, logits, lambda t: check_targets(_data(logits), t, ignore_index))
    if moved is None:
        return CrossEntropy(ignore_index)(logits, targets)
    return CrossEntropy(ignore_index, targets_checked=True)(logits, moved)


def embedding(ids, weight):
    """Rows of `weight` (V, C) picked by integer `ids`: output shape ids.shape + (C,).

    Ids given on the host for a weight on a GPU are checked on the host, then moved: no GPU sync.
    """
    moved = _checked_on_host(ids, weight, lambda i: check_ids(i, weight.shape))
    return Embedding()(ids, weight) if moved is None else Embedding(ids_checked=True)(moved, weight)


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
    return RMSNorm(eps)(x, _filled_like_last_axis(x, 1) if weight is None else weight)


def layer_norm(x, weight=None, bias=None, eps=1e-5):
    """(x - mean) / sqrt(var + eps) * weight + bias, over the last axis."""
    weight = _filled_like_last_axis(x, 1) if weight is None else weight
    bias = _filled_like_last_axis(x, 0) if bias is None else bias
    return LayerNorm(eps)(x, weight, bias)


def dropout(x, p=0.5, training=True):
    """Zero each element with probability p and scale the rest by 1/(1-p); identity when not training."""
    if not training or p == 0:
        return x
    return Dropout(p)(x)


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
