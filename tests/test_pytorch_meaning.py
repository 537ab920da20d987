"""What a PyTorch user expects of operators, edge cases and dtypes (issue 23), checked against PyTorch itself.

The op table (test_ops.py) checks every op's values and gradients; this file checks what a table row
cannot: Tensor operators (comparisons, bool(), hashing), the engine not mistaking == for identity, 0-d
and empty axes, result dtypes, and the index where NumPy's and PyTorch's axis order part ways.
"""

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import tensorlab
import tensorlab.functional as F
from tensorlab import nn
from tensorlab.optim import AdamW, clip_grad_norm_

# ----- comparisons and bool() -------------------------------------------------------------------------------------

OPERATORS = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


@pytest.mark.parametrize("symbol", OPERATORS)
def test_comparison_operators_are_elementwise_boolean_and_take_no_gradient(symbol, backend):
    compare = OPERATORS[symbol]
    a_np = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    b_np = np.array([1.0, 5.0, 6.0])  # a tie in each row and column 0
    a = tensorlab.tensor(a_np, requires_grad=True, device=backend.device)
    b = tensorlab.tensor(b_np, device=backend.device)
    ta, tb = torch.tensor(a_np, requires_grad=True), torch.tensor(b_np)
    for ours, theirs in [
        (compare(a, b), compare(ta, tb)),
        (compare(a, 2.0), compare(ta, 2.0)),
        (compare(2.0, a), compare(2.0, ta)),  # reflected: Python asks a's mirrored operator
        (compare(b_np, a), compare(tb, ta)),  # a NumPy array on the left hands over to the Tensor
    ]:
        assert ours.dtype == np.bool_ and not ours.requires_grad and ours.creator is None
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert not theirs.requires_grad  # PyTorch's take no gradient either


def test_a_comparison_casts_as_pytorch_an_int_tensor_against_a_float_compares_in_float32():
    big = np.array([16_777_217])  # 2**24 + 1: float32 rounds it to 2**24
    assert (tensorlab.tensor(big) == 16_777_216.0).item() is (torch.tensor(big) == 16_777_216.0).item() is True
    small = tensorlab.tensor(np.array([0.1], dtype=np.float32))
    assert (small == 0.1).item() is (torch.tensor([0.1]) == 0.1).item() is True  # 0.1 taken as float32
    assert (tensorlab.tensor(np.array([200], dtype=np.uint8)) == 300).item() is False  # no overflow error


def test_comparing_with_none_is_false_as_in_pytorch():
    t = tensorlab.tensor([1.0, 2.0])
    assert (t == None) is False and (t != None) is True  # noqa: E711 (the operator is what is tested)
    assert (torch.tensor([1.0]) == None) is False  # noqa: E711


def test_bool_of_one_element_is_its_truth_and_of_more_or_none_is_an_error_as_in_pytorch():
    for value in ([0.0], [[2.5]], 0, 3):
        assert bool(tensorlab.tensor(value)) is bool(torch.tensor(value))
    for value in ([1.0, 2.0], np.zeros((2, 0))):
        with pytest.raises(RuntimeError) as ours:
            bool(tensorlab.tensor(value))
        with pytest.raises(RuntimeError, match="ambiguous"):
            bool(torch.tensor(value))
        assert len(str(ours.value).splitlines()) == 1 and "ambiguous" in str(ours.value)
        assert f"bool() of a tensor with {np.size(value)} elements" in str(ours.value)


def test_the_students_check_reads_as_in_pytorch():
    pred, target = tensorlab.tensor([1, 2, 3]), tensorlab.tensor([1, 2, 4])
    assert not (pred == target).all() and (pred == target).any()
    with pytest.raises(RuntimeError, match="ambiguous"):
        if pred == target:  # PyTorch refuses this too
            pass


def test_tensors_hash_by_identity_so_they_stay_dict_keys_and_set_members():
    a, b = tensorlab.tensor([1.0, 2.0]), tensorlab.tensor([1.0, 2.0])  # equal values, two tensors
    table = {a: "a", b: "b"}
    assert table[a] == "a" and table[b] == "b" and len({a, b, a}) == 2
    assert hash(a) == hash(a) and hash(a) != hash(b)
    one, other_one = tensorlab.tensor([1.0]), tensorlab.tensor([1.0])
    assert len({one, other_one}) == 2  # == would say True here; a set never asks it


def test_the_engine_never_takes_equal_values_for_the_same_tensor():
    """Two parameters with the same single value: == between them is True, so any list search, dedup or
    dict lookup that used == would merge them. Both must train, clip and save separately."""

    class Twins(nn.Module):
        def __init__(self):
            super().__init__()
            self.left, self.right = nn.Parameter(np.ones(1)), nn.Parameter(np.ones(1))

    model = Twins()
    assert bool(model.left == model.right)
    params = model.parameters()
    assert len(params) == 2 and params[0] is model.left and params[1] is model.right
    optimizer = AdamW(params, lr=0.1, weight_decay=0.0)
    (model.left * 3.0 + model.right * -2.0).sum().backward()
    clip_grad_norm_(params, max_norm=10.0)
    optimizer.step()
    assert model.left.data[0] < 1.0 < model.right.data[0]  # each moved against its own gradient
    assert len(optimizer.state) == 2 and len(optimizer.state_dict()["state"]) == 2
    assert set(model.state_dict()) == {"left", "right"}


# ----- 0-d and empty axes ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, -1])
def test_axis_0_and_minus_1_of_a_0_d_tensor_is_the_tensor_itself(axis, backend):
    x = tensorlab.tensor(np.array(1.5), requires_grad=True, device=backend.device)
    t = torch.tensor(1.5, dtype=torch.float64)
    for ours, theirs in [
        (F.sum(x, axis=axis), t.sum(axis)),
        (F.sum(x, axis=axis, keepdims=True), t.sum(axis, keepdim=True)),
        (F.mean(x, axis=axis), t.mean(axis)),
        (F.max(x, axis=axis), t.amax(axis)),
        (F.min(x, axis=axis), t.amin(axis)),
        (F.softmax(x, axis=axis), torch.softmax(t, axis)),
        (F.log_softmax(x, axis=axis), torch.log_softmax(t, axis)),
        (F.swapaxes(x, axis, 0), t.transpose(axis, 0)),
        (F.argmax(x, axis=axis), t.argmax(axis)),
        (F.squeeze(x, axis), t.squeeze(axis)),
        (F.flatten(x, axis, axis), t.flatten(axis, axis)),
    ]:
        assert ours.shape == tuple(theirs.shape)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-15)


@pytest.mark.parametrize(
    "name, ours, theirs",
    [
        ("sum", lambda x: F.sum(x, axis=1), lambda t: t.sum(1)),
        ("softmax", lambda x: F.softmax(x, axis=1), lambda t: torch.softmax(t, 1)),
        ("concatenate", lambda x: F.concatenate([x, x]), lambda t: torch.cat([t, t])),
        ("split", lambda x: F.split(x, 1), lambda t: torch.split(t, 1)),
        ("chunk", lambda x: F.chunk(x, 2), lambda t: torch.chunk(t, 2)),
        ("swapaxes", lambda x: F.swapaxes(x, 0, 1), lambda t: t.transpose(0, 1)),
        ("unsqueeze", lambda x: F.unsqueeze(x, 2), lambda t: t.unsqueeze(2)),
    ],
)
def test_where_pytorch_refuses_a_0_d_tensor_one_line_names_the_op(name, ours, theirs):
    with pytest.raises((RuntimeError, IndexError)):
        theirs(torch.tensor(1.5))
    with pytest.raises(ValueError) as error:
        ours(tensorlab.tensor(1.5))
    message = str(error.value)
    assert message.startswith(f"{name}: ") and ("0-d array" in message or "out of range" in message), message
    assert len(message.splitlines()) == 1


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_over_a_zero_length_axis_is_empty_as_in_pytorch(op, backend):
    for shape, axis in [((2, 0), -1), ((0, 3), 0), ((0, 3), -1), ((0,), 0)]:
        x = tensorlab.tensor(np.zeros(shape), requires_grad=True, device=backend.device)
        y = getattr(F, op)(x, axis=axis)
        assert y.shape == tuple(getattr(torch, op)(torch.zeros(shape), axis).shape) == shape
        y.backward(np.zeros(shape))
        assert tensorlab.backend.to_device(x.grad, "cpu").shape == shape


@pytest.mark.parametrize("chunks", [1, 3, 5])
def test_chunk_of_an_empty_axis_gives_the_pieces_pytorch_gives(chunks):
    ours = F.chunk(tensorlab.tensor(np.zeros((0, 4))), chunks)
    theirs = torch.chunk(torch.zeros(0, 4), chunks)
    assert [p.shape for p in ours] == [tuple(p.shape) for p in theirs] == [(0, 4)] * chunks
    assert [p.shape for p in F.split(tensorlab.tensor(np.zeros(0)), 2)] == [
        tuple(p.shape) for p in torch.split(torch.zeros(0), 2)
    ]
    for size in (0, 2):  # a piece size of 0 is taken for an empty axis only: one empty piece
        assert [p.shape for p in F.split(tensorlab.tensor(np.zeros((3, 0))), size, -1)] == [
            tuple(p.shape) for p in torch.split(torch.zeros(3, 0), size, -1)
        ]


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_with_no_classes_backpropagates_an_empty_gradient(smoothing):
    """V = 0, every target ignored (row 24): PyTorch's mean is NaN and its gradient empty; so are ours."""
    x = tensorlab.tensor(np.zeros((3, 0), dtype=np.float32), requires_grad=True)
    loss = F.cross_entropy(x, np.zeros(3, dtype=np.int64), ignore_index=0, label_smoothing=smoothing)
    loss.backward()
    tx = torch.zeros(3, 0, requires_grad=True)
    theirs = TF.cross_entropy(tx, torch.zeros(3, dtype=torch.int64), ignore_index=0, label_smoothing=smoothing)
    theirs.backward()
    assert np.isnan(loss.item()) and torch.isnan(theirs)
    assert x.grad.shape == tuple(tx.grad.shape) == (3, 0)


# ----- result dtypes -----------------------------------------------------------------------------------------------

INT32, INT64, FLOAT32, FLOAT64, BOOL = (np.array([1, 2], t) for t in ("int32", "int64", "float32", "float64", "bool"))
DTYPE_CASES = {  # label: (the op on tensorlab tensors or torch tensors alike, its arrays)
    "int32 + python int": (lambda a: a + 5, [INT32]),
    "int32 * python int": (lambda a: 3 * a, [INT32]),
    "int32 + python float": (lambda a: a + 2.5, [INT32]),
    "int64 - python float": (lambda a: a - 0.5, [INT64]),
    "bool + python int": (lambda a: a + 1, [BOOL]),
    "int / int": (lambda a, b: a / b, [INT64, INT64]),
    "int32 / python int": (lambda a: a / 2, [INT32]),
    "python int / int": (lambda a: 1 / a, [INT64]),
    "int64 * float32": (lambda a, b: a * b, [INT64, FLOAT32]),
    "float32 + int32": (lambda a, b: a + b, [FLOAT32, INT32]),
    "int32 * float64": (lambda a, b: a * b, [INT32, FLOAT64]),
    "float32 * float64": (lambda a, b: a * b, [FLOAT32, FLOAT64]),
    "int32 + int64": (lambda a, b: a + b, [INT32, INT64]),
    "int ** 2": (lambda a: a**2, [INT64]),
    "int ** 0.5": (lambda a: a**0.5, [INT64]),
    "exp of int": (lambda a: a.exp(), [INT64]),
    "log of int32": (lambda a: a.log(), [INT32]),
    "sqrt of int": (lambda a: a.sqrt(), [INT64]),
    "tanh of int": (lambda a: a.tanh(), [INT64]),
    "sigmoid of int": (lambda a: a.sigmoid(), [INT64]),
    "maximum of int and float32": (lambda a, b: a.maximum(b), [INT64, FLOAT32]),
    "clamp of int to floats": (lambda a: a.clamp(0.5, 1.5), [INT64]),
    "clamp of int32 to ints": (lambda a: a.clamp(0, 1), [INT32]),
    "sum of int32": (lambda a: a.sum(), [INT32]),
    "max of int32": (lambda a: a.max(), [INT32]),
}


@pytest.mark.parametrize("label", DTYPE_CASES)
def test_result_dtypes_are_pytorchs(label, backend):
    op, arrays = DTYPE_CASES[label]
    ours = op(*[tensorlab.tensor(a, device=backend.device) for a in arrays])
    theirs = op(*[torch.from_numpy(a) for a in arrays])
    assert str(ours.dtype) == str(theirs.dtype).replace("torch.", ""), label
    np.testing.assert_allclose(ours.numpy().astype(np.float64), theirs.numpy().astype(np.float64), rtol=1e-6)


@pytest.mark.parametrize(
    "ours, theirs, dtype",
    [
        (lambda a: a.mean(), lambda t: t.mean(), "int64"),
        (lambda a: a.var(), lambda t: t.var(), "int64"),
        (F.gelu, TF.gelu, "int64"),
        (F.silu, TF.silu, "int32"),
        (F.leaky_relu, TF.leaky_relu, "int64"),
        (F.softmax, lambda t: torch.softmax(t, -1), "int64"),
    ],
)
def test_ops_pytorch_refuses_on_integers_refuse_in_one_line(ours, theirs, dtype):
    with pytest.raises((RuntimeError, NotImplementedError)):
        theirs(torch.tensor([1, 2], dtype=getattr(torch, dtype)))
    with pytest.raises(TypeError, match=f"input must be floating point, got dtype {dtype}") as error:
        ours(tensorlab.tensor(np.array([1, 2], dtype)))
    assert len(str(error.value).splitlines()) == 1


# ----- advanced indexing: NumPy's axis order or one line -------------------------------------------------------------

X = np.arange(2 * 3 * 4 * 5.0).reshape(2, 3, 4, 5)
INDEX_PARTS = [1, -2, slice(None), slice(1, 3), np.array([0, 1, 1]), np.array([2, 0, 1]), None, Ellipsis, np.array(1)]


def test_every_index_gives_pytorchs_result_or_one_line_where_numpys_axis_order_differs():
    """Every arrangement of up to 4 parts PyTorch accepts: tensorlab gives PyTorch's values and shape, or (only
    where NumPy's order differs from PyTorch's) raises one line."""
    same, refused = 0, 0
    for n in range(1, 5):
        for parts in itertools.permutations(INDEX_PARTS, n):
            index = tuple(parts)
            try:
                theirs = torch.from_numpy(X)[
                    tuple(torch.from_numpy(p) if isinstance(p, np.ndarray) else p for p in index)
                ]
            except (IndexError, RuntimeError, ValueError):
                continue
            try:
                ours = F.getitem(tensorlab.tensor(X), index).numpy()
            except IndexError as error:
                assert "NumPy puts the arrays' axes first, PyTorch in place" in str(error), (index, error)
                assert len(str(error).splitlines()) == 1
                numpy_agrees = X[index].shape == tuple(theirs.shape) and np.array_equal(X[index], theirs.numpy())
                assert not numpy_agrees, f"{index}: refused, but NumPy agrees with PyTorch"
                refused += 1
                continue
            assert ours.shape == tuple(theirs.shape), index
            np.testing.assert_array_equal(ours, theirs.numpy())
            same += 1
    assert refused > 0 and same > refused, (same, refused)  # 2687 and 471 when written


def test_the_issues_index_is_refused_and_its_two_step_form_is_pytorchs():
    idx = np.array([0, 2, 3])
    x = np.arange(2 * 3 * 5 * 4.0).reshape(2, 3, 5, 4)
    theirs = torch.from_numpy(x)[1, :, 2:4, torch.from_numpy(idx)]
    assert x[1, :, 2:4, idx].shape == (3, 3, 2) and tuple(theirs.shape) == (3, 2, 3)  # the two orders
    with pytest.raises(IndexError, match="getitem: index .* mixes ints and integer arrays"):
        tensorlab.tensor(x)[1, :, 2:4, idx]
    np.testing.assert_array_equal(tensorlab.tensor(x)[1][:, 2:4, idx].numpy(), theirs.numpy())


# ----- settings named as PyTorch's mean what PyTorch's mean -----------------------------------------------------


def test_cross_entropy_ignores_any_ignore_index_even_outside_the_targets_dtype():
    logits = np.random.default_rng(0).standard_normal((4, 3))
    for targets, ignore_index in [
        (np.array([2, 0, 1, 2], np.int32), 2**40),  # no int32 equals it: nothing ignored
        (np.array([2, 0, 1, 2], np.uint8), -100),
        (np.array([2, 0, 255, 1], np.uint8), 255),
        (np.array([-7, 0, 1, -7]), -7),
    ]:
        for reduction in ("mean", "sum", "none"):
            ours = F.cross_entropy(tensorlab.tensor(logits), targets, ignore_index=ignore_index, reduction=reduction)
            theirs = TF.cross_entropy(
                torch.tensor(logits),
                torch.from_numpy(targets.astype(np.int64)),
                ignore_index=ignore_index,
                reduction=reduction,
            )
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def test_settings_pytorch_has_not_are_refused_in_one_line():
    x = tensorlab.tensor([[0.5, 1.5], [2.0, -1.0]])
    cases = [
        (TypeError, "clamp: min must be a Python number or None, got Tensor", lambda: F.clamp(x, min=x)),
        (ValueError, "clamp: at least one of min and max", lambda: F.clamp(x)),
        (TypeError, "unexpected keyword argument 'ddof'", lambda: F.var(x, ddof=0)),
        (
            ValueError,
            "binary_cross_entropy: every input must be a probability in",
            lambda: F.binary_cross_entropy(x, x),
        ),
        (ValueError, "mse_loss: input of shape \\(2, 2\\) and target of shape \\(2,\\)", lambda: F.mse_loss(x, x[0])),
        (
            ValueError,
            "cross_entropy: reduction must be 'mean', 'sum' or 'none', got 'avg'",
            lambda: F.cross_entropy(x, np.array([0, 1]), reduction="avg"),
        ),
        (
            ValueError,
            "cross_entropy: label_smoothing must be in \\[0, 1\\], got 1.5",
            lambda: F.cross_entropy(x, np.array([0, 1]), label_smoothing=1.5),
        ),
        (TypeError, "argmax: axis must be None or one int, got \\(0, 1\\)", lambda: F.argmax(x, axis=(0, 1))),
        (ValueError, "flatten: start_axis 1 comes after end_axis 0", lambda: F.flatten(x, 1, 0)),
        (
            ValueError,
            "broadcast_to: shapes \\(2, 2\\) and \\(3, 2\\) cannot be broadcast",
            lambda: F.broadcast_to(x, (3, 2)),
        ),
        (
            ValueError,
            "broadcast_to: an array of shape \\(2, 1\\) cannot be broadcast to shape \\(1, 3\\)",
            lambda: F.broadcast_to(x[:, :1], (1, 3)),
        ),
        (
            ValueError,
            "argmin: cannot reduce an empty array of shape \\(0, 2\\) along axis 0",
            lambda: F.argmin(tensorlab.tensor(np.zeros((0, 2))), axis=0),
        ),
    ]
    for error, message, call in cases:
        with pytest.raises(error, match=message) as raised:
            call()
        assert len(str(raised.value).splitlines()) == 1, str(raised.value)


def test_var_and_std_correction_means_what_pytorchs_means():
    x = np.array([[1.0, 2.0, 4.0], [3.0, 3.0, 9.0]])
    for correction in (0, 1, 2):
        ours = tensorlab.tensor(x).var(axis=1, correction=correction).numpy()
        theirs = torch.tensor(x).var(1, correction=correction).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-15)
        np.testing.assert_allclose(ours, x.var(axis=1, ddof=correction), rtol=1e-15)  # NumPy's ddof
    np.testing.assert_allclose(tensorlab.tensor(x).std().item(), torch.tensor(x).std().item(), rtol=1e-15)
    assert tensorlab.tensor(x).var().item() != x.var()  # the default is PyTorch's (1), not NumPy's (0)


@pytest.mark.parametrize("symbol", ["+=", "-=", "*=", "/=", "**=", "@="])
def test_in_place_arithmetic_is_refused_in_one_line_where_pytorch_would_change_the_tensor(symbol):
    theirs = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    alias = theirs
    exec(f"theirs {symbol} torch.ones(2, 2)")
    assert alias is theirs  # PyTorch changed the tensor itself: every name for it sees the new values
    ours = tensorlab.tensor([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(RuntimeError, match="tensorlab has no in-place arithmetic") as error:
        exec(f"ours {symbol} tensorlab.tensor(np.ones((2, 2)))")
    assert len(str(error.value).splitlines()) == 1
    np.testing.assert_array_equal(ours.numpy(), [[1.0, 2.0], [3.0, 4.0]])


# ----- edge values the fuzzer met (tests/fuzz_torch.py): PyTorch's values and gradients, NaN and inf included ------

EDGE_VALUES = {  # label: (tensorlab, PyTorch, input, dtype)
    "softmax of a row holding +inf": (F.softmax, lambda x: torch.softmax(x, -1), [np.inf, 1.0], np.float32),
    "log_softmax of a row holding +inf": (F.log_softmax, lambda x: torch.log_softmax(x, -1), [1.0, np.inf], np.float64),
    "x ** -0.5 at -0 and -inf": (lambda x: x**-0.5, lambda x: x**-0.5, [-0.0, -np.inf, 4.0], np.float64),
    "x ** 0.5 at -inf (its gradient)": (lambda x: x**0.5, lambda x: x**0.5, [-np.inf, 4.0], np.float32),
    "x ** a tensor of 0.5 at -inf": (
        lambda x: x ** tensorlab.tensor(np.float32(0.5)),
        lambda x: x ** torch.tensor(0.5),
        [-np.inf, 4.0],
        np.float32,
    ),
    "0-d x ** a 0-d tensor (the shape)": (
        lambda x: x ** tensorlab.tensor(np.float64(0.5)),
        lambda x: x ** torch.tensor(0.5, dtype=torch.float64),
        4.0,
        np.float64,
    ),
    "0-d x ** a 0-d tensor of 0.5 at -inf": (
        lambda x: x ** tensorlab.tensor(np.float32(0.5)),
        lambda x: x ** torch.tensor(0.5),
        -np.inf,
        np.float32,
    ),
    "a ** a tensor of 1000 where b a^(b-1) overflows, times 0.08": (  # fuzz_torch, seed 1129224
        lambda x: x ** tensorlab.tensor(np.float64(1000.0)) * 0.08,
        lambda x: x ** torch.tensor(1000.0, dtype=torch.float64) * 0.08,
        [0.0, 2.025607124412274],
        np.float64,
    ),
    "a Python int ** a float64 tensor": (lambda x: (-3) ** x, lambda x: (-3) ** x, [-2.0, 0.5], np.float64),
    "std of float32 beyond its squares' range": (lambda x: x.std(), lambda x: x.std(), [1e30, -1e30], np.float32),
    "var of one -inf, correction 1": (lambda x: x.var(), lambda x: x.var(), -np.inf, np.float64),
    "var of one NaN, correction 1": (lambda x: x.var(), lambda x: x.var(), np.nan, np.float32),
    "var of -inf and a number": (lambda x: x.var(axis=0), lambda x: x.var(0), [-np.inf, 1.0], np.float64),
    "relu at NaN, the infinities and both zeros": (
        F.relu,
        torch.relu,
        [np.nan, -np.inf, np.inf, -0.0, 0.0, -1.0, 2.0],
        np.float32,
    ),
}


@pytest.mark.parametrize("label", EDGE_VALUES)
def test_edge_values_give_pytorchs_values_and_gradients(label):
    ours_call, theirs_call, values, dtype = EDGE_VALUES[label]
    x, t = (
        tensorlab.tensor(np.array(values, dtype), requires_grad=True),
        torch.tensor(values, dtype=getattr(torch, np.dtype(dtype).name), requires_grad=True),
    )
    with np.errstate(all="ignore"):
        ours, theirs = ours_call(x), theirs_call(t)
        np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-6, strict=True)
        upstream = np.ones(ours.shape, dtype)
        ours.backward(upstream)
    theirs.backward(torch.from_numpy(upstream))
    np.testing.assert_allclose(x.grad, t.grad.numpy(), rtol=1e-6, strict=True)
