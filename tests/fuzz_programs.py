"""The differential fuzzer's op table: for every op, how to call it in tensorlab and in PyTorch, and what it takes.

An `Op` is a name, one line of code for each side and a generator. The code is an expression (or statements that
set `out`) over `x`, the value the program has so far, and the names the generator returns:

    Op("softmax", "F.softmax(x, axis)", "torch.softmax(x, axis)", one_axis)

`gen(r, x)` sees the value as PyTorch computed it (a NumPy array) and returns the names, or None when the op cannot
take x (the program picks another op). It draws legal arguments mostly and illegal ones sometimes (an axis out of
range, a shape that does not broadcast, a dtype the op refuses): then both frameworks must refuse. A NumPy array
becomes a leaf tensor on each side (requiring grad when it is floating), a `Const` one that requires none, a list
of arrays a list of tensors; anything else is passed as it is. The same code strings run the op and print the
reproducer (tests/fuzz_torch.py), so what is printed is what was run.
"""

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as TF

import tensorlab as tl
import tensorlab.functional as F
from tensorlab import nn, optim

DTYPES = ("float32", "float64", "int64", "bool")
FLOATS = ("float32", "float64")
TORCH_DTYPES = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64, "bool": torch.bool}
SPECIALS = [0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan, 1e30, -1e30, 1e-30, 20.0, -20.0, 100.0, -100.0]
SPECIALS += [1000.0, -1000.0, 0.5]


@dataclass(frozen=True)
class Op:
    name: str
    tl: str  # tensorlab: an expression, or statements that set `out`
    torch: str  # PyTorch: the same meaning
    gen: object  # gen(r, x) -> dict of names for the code, or None when the op cannot take x
    terminal: bool = False  # the result is a Python value: nothing can follow it


@dataclass(frozen=True)
class Const:
    """An array that becomes a tensor taking no gradient (class ids, masks, a target PyTorch takes no grad of)."""

    array: np.ndarray


class Same:
    """The argument is x itself (x + x): the gradient of one leaf from two places."""


SAME = Same()


# ----- drawing values and shapes ----------------------------------------------------------------------------------


def values(r, shape, dtype, special=0.0, unit=False):
    """An array of `dtype`: normal floats (sometimes halves, so that ties occur), small ints, random bools;
    a fraction `special` of the floats replaced by zeros, infinities, NaN, huge and tiny numbers."""
    if dtype == "bool":
        return np.asarray(r.random(shape) < 0.5)
    if dtype == "int64":
        return np.asarray(r.integers(-2, 6, shape), dtype=np.int64)
    a = np.asarray(r.random(shape) if unit else r.standard_normal(shape) * 2)
    if r.random() < 0.3:
        a = np.array(np.round(a * 2) / 2)
    if special:
        mask = r.random(shape) < special
        choices = [0.0, 1.0, 0.5, math.nan] if unit else SPECIALS
        a[mask] = r.choice(choices, int(mask.sum()))
        if a.ndim and a.size and r.random() < 0.4:  # a whole slice of one value: -inf rows of a softmax
            axis = int(r.integers(a.ndim))
            a[(slice(None),) * axis + (int(r.integers(a.shape[axis])),)] = r.choice([-math.inf, -math.inf, math.nan])
    return np.asarray(a.astype(dtype))


def random_shape(r, max_ndim=4):
    ndim = int(r.choice(5, p=[0.15, 0.3, 0.3, 0.15, 0.1]))
    return tuple(int(n) for n in r.choice(6, size=min(ndim, max_ndim), p=[0.05, 0.2, 0.25, 0.25, 0.15, 0.1]))


def broadcast_partner(r, shape):
    """A shape that broadcasts with `shape` (rarely one that does not)."""
    shape, u = list(shape), r.random()
    if u < 0.4:
        return tuple(shape)
    if u < 0.55:
        return ()
    if u < 0.7:
        return tuple(shape[int(r.integers(0, len(shape) + 1)) :])
    if u < 0.85:
        return tuple(1 if r.random() < 0.5 else n for n in shape)
    if u < 0.95:
        return (int(r.integers(1, 3)), *shape)
    bad = [i for i, n in enumerate(shape) if n > 1]
    if bad:
        shape[bad[0]] += 1
    return tuple(shape)


def some_dtype(r, x):
    """Mostly x's own dtype, else any of the four (so promotion rules are exercised)."""
    return str(x.dtype) if r.random() < 0.5 else str(r.choice(DTYPES))


def other_operand(r, x, scalars=True):
    """The second operand of a binary op: a tensor of a broadcasting shape and some dtype, or a Python number."""
    if scalars and r.random() < 0.25:
        kind = r.choice(["float", "int", "bool", "special"])
        if kind == "float":
            return float(np.round(r.standard_normal() * 3, 1))
        if kind == "int":
            return int(r.integers(-3, 4))
        return bool(r.random() < 0.5) if kind == "bool" else float(r.choice(SPECIALS))
    if r.random() < 0.05:
        return SAME
    return values(r, broadcast_partner(r, x.shape), some_dtype(r, x), special=0.1 * (r.random() < 0.3))


def an_axis(r, ndim, tuples=True, none=True):
    """None, an int (negatives too) or a tuple of distinct axes; rarely an axis out of range."""
    u = r.random()
    if none and u < 0.2:
        return None
    if u < 0.05 + 0.2 * none:
        return int(r.choice([ndim, -ndim - 1, max(ndim, 1)]))
    span = max(ndim, 1)
    if tuples and u > 0.8 and ndim >= 1:
        k = int(r.integers(1, ndim + 1))
        return tuple(int(a) - span * int(r.random() < 0.3) for a in r.choice(ndim, size=k, replace=False))
    return int(r.integers(-span, span))


def flag(r, p=0.5):
    return bool(r.random() < p)


# ----- generators, one per argument pattern ------------------------------------------------------------------------


def nothing(r, x):
    return {}


def binary(r, x):
    return {"y": other_operand(r, x)}


def binary_tensors(r, x):  # maximum, minimum: PyTorch takes tensors only
    return {"y": other_operand(r, x, scalars=False)}


def pow_args(r, x):
    u = r.random()
    if u < 0.4:
        return {"y": int(r.choice([-2, -1, 0, 1, 2, 3]))}
    if u < 0.7:
        return {"y": float(r.choice([0.5, -0.5, 2.0, 1.5, -1.0, 0.0, 3.0]))}
    return {"y": other_operand(r, x)}


def matmul_args(r, x):
    if x.ndim == 0 and r.random() < 0.9:
        return None
    k = x.shape[-1] if x.ndim else 2
    if r.random() < 0.07:
        k += 1  # does not match
    n = int(r.integers(0, 4))
    shape = r.choice(3)
    shape = (k,) if shape == 0 else (k, n) if shape == 1 else (int(r.integers(1, 3)), k, n)
    return {"y": values(r, shape, str(x.dtype) if r.random() < 0.85 else some_dtype(r, x))}


def linear_args(r, x):
    if x.ndim == 0 and r.random() < 0.9:
        return None
    k = (x.shape[-1] if x.ndim else 2) + (r.random() < 0.05)
    n = int(r.integers(0, 4))
    dtype = str(x.dtype) if r.random() < 0.9 else some_dtype(r, x)
    bias = values(r, (n,), dtype) if r.random() < 0.7 else None
    return {"w": values(r, (n, k), dtype), "b": bias}


def where_args(r, x):
    mask = Const(np.asarray(r.random(broadcast_partner(r, x.shape)) < 0.5))
    if r.random() < 0.05:
        mask = Const(values(r, mask.array.shape, "int64"))  # not boolean: both refuse
    return {"c": mask, "y": other_operand(r, x)}


def masked_fill_args(r, x):
    mask = np.asarray(r.random(broadcast_partner(r, x.shape)) < 0.5)
    value = float(r.choice([0.0, -math.inf, 1.5, -1e9])) if r.random() < 0.7 else int(r.integers(-2, 3))
    return {"mask": Const(mask), "value": value}


def leaky_args(r, x):
    return {"slope": float(r.choice([0.01, 0.2, 0.0, -0.5, 1.0]))}


def gelu_args(r, x):
    return {"approximate": str(r.choice(["none", "tanh", "tanh", "none", "erf"]))}


def clamp_args(r, x):
    def limit():
        u = r.random()
        if u < 0.3:
            return None
        if u < 0.6:
            return float(np.round(r.standard_normal(), 1))
        if u < 0.97:
            return int(r.integers(-2, 3))
        return Const(values(r, broadcast_partner(r, x.shape), str(x.dtype)))  # row 12: tensor limits

    return {"lo": limit(), "hi": limit()}


def reduce_args(r, x):
    axis = an_axis(r, x.ndim)
    return {"axis": axis, "keepdims": flag(r, 0.3)}


def extreme_args(r, x):
    axis = an_axis(r, x.ndim)
    return {"axis": axis, "dim": () if axis is None else axis, "keepdims": flag(r, 0.3)}


def var_args(r, x):
    correction = int(r.choice([0, 1, 1, 2])) if r.random() < 0.95 else 0.5
    return {**reduce_args(r, x), "correction": correction}


def arg_args(r, x):
    return {"axis": an_axis(r, x.ndim, tuples=r.random() < 0.05), "keepdims": flag(r, 0.3)}


def one_axis(r, x):
    return {"axis": an_axis(r, x.ndim, tuples=False, none=False)}


def reshape_args(r, x):
    n, sizes = x.size, []
    while n > 1 and len(sizes) < 3:
        d = int(r.choice([k for k in range(1, n + 1) if n % k == 0]))
        sizes.append(d)
        n //= d
    sizes.append(n)
    sizes = [int(s) for s in r.permutation(sizes)]
    if r.random() < 0.3:
        sizes.insert(int(r.integers(0, len(sizes) + 1)), 1)
    if r.random() < 0.3 and x.size:
        sizes[int(r.integers(0, len(sizes)))] = -1
    if r.random() < 0.07:
        sizes[0] += 1  # the wrong number of elements
    if r.random() < 0.2 and x.size == 1:
        sizes = []
    return {"shape": tuple(sizes)}


def _sizes_given(args):
    """reshape(*shape) and expand(*shape) need one size at least (a 0-d result is reshape(()))."""
    return args if args["shape"] else None


def broadcast_args(r, x):
    shape = [int(r.integers(1, 4)) if n == 1 and r.random() < 0.6 else n for n in x.shape]
    shape = [int(r.integers(0, 3)) for _ in range(int(r.integers(0, 3)))] + shape
    if shape and r.random() < 0.2:
        i = int(r.integers(len(shape) - x.ndim, len(shape))) if x.ndim else 0
        shape[i] = -1 if i >= len(shape) - x.ndim else shape[i]
    if r.random() < 0.07 and shape:
        shape[-1] += 2  # does not broadcast
    return {"shape": tuple(shape)}


def squeeze_args(r, x):
    axis = an_axis(r, x.ndim)
    return {"axis": axis, "dims": () if axis is None else (axis,)}


def unsqueeze_args(r, x):
    return {"axis": int(r.integers(-x.ndim - 1 - (r.random() < 0.05), x.ndim + 1 + (r.random() < 0.05)))}


def flatten_args(r, x):
    span = max(x.ndim, 1)
    s, e = sorted(int(a) for a in r.integers(-span, span, size=2))
    if r.random() < 0.05:
        s, e = e + 1, s  # start after end
    return {"start": s, "end": e}


def transpose_args(r, x):
    perm = [int(a) for a in r.permutation(x.ndim)]
    if r.random() < 0.05 and x.ndim:
        perm[0] = perm[-1] if x.ndim > 1 else 1  # not a permutation
    axes = None if r.random() < 0.3 else tuple(perm)
    return {"axes": axes, "perm": tuple(range(x.ndim))[::-1] if axes is None else axes}


def swap_args(r, x):
    return {"a": an_axis(r, x.ndim, tuples=False, none=False), "b": an_axis(r, x.ndim, tuples=False, none=False)}


def index_args(r, x):
    """An index: ints, slices, None, ..., a boolean mask or an integer array, in PyTorch's and NumPy's shared
    meaning (ints and arrays apart: row 14)."""
    items, dim, arrays = [], 0, 0
    while dim < x.ndim and r.random() < 0.8:
        n, u = x.shape[dim], r.random()
        if u < 0.25:
            items.append(int(r.integers(-n - (r.random() < 0.05), n + (r.random() < 0.05))) if n else 0)
        elif u < 0.55:
            start, stop = (int(v) for v in r.integers(-n - 1, n + 2, size=2))
            items.append(
                slice(
                    start if r.random() < 0.7 else None, stop if r.random() < 0.7 else None, int(r.choice([1, 1, 2, 3]))
                )
            )
        elif u < 0.65:
            items.append(None)
            continue
        elif u < 0.75 and arrays == 0:
            items.append(Const(r.random(n) < 0.5))
            arrays += 1
        elif u < 0.9 and arrays == 0:
            items.append(Const(r.integers(-n, n, size=int(r.integers(0, 4))) if n else np.zeros(0, np.int64)))
            arrays += 1
        else:
            items.append(Ellipsis)
            break
        dim += 1
    return {"index": tuple(items) if r.random() < 0.9 or len(items) != 1 else items[0]}


def join_args(r, x, stack=False):
    if x.ndim == 0 and not stack:
        return None
    axis = an_axis(r, x.ndim + stack, tuples=False, none=False)
    others = []
    for _ in range(int(r.integers(1, 3))):
        shape = list(x.shape)
        if not stack and r.random() < 0.7:
            shape[axis % x.ndim if -x.ndim <= axis < x.ndim else 0] = int(r.integers(0, 4))
        if r.random() < 0.05 and shape:
            shape[-1] += 1  # other axes differ
        others.append(values(r, tuple(shape), some_dtype(r, x)))
    return {"ys": others, "axis": axis}


def split_args(r, x):
    if x.ndim == 0:
        return None
    axis = an_axis(r, x.ndim, tuples=False, none=False)
    n = x.shape[axis] if -x.ndim <= axis < x.ndim else 2
    if r.random() < 0.5:
        sizes = int(r.integers(1, 4)) if r.random() < 0.95 else 0
    else:
        cuts = sorted(int(c) for c in r.integers(0, n + 1, size=int(r.integers(0, 3))))
        sizes = [b - a for a, b in zip([0, *cuts], [*cuts, n])]
        if r.random() < 0.07:
            sizes[-1] += 1
    return {"sizes": sizes, "axis": axis, "i": int(r.choice([0, -1]))}


def chunk_args(r, x):
    if x.ndim == 0:
        return None
    return {"chunks": int(r.integers(1, 4)) if r.random() < 0.95 else 0, "axis": an_axis(r, x.ndim, False, False)}


def class_targets(r, x, smoothing=True):
    """Targets for a (..., V) x: ids in [0, V) (some ignored), rarely one out of range."""
    if x.ndim == 0 and r.random() < 0.9:
        return None
    v = x.shape[-1] if x.ndim else 1
    ignore = int(r.choice([-100, 0, 1, -1]))
    t = np.asarray(r.integers(0, max(v, 1), size=x.shape[:-1]), dtype=np.int64)
    t[r.random(t.shape) < 0.2] = ignore
    if r.random() < 0.05:
        t[...] = v + 2
    args = {"t": Const(t), "ignore": ignore, "reduction": str(r.choice(["mean", "sum", "none"]))}
    if smoothing:
        args["smoothing"] = float(r.choice([0.0, 0.0, 0.1, 1.0])) if r.random() < 0.97 else -0.1
    return args


def regression_target(r, x):
    shape = x.shape if r.random() < 0.9 else broadcast_partner(r, x.shape)
    return {
        "t": values(r, shape, some_dtype(r, x) if r.random() < 0.1 else str(x.dtype)),
        "reduction": str(r.choice(["mean", "sum", "none"])),
    }


def probability_target(r, x, grad=False):
    shape = x.shape if r.random() < 0.95 else broadcast_partner(r, x.shape)
    t = values(r, shape, str(x.dtype) if x.dtype.kind == "f" else "float32", unit=True)
    return {"t": t if grad and r.random() < 0.5 else Const(t), "reduction": str(r.choice(["mean", "sum", "none"]))}


def embedding_args(r, x):
    if x.dtype.kind not in "iu" and r.random() < 0.9:
        return None
    top = int(x.max()) + 1 if x.size and x.dtype.kind in "iu" else 1
    return {"w": values(r, (max(top, 0) + int(r.integers(0, 2)), int(r.integers(0, 4))), str(r.choice(FLOATS)))}


def norm_args(r, x, bias=False):
    d = x.shape[-1] if x.ndim else 1
    dtype = str(x.dtype) if x.dtype.kind == "f" and r.random() < 0.9 else str(r.choice(FLOATS))
    args = {"w": values(r, (d,), dtype) if r.random() < 0.7 else None, "eps": float(r.choice([1e-5, 1e-6, 0.1]))}
    if bias:
        args["b"] = values(r, (d,), dtype) if r.random() < 0.7 else None
    return args


def dropout_args(r, x):
    p = float(r.choice([0.0, 1.0, 0.5, 0.3])) if r.random() < 0.95 else float(r.choice([-0.1, 1.5]))
    training = flag(r, 0.5)
    if 0 < p < 1 and training:  # random: only the identity (eval) and p = 0 or 1 are the same in both
        training = False
    return {"p": p, "training": training}


def attention_args(r, x):
    if x.ndim != 4 or x.dtype.kind != "f":
        return None
    return {"k": values(r, x.shape, str(x.dtype)), "v": values(r, x.shape, str(x.dtype))}


def rope_args(r, x):
    if x.ndim < 2 or x.shape[-1] % 2 or x.dtype.kind != "f":
        return None
    t, d = x.shape[-2:]
    angles = np.arange(t)[:, None] * r.random(d // 2)
    angles = np.concatenate([angles, angles], axis=-1).astype(x.dtype)
    return {"cos": Const(np.cos(angles)), "sin": Const(np.sin(angles)), "h": d // 2}


def astype_args(r, x):
    dtype = str(r.choice(DTYPES))
    if dtype == "int64" and x.dtype.kind == "f" and not (np.isfinite(x).all() and np.abs(x).max(initial=0) < 1e9):
        dtype = "float64"  # a non-finite or huge float as an int: undefined in both
    return {"dtype": dtype, "tdtype": TORCH_DTYPES[dtype]}


# ----- modules and optimizers: the same weights in tensorlab.nn and torch.nn -------------------------------------


def _set(module, **tensors):
    """The module with these tensors as its weights (in both frameworks: a registered parameter is replaced)."""
    for name, value in tensors.items():
        module._parameters.pop(name, None)
        object.__setattr__(module, name, value)
    return module


def linear_module_args(r, x):
    args = linear_args(r, x)
    if args is None:
        return None
    n, k = args["w"].shape
    return {**args, "k": k, "n": n, "dtype": str(args["w"].dtype), "tdtype": TORCH_DTYPES[str(args["w"].dtype)]}


def embedding_module_args(r, x):
    args = embedding_args(r, x)
    if args is None:
        return None
    return {**args, "shape": args["w"].shape, "tdtype": TORCH_DTYPES[str(args["w"].dtype)]}


def norm_module_args(r, x):
    d = x.shape[-1] if x.ndim else 1
    dtype = str(x.dtype) if x.dtype.kind == "f" else "float32"
    return {"d": d, "w": values(r, (d,), dtype), "b": values(r, (d,), dtype), "eps": float(r.choice([1e-5, 0.1]))}


def attention_block_args(r, x):
    """Weights of a causal self-attention over x (B, T, C), C = H * D."""
    if x.ndim != 3 or x.dtype.kind != "f" or x.shape[-1] == 0:
        return None
    c, dt = x.shape[-1], str(x.dtype)
    h = int(r.choice([h for h in (1, 2) if c % h == 0 and (c // h) % 2 == 0] or [1]))
    weights = {"wqkv": (3 * c, c), "bqkv": (3 * c,), "wo": (c, c), "bo": (c,)}
    return {"h": h, "rope": flag(r) and (c // h) % 2 == 0, **{k: values(r, n, dt) / 2 for k, n in weights.items()}}


def feed_forward_args(r, x):
    """Weights of a feed-forward block over x (B, T, C): C -> F -> C (three matrices for SwiGLU)."""
    if x.ndim != 3 or x.dtype.kind != "f" or x.shape[-1] == 0:
        return None
    c, f, dt = x.shape[-1], int(r.integers(1, 4)), str(x.dtype)
    act = str(r.choice(["gelu", "relu", "swiglu"]))
    weights = {"w1": (f, c), "b1": (f,), "w2": (c, f), "b2": (c,)}
    weights.update({"w3": (f, c), "b3": (f,)} if act == "swiglu" else {})
    return {"act": act, "w3": None, "b3": None, **{k: values(r, n, dt) for k, n in weights.items()}}


def block_args(r, x):
    attention, feed_forward = attention_block_args(r, x), feed_forward_args(r, x)
    return None if attention is None else {**attention, **feed_forward}


def _tl_attention(x, h, rope, wqkv, bqkv, wo, bo):
    c = x.shape[-1]
    config = nn.TransformerConfig(d_model=c, n_heads=h, pos_encoding="rope" if rope else "learned", dtype=str(x.dtype))
    m = nn.CausalSelfAttention(config)
    _set(m.qkv, weight=wqkv, bias=bqkv), _set(m.proj, weight=wo, bias=bo)
    return m(x)


def _torch_qkv(x, h, rope, wqkv, bqkv):
    """The queries, keys and values (B, H, T, D) of a causal self-attention over x (B, T, C)."""
    b, t, c = x.shape
    q, k, v = (z.reshape(b, t, h, c // h).transpose(1, 2) for z in TF.linear(x, wqkv, bqkv).chunk(3, dim=-1))
    if rope:
        d = c // h
        angles = torch.arange(t, dtype=torch.float64)[:, None] / 10000 ** (torch.arange(0, d, 2) / d)
        cos, sin = torch.cat([angles.cos()] * 2, -1).to(x.dtype), torch.cat([angles.sin()] * 2, -1).to(x.dtype)
        q, k = ((z * cos + torch.cat([-z[..., d // 2 :], z[..., : d // 2]], -1) * sin) for z in (q, k))
    return q, k, v


def _torch_attention(x, h, rope, wqkv, bqkv, wo, bo):
    b, t, c = x.shape
    y = TF.scaled_dot_product_attention(*_torch_qkv(x, h, rope, wqkv, bqkv), is_causal=True)
    return TF.linear(y.transpose(1, 2).reshape(b, t, c), wo, bo)


def _tl_feed_forward(x, act, w1, b1, w2, b2, w3, b3):
    c, f = x.shape[-1], w1.shape[0]
    config = nn.TransformerConfig(
        d_model=c, n_heads=1, d_ff=f, activation=act, pos_encoding="learned", dtype=str(x.dtype)
    )
    m = (nn.SwiGLUFeedForward if act == "swiglu" else nn.FeedForward)(config)
    _set(m.gate if act == "swiglu" else m.fc, weight=w1, bias=b1), _set(m.proj, weight=w2, bias=b2)
    if act == "swiglu":
        _set(m.up, weight=w3, bias=b3)
    return m(x)


def _torch_feed_forward(x, act, w1, b1, w2, b2, w3, b3):
    hidden = TF.linear(x, w1, b1)
    if act == "swiglu":
        hidden = TF.silu(hidden) * TF.linear(x, w3, b3)
    else:
        hidden = TF.gelu(hidden) if act == "gelu" else TF.relu(hidden)
    return TF.linear(hidden, w2, b2)


def transformer_block_args(r, x):
    args = block_args(r, x)
    if args is None:
        return None
    c, dt = x.shape[-1], str(x.dtype)
    norm, position = str(r.choice(["rmsnorm", "layernorm", "none"])), str(r.choice(["pre", "post"]))
    return {**args, "norm": norm, "position": position, "n1": values(r, (c,), dt), "n2": values(r, (c,), dt)}


def _tl_block(x, h, rope, act, norm, position, n1, n2, wqkv, bqkv, wo, bo, w1, b1, w2, b2, w3, b3):
    c, f = x.shape[-1], w1.shape[0]
    pos_encoding = "rope" if rope else "learned"
    config = nn.TransformerConfig(
        d_model=c,
        n_heads=h,
        d_ff=f,
        activation=act,
        norm=norm,
        norm_position=position,
        pos_encoding=pos_encoding,
        dtype=str(x.dtype),
    )
    m = nn.TransformerBlock(config)
    _set(m.attn.qkv, weight=wqkv, bias=bqkv), _set(m.attn.proj, weight=wo, bias=bo)
    _set(m.ffn.gate if act == "swiglu" else m.ffn.fc, weight=w1, bias=b1), _set(m.ffn.proj, weight=w2, bias=b2)
    if act == "swiglu":
        _set(m.ffn.up, weight=w3, bias=b3)
    if norm != "none":
        _set(m.norm1, weight=n1), _set(m.norm2, weight=n2)
    return m(x)


def _torch_normed(z, norm, w):
    """nn.TransformerBlock's normalisation `norm` of z, with weight w."""
    if norm == "none":
        return z
    if norm == "rmsnorm":
        return TF.rms_norm(z, z.shape[-1:], w, 1e-5)
    return TF.layer_norm(z, z.shape[-1:], w, None, 1e-5)


def _torch_block(x, h, rope, act, norm, position, n1, n2, wqkv, bqkv, wo, bo, w1, b1, w2, b2, w3, b3):
    def normed(z, w):
        return _torch_normed(z, norm, w)

    def attention(z):
        return _torch_attention(z, h, rope, wqkv, bqkv, wo, bo)

    def feed_forward(z):
        return _torch_feed_forward(z, act, w1, b1, w2, b2, w3, b3)

    if position == "pre":
        x = x + attention(normed(x, n1))
        return x + feed_forward(normed(x, n2))
    x = normed(x + attention(x), n1)
    return normed(x + feed_forward(x), n2)


def clip_args(r, x):
    if x.dtype.kind != "f" and r.random() < 0.9:
        return None
    dtype = str(x.dtype) if x.dtype.kind == "f" else "float32"
    g = values(r, x.shape, dtype, special=0.1 * (r.random() < 0.2))
    return {"g": Const(g), "max_norm": float(r.choice([1.0, 0.1, 10.0, 0.0]))}


def _tl_clip(x, g, max_norm):
    """The gradient after optim.clip_grad_norm_, and the total norm it returned, as one vector."""
    p = nn.Parameter(x.numpy())
    p.grad = g.numpy()
    total = optim.clip_grad_norm_([p], max_norm)
    return tl.tensor(np.append(p.grad.ravel(), np.asarray(total, p.grad.dtype)))


def _torch_clip(x, g, max_norm):
    p = torch.nn.Parameter(x.detach().clone())
    p.grad = g.clone()
    total = torch.nn.utils.clip_grad_norm_([p], max_norm)
    return torch.cat([p.grad.ravel(), total.reshape(1).to(p.grad.dtype)])


def optimizer_args(r, x):
    if x.dtype.kind != "f" and r.random() < 0.9:
        return None
    dtype = str(x.dtype) if x.dtype.kind == "f" else "float32"
    grads = [values(r, x.shape, dtype, special=0.1 * (r.random() < 0.2)) for _ in range(int(r.integers(1, 4)))]
    adamw = flag(r)
    hp = {"lr": float(r.choice([0.1, 0.01, 1.0]))}
    if adamw:
        hp.update(
            betas=(float(r.choice([0.9, 0.0, 0.5])), float(r.choice([0.999, 0.9]))),
            eps=float(r.choice([1e-8, 1e-3])),
            weight_decay=float(r.choice([0.0, 0.01, 0.1])),
        )
    else:
        momentum = float(r.choice([0.0, 0.9, 0.5]))
        nesterov = momentum > 0 and flag(r, 0.3)
        hp.update(
            momentum=momentum,
            dampening=0.0 if nesterov else float(r.choice([0.0, 0.1])),
            weight_decay=float(r.choice([0.0, 0.01])),
            nesterov=nesterov,
        )
    if r.random() < 0.05:
        hp["lr"] = -0.1  # refused by both
    return {"gs": [Const(g) for g in grads], "opt": "AdamW" if adamw else "SGD", "hp": hp}


def _tl_optimize(x, gs, opt, hp):
    """Parameters after each of len(gs) steps of tensorlab.optim.<opt> with these gradients, stacked."""
    p = nn.Parameter(x.numpy())
    optimizer, after = getattr(optim, opt)([p], **hp), []
    for g in gs:
        p.grad = g.numpy()
        optimizer.step()
        after.append(p.numpy())
    return tl.tensor(np.stack(after))


def _torch_optimize(x, gs, opt, hp):
    p = torch.nn.Parameter(x.detach().clone())
    optimizer, after = getattr(torch.optim, opt)([p], **hp), []
    for g in gs:
        p.grad = g.clone()
        optimizer.step()
        after.append(p.detach().clone())
    return torch.stack(after)


HELPERS = {  # the functions the code strings call; a reproducer prints the ones it uses
    f.__name__: f
    for f in (
        _set,
        _tl_attention,
        _torch_qkv,
        _torch_attention,
        _torch_normed,
        _tl_feed_forward,
        _torch_feed_forward,
        _tl_block,
        _torch_block,
    )
    + (_tl_optimize, _torch_optimize, _tl_clip, _torch_clip)
}


# ----- the table -----------------------------------------------------------------------------------------------------


def _ops():
    ops = []
    for name, symbol in [("add", "+"), ("sub", "-"), ("mul", "*"), ("div", "/"), ("pow", "**")]:
        gen = pow_args if name == "pow" else binary
        ops.append(Op(name, f"F.{name}(x, y)", f"torch.{name}(x, y)", gen))
        ops.append(Op(f"x {symbol} y", f"x {symbol} y", f"x {symbol} y", gen))
        ops.append(Op(f"y {symbol} x", f"y {symbol} x", f"y {symbol} x", binary))
    ops.append(Op("x.pow(y)", "x.pow(y)", "x.pow(y)", pow_args))
    for name, symbol in [("eq", "=="), ("ne", "!="), ("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">=")]:
        ops.append(Op(name, f"F.{name}(x, y)", f"torch.{name}(x, y)", binary))
        ops.append(Op(f"x {symbol} y", f"x {symbol} y", f"x {symbol} y", binary))
    for name in ("maximum", "minimum"):
        ops.append(Op(name, f"F.{name}(x, y)", f"torch.{name}(x, y)", binary_tensors))
        ops.append(Op(f"x.{name}(y)", f"x.{name}(y)", f"x.{name}(y)", binary_tensors))
    ops += [
        Op("matmul", "F.matmul(x, y)", "torch.matmul(x, y)", matmul_args),
        Op("x @ y", "x @ y", "x @ y", matmul_args),
        Op("linear", "F.linear(x, w, b)", "TF.linear(x, w, b)", linear_args),
        Op("neg", "F.neg(x)", "torch.neg(x)", nothing),
        Op("-x", "-x", "-x", nothing),
    ]
    for name in ("exp", "log", "sqrt", "tanh", "sigmoid", "relu"):
        ops.append(Op(name, f"F.{name}(x)", f"torch.{name}(x)", nothing))
        ops.append(Op(f"x.{name}()", f"x.{name}()", f"x.{name}()", nothing))
    ops += [
        Op("leaky_relu", "F.leaky_relu(x, slope)", "TF.leaky_relu(x, slope)", leaky_args),
        Op("silu", "F.silu(x)", "TF.silu(x)", nothing),
        Op("logsigmoid", "F.logsigmoid(x)", "TF.logsigmoid(x)", nothing),
        Op("softplus", "F.softplus(x)", "TF.softplus(x)", nothing),
        Op("gelu", "F.gelu(x, approximate)", "TF.gelu(x, approximate=approximate)", gelu_args),
        Op("clamp", "F.clamp(x, lo, hi)", "torch.clamp(x, lo, hi)", clamp_args),
        Op("x.clamp", "x.clamp(lo, hi)", "x.clamp(lo, hi)", clamp_args),
        Op("where", "F.where(c, x, y)", "torch.where(c, x, y)", where_args),
        Op("masked_fill", "F.masked_fill(x, mask, value)", "torch.masked_fill(x, mask, value)", masked_fill_args),
    ]
    for name in ("sum", "mean"):
        ops.append(
            Op(name, f"F.{name}(x, axis, keepdims)", f"torch.{name}(x, dim=axis, keepdim=keepdims)", reduce_args)
        )
        ops.append(Op(f"x.{name}", f"x.{name}(axis, keepdims)", f"x.{name}(dim=axis, keepdim=keepdims)", reduce_args))
    for name, amax in (("max", "amax"), ("min", "amin")):
        ops.append(Op(name, f"F.{name}(x, axis, keepdims)", f"torch.{amax}(x, dim, keepdims)", extreme_args))
        ops.append(Op(f"x.{name}", f"x.{name}(axis, keepdims)", f"x.{amax}(dim, keepdims)", extreme_args))
    for name in ("var", "std"):
        ops.append(
            Op(
                name,
                f"F.{name}(x, axis, keepdims, correction)",
                f"torch.{name}(x, axis, correction=correction, keepdim=keepdims)",
                var_args,
            )
        )
        ops.append(
            Op(
                f"x.{name}",
                f"x.{name}(axis, keepdims, correction)",
                f"x.{name}(axis, correction=correction, keepdim=keepdims)",
                var_args,
            )
        )
    for name in ("argmax", "argmin"):
        ops.append(Op(name, f"F.{name}(x, axis, keepdims)", f"torch.{name}(x, axis, keepdims)", arg_args))
        ops.append(Op(f"x.{name}", f"x.{name}(axis, keepdims)", f"x.{name}(axis, keepdims)", arg_args))
    for name in ("all", "any"):
        ops.append(
            Op(f"x.{name}", f"x.{name}(axis, keepdims)", f"torch.{name}(x, dim=axis, keepdim=keepdims)", reduce_args)
        )
        ops.append(
            Op(name, f"F.{name}(x, axis, keepdims)", f"torch.{name}(x, dim=axis, keepdim=keepdims)", reduce_args)
        )
    ops += [
        Op("softmax", "F.softmax(x, axis)", "torch.softmax(x, axis)", one_axis),
        Op("log_softmax", "F.log_softmax(x, axis)", "torch.log_softmax(x, axis)", one_axis),
        Op("reshape", "F.reshape(x, shape)", "torch.reshape(x, shape)", reshape_args),
        Op("x.reshape", "x.reshape(*shape)", "x.reshape(*shape)", lambda r, x: _sizes_given(reshape_args(r, x))),
        Op("broadcast_to", "F.broadcast_to(x, shape)", "torch.broadcast_to(x, shape)", broadcast_args),
        Op("x.broadcast_to", "x.broadcast_to(shape)", "x.broadcast_to(shape)", broadcast_args),
        Op("x.expand", "x.expand(*shape)", "x.expand(*shape)", lambda r, x: _sizes_given(broadcast_args(r, x))),
        Op("squeeze", "F.squeeze(x, axis)", "torch.squeeze(x, *dims)", squeeze_args),
        Op("x.squeeze", "x.squeeze(axis)", "x.squeeze(*dims)", squeeze_args),
        Op("unsqueeze", "F.unsqueeze(x, axis)", "torch.unsqueeze(x, axis)", unsqueeze_args),
        Op("x.unsqueeze", "x.unsqueeze(axis)", "x.unsqueeze(axis)", unsqueeze_args),
        Op("flatten", "F.flatten(x, start, end)", "torch.flatten(x, start, end)", flatten_args),
        Op("x.flatten", "x.flatten(start, end)", "x.flatten(start, end)", flatten_args),
        Op("transpose", "F.transpose(x, axes)", "torch.permute(x, perm)", transpose_args),
        Op("x.transpose", "x.transpose(*(axes or ()))", "x.permute(perm)", transpose_args),
        Op("x.T", "x.T", "x.permute(tuple(reversed(range(x.ndim))))", nothing),
        Op("swapaxes", "F.swapaxes(x, a, b)", "torch.swapaxes(x, a, b)", swap_args),
        Op("x.swapaxes", "x.swapaxes(a, b)", "x.swapaxes(a, b)", swap_args),
        Op("getitem", "F.getitem(x, index)", "x[index]", index_args),
        Op("x[index]", "x[index]", "x[index]", index_args),
        Op("concatenate", "F.concatenate([x, *ys], axis)", "torch.cat([x, *ys], axis)", join_args),
        Op("stack", "F.stack([x, *ys], axis)", "torch.stack([x, *ys], axis)", lambda r, x: join_args(r, x, True)),
        Op("split", "F.split(x, sizes, axis)[i]", "torch.split(x, sizes, axis)[i]", split_args),
        Op("chunk", "F.chunk(x, chunks, axis)[0]", "torch.chunk(x, chunks, axis)[0]", chunk_args),
        Op(
            "cross_entropy",
            "F.cross_entropy(x, t, ignore, reduction, smoothing)",
            "TF.cross_entropy(x.movedim(-1, min(1, x.ndim - 1)), t, ignore_index=ignore, reduction=reduction, "
            "label_smoothing=smoothing)",
            class_targets,
        ),
        Op(
            "nll_loss",
            "F.nll_loss(x, t, ignore, reduction)",
            "TF.nll_loss(x.movedim(-1, min(1, x.ndim - 1)), t, ignore_index=ignore, reduction=reduction)",
            lambda r, x: class_targets(r, x, smoothing=False),
        ),
        Op("mse_loss", "F.mse_loss(x, t, reduction)", "TF.mse_loss(x, t, reduction=reduction)", regression_target),
        Op(
            "binary_cross_entropy",
            "F.binary_cross_entropy(x, t, reduction)",
            "TF.binary_cross_entropy(x, t, reduction=reduction)",
            probability_target,
        ),
        Op(
            "binary_cross_entropy_with_logits",
            "F.binary_cross_entropy_with_logits(x, t, reduction)",
            "TF.binary_cross_entropy_with_logits(x, t, reduction=reduction)",
            lambda r, x: probability_target(r, x, grad=True),
        ),
        Op("embedding", "F.embedding(x, w)", "TF.embedding(x, w)", embedding_args),
        Op("rms_norm", "F.rms_norm(x, w, eps)", "TF.rms_norm(x, x.shape[-1:], w, eps)", norm_args),
        Op(
            "layer_norm",
            "F.layer_norm(x, w, b, eps)",
            "TF.layer_norm(x, x.shape[-1:], w, b, eps)",
            lambda r, x: norm_args(r, x, bias=True),
        ),
        Op("dropout", "F.dropout(x, p, training)", "TF.dropout(x, p, training)", dropout_args),
        Op(
            "causal_attention",
            "F.causal_attention(x, k, v)",
            "TF.scaled_dot_product_attention(x, k, v, is_causal=True)",
            attention_args,
        ),
        Op("rope", "F.rope(x, cos, sin)", "x * cos + torch.cat([-x[..., h:], x[..., :h]], -1) * sin", rope_args),
        Op("to", "F.to(x, 'cpu')", "x.to('cpu')", nothing),
        Op("x.to", "x.to('cpu')", "x.to('cpu')", nothing),
        Op("astype", "F.astype(x, dtype)", "x.to(tdtype)", astype_args),
        Op("x.astype", "x.astype(dtype)", "x.to(tdtype)", astype_args),
        Op("x.detach", "x.detach()", "x.detach()", nothing),
        Op("x.item", "x.item()", "x.item()", nothing, terminal=True),
        Op("len", "len(x)", "len(x)", nothing, terminal=True),
        Op("bool", "bool(x)", "bool(x)", nothing, terminal=True),
        Op("float", "float(x)", "float(x)", nothing, terminal=True),
        Op("int", "int(x)", "int(x)", nothing, terminal=True),
        # the nn modules, with the same weights
        Op(
            "nn.Linear",
            "_set(nn.Linear(k, n, b is not None, dtype=dtype), weight=w, bias=b)(x)",
            "_set(torch.nn.Linear(k, n, b is not None, dtype=tdtype), weight=w, bias=b)(x)",
            linear_module_args,
        ),
        Op(
            "nn.Embedding",
            "_set(nn.Embedding(*shape, dtype=w.dtype), weight=w)(x)",
            "_set(torch.nn.Embedding(*shape, dtype=tdtype), weight=w)(x)",
            embedding_module_args,
        ),
        Op(
            "nn.RMSNorm",
            "_set(nn.RMSNorm(d, eps, dtype=w.dtype), weight=w)(x)",
            "_set(torch.nn.RMSNorm(d, eps, dtype=w.dtype), weight=w)(x)",
            norm_module_args,
        ),
        Op(
            "nn.LayerNorm",
            "_set(nn.LayerNorm(d, eps, dtype=w.dtype), weight=w, bias=b)(x)",
            "_set(torch.nn.LayerNorm(d, eps, dtype=w.dtype), weight=w, bias=b)(x)",
            norm_module_args,
        ),
        Op(
            "nn.Dropout",
            "nn.Dropout(p).eval()(x)",
            "torch.nn.Dropout(p).eval()(x)",
            lambda r, x: {"p": float(r.choice([0.1, 0.5]))},
        ),
        Op(
            "nn.CausalSelfAttention",
            "_tl_attention(x, h, rope, wqkv, bqkv, wo, bo)",
            "_torch_attention(x, h, rope, wqkv, bqkv, wo, bo)",
            attention_block_args,
        ),
        Op(
            "nn.FeedForward",
            "_tl_feed_forward(x, act, w1, b1, w2, b2, w3, b3)",
            "_torch_feed_forward(x, act, w1, b1, w2, b2, w3, b3)",
            feed_forward_args,
        ),
        Op(
            "nn.TransformerBlock",
            "_tl_block(x, h, rope, act, norm, position, n1, n2, wqkv, bqkv, wo, bo, w1, b1, w2, b2, w3, b3)",
            "_torch_block(x, h, rope, act, norm, position, n1, n2, wqkv, bqkv, wo, bo, w1, b1, w2, b2, w3, b3)",
            transformer_block_args,
        ),
        Op("optim", "_tl_optimize(x, gs, opt, hp)", "_torch_optimize(x, gs, opt, hp)", optimizer_args),
        Op("clip_grad_norm_", "_tl_clip(x, g, max_norm)", "_torch_clip(x, g, max_norm)", clip_args),
    ]
    return {op.name: op for op in ops}


OPS = _ops()

# The ops whose result adds up terms (a reduction, a product of matrices, a normalisation, a module, an optimizer
# step): their round-off is relative to the terms, so they are compared at the scale of their inputs. Every other
# op is compared relative to each element of its result (sigmoid(-20) is 2e-9, not 0).
SUMS = {
    "sum",
    "x.sum",
    "mean",
    "x.mean",
    "var",
    "x.var",
    "std",
    "x.std",
    "matmul",
    "x @ y",
    "linear",
    "softmax",
    "log_softmax",
    "cross_entropy",
    "nll_loss",
    "mse_loss",
    "binary_cross_entropy",
    "rope",
    "rms_norm",
    "binary_cross_entropy_with_logits",
    "layer_norm",
    "causal_attention",
    "optim",
    "clip_grad_norm_",
}
SUMS |= {name for name in OPS if name.startswith("nn.")}
ELEMENTWISE_LOSSES = {"mse_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits"}


def adds_up(name, args):
    """Whether the step's result adds up terms (SUMS): a loss of one term per element does not with reduction none."""
    return name in SUMS and not (name in ELEMENTWISE_LOSSES and args.get("reduction") == "none")


# How much a normalisation may magnify its inputs' round-off: (x - mean) / sqrt(var + eps) at var = 0 (a row of
# equal values, or of one) is PyTorch's rounding of the mean times 1/sqrt(eps) (-2e-5 where tensorlab gives 0).
NORMS = ("layer_norm", "rms_norm", "nn.LayerNorm", "nn.RMSNorm", "nn.TransformerBlock")
CONDITION = {name: lambda args: 1 / math.sqrt(args.get("eps", 1e-5)) for name in NORMS}
# A sum of squares rounds at the square of its inputs' magnitude: the variance of three equal 1e30 is 0 in tensorlab
# and 3e28 in PyTorch (its mean rounded by one ulp of 1e30, squared), both within n (eps |x|)^2 of the truth.
SQUARES = {"var", "x.var"}

# The names each side's code sees besides x and the generator's.
TL_NAMES = {"F": F, "nn": nn, "np": np, "tl": tl, **HELPERS}
TORCH_NAMES = {"torch": torch, "TF": TF, "np": np, **HELPERS}
