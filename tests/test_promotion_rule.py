"""One promotion rule, PyTorch's (issue 32, item 1): tensorlab.ops.dtypes.result_type, and every op through it.

The table test checks the rule itself against torch.result_type over every pair of operands: nine dtypes, each
as a tensor with axes and as a 0-d tensor, and Python bools, ints and floats. The op test runs every op of
tensorlab.functional that combines operands (arithmetic, pow, maximum, minimum, comparisons, clamp, where,
masked_fill, concatenate, stack, the two-input losses) over the same pairs in tensorlab and in PyTorch: the
result's dtype and values must be PyTorch's, or both must refuse (tensorlab in a line of its own). An op that
computed its dtype any other way (NumPy's promotion, a hand-written rule) fails it: the plants below show it.
"""

import itertools
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from test_own_refusals import raised_by_tensorlab, where_raised

import tensorlab
import tensorlab.functional as F
from tensorlab.ops import dtypes
from tensorlab.ops.shape import Concatenate
from tensorlab.tensor import Function

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]
PYTHON_NUMBERS = [True, 2, 2.5]


def _array(dtype, ndim):
    values = np.array([1, 2, 3]) if ndim else np.array(2)
    return values.astype(dtype) if dtype != "bool" else np.asarray(values % 2 == 1)


# every operand: (label, a NumPy array or a Python number)
OPERANDS = [
    *[(f"{dtype}{'(3,)' if ndim else ' 0-d'}", _array(dtype, ndim)) for ndim in (1, 0) for dtype in DTYPES],
    *[(f"python {type(v).__name__}", v) for v in PYTHON_NUMBERS],
]
PAIRS = [
    (a, b)
    for a, b in itertools.product(OPERANDS, repeat=2)
    if isinstance(a[1], np.ndarray) or isinstance(b[1], np.ndarray)
]


def _torch(v):
    return torch.from_numpy(v) if isinstance(v, np.ndarray) else v


def _ours(v):
    return tensorlab.tensor(v) if isinstance(v, np.ndarray) else v


def _name(dtype):
    return str(dtype).removeprefix("torch.")


def rule_mismatches():
    return [
        f"{a} with {b}: {dtypes.result_type(x, y)}, PyTorch {_name(torch.result_type(_torch(x), _torch(y)))}"
        for (a, x), (b, y) in PAIRS
        if str(dtypes.result_type(x, y)) != _name(torch.result_type(_torch(x), _torch(y)))
    ]


def test_the_rule_is_torch_result_type_for_every_pair():
    wrong = rule_mismatches()
    assert len(PAIRS) == 432 and not wrong, "\n".join(wrong[:20])


def test_the_table_catches_numpys_rule(monkeypatch):
    """The planted mistake: NumPy's promotion (float32 (3,) + float64 0-d is float64 there)."""
    monkeypatch.setattr(dtypes, "result_type", lambda *ops: np.result_type(*ops))
    assert "float32(3,) with float64 0-d: float64, PyTorch float32" in rule_mismatches()


MASK = np.array([True, False, True])

# op: (tensorlab's call, PyTorch's call) of two operands; None where the op takes the pair in no form
BINARY_OPS = {
    "add": (F.add, torch.add),
    "sub": (F.sub, torch.sub),
    "mul": (F.mul, torch.mul),
    "div": (F.div, torch.div),
    "pow": (F.pow, torch.pow),
    "maximum": (F.maximum, lambda a, b: _torch_extreme(a, b, torch.maximum, "min")),
    "minimum": (F.minimum, lambda a, b: _torch_extreme(a, b, torch.minimum, "max")),
    "lt": (F.lt, lambda a, b: a < b),
    "eq": (F.eq, lambda a, b: a == b),
    "where": (
        lambda a, b: F.where(tensorlab.tensor(MASK), a, b),
        lambda a, b: torch.where(torch.from_numpy(MASK), a, b),
    ),
    "clamp": (lambda a, b: F.clamp(a, min=b), lambda a, b: torch.clamp(a, min=b)),
    "masked_fill": (lambda a, b: F.masked_fill(a, MASK, b), lambda a, b: a.masked_fill(torch.from_numpy(MASK), b)),
    "concatenate": (lambda a, b: F.concatenate([a, b]), lambda a, b: torch.cat([a, b])),
    "stack": (lambda a, b: F.stack([a, b]), lambda a, b: torch.stack([a, b])),
    "mse_loss": (lambda a, b: F.mse_loss(a, b, reduction="none"), lambda a, b: TF.mse_loss(a, b, reduction="none")),
    "binary_cross_entropy": (
        lambda a, b: F.binary_cross_entropy(a / 4, b / 4, reduction="none"),
        lambda a, b: TF.binary_cross_entropy(a / 4, b / 4, reduction="none"),
    ),
    "binary_cross_entropy_with_logits": (
        lambda a, b: F.binary_cross_entropy_with_logits(a, b, reduction="none"),
        lambda a, b: TF.binary_cross_entropy_with_logits(a, b, reduction="none"),
    ),
}


def _torch_extreme(a, b, of_tensors, limit):
    """torch.maximum takes tensors only; with a Python number, clamp is its form that promotes it as PyTorch does."""
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return of_tensors(a, b)
    tensor, number = (a, b) if isinstance(a, torch.Tensor) else (b, a)
    if isinstance(number, bool):  # clamp refuses bools; the result is bool at any rank
        return of_tensors(tensor, torch.tensor(number))
    return torch.clamp(tensor, **{limit: number})


ONLY_TENSORS = {
    "concatenate",
    "stack",
    "mse_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
}  # PyTorch's take no number
ONLY_NUMBER_SECOND = {"clamp", "masked_fill"}  # x a tensor, the limit or value a Python number


def _applies(op, x, y):
    kinds = {getattr(v, "dtype", np.dtype(bool)).kind for v in (x, y)}
    if op == "binary_cross_entropy_with_logits" and kinds == {"f"} and x.dtype != y.dtype:
        return False  # PyTorch gives the target's dtype, tensorlab the common one: differences-from-pytorch.md
    if op in ONLY_TENSORS:
        return isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and (x.ndim == y.ndim or op == "stack")
    if op in ONLY_NUMBER_SECOND:
        return isinstance(x, np.ndarray) and not isinstance(y, np.ndarray) and not (op == "clamp" and y is True)
    return True


def mismatches(ops):
    """Each pair each op takes: PyTorch's result or refusal against tensorlab's; the differences."""
    found = []
    for op in ops:
        ours_call, theirs_call = BINARY_OPS[op]
        for (a, x), (b, y) in PAIRS:
            if not _applies(op, x, y):
                continue
            what = f"{op}({a}, {b})"
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # 1 / 0 (a False divisor): NumPy warns, PyTorch not
                try:
                    theirs = theirs_call(_torch(x), _torch(y))
                except (RuntimeError, TypeError):
                    theirs = None
                try:
                    ours = ours_call(_ours(x), _ours(y))
                except Exception as error:  # noqa: BLE001 (judged below: it must be tensorlab's own refusal)
                    if theirs is not None:
                        found.append(f"{what}: PyTorch gives {_name(theirs.dtype)}, tensorlab {where_raised(error)}")
                    elif not raised_by_tensorlab(error):
                        found.append(f"{what}: both refuse, tensorlab in NumPy's words: {where_raised(error)}")
                    continue
            if theirs is None:
                found.append(f"{what}: PyTorch refuses, tensorlab gives {ours.dtype}")
            elif str(ours.dtype) != _name(theirs.dtype):
                found.append(f"{what}: {ours.dtype}, PyTorch {_name(theirs.dtype)}")
            elif not np.allclose(
                ours.numpy().astype(float), theirs.numpy().astype(float), rtol=_rtol(ours), equal_nan=True
            ):
                found.append(f"{what}: {ours.numpy()}, PyTorch {theirs.numpy()}")
    return found


@pytest.mark.parametrize("op", BINARY_OPS)
def test_every_op_gives_pytorchs_result_dtype_for_every_pair(op):
    found = mismatches([op])
    assert not found, f"{len(found)} differences, e.g.\n" + "\n".join(found[:20])


def test_an_op_that_lets_numpy_promote_is_caught(monkeypatch):
    """The planted mistake: concatenate as it was, without the rule (NumPy: int64 with float32 is float64)."""
    monkeypatch.setattr(Concatenate, "__call__", Function.__call__)
    found = mismatches(["concatenate"])
    assert "concatenate(int64(3,), float32(3,)): float64, PyTorch float32" in found, found[:10]


def test_the_issues_cases():
    f32, f64_0d = tensorlab.tensor(np.ones(3, np.float32)), tensorlab.tensor(np.array(2.0))
    assert (f32 + f64_0d).dtype == np.float32  # the 0-d tensor does not raise the result's dtype
    assert (tensorlab.tensor(np.array([1, 2])) + 2.5).dtype == np.float32  # a Python float: the default dtype
    assert (tensorlab.tensor(np.array([True, False])) ** 2).dtype == np.int64
    a = tensorlab.tensor(np.ones(3, np.float32), requires_grad=True)
    b = tensorlab.tensor(np.array(2.0), requires_grad=True)
    (a * b).sum().backward()  # each gradient in its own dtype, through the cast in the graph
    assert a.grad.dtype == np.float32 and b.grad.dtype == np.float64 and b.grad.item() == 3.0


def _rtol(result):
    """4 units in the last place of a floating result (float16's is 1e-3: a machine's last bit is one of them)."""
    return 4 * float(np.finfo(result.dtype).eps) if result.dtype.kind == "f" else 1e-3
