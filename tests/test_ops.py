"""Every op in tensorlab.functional, checked twice: by gradcheck and against PyTorch.

CASES is the one table: op name -> cases. Each case runs
  (a) tensorlab.gradcheck (float64 central differences, random upstream gradient),
  (b) check_against_torch in float64 (values, shape, dtype, every input's gradient),
  (c) check_against_torch in float32 (dtype preserved, tolerance ~1e-5),
on every backend (NumPy; CuPy too on a GPU). test_every_exported_op_has_cases fails when an
op is added to functional.__all__ without cases here, so no op escapes both checks.
"""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from reference import assert_close, check_against_torch, torch_index

import tensorlab
import tensorlab.backend
import tensorlab.functional as F
from tensorlab.ops import elementwise as _ew
from tensorlab.ops.axes import expand_reduced
from tensorlab.ops.broadcast import unbroadcast
from tensorlab.ops.cross_entropy import CrossEntropy
from tensorlab.ops.losses import BinaryCrossEntropy, BinaryCrossEntropyWithLogits, MseLoss, NllLoss
from tensorlab.ops.reduce import Min, Std, Var
from tensorlab.ops.shape import BroadcastTo, Reshape

_rng = np.random.default_rng(20261121)


def randn(*shape, scale=1.0):
    """Standard normal float64 values (shape () gives a 0-d array)."""
    return np.asarray(_rng.standard_normal(shape) * scale)


def positive(*shape):
    """Values in [0.5, 2): safe for log, sqrt, fractional powers."""
    return np.asarray(_rng.uniform(0.5, 2.0, shape))


def away_from_zero(*shape):
    """|values| in [0.3, 2) with random signs: safe for 1/x, and for relu's kink at 0."""
    return np.asarray(_rng.uniform(0.3, 2.0, shape) * _rng.choice([-1.0, 1.0], shape))


def with_tie(x, i, j):
    """x with the element at flat index j set equal to the one at i (a 2-way tie for max)."""
    x = x.copy()
    x.flat[j] = x.flat[i]
    return x


def probabilities(*shape):
    """Values in [0.05, 0.95]: inside binary_cross_entropy's domain, away from its clamped logs."""
    return np.asarray(_rng.uniform(0.05, 0.95, shape))


def with_ties(a, b, every=3):
    """b with every `every`-th element set equal to a's (ties for maximum, minimum and the comparisons)."""
    b = b.copy()
    b.flat[::every] = a.flat[::every]
    return b


def ids(high, *shape):
    return _rng.integers(0, high, shape)


def mask(*shape):
    return _rng.random(shape) < 0.4


def rope_tables(T, D, like):
    """RoPE's (T, D) cos and sin tables, from tensorlab.nn.positional, in the dtype of `like`."""
    from tensorlab.nn.positional import rope_tables as tables

    dtype = str(like.dtype).replace("torch.", "")
    cos, sin = (t.astype(dtype) for t in tables(T, D))
    if isinstance(like, torch.Tensor):
        return torch.from_numpy(cos).to(like.device), torch.from_numpy(sin).to(like.device)
    return tensorlab.tensor(cos, device=like.device), tensorlab.tensor(sin, device=like.device)


def torch_rope(x, cos, sin):
    """The reference, written with torch ops: x cos + [-x2, x1] sin."""
    half = x.shape[-1] // 2
    return x * cos + torch.cat([-x[..., half:], x[..., :half]], dim=-1) * sin


class Case:
    """One call of an op: the tensorlab function, the PyTorch one, the inputs (see check_against_torch).

    kink=True: an input sits where the op has no derivative and PyTorch's rule picks a value (clamp's
    limits, leaky_relu's 0, 0 ** 0, a 3-way tie for the minimum); central differences average the two
    sides there, so gradcheck cannot judge the row and PyTorch alone does.
    """

    def __init__(self, label, tl_fn, torch_fn, *inputs, f32_atol=None, kink=False):
        self.label, self.tl_fn, self.torch_fn, self.inputs = label, tl_fn, torch_fn, inputs
        self.f32_atol, self.kink = f32_atol, kink


class SeededDropout:
    """Dropout made deterministic for the checks: reseeded before every call.

    PyTorch draws its own mask, so the torch side multiplies by the mask tensorlab drew
    (read off by dropping out a tensor of ones with the same seed) and divides by 1-p.
    The mask's statistics, scaling and eval mode are tested separately below.
    """

    def __init__(self, p, seed=7):
        self.p, self.seed, self.keep = p, seed, None

    def tl(self, x):
        tensorlab.manual_seed(self.seed)
        ones = tensorlab.tensor(np.ones(x.shape, dtype=str(x.dtype)), device=x.device)
        self.keep = F.dropout(ones, p=self.p).numpy() != 0
        tensorlab.manual_seed(self.seed)
        return F.dropout(x, p=self.p)

    def torch(self, x):
        return x * torch.from_numpy(self.keep).to(x.dtype) / (1 - self.p)


def _softmax_masked(f, value):
    return lambda x, m: f(F.masked_fill(x, m, value))


ROW_MASK = np.array([[False, True, False, True, False], [True] * 5, [False] * 5])  # row 1 fully masked
BOOL_2D = np.array([[True, False, True, False], [False, False, True, True], [True, True, False, False]])
TARGETS_IGNORED = np.array([[1, -100, 3], [0, 0, -100]])
COMPARED_A = randn(3, 4)
COMPARED_B = with_ties(COMPARED_A, randn(3, 4))
TIED = np.array([[2.0, 2.0, 1.0, 2.0], [0.5, 3.0, -1.0, 3.0], [1.0, 0.0, -2.0, 0.0]])  # 3-way, 2-way, 2-way ties
# their outputs are indices or booleans
NO_GRADIENT = {"all", "any", "argmax", "argmin", "eq", "ne", "lt", "le", "gt", "ge"}


def _comparison_cases(name, torch_fn):
    tl_fn = getattr(F, name)
    return [
        Case("with-ties", tl_fn, torch_fn, COMPARED_A, COMPARED_B),
        Case("broadcast", tl_fn, torch_fn, COMPARED_A, COMPARED_B[1]),
        Case("python-scalar", lambda x: tl_fn(x, 0.25), lambda x: torch_fn(x, 0.25), np.array([-1.0, 0.25, 2.0])),
        Case("ints", tl_fn, torch_fn, np.array([[1, 2, 3]]), np.array([[3], [2]])),
    ]


DROPOUT_03, DROPOUT_07 = SeededDropout(0.3), SeededDropout(0.7, seed=11)

CASES = {
    # ----- elementwise arithmetic: broadcasting both ways, size-1 axes, 0-d, Python scalars
    "add": [
        Case("same-shape", F.add, torch.add, randn(3, 4), randn(3, 4)),
        Case("row-vector", F.add, torch.add, randn(3, 4), randn(4)),
        Case("both-ways", F.add, torch.add, randn(2, 1, 4), randn(3, 1)),
        Case("0-d", F.add, torch.add, randn(), randn(2, 3)),
        Case("python-scalar", lambda x: F.add(x, 2.5), lambda x: x + 2.5, randn(3)),
    ],
    "sub": [
        Case("column", F.sub, torch.sub, randn(3, 4), randn(3, 1)),
        Case("both-ways", F.sub, torch.sub, randn(1, 4), randn(3, 1)),
        Case("scalar-minus-x", lambda x: F.sub(2.0, x), lambda x: 2.0 - x, randn(2, 3)),
    ],
    "mul": [
        Case("same-shape", F.mul, torch.mul, randn(3, 4), randn(3, 4)),
        Case("both-ways", F.mul, torch.mul, randn(4, 1, 3), randn(2, 1)),
        Case("same-tensor-twice", lambda x: F.mul(x, x), lambda x: x * x, randn(2, 3)),
        Case("python-scalar", lambda x: F.mul(-1.5, x), lambda x: -1.5 * x, randn(4)),
    ],
    "div": [
        Case("same-shape", F.div, torch.div, randn(3, 4), away_from_zero(3, 4)),
        Case("both-ways", F.div, torch.div, randn(3, 1), away_from_zero(1, 4)),
        Case("one-over-x", lambda x: F.div(1, x), lambda x: 1 / x, away_from_zero(2, 3)),
    ],
    "neg": [
        Case("matrix", F.neg, torch.neg, randn(3, 4)),
        Case("0-d", F.neg, torch.neg, randn()),
    ],
    "pow": [
        Case("square", lambda x: F.pow(x, 2), lambda x: x**2, randn(3, 4)),
        Case("cube", lambda x: F.pow(x, 3), lambda x: x**3, randn(5)),
        Case("sqrt", lambda x: F.pow(x, 0.5), lambda x: x**0.5, positive(2, 3)),
        Case("inverse", lambda x: F.pow(x, -1), lambda x: x**-1, away_from_zero(2, 3)),
        Case("negative-fraction", lambda x: F.pow(x, -1.5), lambda x: x**-1.5, positive(4)),
        Case("zero-exponent-at-0", lambda x: F.pow(x, 0), lambda x: x**0, np.array([0.0, 1.5, -2.0])),
        Case("tensor-exponent", F.pow, torch.pow, positive(3, 4), randn(3, 4)),
        Case("tensor-exponent-broadcast", F.pow, torch.pow, positive(3, 1), randn(4)),
        Case("number-base", lambda e: F.pow(2.5, e), lambda e: torch.pow(2.5, e), randn(2, 3)),
        Case("base-0-exponent-2", F.pow, torch.pow, np.array([0.0, 0.0, 1.5]), np.array([2.0, 3.0, 0.0])),
        Case("0-to-the-0", F.pow, torch.pow, np.array([0.0, 2.0]), np.array([0.0, 0.0]), kink=True),
    ],
    "maximum": [
        Case("with-ties", F.maximum, torch.maximum, COMPARED_A, COMPARED_B),
        Case("broadcast", F.maximum, torch.maximum, randn(3, 1), randn(4)),
        Case("broadcast-ties", F.maximum, torch.maximum, TIED, TIED[0]),
        Case(
            "python-scalar",
            lambda x: F.maximum(x, 0.5),
            lambda x: torch.maximum(x, torch.tensor(0.5, dtype=x.dtype)),
            np.array([-1.0, 0.5, 2.0]),
        ),
    ],
    "minimum": [
        Case("with-ties", F.minimum, torch.minimum, COMPARED_A, COMPARED_B),
        Case("broadcast", F.minimum, torch.minimum, randn(2, 1, 3), randn(4, 1)),
        Case("broadcast-ties", F.minimum, torch.minimum, TIED, TIED[:, :1]),
    ],
    "clamp": [
        Case("both", lambda x: F.clamp(x, -0.5, 0.7), lambda x: x.clamp(-0.5, 0.7), randn(3, 4)),
        Case("min-only", lambda x: F.clamp(x, min=0.1), lambda x: x.clamp(min=0.1), randn(3, 4)),
        Case("max-only", lambda x: F.clamp(x, max=-0.2), lambda x: x.clamp(max=-0.2), randn(5)),
        Case("min-above-max", lambda x: F.clamp(x, 1.0, -1.0), lambda x: x.clamp(1.0, -1.0), randn(4)),
        Case(  # the gradient passes at the limits themselves
            "at-the-limits",
            lambda x: F.clamp(x, -0.5, 0.75),
            lambda x: x.clamp(-0.5, 0.75),
            np.array([-1.0, -0.5, 0.0, 0.75, 1.0]),
            kink=True,
        ),
    ],
    # ----- pointwise functions
    "exp": [Case("matrix", F.exp, torch.exp, randn(3, 4))],
    "log": [Case("matrix", F.log, torch.log, positive(3, 4))],
    "sqrt": [Case("matrix", F.sqrt, torch.sqrt, positive(3, 4))],
    "tanh": [Case("matrix", F.tanh, torch.tanh, randn(3, 4, scale=2))],
    "sigmoid": [
        Case("matrix", F.sigmoid, torch.sigmoid, randn(3, 4, scale=2)),
        Case("large", F.sigmoid, torch.sigmoid, np.array([-40.0, -12.0, 0.3, 12.0, 40.0])),
    ],
    "logsigmoid": [
        Case("matrix", F.logsigmoid, TF.logsigmoid, randn(3, 4, scale=2)),
        Case("large", F.logsigmoid, TF.logsigmoid, np.array([-40.0, -12.0, 0.3, 12.0, 40.0])),
    ],
    "softplus": [
        Case("matrix", F.softplus, TF.softplus, randn(3, 4, scale=2)),
        Case("past-the-threshold", F.softplus, TF.softplus, np.array([-40.0, -12.0, 0.3, 19.0, 25.0])),
        Case(
            "beta-threshold",
            lambda x: F.softplus(x, beta=2.0, threshold=5.0),
            lambda x: TF.softplus(x, beta=2.0, threshold=5.0),
            np.array([-3.0, 0.5, 2.0, 2.4, 2.6, 4.0]),
        ),
    ],
    "relu": [Case("matrix", F.relu, torch.relu, away_from_zero(3, 4))],
    "leaky_relu": [
        Case("default-slope", F.leaky_relu, TF.leaky_relu, away_from_zero(3, 4)),
        Case("slope", lambda x: F.leaky_relu(x, 0.2), lambda x: TF.leaky_relu(x, 0.2), away_from_zero(5)),
        Case(
            "at-0",
            lambda x: F.leaky_relu(x, 0.2),
            lambda x: TF.leaky_relu(x, 0.2),
            np.array([-1.0, 0.0, 2.0]),
            kink=True,
        ),
    ],
    "silu": [
        Case("matrix", F.silu, TF.silu, randn(3, 4, scale=3)),
        Case("large", F.silu, TF.silu, np.array([-80.0, -20.0, 0.0, 20.0, 80.0])),  # no overflow in the tails
    ],
    "gelu": [
        Case("exact-erf", F.gelu, TF.gelu, randn(3, 4, scale=2)),
        Case(
            "tanh",
            lambda x: F.gelu(x, approximate="tanh"),
            lambda x: TF.gelu(x, approximate="tanh"),
            randn(3, 4, scale=2),
        ),
    ],
    # ----- reductions: None, int, tuple, negative axes, keepdims, size-1 axes
    "sum": [
        Case("all", F.sum, torch.sum, randn(2, 3, 4)),
        Case("axis-0", lambda x: F.sum(x, axis=0), lambda x: x.sum(0), randn(3, 4)),
        Case("axes-neg", lambda x: F.sum(x, axis=(-3, -1)), lambda x: x.sum((-3, -1)), randn(2, 3, 4)),
        Case("keepdims", lambda x: F.sum(x, axis=1, keepdims=True), lambda x: x.sum(1, keepdim=True), randn(2, 3, 4)),
        Case("size-1-axis", lambda x: F.sum(x, axis=1), lambda x: x.sum(1), randn(3, 1, 2)),
        Case("0-d-axis-neg", lambda x: F.sum(x, axis=-1), lambda x: x.sum(-1), randn()),
    ],
    "mean": [
        Case("all", F.mean, torch.mean, randn(2, 3, 4)),
        Case("0-d-axis-0", lambda x: F.mean(x, axis=0), lambda x: x.mean(0), randn()),
        Case("axis-neg", lambda x: F.mean(x, axis=-1), lambda x: x.mean(-1), randn(3, 4)),
        Case(
            "axes-keepdims",
            lambda x: F.mean(x, axis=(0, 2), keepdims=True),
            lambda x: x.mean((0, 2), keepdim=True),
            randn(2, 3, 4),
        ),
    ],
    "max": [  # torch.amax: tied maxima share the gradient equally
        Case(
            "axis-neg-with-ties",
            lambda x: F.max(x, axis=-1),
            lambda x: x.amax(-1),
            with_tie(with_tie(randn(3, 4), 0, 2), 9, 10),
        ),
        Case("all", F.max, torch.amax, randn(2, 3, 4)),
        Case(
            "axes-keepdims",
            lambda x: F.max(x, axis=(0, 2), keepdims=True),
            lambda x: x.amax((0, 2), keepdim=True),
            randn(2, 3, 4),
        ),
        Case("size-1-axis", lambda x: F.max(x, axis=0), lambda x: x.amax(0), randn(1, 4)),
        Case("0-d-axis-0", lambda x: F.max(x, axis=0), lambda x: x.amax(0), randn()),
    ],
    "min": [  # torch.amin: tied minima share the gradient equally
        Case(
            "axis-neg-with-ties",
            lambda x: F.min(x, axis=-1),
            lambda x: x.amin(-1),
            with_tie(with_tie(randn(3, 4), 0, 2), 9, 10),
        ),
        # a 3-way tie: each gets 1/3, central differences see 1/2 (a kink, as any tie of 3)
        Case("three-way-tie", lambda x: F.min(x, axis=-1), lambda x: x.amin(-1), -TIED, kink=True),
        Case("all", F.min, torch.amin, randn(2, 3, 4)),
        Case(
            "axes-keepdims",
            lambda x: F.min(x, axis=(0, 2), keepdims=True),
            lambda x: x.amin((0, 2), keepdim=True),
            randn(2, 3, 4),
        ),
        Case("0-d-axis-0", lambda x: F.min(x, axis=0), lambda x: x.amin(0), randn()),
    ],
    "var": [  # correction=1 (unbiased) by default, as PyTorch
        Case("all", F.var, torch.var, randn(3, 4)),
        Case("axis-keepdims", lambda x: F.var(x, axis=1, keepdims=True), lambda x: x.var(1, keepdim=True), randn(3, 4)),
        Case(
            "axes-correction-0",
            lambda x: F.var(x, axis=(0, 2), correction=0),
            lambda x: x.var((0, 2), correction=0),
            randn(2, 3, 4),
        ),
        Case("correction-2", lambda x: F.var(x, axis=-1, correction=2), lambda x: x.var(-1, correction=2), randn(2, 5)),
    ],
    "std": [
        Case("all", F.std, torch.std, randn(3, 4)),
        Case("axis-neg", lambda x: F.std(x, axis=-1), lambda x: x.std(-1), randn(2, 3, 4)),
        Case(
            "correction-0-keepdims",
            lambda x: F.std(x, axis=0, keepdims=True, correction=0),
            lambda x: x.std(0, keepdim=True, correction=0),
            randn(4, 3),
        ),
        Case(
            "constant-row", lambda x: F.std(x, axis=1), lambda x: x.std(1), np.array([[1.5, 1.5, 1.5], [1.0, 2.0, 4.0]])
        ),
    ],
    "argmax": [
        Case("all", F.argmax, torch.argmax, randn(3, 4)),
        Case(
            "axis-keepdims-ties",
            lambda x: F.argmax(x, axis=1, keepdims=True),
            lambda x: x.argmax(1, keepdim=True),
            TIED,
        ),
        Case("axis-0", lambda x: F.argmax(x, axis=0), lambda x: x.argmax(0), randn(3, 4)),
        Case("0-d", lambda x: F.argmax(x, axis=-1), lambda x: x.argmax(-1), randn()),
    ],
    "all": [
        Case("all", F.all, torch.all, BOOL_2D),
        Case("axis-keepdims", lambda x: F.all(x, axis=1, keepdims=True), lambda x: x.all(1, keepdim=True), BOOL_2D),
        Case("floats", lambda x: F.all(x, axis=0), lambda x: x.all(0), np.array([[0.0, 1.0], [2.0, 3.0]])),
    ],
    "any": [
        Case("all", F.any, torch.any, BOOL_2D),
        Case("axis-keepdims", lambda x: F.any(x, axis=1, keepdims=True), lambda x: x.any(1, keepdim=True), BOOL_2D),
        Case("0-d", lambda x: F.any(x, axis=-1), lambda x: x.any(-1), np.array(False)),
    ],
    "argmin": [
        Case("all-keepdims", lambda x: F.argmin(x, keepdims=True), lambda x: x.argmin(keepdim=True), randn(3, 4)),
        Case("axis-neg-ties", lambda x: F.argmin(x, axis=-1), lambda x: x.argmin(-1), -TIED),
    ],
    # ----- comparisons: boolean tensors that take no gradient
    "eq": _comparison_cases("eq", torch.eq),
    "ne": _comparison_cases("ne", torch.ne),
    "lt": _comparison_cases("lt", torch.lt),
    "le": _comparison_cases("le", torch.le),
    "gt": _comparison_cases("gt", torch.gt),
    "ge": _comparison_cases("ge", torch.ge),
    # ----- shape ops
    "broadcast_to": [
        Case(
            "new-and-size-1-axes",
            lambda x: F.broadcast_to(x, (2, 3, 4)),
            lambda x: x.broadcast_to((2, 3, 4)),
            randn(3, 1),
        ),
        Case("minus-1-keeps", lambda x: F.broadcast_to(x, (2, -1, 4)), lambda x: x.expand(2, -1, 4), randn(3, 1)),
        Case("from-0-d", lambda x: F.broadcast_to(x, (2, 3)), lambda x: x.expand(2, 3), randn()),
    ],
    "squeeze": [
        Case("all", F.squeeze, torch.squeeze, randn(1, 3, 1)),
        Case("axis", lambda x: F.squeeze(x, 0), lambda x: x.squeeze(0), randn(1, 3, 1)),
        Case("axis-not-size-1-stays", lambda x: F.squeeze(x, 1), lambda x: x.squeeze(1), randn(1, 3, 1)),
        Case("axes", lambda x: F.squeeze(x, (0, -1)), lambda x: x.squeeze((0, -1)), randn(1, 2, 1)),
    ],
    "unsqueeze": [
        Case("front", lambda x: F.unsqueeze(x, 0), lambda x: x.unsqueeze(0), randn(2, 3)),
        Case("last", lambda x: F.unsqueeze(x, -1), lambda x: x.unsqueeze(-1), randn(2, 3)),
        Case("middle", lambda x: F.unsqueeze(x, 1), lambda x: x.unsqueeze(1), randn(2, 3)),
        Case("0-d", lambda x: F.unsqueeze(x, 0), lambda x: x.unsqueeze(0), randn()),
    ],
    "flatten": [
        Case("all", F.flatten, torch.flatten, randn(2, 3, 4)),
        Case("middle", lambda x: F.flatten(x, 1, 2), lambda x: x.flatten(1, 2), randn(2, 3, 4, 2)),
        Case("from-axis-neg", lambda x: F.flatten(x, -2), lambda x: x.flatten(-2), randn(2, 3, 4)),
        Case("0-d", F.flatten, torch.flatten, randn()),
    ],
    "reshape": [
        Case("infer", lambda x: F.reshape(x, (4, -1)), lambda x: x.reshape(4, -1), randn(2, 3, 4)),
        Case("add-size-1", lambda x: F.reshape(x, (2, 1, 3)), lambda x: x.reshape(2, 1, 3), randn(6)),
        Case("to-0-d", lambda x: F.reshape(x, ()), lambda x: x.reshape(()), randn(1)),
    ],
    "transpose": [
        Case("reverse", F.transpose, lambda x: x.permute(2, 1, 0), randn(2, 3, 4)),
        Case("perm", lambda x: F.transpose(x, (1, 0, 2)), lambda x: x.permute(1, 0, 2), randn(2, 3, 4)),
        Case("negative-axes", lambda x: F.transpose(x, (-1, 0, 1)), lambda x: x.permute(-1, 0, 1), randn(2, 3, 4)),
    ],
    "swapaxes": [
        Case("first-last", lambda x: F.swapaxes(x, 0, -1), lambda x: x.transpose(0, -1), randn(2, 3, 4)),
        Case("last-two", lambda x: F.swapaxes(x, -2, -1), lambda x: x.transpose(-2, -1), randn(3, 4)),
        Case("0-d", lambda x: F.swapaxes(x, 0, -1), lambda x: x.transpose(0, -1), randn()),
    ],
    "getitem": [
        Case(
            "slices", lambda x: F.getitem(x, (slice(1, None), slice(None, None, 2))), lambda x: x[1:, ::2], randn(3, 5)
        ),
        Case("negative-int", lambda x: F.getitem(x, -1), lambda x: x[-1], randn(3, 4)),
        Case("none-ellipsis", lambda x: F.getitem(x, (None, Ellipsis, 1)), lambda x: x[None, ..., 1], randn(2, 3, 4)),
        Case("bool-mask", lambda x: F.getitem(x, BOOL_2D), lambda x: x[torch_index(BOOL_2D)], randn(3, 4)),
        Case(
            "repeated-ids",
            lambda x: F.getitem(x, np.array([0, 2, 0, 0])),
            lambda x: x[torch_index(np.array([0, 2, 0, 0]))],
            randn(3, 4),
        ),
        Case(
            "two-id-arrays-repeated",
            lambda x: F.getitem(x, (np.array([0, 1, 0]), np.array([2, 2, 2]))),
            lambda x: x[torch_index((np.array([0, 1, 0]), np.array([2, 2, 2])))],
            randn(3, 4),
        ),
        Case(
            "slice-and-list", lambda x: F.getitem(x, (slice(None), [1, 1, 3])), lambda x: x[:, [1, 1, 3]], randn(2, 4)
        ),
    ],
    "concatenate": [
        Case(
            "axis-neg",
            lambda *xs: F.concatenate(xs, axis=-1),
            lambda *xs: torch.cat(xs, dim=-1),
            randn(2, 3),
            randn(2, 1),
            randn(2, 2),
        ),
        Case("axis-0", lambda *xs: F.concatenate(xs), lambda *xs: torch.cat(xs), randn(1, 3), randn(2, 3)),
    ],
    "stack": [
        Case("axis-0", lambda *xs: F.stack(xs), lambda *xs: torch.stack(xs), randn(2, 3), randn(2, 3)),
        Case(
            "axis-neg",
            lambda *xs: F.stack(xs, axis=-1),
            lambda *xs: torch.stack(xs, dim=-1),
            randn(2, 3),
            randn(2, 3),
            randn(2, 3),
        ),
    ],
    "split": [
        Case(
            "sizes-axis-neg",
            lambda x: F.split(x, [1, 3], axis=-1),
            lambda x: torch.split(x, [1, 3], dim=-1),
            randn(2, 4),
        ),
        Case("piece-size", lambda x: F.split(x, 2), lambda x: torch.split(x, 2), randn(5, 3)),
        Case("piece-size-axis", lambda x: F.split(x, 3, axis=1), lambda x: torch.split(x, 3, dim=1), randn(2, 7)),
        Case(
            "one-piece-unused", lambda x: F.split(x, [1, 2, 1])[1], lambda x: torch.split(x, [1, 2, 1])[1], randn(4, 2)
        ),
    ],
    "chunk": [
        Case("even", lambda x: F.chunk(x, 2), lambda x: torch.chunk(x, 2), randn(4, 3)),
        Case("uneven-axis-neg", lambda x: F.chunk(x, 3, axis=-1), lambda x: torch.chunk(x, 3, dim=-1), randn(2, 7)),
        Case("fewer-pieces", lambda x: F.chunk(x, 4), lambda x: torch.chunk(x, 4), randn(6, 2)),
        Case("empty-axis", lambda x: F.chunk(x, 3), lambda x: torch.chunk(x, 3), randn(0, 2)),
    ],
    # ----- matrix product: vectors, batches, broadcast batch axes
    "matmul": [
        Case("matrix", F.matmul, torch.matmul, randn(3, 4), randn(4, 5)),
        Case("batch-times-matrix", F.matmul, torch.matmul, randn(2, 3, 4), randn(4, 5)),
        Case("broadcast-batches", F.matmul, torch.matmul, randn(2, 1, 3, 4), randn(3, 4, 2)),
        Case("vector-times-batch", F.matmul, torch.matmul, randn(4), randn(2, 4, 3)),
        Case("matrix-times-vector", F.matmul, torch.matmul, randn(3, 4), randn(4)),
        Case("dot", F.matmul, torch.matmul, randn(5), randn(5)),
    ],
    "linear": [  # y = x W^T + b, W of shape (out, in)
        Case("bias-batch", F.linear, TF.linear, randn(2, 3, 4), randn(5, 4), randn(5)),
        Case("no-bias", F.linear, TF.linear, randn(3, 4), randn(2, 4)),
    ],
    # ----- selection
    "where": [
        Case("broadcast-b", F.where, torch.where, mask(3, 4), randn(3, 4), randn(4)),
        Case("broadcast-condition", F.where, torch.where, mask(3, 1), randn(1, 4), randn(3, 4)),
        Case(
            "python-scalar",
            lambda c, a: F.where(c, a, 0.0),
            lambda c, a: torch.where(c, a, 0.0),
            mask(2, 3),
            randn(2, 3),
        ),
    ],
    "masked_fill": [
        Case(
            "same-shape",
            lambda x, m: F.masked_fill(x, m, -1.5),
            lambda x, m: x.masked_fill(m, -1.5),
            randn(3, 4),
            mask(3, 4),
        ),
        Case(
            "broadcast-mask",
            lambda x, m: F.masked_fill(x, m, 0.0),
            lambda x, m: x.masked_fill(m, 0.0),
            randn(2, 3, 4),
            mask(4),
        ),
    ],
    # ----- softmax family; a "fully masked" row uses -1e9, where tensorlab and PyTorch agree
    "softmax": [
        Case("last-axis", F.softmax, lambda x: torch.softmax(x, -1), randn(3, 5)),
        Case("axis-neg-2", lambda x: F.softmax(x, axis=-2), lambda x: torch.softmax(x, -2), randn(2, 4, 3)),
        Case("size-1-axis", F.softmax, lambda x: torch.softmax(x, -1), randn(3, 1)),
        Case("large-logits", F.softmax, lambda x: torch.softmax(x, -1), randn(2, 4, scale=50)),
        Case("0-d", lambda x: F.softmax(x, axis=0), lambda x: torch.softmax(x, 0), randn()),
        Case(
            "masked-rows",
            _softmax_masked(F.softmax, -1e9),
            lambda x, m: torch.softmax(x.masked_fill(m, -1e9), -1),
            randn(3, 5),
            ROW_MASK,
        ),
    ],
    "log_softmax": [
        Case("last-axis", F.log_softmax, lambda x: torch.log_softmax(x, -1), randn(3, 5)),
        Case("axis-0", lambda x: F.log_softmax(x, axis=0), lambda x: torch.log_softmax(x, 0), randn(4, 3)),
        Case("large-logits", F.log_softmax, lambda x: torch.log_softmax(x, -1), randn(2, 4, scale=50)),
        Case("0-d", lambda x: F.log_softmax(x, axis=-1), lambda x: torch.log_softmax(x, -1), randn()),
        # only a fully masked row: a partly masked one puts -1e9 in the output, beyond what
        # finite differences can resolve
        Case(
            "fully-masked-row",
            _softmax_masked(F.log_softmax, -1e9),
            lambda x, m: torch.log_softmax(x.masked_fill(m, -1e9), -1),
            randn(3, 5),
            np.array([[False] * 5, [True] * 5, [False] * 5]),
        ),
    ],
    "cross_entropy": [
        Case("rows-repeated-targets", F.cross_entropy, TF.cross_entropy, randn(4, 5), np.array([1, 0, 4, 1])),
        Case(
            "batch-time-ignored",
            F.cross_entropy,
            lambda x, t: TF.cross_entropy(x.reshape(-1, 4), t.reshape(-1)),
            randn(2, 3, 4),
            TARGETS_IGNORED,
        ),
        Case(
            "custom-ignore-index",
            lambda x, t: F.cross_entropy(x, t, ignore_index=2),
            lambda x, t: TF.cross_entropy(x, t, ignore_index=2),
            randn(5, 3),
            np.array([2, 0, 1, 2, 1]),
        ),
        Case("large-logits", F.cross_entropy, TF.cross_entropy, randn(3, 4, scale=40), np.array([3, 0, 2])),
        Case(
            "sum-ignore-0",
            lambda x, t: F.cross_entropy(x, t, ignore_index=0, reduction="sum"),
            lambda x, t: TF.cross_entropy(x, t, ignore_index=0, reduction="sum"),
            randn(5, 3),
            np.array([2, 0, 1, 0, 1]),
        ),
        Case(
            "none-ignored",
            lambda x, t: F.cross_entropy(x, t, reduction="none"),
            lambda x, t: TF.cross_entropy(x.reshape(-1, 4), t.reshape(-1), reduction="none").reshape(2, 3),
            randn(2, 3, 4),
            TARGETS_IGNORED,
        ),
        Case(
            "label-smoothing-ignore-minus-1",
            lambda x, t: F.cross_entropy(x, t, ignore_index=-1, label_smoothing=0.2),
            lambda x, t: TF.cross_entropy(x, t, ignore_index=-1, label_smoothing=0.2),
            randn(4, 5),
            np.array([1, -1, 4, 1]),
        ),
        Case(
            "label-smoothing-none-ignore-7",
            lambda x, t: F.cross_entropy(x, t, ignore_index=7, reduction="none", label_smoothing=0.1),
            lambda x, t: TF.cross_entropy(x, t, ignore_index=7, reduction="none", label_smoothing=0.1),
            randn(4, 3),
            np.array([7, 2, 0, 7]),
        ),
        Case(
            "label-smoothing-sum",
            lambda x, t: F.cross_entropy(x, t, reduction="sum", label_smoothing=1.0),
            lambda x, t: TF.cross_entropy(x, t, reduction="sum", label_smoothing=1.0),
            randn(3, 4),
            np.array([3, 0, 2]),
        ),
    ],
    "nll_loss": [  # class axis last, as cross_entropy
        Case("rows", F.nll_loss, TF.nll_loss, randn(4, 5), np.array([1, 0, 4, 1])),
        Case(
            "batch-time-ignored",
            F.nll_loss,
            lambda x, t: TF.nll_loss(x.reshape(-1, 4), t.reshape(-1)),
            randn(2, 3, 4),
            TARGETS_IGNORED,
        ),
        Case(
            "sum-ignore-2",
            lambda x, t: F.nll_loss(x, t, ignore_index=2, reduction="sum"),
            lambda x, t: TF.nll_loss(x, t, ignore_index=2, reduction="sum"),
            randn(5, 3),
            np.array([2, 0, 1, 2, 1]),
        ),
        Case(
            "none",
            lambda x, t: F.nll_loss(x, t, reduction="none"),
            lambda x, t: TF.nll_loss(x, t, reduction="none"),
            randn(3, 4),
            np.array([3, -100, 0]),
        ),
    ],
    "mse_loss": [
        Case("mean", F.mse_loss, TF.mse_loss, randn(3, 4), randn(3, 4)),
        Case(
            "sum",
            lambda x, t: F.mse_loss(x, t, "sum"),
            lambda x, t: TF.mse_loss(x, t, reduction="sum"),
            randn(5),
            randn(5),
        ),
        Case(
            "none",
            lambda x, t: F.mse_loss(x, t, "none"),
            lambda x, t: TF.mse_loss(x, t, reduction="none"),
            randn(2, 3),
            randn(2, 3),
        ),
    ],
    "binary_cross_entropy": [
        Case("mean", F.binary_cross_entropy, TF.binary_cross_entropy, probabilities(3, 4), probabilities(3, 4)),
        Case(
            "sum-hard-targets",
            lambda p, t: F.binary_cross_entropy(p, t, "sum"),
            lambda p, t: TF.binary_cross_entropy(p, t, reduction="sum"),
            probabilities(5),
            np.array([0.0, 1.0, 1.0, 0.0, 1.0]),
        ),
        Case(
            "none",
            lambda p, t: F.binary_cross_entropy(p, t, "none"),
            lambda p, t: TF.binary_cross_entropy(p, t, reduction="none"),
            probabilities(2, 3),
            probabilities(2, 3),
        ),
        Case(  # the logs clamped at -100, the gradient's guard p (1 - p) >= 1e-12
            "p-0-and-1",
            lambda p, t: F.binary_cross_entropy(p, t, "none"),
            lambda p, t: TF.binary_cross_entropy(p, t, reduction="none"),
            np.array([0.0, 1.0, 0.0, 1.0, 0.5]),
            np.array([0.0, 1.0, 0.3, 0.6, 0.5]),
            kink=True,
        ),
    ],
    "binary_cross_entropy_with_logits": [
        Case(
            "mean",
            F.binary_cross_entropy_with_logits,
            TF.binary_cross_entropy_with_logits,
            randn(3, 4, scale=3),
            probabilities(3, 4),
        ),
        Case(
            "large-logits-none",
            lambda x, t: F.binary_cross_entropy_with_logits(x, t, "none"),
            lambda x, t: TF.binary_cross_entropy_with_logits(x, t, reduction="none"),
            np.array([-80.0, -30.0, 0.0, 30.0, 80.0]),
            np.array([1.0, 0.0, 0.5, 1.0, 0.2]),
        ),
        Case(
            "sum",
            lambda x, t: F.binary_cross_entropy_with_logits(x, t, "sum"),
            lambda x, t: TF.binary_cross_entropy_with_logits(x, t, reduction="sum"),
            randn(4),
            probabilities(4),
        ),
    ],
    "embedding": [
        Case("repeated-ids", F.embedding, TF.embedding, np.array([[0, 3, 3], [4, 0, 3]]), randn(5, 4)),
        Case("int32-ids", F.embedding, TF.embedding, ids(6, 7).astype(np.int32), randn(6, 2)),
    ],
    # ----- normalisation over the last axis
    "rms_norm": [
        Case("weight", F.rms_norm, lambda x, w: TF.rms_norm(x, (4,), w, eps=1e-5), randn(2, 3, 4), positive(4)),
        Case("no-weight-eps", lambda x: F.rms_norm(x, eps=1e-3), lambda x: TF.rms_norm(x, (5,), eps=1e-3), randn(3, 5)),
    ],
    "layer_norm": [
        Case(
            "weight-bias",
            F.layer_norm,
            lambda x, w, b: TF.layer_norm(x, (4,), w, b, eps=1e-5),
            randn(2, 3, 4),
            positive(4),
            randn(4),
        ),
        Case("plain", F.layer_norm, lambda x: TF.layer_norm(x, (5,)), randn(3, 5)),
    ],
    "causal_attention": [  # (B, H, T, D)
        Case(
            "B1-H2-T4-D3",
            F.causal_attention,
            lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, is_causal=True),
            randn(1, 2, 4, 3),
            randn(1, 2, 4, 3),
            randn(1, 2, 4, 3),
        ),
        Case(
            "eval-ignores-dropout",
            lambda q, k, v: F.causal_attention(q, k, v, dropout_p=0.5, training=False),
            lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, is_causal=True),
            randn(2, 1, 3, 2),
            randn(2, 1, 3, 2),
            randn(2, 1, 3, 2),
        ),
    ],
    "rope": [  # x (..., T, D); the cos/sin tables are constants in x's dtype
        Case(
            "B2-H3-T4-D6",
            lambda x: F.rope(x, *rope_tables(4, 6, x)),
            lambda x: torch_rope(x, *rope_tables(4, 6, x)),
            randn(2, 3, 4, 6),
        ),
        Case(
            "T5-D2",
            lambda x: F.rope(x, *rope_tables(5, 2, x)),
            lambda x: torch_rope(x, *rope_tables(5, 2, x)),
            randn(5, 2),
        ),
    ],
    # ----- device and dtype moves in the graph (a float32 round trip: tests/test_convert.py)
    "to": [
        Case(
            "to-cpu-and-back", lambda x: F.to(F.to(x, "cpu"), x.device), lambda x: x.to("cpu").to(x.device), randn(3, 4)
        ),  # two moves on CuPy, none on NumPy (x.to(its own device) is x)
    ],
    "astype": [
        Case("own-dtype-copy", lambda x: F.astype(x, x.dtype), lambda x: x.clone(), randn(2, 3)),
    ],
    "dropout": [
        Case("p0.3", DROPOUT_03.tl, DROPOUT_03.torch, randn(4, 6)),
        Case("p0.7", DROPOUT_07.tl, DROPOUT_07.torch, randn(3, 5)),
    ],
}

CASE_PARAMS = [pytest.param(case, id=f"{op}-{case.label}") for op, cases in CASES.items() for case in cases]


def test_every_exported_op_has_cases():
    """An op added to functional.__all__ without cases here would escape both checks: fail instead."""
    assert set(CASES) == set(F.__all__), (
        f"ops without cases: {sorted(set(F.__all__) - set(CASES))}; "
        f"cases for ops not exported: {sorted(set(CASES) - set(F.__all__))}"
    )
    assert all(CASES[op] for op in F.__all__)


# gradcheck judges every row but those of ops without a gradient (check_against_torch checks that they
# offer none) and the rows at a kink (see Case); PyTorch judges those
GRADCHECK_PARAMS = [
    pytest.param(case, id=f"{op}-{case.label}")
    for op, cases in CASES.items()
    for case in cases
    if op not in NO_GRADIENT and not case.kink
]


@pytest.mark.parametrize("case", GRADCHECK_PARAMS)
def test_gradcheck(case, backend):
    run_gradcheck(case, backend.device)


def run_gradcheck(case, device):
    inputs = [
        tensorlab.tensor(x, requires_grad=x.dtype.kind == "f", device=device) if isinstance(x, np.ndarray) else x
        for x in case.inputs
    ]
    tensorlab.gradcheck(_single_output(case.tl_fn), inputs)


@pytest.mark.parametrize("case", CASE_PARAMS)
def test_against_torch_float64(case, backend):
    run_against_torch(case, backend.device)


def run_against_torch(case, device):
    check_against_torch(case.tl_fn, case.torch_fn, case.inputs, device=device, name=case.label)


@pytest.mark.parametrize("case", CASE_PARAMS)
def test_against_torch_float32(case, backend):
    """float32 in -> float32 out and float32 gradients (Python scalars must not upcast), close to PyTorch's."""
    check_against_torch(
        case.tl_fn,
        case.torch_fn,
        case.inputs,
        dtype="float32",
        device=backend.device,
        atol=case.f32_atol,
        name=case.label,
    )


# ----- a planted wrong backward for each op of issue 23: the table's rows must catch it -------------------------


def _pow_forgets_the_log(self, gy):  # gb = gy * y, the ln(a) factor forgotten
    with np.errstate(divide="ignore", invalid="ignore"):  # 0 ** -1 in the row at 0 ** 0
        ga = gy * self.b * self.a ** (self.b - 1)
    return unbroadcast(ga, self.a.shape), unbroadcast(gy * self.y, self.b.shape)


def _tie_goes_to_a(self, gy):  # a tie gives all of gy to a instead of half to each
    a_wins = self.a >= self.b if self.pick == "maximum" else self.a <= self.b
    ga = gy * a_wins
    return unbroadcast(ga, self.a.shape), unbroadcast(gy - ga, self.b.shape)


def _ties_each_take_all(self, gy):  # every tied extreme gets all of gy: the ties are not shared
    return expand_reduced(gy, self.x.shape, self.axes) * (self.x == self.y)


def _var_divides_by_n(self, gy):  # the backward forgets the correction: 2 (x - m) / n
    return expand_reduced(gy, self.x_shape, self.axes) * (2 * self.centered / self.count())


def _std_forgets_the_sqrt(self, gy):  # var's gradient, without the chain rule through sqrt: 1 / (2 y)
    return expand_reduced(gy, self.x_shape, self.axes) * (2 * self.centered / self.dof)


def _broadcast_to_averages(self, gy):  # the copies' gradients averaged instead of added
    return unbroadcast(gy, self.x_shape) * (math.prod(self.x_shape) / gy.size)


def _reshape_reverses(self, gy):  # the gradient laid back in the wrong order (squeeze, unsqueeze, flatten)
    return gy.reshape(-1)[::-1].reshape(self.x_shape)


_ORIGINAL = {op: op.backward for op in (NllLoss, CrossEntropy, BinaryCrossEntropy)}  # before any plant


def _mean_over_every_row(self, gy):  # 'mean' divides by all rows, the ignored ones too
    self.count = np.asarray(float(len(self.t)), dtype=gy.dtype)
    return _ORIGINAL[NllLoss](self, gy)


def _smoothing_forgotten(self, gy):  # the backward of the one-hot target, whatever the smoothing
    self.smoothing = 0.0
    return _ORIGINAL[CrossEntropy](self, gy)


def _target_gradient_sign_flipped(self, gy):
    gp, gt = _ORIGINAL[BinaryCrossEntropy](self, gy)
    return gp, -gt


PLANTED_BACKWARDS = {  # op: (the Function class, a wrong backward as a student might write it)
    "pow": (_ew.PowTensor, _pow_forgets_the_log),
    "maximum": (_ew.Maximum, _tie_goes_to_a),
    "minimum": (_ew.Minimum, _tie_goes_to_a),
    "clamp": (_ew.Clamp, lambda self, gy: gy),  # the gradient passes outside the limits too
    "leaky_relu": (_ew.LeakyRelu, lambda self, gy: gy * self.positive),  # relu's: the slope forgotten
    "min": (Min, _ties_each_take_all),
    "var": (Var, _var_divides_by_n),
    "std": (Std, _std_forgets_the_sqrt),
    "broadcast_to": (BroadcastTo, _broadcast_to_averages),
    "squeeze": (Reshape, _reshape_reverses),
    "unsqueeze": (Reshape, _reshape_reverses),
    "flatten": (Reshape, _reshape_reverses),
    "nll_loss": (NllLoss, _mean_over_every_row),
    "mse_loss": (MseLoss, lambda self, gy: (self.d * self.loss_grad(gy), -self.d * self.loss_grad(gy))),  # no 2
    "binary_cross_entropy": (BinaryCrossEntropy, _target_gradient_sign_flipped),
    "binary_cross_entropy_with_logits": (  # the mean's 1/n forgotten
        BinaryCrossEntropyWithLogits,
        lambda self, gy: (gy * (0.5 * (np.tanh(0.5 * self.x) + 1) - self.target), -gy * self.x),
    ),
    "cross_entropy": (CrossEntropy, _smoothing_forgotten),
}
ISSUE_23_OPS = {  # the ops issue 23 added or extended; each with a backward has a plant above
    *("pow", "maximum", "minimum", "clamp", "leaky_relu", "min", "var", "std", "argmax", "argmin"),
    *("eq", "ne", "lt", "le", "gt", "ge", "broadcast_to", "squeeze", "unsqueeze", "flatten"),
    *("nll_loss", "mse_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "cross_entropy"),
}


def test_every_op_of_issue_23_with_a_gradient_has_a_planted_backward():
    assert set(PLANTED_BACKWARDS) == ISSUE_23_OPS - NO_GRADIENT


@pytest.mark.parametrize("op", sorted(PLANTED_BACKWARDS))
def test_a_planted_wrong_backward_is_caught_by_the_table(op, monkeypatch):
    """Each plant fails at least one row, in gradcheck or against PyTorch, and names the op's row; without
    the plant every row passes (the tests above)."""
    cls, wrong = PLANTED_BACKWARDS[op]
    monkeypatch.setattr(cls, "backward", wrong)
    caught = []
    for case in CASES[op]:
        checks = [run_against_torch] + ([] if case.kink else [run_gradcheck])
        for check in checks:
            try:
                check(case, "cpu")
            except AssertionError as error:  # GradcheckError is one too
                caught.append(f"{check.__name__}({case.label}): {str(error).splitlines()[0]}")
    assert caught, f"{op}: a wrong {cls.__name__}.backward passed every row of the table"
    assert any("run_against_torch" in line for line in caught), caught


def _host(array):
    """A NumPy copy of a backend array (a .grad on the GPU)."""
    return tensorlab.backend.to_device(array, "cpu")


def _single_output(fn):
    """gradcheck wants one output tensor: join several (split's pieces) into one vector."""

    def joined(*xs):
        ys = fn(*xs)
        return F.concatenate([F.reshape(y, (-1,)) for y in ys]) if isinstance(ys, tuple) else ys

    return joined


# ----- behaviour the table cannot show -----------------------------------------------------------


def test_softmax_of_a_fully_minus_inf_row_is_zeros_with_zero_gradient(backend):
    """Documented: zeros (attention over nothing contributes nothing), where PyTorch gives NaN."""
    x = np.array([[1.0, -np.inf, 0.5], [-np.inf] * 3])
    xt = tensorlab.tensor(x, requires_grad=True, device=backend.device)
    y = F.softmax(xt)
    np.testing.assert_array_equal(y.numpy()[1], [0.0, 0.0, 0.0])
    y.backward(tensorlab.tensor(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), device=backend.device))
    np.testing.assert_array_equal(_host(xt.grad)[1], [0.0, 0.0, 0.0])
    # the partly masked row is an ordinary softmax, as in PyTorch
    expected = torch.softmax(torch.tensor(x[0]), -1).numpy()
    assert_close("softmax of the partly masked row", y.numpy()[0], expected, 1e-12, 0)


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
def test_log_softmax_of_a_fully_minus_inf_row_is_nan_like_torch(backend):
    x = np.array([[0.5, -np.inf, 1.0], [-np.inf] * 3])
    check_against_torch(
        F.log_softmax, lambda t: torch.log_softmax(t, -1), [x], device=backend.device, name="log_softmax"
    )


def test_relu_gradient_at_exactly_zero_is_zero_like_torch(backend):
    check_against_torch(F.relu, torch.relu, [np.array([-1.0, 0.0, 0.0, 2.0])], device=backend.device, name="relu")


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("shape", [(), (0,), (7,), (3, 5), (2, 1, 6)])
def test_relu_forward_has_the_bits_of_max_x_0_minus_zero_nan_and_infinities_included(dtype, shape):
    """The forward takes the maximum against a row of zeros (a vector loop): the bits of max(x, 0) all the same."""
    x = np.random.default_rng(3).standard_normal(shape) * 4
    specials = [-0.0, 0.0, np.nan, -np.nan, np.inf, -np.inf] if np.dtype(dtype).kind == "f" else [0, -1, 1]
    x.reshape(-1)[: len(specials)] = specials[: x.size]
    x = x.astype(dtype)
    y = F.relu(tensorlab.Tensor(x)).data
    expected = np.maximum(x, dtype(0))
    assert y.dtype == expected.dtype and y.shape == expected.shape and y.tobytes() == expected.tobytes()


def test_max_three_way_tie_shares_the_gradient_like_torch_amax(backend):
    check_against_torch(
        lambda x: F.max(x, axis=-1),
        lambda x: x.amax(-1),
        [np.array([[2.0, 2.0, 1.0, 2.0], [0.0, 3.0, -1.0, 1.0]])],
        device=backend.device,
        name="max",
    )


def test_cross_entropy_ignores_minus_100_by_default_and_every_target_ignored_gives_nan_loss_zero_grad(backend):
    targets = np.array([-100, -100])
    check_against_torch(
        F.cross_entropy, TF.cross_entropy, [randn(2, 3), targets], device=backend.device, name="cross_entropy"
    )


def test_mixed_float32_and_float64_promote_like_torch(backend):
    """float32 (x) float64 gives float64; each gradient comes back in its own input's dtype. matmul and linear
    promote nothing: they refuse in one line, as PyTorch."""
    a32 = randn(3, 4).astype(np.float32)
    b64 = randn(4)
    for tl_fn, torch_fn in [(F.mul, torch.mul), (F.add, torch.add)]:
        a = tensorlab.tensor(a32, requires_grad=True, device=backend.device)
        bt = tensorlab.tensor(b64, requires_grad=True, device=backend.device)
        ta, tb = torch.tensor(a32, requires_grad=True), torch.tensor(b64, requires_grad=True)
        y, ty = tl_fn(a, bt), torch_fn(ta, tb)
        assert y.dtype == np.float64 and ty.dtype == torch.float64
        u = randn(*y.shape)
        y.backward(u)
        ty.backward(torch.from_numpy(u))
        assert a.grad.dtype == np.float32 and bt.grad.dtype == np.float64
        assert_close(f"{tl_fn.__name__} grad of the float32 input", _host(a.grad), ta.grad.numpy(), 1e-5, 1e-5)
        assert_close(f"{tl_fn.__name__} grad of the float64 input", _host(bt.grad), tb.grad.numpy(), 1e-5, 1e-5)
    w64 = randn(2, 4)
    for tl_fn, torch_fn in [(F.matmul, lambda a, w: a @ w.T), (F.linear, TF.linear)]:
        with pytest.raises(RuntimeError):
            torch_fn(torch.tensor(a32), torch.tensor(w64 if tl_fn is F.linear else w64.T.copy()))
        with pytest.raises(TypeError, match="operands of one dtype, not bool, expected .* float32 and float64"):
            w = w64 if tl_fn is F.linear else w64.T.copy()
            tl_fn(tensorlab.tensor(a32, device=backend.device), tensorlab.tensor(w, device=backend.device))


# ----- dropout: the mask itself ------------------------------------------------------------------


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_drops_a_fraction_p_and_scales_the_rest(p, backend):
    x = tensorlab.tensor(np.full((200, 100), 3.0, dtype=np.float32), requires_grad=True, device=backend.device)
    tensorlab.manual_seed(0)
    y = F.dropout(x, p=p)
    values = y.numpy()
    assert y.dtype == np.float32
    kept = values != 0
    assert abs(kept.mean() - (1 - p)) < 0.02, f"kept {kept.mean():.3f} of the elements, expected {1 - p}"
    np.testing.assert_allclose(values[kept], 3.0 / (1 - p), rtol=1e-6)
    g = randn(200, 100).astype(np.float32)
    y.backward(g)
    np.testing.assert_allclose(_host(x.grad), g * kept / (1 - p), rtol=1e-6)


def test_dropout_is_repeatable_after_manual_seed_and_differs_between_calls(backend):
    x = tensorlab.tensor(np.ones((8, 16)), device=backend.device)
    tensorlab.manual_seed(3)
    first, second = F.dropout(x, 0.5).numpy(), F.dropout(x, 0.5).numpy()
    tensorlab.manual_seed(3)
    np.testing.assert_array_equal(F.dropout(x, 0.5).numpy(), first)
    assert (first != second).any()


def test_dropout_in_eval_mode_and_with_p_0_is_the_identity_and_p_1_drops_everything(backend):
    x = tensorlab.tensor(randn(4, 5), requires_grad=True, device=backend.device)
    assert F.dropout(x, p=0.5, training=False) is x
    assert F.dropout(x, p=0.0) is x
    y = F.dropout(x, p=1.0)
    np.testing.assert_array_equal(y.numpy(), np.zeros((4, 5)))
    y.backward(np.ones((4, 5)))
    np.testing.assert_array_equal(_host(x.grad), np.zeros((4, 5)))


# ----- fused ops agree with the same math composed from primitives ------------------------------


def test_fused_ops_agree_with_their_composition(backend):
    rng = np.random.default_rng(5)
    x_np, w_np, b_np = rng.standard_normal((3, 6)), rng.uniform(0.5, 2, 6), rng.standard_normal(6)
    targets = np.array([5, 0, 2])

    def composed_softmax(x):
        e = F.exp(x - F.max(x, axis=-1, keepdims=True))
        return e / F.sum(e, axis=-1, keepdims=True)

    def composed_cross_entropy(x):
        logp = x - F.log(F.sum(F.exp(x), axis=-1, keepdims=True))
        return -F.mean(F.getitem(logp, (np.arange(3), targets)))

    def composed_rms_norm(x, w):
        return x / F.sqrt(F.mean(x * x, axis=-1, keepdims=True) + 1e-5) * w

    def composed_layer_norm(x, w, b):
        c = x - F.mean(x, axis=-1, keepdims=True)
        return c / F.sqrt(F.mean(c * c, axis=-1, keepdims=True) + 1e-5) * w + b

    pairs = [
        ("softmax", F.softmax, composed_softmax, [x_np]),
        ("log_softmax", F.log_softmax, lambda x: F.log(composed_softmax(x)), [x_np]),
        ("cross_entropy", lambda x: F.cross_entropy(x, targets), composed_cross_entropy, [x_np]),
        ("rms_norm", F.rms_norm, composed_rms_norm, [x_np, w_np]),
        ("layer_norm", F.layer_norm, composed_layer_norm, [x_np, w_np, b_np]),
    ]
    for name, fused, composed, arrays in pairs:
        results = []
        for fn in (fused, composed):
            xs = [tensorlab.tensor(a, requires_grad=True, device=backend.device) for a in arrays]
            y = fn(*xs)
            y.backward(np.random.default_rng(1).standard_normal(y.shape))
            results.append([y.numpy()] + [_host(x.grad) for x in xs])
        for k, (f, c) in enumerate(zip(*results)):
            assert_close(
                f"{name}: fused vs composed, {'output' if k == 0 else f'gradient {k - 1}'}", f, c, 1e-10, 1e-12
            )


def _grads_both(f, *arrays, upstream):
    """The leaves' gradients of f in tensorlab and in PyTorch, from the same arrays and upstream gradient."""
    ours = [tensorlab.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    f(*ours).backward(upstream)
    f(*theirs).backward(torch.tensor(upstream))
    return [t.grad for t in ours], [t.grad.numpy() for t in theirs]


def test_div_gradient_of_the_divisor_is_gy_times_z_over_b_as_pytorch():
    # x / x at a subnormal: ga = gy / x and gb = -gy * (z / x) cancel but for their rounding, which PyTorch's
    # -gy * ((a / b) / b) decides (5e27 where -(gy / b) * a / b gives 0)
    a = np.array([0.0, 3.720075976020836e-44])
    with np.errstate(all="ignore"):
        ours, theirs = _grads_both(lambda x: x / x, a, upstream=np.array([-0.45, 1.1594160954601582]))
    assert np.isnan(ours[0][0]) and np.isnan(theirs[0][0])
    assert ours[0][1] == theirs[0][1] and abs(theirs[0][1]) > 1e27  # exact: the same three roundings


def test_pow_gradient_multiplies_its_zeros_by_the_upstream_gradient_as_pytorch():
    # log(0 ** 2) sends an inf upstream gradient to 0 ** b, whose ln(0) term is 0: inf * 0 = NaN in the summed
    # gradient of b, as PyTorch's; a's zeros at b = 0 stay 0 under an inf upstream gradient, as PyTorch's
    a, b = np.array([2.5, -0.0], np.float32), np.array([[2.0]], np.float32)
    with np.errstate(all="ignore"):
        ours, theirs = _grads_both(lambda x, y: (x**y).log(), a, b, upstream=np.ones((1, 2), np.float32))
        assert np.isnan(ours[1]).all() and np.isnan(theirs[1]).all()
        np.testing.assert_allclose(ours[0][0], theirs[0][0], rtol=1e-6)
        a, b = np.array([0.0, 1.0]), np.array(0.0)
        ours, theirs = _grads_both(lambda x, y: x**y, a, b, upstream=np.array([0.5, np.inf]))
    assert np.array_equal(ours[0], [0.0, 0.0]) and np.array_equal(theirs[0], [0.0, 0.0])
