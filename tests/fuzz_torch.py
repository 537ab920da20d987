"""A differential fuzzer: seeded random programs run in tensorlab and in PyTorch, every difference shrunk and printed.

    python tests/fuzz_torch.py --programs 100000 --seed 0

A program is a starting array and a short chain of ops from the table in tests/fuzz_programs.py, each op drawing
its other operands and arguments at random (legal mostly, illegal sometimes), over float32/float64/int64/bool,
0-d, empty and broadcast shapes and non-finite values. Both frameworks run it from the same inputs, step by step,
each step from PyTorch's values of the step before (so each op is compared on equal inputs, its graph kept):

- errors: both refuse or neither does, and tensorlab's refusal is its own (one line, raised by tensorlab's code,
  not an exception escaping from NumPy or Python);
- each step's result: a tensor in both, the same dtype, shape, values (NaN and infinities where PyTorch has them,
  finite values within a tolerance by dtype) and requires_grad;
- at the end, the same random upstream gradient is sent back through both, and every leaf's gradient is compared
  as the values were.

The first difference ends a program. Differences that are deliberate are rows of docs/differences-from-pytorch.md,
named in KNOWN below (and nowhere else); every other one is shrunk (steps dropped, the prefix of the chain
replaced by its value, shapes cut, values made round) to a short Python snippet that shows it.
"""

import argparse
import contextlib
import inspect
import math
import os
import re
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT, ROOT / "tests"):  # run as a script: this checkout's tensorlab, and the op table beside it
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from fuzz_programs import (  # noqa: E402
    CONDITION,
    DTYPES,
    HELPERS,
    OPS,
    SAME,
    SQUARES,
    TL_NAMES,
    TORCH_NAMES,
    Const,
    _torch_normed,
    _torch_qkv,
    adds_up,
    random_shape,
    values,
)

import tensorlab  # noqa: E402

TENSORLAB_DIR = str(Path(tensorlab.__file__).resolve().parent)
# |ours - theirs| <= RTOL * (|theirs| + scale) elementwise, NaN and infinities where PyTorch has them. scale is 0
# for an elementwise op; for one that adds up terms (fuzz_programs.adds_up) it is the largest finite magnitude of the
# step's inputs and result (the round-off a sum of those terms may carry), times the op's CONDITION. RTOL is the
# least precise dtype's of the program so far (float32 values carried into float64 keep float32's round-off).
# Achieved over 100,000 programs where the ops agree: float64 7.4e-11 (a BCE gradient after pow: its 1/(p(1-p))
# magnifies the two formulas' rounding), float32 2e-6; what comes nearer (float64 9.1e-10, float32 9.9e-6) is
# tensorlab's own sigmoid, silu and gelu, which lose digits (the report lists the programs where they exceed it).
RTOL = {"float64": 1e-9, "float32": 1e-5}
WORST = {}  # tolerance -> the largest relative error of values that agreed (the report prints it)


# ----- the deliberate differences: rows of docs/differences-from-pytorch.md ---------------------------------------


@dataclass(frozen=True)
class Known:
    row: int  # the row of docs/differences-from-pytorch.md
    ops: tuple
    kinds: tuple  # "flows back": a gradient difference at an earlier step is this step's (its Case: x, args, upstream)
    when: object  # when(case): whether this step's difference is the documented one (see Case)


@dataclass
class Case:
    """What a Known row's `when` sees of a difference: the step's input x and arguments (PyTorch's values), and
    for a value or gradient the two arrays compared, PyTorch's gradient of the step's result, and same(ours,
    theirs): whether two arrays agree within the comparison's tolerance."""

    x: np.ndarray
    args: dict
    ours: np.ndarray = None
    theirs: np.ndarray = None
    upstream: np.ndarray = None
    same: object = None
    op: str = ""  # the step's op (the rows that run the step again read it)

    def arrays(self):
        """x, the arrays among the arguments (in lists too), and the upstream gradient."""
        found = [self.x] + ([self.upstream] if self.upstream is not None else [])
        for value in self.args.values():
            for v in value if isinstance(value, (list, tuple)) else [value]:
                found += [v.array if isinstance(v, Const) else v] if isinstance(v, (np.ndarray, Const)) else []
        return found

    def excused(self, where):
        """Whether the arrays differ only at `where` (and do there): the rest agrees within the tolerance."""
        where = np.asarray(where)
        return bool(where.any()) and self.same(np.where(where, self.theirs, self.ours), self.theirs)


def _all_inf_row(c):
    with np.errstate(invalid="ignore"):
        if c.x.ndim == 0:
            return c.x.dtype.kind == "f" and bool(c.x == -np.inf)
        return c.x.dtype.kind == "f" and bool(np.all(c.x == -np.inf, axis=c.args["axis"]).any())


def _shapes_differ(c):
    return c.x.shape != np.shape(c.args["t"].array if isinstance(c.args["t"], Const) else c.args["t"])


def _ints_apart_from_arrays(c):
    index = c.args["index"] if isinstance(c.args["index"], tuple) else (c.args["index"],)
    kinds = "".join("a" if isinstance(i, Const) else "i" if isinstance(i, int) else "." for i in index)
    return "a" in kinds and "i" in kinds and kinds.strip(".").count(".") > 0


def _masked_zeros(c):  # tensorlab's exact 0 where PyTorch multiplies a 0 of the definition by inf or NaN
    with np.errstate(invalid="ignore"):
        return c.excused((c.ours == 0) & np.isnan(c.theirs))


def _int_to_negative_int(base, exponent):  # the base a tensor or a Python int or bool, the exponent a tensor
    base, exponent = (v.array if isinstance(v, Const) else v for v in (base, exponent))
    base = np.asarray(base) if type(base) in (int, bool) else base
    tensors = isinstance(base, np.ndarray) and isinstance(exponent, np.ndarray)
    return tensors and base.dtype.kind in "iub" and exponent.dtype.kind in "iu" and bool((exponent < 0).any())


def _y(c):  # the other operand: x itself where the table drew SAME (x ** x)
    return c.x if c.args["y"] is SAME else c.args["y"]


def _empty_of_a_kernels_dtype(c):  # the dtype PyTorch's kernel refuses, on an empty tensor, which it never runs
    arrays = c.arrays()
    empty = any(a.size == 0 for a in arrays)
    if "y" not in c.args and "w" not in c.args:  # softmax, log_softmax: integers or bools
        return empty and c.x.dtype.kind != "f"
    return empty and (c.x.dtype.kind == "b" or len({a.dtype for a in arrays}) > 1)  # matmul, linear: bools, two dtypes


def _gelu_tail(c):  # equal to the exact value (inf), or within |x| eps of it (float32: A&S 7.1.26; 1 + tanh(u) cancels)
    x = np.broadcast_to(c.x, c.ours.shape).astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        if c.args["approximate"] == "tanh":
            exact = x / (1 + np.exp(-2 * math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))  # 0.5 x (1 + tanh u)
        else:
            exact = 0.5 * x * np.vectorize(math.erfc, otypes=[float])(-x / math.sqrt(2))
        eps, rtol = np.finfo(c.x.dtype).eps, RTOL[str(c.x.dtype)]
        return c.excused((c.ours == exact) | (np.abs(c.ours - exact) <= np.abs(x) * eps + rtol * np.abs(exact)))


def _nonfinite_through_a_fused_op(c):  # inf, NaN or overflow met inside: which of them comes out differs
    with np.errstate(invalid="ignore", over="ignore"):
        extreme = any(a.dtype.kind == "f" and not np.all(np.abs(a) < 1e15) for a in c.arrays())
        return extreme and c.excused(~np.isfinite(c.ours) | ~np.isfinite(c.theirs))


def _spread_within_rounding(c):  # std's gradient (x - m) / (n std): x - m's rounding, eps |x| / spread, > rtol
    axis = c.args["axis"]
    with np.errstate(invalid="ignore", over="ignore"):
        spread = np.ptp(c.x, axis=axis) if c.x.size else np.zeros(0)
        rounding = np.finfo(c.x.dtype).eps * np.max(np.abs(c.x), axis=axis)
        return bool(np.any(spread * RTOL[str(c.x.dtype)] <= rounding))


def _quotient_below_normal(c):  # PyTorch's std backward: gy / (2 std) in x's dtype, rounded to a subnormal
    axis, keep = c.args["axis"], c.args["keepdims"]
    with np.errstate(all="ignore"):
        std = np.std(c.x.astype(np.float64), axis=axis, ddof=c.args["correction"], keepdims=keep)
        quotient = np.abs(c.upstream.astype(np.float64)) / (2 * std)
    return c.x.dtype.kind == "f" and bool(np.any((quotient > 0) & (quotient < np.finfo(c.x.dtype).tiny)))


def _infinity_times_rounding(c):  # inf * d: one side's d rounds to 0 (NaN), the other's to a tiny number (inf)
    """Any op: the gradients differ only where both are inf or NaN, and either
    - the step's backward, run again on PyTorch's upstream, gives the two the same gradients: their upstreams
      differed only within the comparison, and an infinite derivative (sqrt's at 0) made that inf against NaN; or
    - an inf or NaN arrives, the step run again parts the two, and with finite numbers (1) in its place it gives
      gradients that agree within the comparison: their derivatives part by rounding only."""
    if not c.excused(~np.isfinite(c.ours) & ~np.isfinite(c.theirs)):
        return False
    agrees = _agrees_again(c)
    if agrees is not False:
        return bool(agrees)
    finite = _finite(c.upstream)
    if finite is None:
        return False
    forward = [a for a in (c.x, *c.args.values()) if isinstance(a, np.ndarray)]
    scale = _scale(finite) * (_scale(*forward) * _condition(c.op, c.args) if adds_up(c.op, c.args) else 1.0)
    pairs = _gradients_again(c, finite)
    return pairs is not None and all(compare_values(o, t, scale, _rtol(t)) is None for o, t in pairs)


def _finite(upstream):
    """The upstream with 1 in place of each inf and NaN (inf * d hides d), or None when every element is finite."""
    arriving = ~np.isfinite(upstream)
    return np.where(arriving, 1, upstream).astype(upstream.dtype) if arriving.any() else None


def _agrees_again(c):
    """Whether the step's backward, run again on PyTorch's upstream, gives both frameworks the same gradients (None
    when a side no longer computes it). If it does, the difference flowed back from a later step (this step's
    upstream was already another): that step's to explain."""
    pairs = _gradients_again(c, c.upstream)
    return None if pairs is None else all(c.same(o, t) for o, t in pairs)


def _as_in_float64(c):  # PyTorch's float32 or float16 rounding, where its own float64 gives tensorlab's answer
    """A step with a float32 or float16 array whose result (or every input's gradient) PyTorch computes, in float64,
    as tensorlab does in the result's dtype: where PyTorch's kernel loses what the exact result keeps (silu below
    -88.7, whose 1 / (1 + e^-x) is 0; a / b's gradient -a / b^2 where b^2 underflows and 0 / 0 is NaN; y ** x's
    gradient x y^(x - 1) with x - 1 rounded in a float32 x's dtype before the float64 y meets it)."""
    if not any(a.dtype in (np.float32, np.float16) for a in c.arrays()):
        return False
    if c.upstream is None:  # a value
        exact = _value_in_float64(c)
        return exact is not None and _same_rounded(c, c.ours, exact)
    finite = _finite(c.upstream)
    for upstream in [c.upstream] + ([finite] if finite is not None else []):
        pairs = _gradients_again(c, upstream, exact=True)
        if not pairs or not all(_same_rounded(c, o, t) for o, t in pairs):
            return False
    return _agrees_again(c) is False


def _flushed_as_in_float64(c):  # flows back: PyTorch's float32 gradient is 0 where its float64 one is not
    """A later step whose PyTorch gradient in float32 or float16 is 0 at some element where its own float64 gradient,
    rounded to the dtype, is not and tensorlab's is not: a 0 (an underflow) that the earlier steps' derivatives
    then magnify (log's 1/x at 3.8e-44 after silu's gradient at -100, -3.7e-42 in tensorlab)."""
    if c.x.dtype not in (np.float32, np.float16):
        return False
    rounded, exact = _gradients_again(c, c.upstream), _gradients_again(c, c.upstream, exact=True)
    if not rounded or not exact:
        return False
    for (ours, theirs), (_, float64) in zip(rounded, exact):
        with np.errstate(over="ignore"):
            kept = np.asarray(float64).astype(c.x.dtype) != 0
        if np.any((np.asarray(theirs) == 0) & kept & (np.asarray(ours) != 0)):
            return True
    return False


def _beyond_the_dtypes_range(c):  # inf or NaN, by the order in which each framework's sum overflows
    """Any op in float32 or float16: the two differ only where both give inf or NaN and the exact result (PyTorch's
    in float64) is a finite number beyond the dtype's range. A sum of terms that overflow with both signs (a
    product's) is then +inf, -inf or NaN by the order of its additions: OpenBLAS adds each term into one sum with a
    fused multiply-add, keeping the first infinity it reaches; PyTorch's BLAS adds partial sums, inf - inf = NaN."""
    if c.ours.dtype not in (np.float32, np.float16):
        return False
    if c.upstream is None:  # a value
        exact = _value_in_float64(c)
    else:
        pairs = _gradients_again(c, c.upstream, exact=True) or []
        exact = next((t for o, t in pairs if np.array_equal(o, c.ours, equal_nan=True)), None)
    if exact is None or np.shape(exact) != c.ours.shape:
        return False
    beyond = np.isfinite(exact) & (np.abs(exact) > np.finfo(c.ours.dtype).max)
    return c.excused(beyond & ~np.isfinite(c.ours) & ~np.isfinite(c.theirs))


def _value_in_float64(c):
    """PyTorch's result of the step with every floating array in float64, as a NumPy array (None if it gives none)."""
    with _leaves_kept():
        status, out = _step(TORCH, OPS[c.op], _float64(c.args), TORCH.convert(_float64(c.x), None))
    return TORCH.to_numpy(out) if status == "ok" and TORCH.is_tensor(out) else None


def _float64(value):
    """`value` (x, or an argument: arrays, Const, lists of them) with every floating array in float64."""
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return value.astype(np.float64)
    if isinstance(value, Const):
        return Const(_float64(value.array))
    if isinstance(value, dict):
        return {k: _float64(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_float64(v) for v in value)
    return value


def _same_rounded(c, ours, exact):
    """Whether tensorlab's array agrees with the float64 result rounded to its own dtype (a float32 exponent's
    gradient beside a float64 base's), within the comparison."""
    with np.errstate(over="ignore"):
        return np.shape(ours) == np.shape(exact) and c.same(ours, np.asarray(exact).astype(np.asarray(ours).dtype))


@contextlib.contextmanager
def _leaves_kept():
    """Empty leaf lists on both sides for a step run again; the program's own are given back after."""
    kept = TL.leaves, TORCH.leaves
    TL.leaves, TORCH.leaves = [], []
    try:
        yield
    finally:
        TL.leaves, TORCH.leaves = kept


def _gradients_again(c, upstream, exact=False):
    """[(ours, theirs)]: the gradients of the step's inputs for `upstream`, the step run again on new leaves (None
    when a side no longer computes it); with `exact`, PyTorch's in float64 (every floating array cast up)."""
    grads = []
    up = _float64 if exact else lambda v: v
    try:
        with _leaves_kept():
            for side in (TL, TORCH):
                theirs = side.torch_side
                x = side.convert(up(c.x) if theirs else c.x, None)
                status, out = _step(side, OPS[c.op], up(c.args) if theirs else c.args, x)
                if status != "ok" or not side.is_tensor(out) or not out.requires_grad:
                    return None
                out.backward(torch.from_numpy(up(upstream)) if theirs else upstream)
                leaves = [t for t in [x, *side.leaves] if t.requires_grad]
                grads.append([side.to_numpy(t.grad) if theirs else t.grad for t in leaves])
    except Exception:  # noqa: BLE001 (no second opinion: the difference stays undocumented)
        return None
    zero = lambda g, other: np.zeros_like(other) if g is None else g  # noqa: E731 (no gradient: zeros, as compared)
    return [(zero(o, t), zero(t, o)) for o, t in zip(*grads) if o is not None or t is not None]


def _squares_beyond_float32(c):  # PyTorch's norm inf (its squares in float32), tensorlab's finite (in float64)
    g = c.args["g"].array
    with np.errstate(over="ignore", invalid="ignore"):
        beyond = g.dtype == np.float32 and bool(np.any(np.abs(g.astype(np.float64)) ** 2 > np.finfo(np.float32).max))
    return beyond and c.theirs[-1] == np.inf and bool(np.isfinite(c.ours[-1]))


def _attention_queries_and_keys(c):
    """The step's attention queries and keys (B, H, T, D) as PyTorch computes them from its actual inputs."""
    arg = {n: torch.from_numpy(np.array(v)) for n, v in c.args.items() if isinstance(v, np.ndarray)}
    x = torch.from_numpy(np.array(c.x))
    if "wqkv" not in c.args:  # causal_attention(q, k, v)
        return x, arg["k"]
    if c.args.get("position") == "pre":  # nn.TransformerBlock normalises before its attention
        x = _torch_normed(x, c.args["norm"], arg["n1"])
    return _torch_qkv(x, c.args["h"], c.args["rope"], arg["wqkv"], arg["bqkv"])[:2]


def _scores_beyond_rounding(c):  # eps |S| > rtol: the softmax's weights, and its gradient, are round-off's
    with torch.no_grad():
        q, k = (z.double().numpy() for z in _attention_queries_and_keys(c))
    with np.errstate(all="ignore"):
        scores = q @ k.swapaxes(-1, -2) / math.sqrt(q.shape[-1] or 1)
        seen = ~np.triu(np.ones(scores.shape[-2:], dtype=bool), 1) & np.isfinite(scores)
        largest = np.abs(scores[..., seen]).max(initial=0.0)
    return bool(np.finfo(c.x.dtype).eps * largest > RTOL[str(c.x.dtype)])


POW = ("pow", "x ** y", "x.pow(y)")
ATTENTION = ("causal_attention", "nn.CausalSelfAttention", "nn.TransformerBlock")
FUSED = (
    "causal_attention",
    "nn.CausalSelfAttention",
    "layer_norm",
    "nn.LayerNorm",
    "rms_norm",
    "nn.RMSNorm",
    "nn.TransformerBlock",
)
KNOWN = [
    Known(5, ("softmax",), ("value", "gradient"), _all_inf_row),
    Known(12, ("clamp", "x.clamp"), ("refuses",), lambda c: Const in (type(c.args["lo"]), type(c.args["hi"]))),
    Known(13, ("mse_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits"), ("refuses",), _shapes_differ),
    Known(14, ("getitem", "x[index]"), ("refuses",), _ints_apart_from_arrays),
    Known(18, ("max", "x.max", "min", "x.min", *POW, "y ** x", "cross_entropy"), ("gradient",), _masked_zeros),
    Known(20, POW, ("refuses",), lambda c: _int_to_negative_int(c.x, _y(c))),
    Known(20, ("y ** x",), ("refuses",), lambda c: _int_to_negative_int(_y(c), c.x)),
    Known(21, ("softmax", "log_softmax", "matmul", "x @ y", "linear"), ("refuses",), _empty_of_a_kernels_dtype),
    Known(22, ("concatenate",), ("refuses",), lambda c: any(a.shape == (0,) for a in c.arrays())),
    Known(23, ("cross_entropy",), ("refuses",), lambda c: c.args["smoothing"] < 0),
    Known(24, ("cross_entropy", "nll_loss"), ("computes", "value"), lambda c: c.x.ndim > 0 and c.x.shape[-1] == 0),
    Known(25, ("gelu",), ("value",), _gelu_tail),
    Known(26, FUSED, ("value", "gradient"), _nonfinite_through_a_fused_op),
    Known(27, ("std", "x.std"), ("gradient", "flows back"), _spread_within_rounding),
    Known(28, ATTENTION, ("gradient",), _scores_beyond_rounding),
    Known(29, ("clip_grad_norm_",), ("value",), _squares_beyond_float32),
    Known(30, ("std", "x.std"), ("gradient", "flows back"), _quotient_below_normal),
    Known(31, tuple(OPS), ("gradient",), _infinity_times_rounding),
    Known(32, tuple(OPS), ("value", "gradient"), _as_in_float64),
    Known(32, tuple(OPS), ("flows back",), _flushed_as_in_float64),
    Known(33, tuple(OPS), ("value", "gradient"), _beyond_the_dtypes_range),
]

KINDS = {  # kind: what it means, in the report
    "foreign error": "tensorlab's refusal is not its own line (NumPy's or Python's exception escapes)",
    "refuses": "tensorlab refuses where PyTorch computes",
    "computes": "tensorlab computes where PyTorch refuses",
    "type": "the result is not what PyTorch returns (a Tensor, or the same kind of Python value)",
    "dtype": "the result's dtype differs",
    "shape": "the result's shape differs",
    "value": "the values differ",
    "requires_grad": "requires_grad differs",
    "backward error": "backward fails in tensorlab",
    "gradient": "a leaf's gradient differs",
    "shared gradient": "a .grad shares memory with another's or the upstream's: changing one in place changes both",
}


@dataclass
class Program:
    x0: np.ndarray
    steps: list  # [(op name, args)]
    upstream: int = 0  # seed of the upstream gradient; -1: ones
    special_upstream: bool = False  # infinities and NaN in it
    refused: bool = False  # as run: both frameworks refused its last step


@dataclass(frozen=True)
class Difference:
    kind: str
    op: str
    step: int
    detail: str
    known: int = 0  # the row of the documented list, 0 when undocumented

    @property
    def key(self):
        return self.kind, self.op


# ----- running one program on both sides ----------------------------------------------------------------------------


class Side:
    """One framework: its names, how to make a leaf, and its leaves so far."""

    def __init__(self, names, leaf, is_tensor, to_numpy, torch_side):
        self.names, self.leaf, self.is_tensor, self.to_numpy = names, leaf, is_tensor, to_numpy
        self.torch_side = torch_side
        self.leaves = []

    def convert(self, value, x):
        if isinstance(value, np.ndarray):
            t = self.leaf(value, value.dtype.kind == "f")
            self.leaves.append(t)
            return t
        if isinstance(value, Const):
            return self.leaf(value.array, False)
        if value is SAME:
            return x
        if isinstance(value, (list, tuple)):
            return type(value)(self.convert(v, x) for v in value)
        return value


TL = Side(
    TL_NAMES,
    lambda a, grad: tensorlab.tensor(a, requires_grad=grad),
    lambda t: isinstance(t, tensorlab.Tensor),
    lambda t: t.numpy(),
    False,
)
TORCH = Side(
    TORCH_NAMES,
    lambda a, grad: torch.from_numpy(np.array(a, copy=True)).requires_grad_(grad),
    lambda t: isinstance(t, torch.Tensor),
    lambda t: t.detach().numpy(),
    True,
)
_CODE = {}


def _compiled(source):
    if source not in _CODE:
        body = source if "out =" in source else f"out = {source}"
        _CODE[source] = compile(body, f"<fuzz: {source}>", "exec")
    return _CODE[source]


def _step(side, op, args, x):
    """Run one op on one side: ('ok', out) or ('error', exception)."""
    env = dict(side.names)
    env.update((name, side.convert(value, x)) for name, value in args.items())
    env["x"] = x
    try:
        exec(_compiled(op.torch if side.torch_side else op.tl), env)
    except Exception as error:  # every exception is a finding to classify
        return "error", error
    return "ok", env["out"]


def own_error(error):
    """Whether tensorlab raised this itself (one line, from a `raise` in tensorlab's code), or Python refused the
    call before any of tensorlab's code ran (a method or operator tensorlab does not offer)."""
    frames = traceback.extract_tb(error.__traceback__)
    last = frames[-1] if frames else None
    if last is None or last.filename.startswith("<fuzz"):
        return True
    ours = last.filename.startswith(TENSORLAB_DIR) and (last.line or "").startswith("raise")
    return ours and "\n" not in str(error)


def _describe(error):
    frames = traceback.extract_tb(error.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return f"{type(error).__name__}{where}: {str(error).splitlines()[0] if str(error) else ''}"[:300]


def _scale(*arrays):
    finite = [np.abs(a[np.isfinite(a)]).max(initial=0.0) for a in arrays if a.dtype.kind == "f" and a.size]
    return float(max(finite, default=0.0))


def compare_values(ours, theirs, scale, rtol):
    """None when equal within the tolerance (exact for ints and bools), else the first element that differs."""
    if theirs.dtype.kind != "f":
        bad = ours != theirs
    else:
        o, t = ours.astype(np.float64), theirs.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            error = np.abs(o - t) / (np.abs(t) + scale + np.finfo(theirs.dtype).tiny / rtol)
            bad = ~((error <= rtol) | (o == t) | (np.isnan(o) & np.isnan(t)))
            agreeing = error[~bad & np.isfinite(error)]
        if agreeing.size:  # the largest relative error that passed, per tolerance: how near the tolerance is
            WORST[rtol] = max(WORST.get(rtol, 0.0), float(agreeing.max()))
    if not np.any(bad):
        return None
    i = tuple(int(k) for k in np.argwhere(bad)[0])
    return f"at {i}: tensorlab {ours[i]!r}, PyTorch {theirs[i]!r} ({int(np.sum(bad))} of {bad.size} differ)"


def _condition(name, args):
    return CONDITION[name](args) if name in CONDITION else 1.0


def _rtol(*arrays):
    """The tolerance of the least precise floating dtype among the arrays (float32 values carried into float64
    keep float32's round-off)."""
    return max((RTOL[str(a.dtype)] for a in arrays if str(a.dtype) in RTOL), default=0.0)


def _compare_step(k, op, ours, theirs, x, args, rtol):
    """The difference between one step's results on both sides, or None."""
    (our_status, o), (their_status, t) = ours, theirs
    if our_status == "error" and not own_error(o):
        return Difference("foreign error", op.name, k, _describe(o))
    if our_status == "error" and their_status == "ok":
        return Difference("refuses", op.name, k, f"{_describe(o)}; PyTorch computes")
    if our_status == "ok" and their_status == "error":
        return Difference("computes", op.name, k, f"PyTorch refuses: {_describe(t)}")
    if our_status == "error":
        return None
    if TORCH.is_tensor(t) != TL.is_tensor(o) or (not TORCH.is_tensor(t) and type(o) is not type(t)):
        return Difference("type", op.name, k, f"tensorlab gives {type(o).__name__}, PyTorch {type(t).__name__}")
    if not TORCH.is_tensor(t):
        same = o == t or (isinstance(t, float) and math.isnan(t) and math.isnan(o))
        return None if same else Difference("value", op.name, k, f"tensorlab {o!r}, PyTorch {t!r}")
    theirs_np, ours_np = TORCH.to_numpy(t), o.numpy()
    if str(o.dtype) != str(theirs_np.dtype):
        return Difference("dtype", op.name, k, f"tensorlab {o.dtype}, PyTorch {theirs_np.dtype}")
    if o.shape != theirs_np.shape:
        return Difference("shape", op.name, k, f"tensorlab {o.shape}, PyTorch {theirs_np.shape}")
    inputs = [a for a in [x, *args.values()] if isinstance(a, np.ndarray)]
    scale = _scale(theirs_np, *inputs) * _condition(op.name, args) if adds_up(op.name, args) else 0.0
    magnitude = _scale(*inputs)
    scale = max(scale, magnitude * magnitude) if op.name in SQUARES else scale  # inf past 1e154 (** 2 raises)
    rtol = max(rtol, _rtol(theirs_np, *inputs))
    detail = compare_values(ours_np, theirs_np, scale, rtol)
    if detail:
        same = lambda a, b: compare_values(a, b, scale, rtol) is None  # noqa: E731
        row = _known("value", op.name, Case(x, args, ours_np, theirs_np, None, same, op.name))
        return Difference("value", op.name, k, detail, known=row)
    if o.requires_grad != t.requires_grad:
        return Difference("requires_grad", op.name, k, f"tensorlab {o.requires_grad}, PyTorch {t.requires_grad}")
    return None


def _upstream(program, shape, dtype):
    if program.upstream < 0:
        return np.ones(shape, dtype)
    r = np.random.default_rng(program.upstream)
    u = np.array(r.standard_normal(shape))
    if program.special_upstream:
        mask = np.asarray(r.random(shape) < 0.3)
        u[mask] = r.choice([np.inf, -np.inf, np.nan], size=int(mask.sum()))
    return u.astype(dtype)


def _known(kind, op_name, case):
    for known in KNOWN:
        if op_name in known.ops and kind in known.kinds and known.when(case):
            return known.row
    return 0


def run(program, draw=None):
    """See _run; NumPy's and PyTorch's warnings silenced (inf and NaN are drawn on purpose)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return _run(program, draw)


def _run(program, draw):
    """Run `program` in both frameworks; with `draw(k, x)` the steps are drawn as it goes (x: PyTorch's value).

    Returns (the program as run, the first Difference or None, PyTorch's input of each step). The program as
    run stops at the first step that either side refused or that differed.
    """
    TL.leaves, TORCH.leaves = [], []
    xs = [TL.convert(program.x0, None), TORCH.convert(program.x0, None)]
    steps, inputs, taken = [], [], []  # taken: per step, its input x and its leaves, on each side
    rtol = _rtol(program.x0)  # the tolerance of the least precise dtype so far
    k = 0
    while True:
        if k < len(program.steps):
            name, args = program.steps[k]
        elif draw is not None:
            drawn = draw(k, TORCH.to_numpy(xs[1]))
            if drawn is None:
                break
            name, args = drawn
        else:
            break
        op = OPS[name]
        x_np = TORCH.to_numpy(xs[1])
        before = len(TL.leaves)
        ours, theirs = _step(TL, op, args, xs[0]), _step(TORCH, op, args, xs[1])
        steps.append((name, args))
        inputs.append((x_np, args))
        taken.append([(xs[0], xs[1])] + list(zip(TL.leaves[before:], TORCH.leaves[before:])))
        difference = _compare_step(k, op, ours, theirs, x_np, args, rtol)
        if difference or ours[0] == "error" or theirs[0] == "error":
            if difference and difference.kind != "value":  # a value's row is found where the arrays are at hand
                difference = replace(difference, known=_known(difference.kind, name, Case(x_np, args)))
            return replace(program, steps=steps, refused=not difference), difference, inputs
        xs = [ours[1], theirs[1]]
        if TL.is_tensor(xs[0]):  # the next op starts from PyTorch's values: each op is compared on equal inputs
            xs[0].data = np.array(TORCH.to_numpy(xs[1]))
        arrays = [a for a in args.values() if isinstance(a, np.ndarray)]
        rtol = max(rtol, _rtol(*arrays, *([TORCH.to_numpy(xs[1])] if TORCH.is_tensor(xs[1]) else [])))
        for y in xs if not op.terminal else ():  # kept, to find the step where the gradients part
            if y.requires_grad and not y.is_leaf:
                y.retain_grad()
        k += 1
        if op.terminal:
            return replace(program, steps=steps), None, inputs
    done = replace(program, steps=steps)
    return done, _compare_gradients(done, xs, inputs, taken, rtol), inputs


def _compare_gradients(program, xs, inputs, taken, rtol):
    """Backpropagate one upstream gradient through both; the difference at the last step (from the end) whose
    inputs' gradients differ: the op whose backward parts the two."""
    ours, theirs = xs
    if not (TORCH.is_tensor(theirs) and theirs.requires_grad and theirs.dtype.is_floating_point):
        return None
    u = _LAST_UPSTREAM[0] = _upstream(program, tuple(theirs.shape), TORCH.to_numpy(theirs).dtype)
    try:
        theirs.backward(torch.from_numpy(u))
    except Exception:  # PyTorch has no gradient here (none is compared)
        return None
    try:
        ours.backward(u)
    except Exception as error:
        return Difference("backward error", _failed_backward(error), len(program.steps) - 1, _describe(error))
    shared = _shared_gradient(program, taken, u)
    if shared:
        return shared
    # Round-off flows back: the gradients at step k carry the rounding of every backward after it, so the scale
    # is the largest magnitude met from the end down to k (for an op that adds up terms, its inputs times the
    # gradient of its result), times the largest CONDITION met. An elementwise op's gradient is bounded element
    # by element: its own size, the upstream's, and the rounding carried in times the derivative |gradient /
    # upstream| (where log_softmax's g - p sum(g) cancelled to 1e-3, pow's derivative of 1e27 makes that
    # rounding the size of the gradient); so is an op's whose result is one number (a loss, a sum) to every
    # element (tanh's 1 - y^2 at a loss of 15 is 2e-13, one ulp of y apart in the two frameworks: 1e-3 of it);
    # the largest bound is carried on to the steps before.
    upstream, scale, condition = u, 0.0, 1.0  # upstream: PyTorch's gradient of step k's result
    later = []  # (name, Case) of the steps after k: a documented difference there flows back to k
    for k in reversed(range(len(program.steps))):
        pairs = [(o, t) for o, t in taken[k] if TORCH.is_tensor(t) and t.requires_grad]
        grads = [(o.grad, t.grad) for o, t in pairs]
        name, args = program.steps[k]
        condition, carried = max(condition, _condition(name, args)), scale  # carried: the upstream's rounding
        scale = max(scale, _scale(upstream, *(t.numpy() for _, t in grads if t is not None)))
        if adds_up(name, args):
            forward = [a for a in (inputs[k][0], *inputs[k][1].values()) if isinstance(a, np.ndarray)]
            scale = max(scale, _scale(*forward) * _scale(upstream))
        amplified = scale
        for i, ((_, t), (g, tg)) in enumerate(zip(pairs, grads)):
            if g is None and tg is None:
                continue
            tg = np.zeros(tuple(t.shape), TORCH.to_numpy(t).dtype) if tg is None else tg.numpy()
            g = np.zeros_like(tg) if g is None else np.asarray(g)
            where = "x" if i == 0 else f"argument {i}"
            tol = (scale * condition, max(rtol, _rtol(tg)))
            elementwise = not adds_up(name, args) and tg.shape == upstream.shape
            if elementwise or (upstream.ndim == 0 and tg.ndim):  # each element its own bound (a loss: the number)
                passed_on = np.maximum(max(carried, _scale(upstream)), carried * _gain(tg, upstream))
                tol = (np.maximum(passed_on, 0.0 if elementwise else scale) * condition, tol[1])
                amplified = max(amplified, _scale(passed_on))  # the steps before carry it on
            if g.dtype != tg.dtype or g.shape != tg.shape:
                detail = f"{where}: tensorlab {g.dtype} {g.shape}, PyTorch {tg.dtype} {tg.shape}"
            else:
                detail = compare_values(g, tg, *tol)
            if detail:
                same = lambda a, b, tol=tol: compare_values(a, b, *tol) is None  # noqa: E731
                row = _known("gradient", name, Case(*inputs[k], g, tg, upstream, same, name))
                row = row or next((r for n, c in later if (r := _known("flows back", n, c))), 0)
                return Difference("gradient", name, k, f"of {where} {detail}", known=row)
        later.append((name, Case(*inputs[k], upstream=upstream, op=name)))
        scale = amplified
        x_grad = pairs[0][1].grad if pairs and pairs[0][1] is taken[k][0][1] else None
        upstream = x_grad.numpy() if x_grad is not None else upstream
    return None


def _gain(grad, upstream):
    """|grad / upstream| element by element, where both are finite and the upstream is not 0; 0 elsewhere."""
    with np.errstate(all="ignore"):
        gain = np.abs(grad.astype(np.float64) / upstream)
    return np.where(np.isfinite(gain), gain, 0.0)


def _shared_gradient(program, taken, u):
    """A Difference at the first step one of whose tensors' .grad shares memory with an earlier one's or with the
    upstream u (a leaf keeps a backward's own array as its .grad, tensor._held_nowhere_else), else None."""
    seen, held = set(), [u]
    for k, pairs in enumerate(taken):
        for o, _ in pairs:
            g = getattr(o, "grad", None)
            if g is None or id(o) in seen:
                continue
            seen.add(id(o))
            if any(np.shares_memory(g, h) for h in held):
                return Difference("shared gradient", program.steps[k][0], k, f"{g.shape} {g.dtype}")
            held.append(g)
    return None


def _failed_backward(error):
    """The name of the Function whose backward raised `error` (the backward walk's `fn`), e.g. 'Linear'."""
    tb, name = error.__traceback__, "backward"
    while tb is not None:
        fn = tb.tb_frame.f_locals.get("fn") if tb.tb_frame.f_code.co_name == "backward" else None
        name = type(fn).__name__ if fn is not None else name
        tb = tb.tb_next
    return name


# ----- drawing programs -----------------------------------------------------------------------------------------------

OP_NAMES = sorted(OPS)


def draw_program(seed, index, ops=OP_NAMES, max_steps=4):
    """Program `index` of run `seed`, run: (program, difference, inputs). Each program has its own generator, so
    any one of them can be drawn again alone."""
    r = np.random.default_rng([seed, index])
    special = 0.15 if r.random() < 0.25 else 0.0
    length = int(r.integers(1, max_steps + 1))

    def pick(x):
        for _ in range(50):
            name = ops[int(r.integers(len(ops)))]
            args = OPS[name].gen(r, x)
            if args is not None:
                return name, args
        return None

    for _ in range(100):
        dtype = str(r.choice(DTYPES, p=[0.4, 0.3, 0.15, 0.15]))
        x0 = values(r, random_shape(r), dtype, special, unit=r.random() < 0.15)
        first = pick(x0)
        if first is not None:
            break
    program = Program(x0, [first], upstream=int(r.integers(2**31)), special_upstream=bool(r.random() < 0.1))
    return run(program, lambda k, x: pick(x) if k < length else None)


# ----- shrinking -----------------------------------------------------------------------------------------------------


def _slots(program):
    """(path, array) for every array of the program: x0, then each step's arrays (in lists and index tuples too)."""
    yield ("x0",), program.x0

    def walk(path, value):
        if isinstance(value, np.ndarray):
            yield path, value
        elif isinstance(value, Const):
            yield path, value.array
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                yield from walk((*path, i), v)

    for k, (_, args) in enumerate(program.steps):
        for name, value in args.items():
            yield from walk((k, name), value)


def _with_slot(program, path, array):
    array = np.asarray(array)  # np.round of a 0-d array is a scalar
    if path == ("x0",):
        return replace(program, x0=array)

    def put(value, rest):
        if not rest:
            return Const(array) if isinstance(value, Const) else array
        items = list(value)
        items[rest[0]] = put(items[rest[0]], rest[1:])
        return type(value)(items)

    k, name, *rest = path
    steps = list(program.steps)
    args = dict(steps[k][1])
    args[name] = put(args[name], rest)
    steps[k] = (steps[k][0], args)
    return replace(program, steps=steps)


def _candidates(program, inputs):
    """Smaller or simpler programs, most promising first."""
    n = len(program.steps)
    for j in range(1, n):  # the chain before step j replaced by its value
        yield replace(program, x0=inputs[j][0], steps=program.steps[j:])
    for j in range(n):
        yield replace(program, steps=program.steps[:j] + program.steps[j + 1 :])
    if program.upstream >= 0:
        yield replace(program, upstream=-1, special_upstream=False)
    if program.special_upstream:
        yield replace(program, special_upstream=False)
    slots = list(_slots(program))
    for path, a in slots:  # shapes: one axis cut, in every array that shares it (counted from the end), or alone
        for axis, size in enumerate(a.shape):
            back = a.ndim - axis
            for new in (0, 1, size - 1) if size > 1 else (0,) if size == 1 else ():
                for start in range(size - new + 1):
                    kept, shared = range(start, start + new), program
                    for other_path, b in slots:
                        if b.ndim >= back and b.shape[b.ndim - back] == size:
                            shared = _with_slot(shared, other_path, np.take(b, kept, axis=b.ndim - back))
                    yield shared
                    yield _with_slot(program, path, np.take(a, kept, axis=axis))
    for axis in (i for i, n in enumerate(program.x0.shape) if n == 1):  # x0 without a size-1 axis
        yield replace(program, x0=np.squeeze(program.x0, axis))
    for path, a in slots:  # values: round, then element by element to 0 and 1
        if a.dtype.kind != "f":
            continue
        with np.errstate(invalid="ignore"):
            for simpler in (np.round(a), np.where(np.isfinite(a), np.sign(a), a)):
                if not np.array_equal(simpler, a, equal_nan=True):
                    yield _with_slot(program, path, simpler.astype(a.dtype))
        if a.size <= 16:
            for i in np.ndindex(a.shape):
                for v in (0.0, 1.0):
                    if not a[i] == v:
                        b = a.copy()
                        b[i] = v
                        yield _with_slot(program, path, b)


def _size(program):
    """What shrinking makes smaller, most important first: steps, elements, sizes and axes, a random upstream
    gradient, the length of the printed values."""
    shapes = [a.shape for _, a in _slots(program)]
    elements = sum(math.prod(s) or 2 for s in shapes)  # empty only where an empty array shows it
    sizes = sum(sum(s) + len(s) for s in shapes)
    return len(program.steps), elements, sizes, program.upstream >= 0, program.special_upstream, _complexity(program)


def shrink(program, difference, inputs, budget=400):
    """The smallest program found that still shows a difference of the same kind at the same op."""
    best, best_inputs = program, inputs
    improved = True
    while improved and budget > 0:
        improved = False
        for candidate in _candidates(best, best_inputs):
            budget -= 1
            if budget <= 0:
                break
            try:
                done, d, done_inputs = run(candidate)
            except Exception:  # a candidate the op table cannot run is just not smaller
                continue
            if d is not None and d.key == difference.key and not d.known and _size(done) < _size(best):
                best, best_inputs, difference, improved = done, done_inputs, d, True
                break
    return best, difference


def _complexity(program):
    """Of two programs of one size, the one whose values print shorter is simpler."""
    return sum(len(_array_literal(a)) for _, a in _slots(program))


# ----- printing a reproducer ------------------------------------------------------------------------------------------


def _number(v, dtype):
    if dtype.kind == "b":
        return str(bool(v))
    if dtype.kind in "iu":
        return str(int(v))
    text = str(np.float32(v)) if dtype == np.float32 else repr(float(v))
    return {"inf": "inf", "-inf": "-inf", "nan": "nan"}.get(text, text)


def _array_literal(a):
    def nested(b):
        if b.ndim == 0:
            return _number(b[()], a.dtype)
        return "[" + ", ".join(nested(c) for c in b) + "]"

    body = nested(a)
    if a.size == 0:
        return f"np.zeros({a.shape}, dtype=np.{a.dtype.type.__name__})"
    return f"np.array({body}, dtype=np.{a.dtype.type.__name__})"


def _substitute(code, names):
    """code with each name (not an attribute, not a keyword) replaced by its text."""
    return re.sub(r"(?<![.\w])([A-Za-z_]\w*)\b(?!\s*=[^=])", lambda m: names.get(m.group(1), m.group(1)), code)


def reproducer(program, difference):
    """A short runnable Python snippet that shows the difference: the inputs, then each side's steps."""
    grads = difference.kind in ("gradient", "backward error")
    arrays = [a for _, a in _slots(program)]
    data = [f"a{j} = {_array_literal(a)}" for j, a in enumerate(arrays)]
    if grads:
        data.append(f"u = {_array_literal(_upstream_of(program))}  # the upstream gradient")
    lines, helpers = [], set()
    for make, x, label in (("tensorlab.tensor", "x", "tensorlab"), ("torch.tensor", "tx", "PyTorch")):
        count, leaves = [0], []

        def render(value, make=make, x=x, leaves=leaves, count=count):
            if isinstance(value, (np.ndarray, Const)):
                count[0] += 1
                if isinstance(value, Const) or value.dtype.kind != "f":
                    return f"{make}(a{count[0]})"
                leaves.append(f"{x}{count[0]}")
                lines.append(f"{x}{count[0]} = {make}(a{count[0]}, requires_grad=True)")
                return leaves[-1]
            if value is SAME:
                return x
            if isinstance(value, list):
                return "[" + ", ".join(render(v) for v in value) + "]"
            if isinstance(value, tuple):
                return "(" + "".join(render(v) + ", " for v in value) + ")"
            return repr(value)

        grad = ", requires_grad=True" if program.x0.dtype.kind == "f" else ""
        lines.append(f"{x} = {x}0 = {make}(a0{grad})" if grad and grads else f"{x} = {make}(a0{grad})")
        leaves += [f"{x}0"] if grad else []
        for k, (name, args) in enumerate(program.steps):
            code = OPS[name].tl if x == "x" else OPS[name].torch
            helpers.update(h for h in HELPERS if h in code)
            call = _substitute(code, {**{n: render(v) for n, v in args.items()}, "x": x})
            last = k == len(program.steps) - 1
            lines.append(f"show({label!r}, lambda: {call})" if last and not grads else f"{x} = {call}")
        if grads:
            u = "u" if x == "x" else "torch.tensor(u)"
            lines.append(f"{x}.backward({u})\nprint({label!r}, 'gradients:', {', '.join(g + '.grad' for g in leaves)})")
    head = [
        "import numpy as np, torch, torch.nn.functional as TF, tensorlab, tensorlab.functional as F",
        "from numpy import inf, nan",
        "from tensorlab import nn",
    ]
    while more := {h for h in HELPERS for g in helpers if h in inspect.getsource(HELPERS[g])} - helpers:
        helpers |= more  # the helpers the helpers call (_tl_block calls _set)
    if helpers - {"_set"}:
        head += ["import tensorlab as tl", "from tensorlab import optim"]
    if helpers:
        head += [inspect.getsource(HELPERS[h]) for h in sorted(helpers, key=lambda h: h != "_set")]
    if not grads:
        head.append(inspect.getsource(show))
    return "\n".join(head + data + lines)


def show(label, f):
    """Print f() or the exception it raises."""
    try:
        print(label, f())
    except Exception as error:
        print(label, "refuses:", repr(error))


def _upstream_of(program):
    """The upstream gradient the program sends back through its result."""
    run(program)
    return _LAST_UPSTREAM[0]


_LAST_UPSTREAM = [None]  # the upstream gradient of the program run last


# ----- a run of many programs ----------------------------------------------------------------------------------------


@dataclass
class Report:
    programs: int = 0
    steps: int = 0
    refused: int = 0  # programs whose last step both frameworks refused
    documented: dict = field(default_factory=dict)  # row -> programs
    undocumented: dict = field(default_factory=dict)  # (kind, op) -> [programs, (program, difference, inputs)]
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # this process's CPU time: the rate a shared machine does not blur
    shrunk: dict = field(default_factory=dict)  # (kind, op) -> (program, difference)
    worst: dict = field(default_factory=dict)  # tolerance -> the largest relative error that agreed

    def text(self, snippets=True):
        rate = self.programs / max(self.cpu_seconds, 1e-9)
        lines = [
            f"{self.programs} programs ({self.steps} steps) in {self.seconds:.1f} s ({self.cpu_seconds:.1f} s of CPU: "
            f"{rate:.0f} programs per CPU second)",
            f"  both refused the last step: {self.refused}",
            f"  documented differences: {sum(self.documented.values())} "
            + " ".join(f"(row {row}: {n})" for row, n in sorted(self.documented.items())),
            "  largest relative error that agreed: "
            + ", ".join(f"{e:.1e} (tolerance {rtol:.0e})" for rtol, e in sorted(self.worst.items())),
            f"  undocumented: {sum(n for n, _ in self.undocumented.values())} programs, "
            f"{len(self.undocumented)} kinds of difference at an op",
        ]
        for kind, meaning in KINDS.items():
            keys = sorted(k for k in self.undocumented if k[0] == kind)
            if keys:
                lines.append(f"\n== {kind}: {meaning} ({len(keys)} ops)")
            for key in keys:
                n, (_, difference, _) = self.undocumented[key]
                program, difference = self.shrunk.get(key, (None, difference))
                lines.append(f"-- {key[1]}: {n} programs; {difference.detail}")
                if snippets and program is not None:
                    lines.append("    " + reproducer(program, difference).replace("\n", "\n    "))
        return "\n".join(lines)


def fuzz(programs, seed, ops=OP_NAMES, shrink_groups=None, budget=400, max_steps=4):
    """Run `programs` programs of run `seed`; shrink the first program of each undocumented (kind, op) (the first
    `shrink_groups` of them; None: all)."""
    report, start, cpu = Report(), time.perf_counter(), time.process_time()
    WORST.clear()
    for index in range(programs):
        program, difference, inputs = draw_program(seed, index, ops, max_steps)
        report.programs += 1
        report.steps += len(program.steps)
        report.refused += program.refused
        if difference is None:
            continue
        if difference.known:
            report.documented[difference.known] = report.documented.get(difference.known, 0) + 1
            continue
        entry = report.undocumented.setdefault(difference.key, [0, (program, difference, inputs)])
        entry[0] += 1
    report.seconds, report.cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    report.worst = dict(WORST)
    for key in list(report.undocumented)[:shrink_groups]:
        report.shrunk[key] = shrink(*report.undocumented[key][1], budget=budget)
    return report


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ops", nargs="*", default=None, help="only these ops of tests/fuzz_programs.py")
    parser.add_argument("--no-shrink", action="store_true", help="list the differences without shrinking them")
    parser.add_argument("--budget", type=int, default=400, help="programs run to shrink each kind of difference")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.ops or ()) - set(OPS))
    if unknown:
        parser.error(f"no such op: {', '.join(unknown)} (the table's ops: {', '.join(OP_NAMES)})")
    torch.set_num_threads(1)
    ops = sorted(args.ops) if args.ops else OP_NAMES
    report = fuzz(args.programs, args.seed, ops, 0 if args.no_shrink else None, args.budget)
    print(report.text())
    return 1 if report.undocumented else 0


if __name__ == "__main__":
    sys.exit(main())
