"""Every refusal is tensorlab's own line, and what PyTorch computes tensorlab computes (issue 32, item 4).

A sweep calls every op of tensorlab.functional (and the Tensor methods PyTorch users reach for) on every
combination of small inputs: bool, int64 and float32 tensors of shape (), (0,), (3,), (2, 3), (2, 0) and
(1, 2, 3, 2), with and without a backward. Whatever it raises must come from a `raise` statement in
tensorlab's own code: an exception whose innermost frame is NumPy's (an AxisError from inside
ndarray.sum), or a tensorlab line that did not mean to raise (a TypeError of a ufunc, a ValueError of
reshape), fails. The list of the issue is checked one case at a time against PyTorch below.
"""

import ast
import functools
import itertools
import traceback
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import tensorlab
import tensorlab.functional as F
from tensorlab.ops import elementwise as _ew

ENGINE = Path(tensorlab.__file__).resolve().parent


@functools.cache
def _raise_lines(path):
    """The line numbers that belong to a `raise` statement in the file at `path`."""
    raises = [node for node in ast.walk(ast.parse(Path(path).read_text())) if isinstance(node, ast.Raise)]
    return {n for node in raises for n in range(node.lineno, node.end_lineno + 1)}


def raised_by_tensorlab(error):
    """Whether `error` comes from a raise statement of tensorlab's: its innermost frame is in the engine, on a
    line of a `raise`. (A NumPy exception raised in C has a tensorlab line innermost, but not a raise.)"""
    frame = traceback.extract_tb(error.__traceback__)[-1]
    path = Path(frame.filename).resolve()
    return path.is_relative_to(ENGINE) and frame.lineno in _raise_lines(str(path))


def where_raised(error):
    frame = traceback.extract_tb(error.__traceback__)[-1]
    return f"{type(error).__name__} at {frame.filename}:{frame.lineno}: {str(error).splitlines()[0][:120]}"


# ----- the sweep ------------------------------------------------------------------------------------------------

SHAPES = [(), (0,), (3,), (2, 3), (2, 0), (1, 2, 3, 2)]
DTYPES = ["bool", "int64", "float32"]


def _array(shape, dtype):
    values = np.arange(np.prod(shape, dtype=int)).reshape(shape) % 3  # 0, 1, 2: valid class ids, some zeros
    return values.astype(dtype) if dtype != "float32" else (values - 0.5).astype(dtype)


POOL = [(shape, dtype) for shape in SHAPES for dtype in DTYPES]

# (label, the call on n tensors, n): every op of tensorlab.functional at least once, and Tensor methods
CALLS = [
    *[(name, getattr(F, name), 2) for name in ("add", "sub", "mul", "div", "maximum", "minimum", "matmul")],
    *[(name, getattr(F, name), 2) for name in ("eq", "ne", "lt", "le", "gt", "ge", "mse_loss")],
    *[(name, getattr(F, name), 2) for name in ("binary_cross_entropy", "binary_cross_entropy_with_logits")],
    *[(name, getattr(F, name), 1) for name in ("neg", "exp", "log", "sqrt", "tanh", "sigmoid", "logsigmoid")],
    *[(name, getattr(F, name), 1) for name in ("softplus", "relu", "leaky_relu", "silu", "gelu", "softmax")],
    *[(name, getattr(F, name), 1) for name in ("log_softmax", "rms_norm", "layer_norm", "dropout", "transpose")],
    *[(name, getattr(F, name), 1) for name in ("squeeze", "flatten")],
    *[
        (f"{name}-axis-{axis}", lambda x, name=name, axis=axis: getattr(F, name)(x, axis=axis), 1)
        for name in ("sum", "mean", "max", "min", "var", "std", "argmax", "argmin", "all", "any")
        for axis in (None, 0, -1, 3)
    ],
    ("pow", F.pow, 2),
    *[(f"pow-{p}", lambda x, p=p: F.pow(x, p), 1) for p in (2, -1, 0.5, True)],
    ("python-pow", lambda x: 2**x, 1),
    ("clamp", lambda x: F.clamp(x, 0, 1), 1),
    ("clamp-float", lambda x: F.clamp(x, min=0.5), 1),
    ("eq-number", lambda x: F.eq(x, 2), 1),
    ("lt-number", lambda x: F.lt(x, 0.5), 1),
    ("add-number", lambda x: x + 300, 1),
    ("add-string", lambda x: x + "a", 1),
    ("where-list", lambda x: F.where(x > 0, x, [1.0]), 1),
    ("reshape", lambda x: F.reshape(x, (-1,)), 1),
    ("broadcast_to", lambda x: F.broadcast_to(x, (2, 3)), 1),
    ("unsqueeze", lambda x: F.unsqueeze(x, 0), 1),
    ("swapaxes", lambda x: F.swapaxes(x, 0, -1), 1),
    ("getitem", lambda x: F.getitem(x, 0), 1),
    ("getitem-slice", lambda x: x[1:], 1),
    ("concatenate", lambda a, b: F.concatenate([a, b]), 2),
    ("concatenate-axis-1", lambda a, b: F.concatenate([a, b], axis=1), 2),
    ("stack", lambda a, b: F.stack([a, b]), 2),
    ("split", lambda x: F.split(x, 1), 1),
    ("chunk", lambda x: F.chunk(x, 2, axis=-1), 1),
    ("linear", F.linear, 2),
    ("linear-bias", F.linear, 3),
    ("where", F.where, 3),
    ("masked_fill", lambda x, mask: F.masked_fill(x, mask, 0.5), 2),
    ("masked_fill-inf", lambda x, mask: F.masked_fill(x, mask, -np.inf), 2),
    ("cross_entropy", F.cross_entropy, 2),
    ("nll_loss", F.nll_loss, 2),
    ("embedding", F.embedding, 2),
    ("causal_attention", F.causal_attention, 3),
    ("rope", F.rope, 3),
    ("to", lambda x: F.to(x, "cpu"), 1),
    ("astype", lambda x: F.astype(x, "float64"), 1),
    ("len", len, 1),
    ("float", float, 1),
    ("int", int, 1),
    ("bool", bool, 1),
    ("item", lambda x: x.item(), 1),
    ("all-method", lambda x: x.all(axis=2), 1),
]


def _sweep(calls, limit=400):
    """Run each call on the inputs of the pool (every combination, at most `limit` of them, a seeded sample),
    then a backward where the result takes a gradient; return the exceptions not raised by tensorlab."""
    rng = np.random.default_rng(32)
    escaped = []
    for label, call, n in calls:
        combos = list(itertools.product(POOL, repeat=n))
        if len(combos) > limit:
            combos = [combos[i] for i in rng.choice(len(combos), limit, replace=False)]
        for combo in combos:
            inputs = [tensorlab.tensor(_array(s, d), requires_grad=d == "float32") for s, d in combo]
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # 0 / 0 and log 0 on these values: NumPy warns, PyTorch not
                    out = call(*inputs)
                    for y in out if isinstance(out, tuple) else (out,):
                        if isinstance(y, tensorlab.Tensor) and y.requires_grad:
                            y.backward(np.ones(y.shape, y.dtype))
            except Exception as error:  # noqa: BLE001 (any exception is judged by where it was raised)
                if not raised_by_tensorlab(error):
                    escaped.append(f"{label}{[f'{d}{s}' for s, d in combo]}: {where_raised(error)}")
    return escaped


def test_the_sweep_calls_every_op_of_functional():
    called = {label.split("-")[0] for label, _, _ in CALLS}
    assert set(F.__all__) - called == set()


def test_no_exception_escapes_an_op_from_numpy():
    escaped = _sweep(CALLS)
    assert not escaped, f"{len(escaped)} exceptions not raised by tensorlab, e.g.\n" + "\n".join(escaped[:20])


def test_the_sweep_catches_an_op_that_lets_numpy_refuse(monkeypatch):
    """The planted mistake: neg as it was, -x on a bool array, NumPy's TypeError from inside the ufunc."""
    monkeypatch.setattr(_ew.Neg, "forward", lambda self, x: -x)
    escaped = _sweep([("neg", F.neg, 1)])
    assert escaped and all("neg['bool" in line and "TypeError" in line for line in escaped), escaped


def test_raised_by_tensorlab_tells_a_raise_from_a_numpy_error():
    with pytest.raises(ValueError) as ours:
        F.rms_norm(tensorlab.tensor(1.5))
    assert raised_by_tensorlab(ours.value)
    with pytest.raises(np.exceptions.AxisError) as numpy_own:
        np.zeros(3).sum(axis=3)
    assert not raised_by_tensorlab(numpy_own.value)
    with pytest.raises(TypeError) as from_a_ufunc:
        _ew.Neg().forward(np.array([True]))  # tensorlab's line now refuses; NumPy's would be the ufunc's
    assert raised_by_tensorlab(from_a_ufunc.value)
    with pytest.raises(TypeError) as numpy_in_tensorlab:
        _ew.Exp().forward(np.array(["a"]))  # a ufunc's TypeError: innermost frame in tensorlab, but no raise
    assert not raised_by_tensorlab(numpy_in_tensorlab.value)


# ----- the issue's list, against PyTorch ------------------------------------------------------------------------

B, I, X = np.array([True, False, True]), np.array([1, 2, 3]), np.array([[0.5, -1.0, 2.0], [1.5, 0.0, -2.0]])

# label: (tensorlab's call, PyTorch's call, the arrays both get); floating arrays require a gradient
ISSUE_CASES = {
    "rms_norm of an empty last axis": (F.rms_norm, lambda x: TF.rms_norm(x, (0,)), [np.zeros((2, 0))]),
    "layer_norm of an empty last axis": (F.layer_norm, lambda x: TF.layer_norm(x, (0,)), [np.zeros((2, 0))]),
    "linear of an empty last axis": (F.linear, TF.linear, [np.zeros((2, 0)), np.zeros((3, 0))]),
    "linear with bias, no features": (F.linear, TF.linear, [np.zeros((2, 0)), np.zeros((3, 0)), np.ones(3)]),
    "cross_entropy without classes": (F.cross_entropy, TF.cross_entropy, [np.zeros((2, 0)), np.array([-100] * 2)]),
    "cross_entropy without rows": (F.cross_entropy, TF.cross_entropy, [np.zeros((0, 3)), np.zeros(0, np.int64)]),
    "dropout of bool": (lambda x: F.dropout(x, 0.5), lambda x: TF.dropout(x, 0.5), [B]),
    "dropout of int": (lambda x: F.dropout(x, 0.5), lambda x: TF.dropout(x, 0.5), [I]),
    "rms_norm of 0-d": (F.rms_norm, lambda x: TF.rms_norm(x, ()), [np.array(1.5)]),
    "layer_norm of 0-d": (F.layer_norm, lambda x: TF.layer_norm(x, ()), [np.array(1.5)]),
    "all, axis out of range": (lambda x: x.all(axis=3), lambda x: x.all(3), [B]),
    "any, axis out of range": (lambda x: x.any(axis=-2), lambda x: x.any(-2), [B]),
    "-bool": (lambda x: -x, lambda x: -x, [B]),
    "bool - bool": (lambda x: x - x, lambda x: x - x, [B]),
    "int ** -1": (lambda x: x**-1, lambda x: x**-1, [I]),
    "bool ** 2": (lambda x: x**2, lambda x: x**2, [B]),
    "len() of 0-d": (len, len, [np.array(2.0)]),
    "masked_fill of int with -inf": (
        lambda x, m: F.masked_fill(x, m, -np.inf),
        lambda x, m: x.masked_fill(m, -np.inf),
        [I, B],
    ),
    "masked_fill of int with 2.5": (lambda x, m: F.masked_fill(x, m, 2.5), lambda x, m: x.masked_fill(m, 2.5), [I, B]),
    "masked_fill, a wider mask": (
        lambda x, m: F.masked_fill(x, m, 0.0),
        lambda x, m: x.masked_fill(m, 0.0),
        [X[0], np.array([[True], [False]])],
    ),
    "float() of one element": (float, float, [np.array([[2.5]])]),
    "int() of one element": (int, int, [np.array([-2.5])]),
    "float() of two": (float, float, [np.array([1.0, 2.0])]),
    "matmul of float32 and float64": (F.matmul, torch.matmul, [X.astype(np.float32), X.T.copy()]),
    "matmul of bool": (F.matmul, torch.matmul, [B, B]),
    "rms_norm of int": (F.rms_norm, lambda x: TF.rms_norm(x, (3,)), [I]),
    "layer_norm of bool": (F.layer_norm, lambda x: TF.layer_norm(x, (3,)), [B]),
    "relu of int": (F.relu, torch.relu, [np.array([-1, 0, 2])]),
    "relu of bool": (F.relu, torch.relu, [B]),
    # met by the fuzzer (tests/fuzz_torch.py)
    "argmax of bool": (F.argmax, torch.argmax, [B]),
    "argmin of bool, an axis": (lambda x: F.argmin(x, 0), lambda x: torch.argmin(x, 0), [B]),
    "dropout, p < 0, not training": (lambda x: F.dropout(x, -0.1, False), lambda x: TF.dropout(x, -0.1, False), [X]),
    "dropout of bool, p = 1": (lambda x: F.dropout(x, 1.0), lambda x: TF.dropout(x, 1.0), [B]),
    "dropout of an empty int": (lambda x: F.dropout(x, 0.5), lambda x: TF.dropout(x, 0.5), [np.zeros((2, 0), int)]),
    "linear of int": (F.linear, TF.linear, [I.reshape(1, 3), np.ones((2, 3), int), np.arange(2)]),
    "masked_fill of bool with -inf": (
        lambda x, m: F.masked_fill(x, m, -np.inf),
        lambda x, m: x.masked_fill(m, -np.inf),
        [B, ~B],
    ),
    "masked_fill of int with 1e30": (
        lambda x, m: F.masked_fill(x, m, 1e30),
        lambda x, m: x.masked_fill(m, 1e30),
        [I, B],
    ),
    "binary_cross_entropy of NaN": (F.binary_cross_entropy, TF.binary_cross_entropy, [np.array([np.nan]), np.ones(1)]),
    "nll_loss without classes": (
        lambda x, t: F.nll_loss(x, t, ignore_index=0),
        lambda x, t: TF.nll_loss(x, t, ignore_index=0),
        [np.zeros((1, 0)), np.array([0])],
    ),
    "layer_norm of two dtypes, no features": (
        F.layer_norm,
        lambda x, w: TF.layer_norm(x, (0,), w),
        [np.zeros((2, 0)), np.zeros(0, np.float32)],
    ),
    "int() of NaN": (int, int, [np.array(np.nan)]),
    "int() of -inf": (int, int, [np.array(-np.inf, np.float32)]),
    "causal_attention with no channels": (
        F.causal_attention,
        lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, is_causal=True),
        [np.zeros((1, 1, 2, 0))] * 3,
    ),
}


def _torch_input(x):
    t = torch.from_numpy(np.array(x))
    return t.requires_grad_() if t.is_floating_point() else t


@pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad=True to a scalar")
@pytest.mark.parametrize("label", ISSUE_CASES)
def test_each_case_of_the_issue_computes_as_pytorch_or_both_refuse_in_tensorlabs_words(label):
    ours_call, theirs_call, arrays = ISSUE_CASES[label]
    theirs_in = [_torch_input(a) for a in arrays]
    ours_in = [tensorlab.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    try:
        theirs = theirs_call(*theirs_in)
    except (RuntimeError, TypeError, ValueError, IndexError, NotImplementedError, OverflowError):
        with pytest.raises(Exception) as refused:  # noqa: PT011 (which class is judged below)  # noqa: PT011 (which class is judged below)
            ours_call(*ours_in)
        message = str(refused.value)
        assert raised_by_tensorlab(refused.value), where_raised(refused.value)
        assert len(message.splitlines()) == 1, message
        return
    ours = ours_call(*ours_in)
    if not isinstance(theirs, torch.Tensor):  # len(), float(), int()
        assert type(ours) is type(theirs) and ours == theirs
        return
    assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch."), label
    assert ours.shape == tuple(theirs.shape), label
    np.testing.assert_allclose(ours.numpy().astype(float), theirs.detach().numpy().astype(float), rtol=1e-12)
    if theirs.requires_grad:
        upstream = np.ones(ours.shape, dtype=ours.dtype)
        ours.backward(upstream)
        theirs.backward(torch.from_numpy(upstream))
        for a, t in zip(ours_in, theirs_in):
            if t.requires_grad:
                assert a.grad.shape == tuple(t.grad.shape), label
                np.testing.assert_allclose(a.grad, t.grad.numpy(), rtol=1e-12)
