"""Bad input fails early, with a message that names the op and the shapes or values at fault."""

import importlib
import re

import numpy as np
import pytest

import tensorlab
import tensorlab.functional as F
from tensorlab import backend as tl_backend


def t(shape_or_data, backend, dtype=np.float64, requires_grad=False):
    """A tensor of ones of a shape (a tuple), or of the given data, on the backend under test."""
    data = np.ones(shape_or_data, dtype) if isinstance(shape_or_data, tuple) else np.asarray(shape_or_data)
    return tensorlab.tensor(data, requires_grad=requires_grad, device=backend.device)


def shapes(*shapes):
    """A regex matching the shapes in the order given, anything between them."""
    return ".*".join(re.escape(str(s)) for s in shapes)


# ----- shape mismatches ------------------------------------------------------------------------


def test_matmul_shape_mismatch(backend):
    with pytest.raises(ValueError, match="matmul: shapes " + shapes((3, 4), (5, 2)) + r".*\(4\).*\(5\)"):
        t((3, 4), backend) @ t((5, 2), backend)
    with pytest.raises(ValueError, match="matmul of " + shapes((2, 3, 4), (3, 4, 5)) + ".*batch axes"):
        F.matmul(t((2, 3, 4), backend), t((3, 4, 5), backend))
    with pytest.raises(
        ValueError, match="matmul: operands must have at least 1 dimension, got shapes " + shapes((), (3,))
    ):
        F.matmul(t((), backend), t((3,), backend))


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_binary_op_broadcast_mismatch(op, backend):
    with pytest.raises(ValueError, match=f"{op}: shapes " + shapes((3, 4), (5,)) + " cannot be broadcast"):
        getattr(F, op)(t((3, 4), backend), t((5,), backend))


def test_add_operator_shape_mismatch_names_add(backend):
    with pytest.raises(ValueError, match="add: shapes " + shapes((2, 3), (2,))):
        t((2, 3), backend) + t((2,), backend)


def test_shape_op_errors(backend):
    x = t((3, 4), backend)
    with pytest.raises(ValueError, match="reshape: cannot reshape an array of shape " + shapes((3, 4), (5,))):
        F.reshape(x, (5,))
    with pytest.raises(ValueError, match="concatenate: .*except along axis 0; got " + shapes((3, 4), (2, 3))):
        F.concatenate([x, t((2, 3), backend)])
    with pytest.raises(ValueError, match="concatenate: needs at least one tensor"):
        F.concatenate([])
    with pytest.raises(ValueError, match="stack: all inputs must have the same shape; got " + shapes((3, 4), (3, 5))):
        F.stack([x, t((3, 5), backend)])
    with pytest.raises(
        ValueError, match="split: the piece size must be a positive int .*got 0 for an axis of 4 .*use chunk"
    ):
        F.split(x, 0, axis=1)
    with pytest.raises(ValueError, match="chunk: the number of pieces must be a positive int, got -2"):
        F.chunk(x, -2, axis=1)
    with pytest.raises(ValueError, match=r"split: sizes \[1, 2\] must .* add up to 4.*" + shapes((3, 4))):
        F.split(x, [1, 2], axis=1)
    with pytest.raises(
        ValueError, match="transpose: axes " + shapes((0, 0)) + " are not a permutation.*" + shapes((3, 4))
    ):
        F.transpose(x, (0, 0))
    with pytest.raises(ValueError, match="transpose: axis 5 is out of range for an array with 2 dimensions"):
        F.transpose(x, (0, 5))
    with pytest.raises(ValueError, match="swapaxes: axis -3 is out of range for an array with 2 dimensions"):
        F.swapaxes(x, 0, -3)
    with pytest.raises(IndexError, match="getitem: index 5 does not fit shape " + shapes((3, 4))):
        x[5]
    for index in ((1, slice(None), np.arange(8).reshape(2, 4) % 3), np.ones((2, 4, 5), bool)):  # reprs span lines
        with pytest.raises(IndexError, match="getitem: index ") as refused:
            x[index]
        assert "\n" not in str(refused.value), str(refused.value)


def test_axis_errors(backend):
    x = t((3, 4), backend)
    with pytest.raises(ValueError, match="sum: axis 2 is out of range for an array with 2 dimensions"):
        F.sum(x, axis=2)
    with pytest.raises(ValueError, match=r"mean: axis \(0, -2\) names the same axis twice"):
        F.mean(x, axis=(0, -2))
    with pytest.raises(ValueError, match="softmax: axis -3 is out of range"):
        F.softmax(x, axis=-3)
    with pytest.raises(ValueError, match="max: cannot reduce an empty array of shape " + shapes((0, 3))):
        F.max(t((0, 3), backend))


def test_selection_and_norm_errors(backend):
    x = t((3, 4), backend)
    with pytest.raises(TypeError, match="where: the condition/mask must be a boolean array, got dtype float64"):
        F.where(np.ones((3, 4)), x, x)
    with pytest.raises(TypeError, match="masked_fill: .*boolean array, got dtype int64"):
        F.masked_fill(x, np.ones((3, 4), np.int64), 0.0)
    with pytest.raises(ValueError, match="masked_fill: shapes " + shapes((3, 4)) + " and " + shapes((2, 5))):
        F.masked_fill(x, np.ones((2, 5), bool), 0.0)  # a wider mask that broadcasts gives a wider result
    with pytest.raises(
        ValueError, match="layer_norm: weight/bias of shape " + shapes((3,)) + r" must be \(4,\).*" + shapes((3, 4))
    ):
        F.layer_norm(x, t((3,), backend))
    with pytest.raises(ValueError, match="rms_norm: weight/bias of shape " + shapes((5,)) + r" must be \(4,\)"):
        F.rms_norm(x, t((5,), backend))
    with pytest.raises(ValueError, match="linear: x of shape " + shapes((3, 4)) + ".*weight " + shapes((2, 5))):
        F.linear(x, t((2, 5), backend))


def test_setting_errors(backend):
    x = t((3, 4), backend)
    with pytest.raises(ValueError, match="dropout: p must be a probability in .*got 1.5"):
        F.dropout(x, p=1.5)
    with pytest.raises(ValueError, match="gelu: approximate must be 'none' or 'tanh', got 'fast'"):
        F.gelu(x, approximate="fast")


# ----- class ids: cross_entropy targets and embedding ids ------------------------------------------


def test_cross_entropy_float_targets(backend):
    with pytest.raises(TypeError, match="cross_entropy: targets must be integer class ids, got dtype float32"):
        F.cross_entropy(t((3, 5), backend), t(np.array([0.0, 1.0, 2.0], np.float32), backend))


@pytest.mark.parametrize("bad, position", [(5, 1), (-3, 2), (-1, 0)])
def test_cross_entropy_out_of_range_targets(bad, position, backend):
    targets = np.array([0, 1, 2])
    targets[position] = bad
    with pytest.raises(
        ValueError,
        match=rf"cross_entropy: target {bad} at position \({position},\) is out of range; "
        r"class ids must be in \[0, 4\] for 5 classes",
    ):
        F.cross_entropy(t((3, 5), backend, requires_grad=True), t(targets, backend))


def test_cross_entropy_target_shape(backend):
    with pytest.raises(
        ValueError,
        match="cross_entropy: targets of shape " + shapes((2,)) + ".*" + shapes((3,)) + ".*" + shapes((3, 5)),
    ):
        F.cross_entropy(t((3, 5), backend), t([0, 1], backend))


@pytest.mark.parametrize("bad", [9, -1])
def test_embedding_out_of_range_ids(bad, backend):
    with pytest.raises(
        ValueError,
        match=rf"embedding: id {bad} is out of range for a table of 5 rows "
        r"\(weight shape \(5, 3\)\); ids must be in \[0, 4\]",
    ):
        F.embedding(t([[0, bad], [4, 2]], backend), t((5, 3), backend, requires_grad=True))


def test_embedding_needs_integer_ids_and_a_2d_table(backend):
    with pytest.raises(TypeError, match="embedding: ids must be integers, got dtype float64"):
        F.embedding(t([1.0, 2.0], backend), t((5, 3), backend))
    with pytest.raises(ValueError, match="embedding: weight must be a 2-D table .*got shape " + shapes((5,))):
        F.embedding(t([1, 2], backend), t((5,), backend))


# ----- backward misuse ------------------------------------------------------------------------


def test_backward_on_a_non_scalar_without_a_gradient(backend):
    y = t((2, 3), backend, requires_grad=True) * 2.0
    with pytest.raises(
        RuntimeError,
        match=r"backward\(\) without a gradient needs a one-element tensor, "
        r"but this one has shape \(2, 3\)",
    ):
        y.backward()


def test_backward_with_a_gradient_of_the_wrong_shape(backend):
    y = t((2, 3), backend, requires_grad=True) * 2.0
    with pytest.raises(ValueError, match=r"backward\(\): grad has shape \(3,\), expected \(2, 3\)"):
        y.backward(np.ones(3))


def test_backward_on_a_tensor_that_does_not_require_grad(backend):
    with pytest.raises(RuntimeError, match="this tensor does not require grad"):
        (t((2,), backend) * 2.0).sum().backward()


def test_a_backward_returning_the_wrong_shape_is_caught_at_that_op(backend):
    from tensorlab.ops.elementwise import Exp

    class BadExp(Exp):
        def backward(self, gy):
            return gy.sum(axis=0)

    x = t((2, 3), backend, requires_grad=True)
    with pytest.raises(
        RuntimeError,
        match=r"BadExp.backward returned a gradient of shape \(3,\) .* "
        r"for an input of shape \(2, 3\)",
    ):
        BadExp()(x).sum().backward()


def test_a_backward_returning_the_wrong_dtype_is_caught_at_that_op(backend):
    from tensorlab.ops.elementwise import Exp

    class UpcastingExp(Exp):
        def backward(self, gy):
            return (gy * self.y).astype(np.float64)

    x = t((2, 3), backend, dtype=np.float32, requires_grad=True)
    with pytest.raises(RuntimeError, match="UpcastingExp.backward returned .* dtype float64 .* dtype float32"):
        UpcastingExp()(x).sum().backward()


# ----- devices ---------------------------------------------------------------------------------


@pytest.fixture
def fake_cuda(monkeypatch):
    """Make chosen arrays report device 'cuda' (on a CPU-only machine), through the real op path."""
    on_cuda = []
    real_device_of = tl_backend.device_of
    monkeypatch.setattr(
        tl_backend, "device_of", lambda array: "cuda" if any(array is a for a in on_cuda) else real_device_of(array)
    )
    # Function.__call__ asks for devices only when an input is not a NumPy array, as a CuPy array never is;
    # these fakes are NumPy arrays, so make it ask every time
    monkeypatch.setattr(importlib.import_module("tensorlab.tensor"), "_HOST_ARRAYS", set())
    return on_cuda


@pytest.mark.parametrize(
    "op, make",
    [
        ("add", lambda a, b: a + b),
        ("matmul", lambda a, b: a @ b),
        ("cross_entropy", lambda a, b: F.cross_entropy(a, b)),
        ("embedding", lambda a, b: F.embedding(b, a)),
        ("causal_attention", lambda a, b: F.causal_attention(a, b, b)),
    ],
)
def test_mixing_devices_in_one_op_is_an_error(op, make, fake_cuda):
    a = tensorlab.tensor(np.ones((3, 4)), requires_grad=True)
    if op == "causal_attention":  # (B, H, T, D)
        a = tensorlab.tensor(np.ones((1, 1, 3, 4)), requires_grad=True)
    b = {
        "add": tensorlab.tensor(np.ones((3, 4))),
        "matmul": tensorlab.tensor(np.ones((4, 2))),
        "causal_attention": tensorlab.tensor(np.ones((1, 1, 3, 4))),
    }.get(op, tensorlab.tensor(np.array([0, 1, 2])))
    fake_cuda.append(b.data)  # the array ops see
    assert b.device == "cuda" and a.device == "cpu"
    with pytest.raises(
        RuntimeError,
        match=rf"{op}: inputs are on different devices \(cpu and cuda\); "
        r"move them to one device with .to\('cpu'\) or .to\('cuda'\)",
    ):
        make(a, b)


def test_same_device_names_the_op_and_the_devices(fake_cuda):
    a, b = np.ones(2), np.ones(2)
    fake_cuda.append(b)
    assert tl_backend.same_device("add", [a, a]) == "cpu"
    assert tl_backend.same_device("add", [b]) == "cuda"
    with pytest.raises(RuntimeError, match=r"add: inputs are on different devices \(cpu and cuda\)"):
        tl_backend.same_device("add", [a, b])


def test_mixing_real_devices_is_an_error(cuda):
    a = tensorlab.tensor(np.ones(3), device="cuda")
    b = tensorlab.tensor(np.ones(3))
    with pytest.raises(RuntimeError, match=r"mul: inputs are on different devices \(cpu and cuda\)"):
        a * b


def test_unknown_device_names(backend):
    with pytest.raises(ValueError, match="device must be 'cpu' or 'cuda', got 'gpu'"):
        tensorlab.tensor([1.0], device="gpu")


def test_an_array_of_strings_is_refused_where_it_enters():
    with pytest.raises(
        TypeError, match=r"tensorlab.tensor: expected an array of numbers, got dtype <U1 \(shape \(2,\)\)"
    ):
        tensorlab.tensor(np.array(["a", "b"]))


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_of_integers_is_one_line_naming_the_op(name, backend):
    x = tensorlab.tensor(np.array([1, 2]), device=backend.device)
    with pytest.raises(TypeError, match=rf"^{name}: input must be floating point, got dtype int64 \(shape \(2,\)\)"):
        getattr(F, name)(x)
