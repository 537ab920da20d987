"""Tensor and the backward walk: dtypes, gradient accumulation, graph lifetime, no_grad, operators."""

import re

import numpy as np
import pytest
import torch
from reference import check_against_torch

import tensorlab
import tensorlab.functional as F
from tensorlab import backend as tl_backend


def host(array):
    return tl_backend.to_device(array, "cpu")


# ----- making tensors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data, dtype",
    [
        (1.5, np.float32),
        ([1.0, 2.0], np.float32),
        ([1, 2.5], np.float32),
        ([[1.0], [2.0]], np.float32),
        (3, np.int64),
        ([1, 2, 3], np.int64),
        ([True, False], np.bool_),
        (np.zeros(2, np.float64), np.float64),
        (np.zeros(2, np.float16), np.float16),
        (np.zeros(2, np.int32), np.int32),
        (np.float64(2.0), np.float64),
    ],
)
def test_tensor_dtype_defaults(data, dtype, backend):
    """Python floats -> float32, Python ints -> int64, arrays (and NumPy scalars) keep their dtype."""
    t = tensorlab.tensor(data, device=backend.device)
    assert t.dtype == dtype
    assert t.device == backend.device
    np.testing.assert_array_equal(t.numpy(), np.asarray(data))


def test_tensor_dtype_argument_wins(backend):
    assert tensorlab.tensor([1, 2], dtype=np.float64, device=backend.device).dtype == np.float64
    assert tensorlab.tensor(np.ones(2), dtype=np.float32, device=backend.device).dtype == np.float32


def test_tensor_copies_its_data(backend):
    a = np.ones(3)
    t = tensorlab.tensor(a, device=backend.device)
    a[0] = 5.0
    assert t.numpy()[0] == 1.0


def test_requires_grad_on_an_integer_tensor_is_an_error(backend):
    with pytest.raises(TypeError, match="only floating-point tensors can require gradients, got dtype int64"):
        tensorlab.tensor([1, 2, 3], requires_grad=True, device=backend.device)
    with pytest.raises(TypeError, match="got dtype bool"):
        tensorlab.tensor([True], requires_grad=True, device=backend.device)


# ----- gradients: shape, dtype, accumulation, what keeps .grad --------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_grad_has_the_shape_and_dtype_of_the_data(dtype, backend):
    a = tensorlab.tensor(np.ones((3, 1), dtype), requires_grad=True, device=backend.device)
    b = tensorlab.tensor(np.ones(4, dtype), requires_grad=True, device=backend.device)
    (a * b * 2.0 + 1).sum().backward()  # broadcast to (3, 4) and back
    for t in (a, b):
        assert t.grad.shape == t.data.shape and t.grad.dtype == t.data.dtype
        assert tl_backend.device_of(t.grad) == backend.device
    np.testing.assert_array_equal(host(a.grad), np.full((3, 1), 8.0))
    np.testing.assert_array_equal(host(b.grad), np.full(4, 6.0))


def test_gradients_accumulate_across_backward_calls_until_cleared(backend):
    """As in PyTorch: each backward() adds into .grad; clear it with x.grad = None."""
    x = tensorlab.tensor(np.array([1.0, 2.0]), requires_grad=True, device=backend.device)
    (x * x).sum().backward()
    np.testing.assert_array_equal(host(x.grad), [2.0, 4.0])
    (x * 3.0).sum().backward()
    np.testing.assert_array_equal(host(x.grad), [5.0, 7.0])
    x.grad = None
    (x * 3.0).sum().backward()
    np.testing.assert_array_equal(host(x.grad), [3.0, 3.0])


def test_same_accumulation_as_torch():
    xt = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
    x = tensorlab.tensor(np.array([1.0, -2.0]), requires_grad=True)
    for _ in range(3):
        (xt.exp() * xt).sum().backward()
        (x.exp() * x).sum().backward()
    np.testing.assert_allclose(x.grad, xt.grad.numpy(), rtol=1e-12)


def test_intermediate_tensors_keep_no_grad_and_leaves_without_requires_grad_get_none(backend):
    x = tensorlab.tensor(np.ones(3), requires_grad=True, device=backend.device)
    c = tensorlab.tensor(np.ones(3), device=backend.device)
    h = x * 2.0
    y = (h * c).sum()
    y.backward()
    assert x.grad is not None
    assert h.grad is None and y.grad is None and c.grad is None
    assert x.is_leaf and not h.is_leaf and c.is_leaf


def test_backward_on_a_leaf_puts_the_gradient_in_its_grad(backend):
    x = tensorlab.tensor(np.ones((2, 2)), requires_grad=True, device=backend.device)
    x.backward(np.full((2, 2), 3.0))
    np.testing.assert_array_equal(host(x.grad), np.full((2, 2), 3.0))


def test_backward_with_an_explicit_gradient_of_another_dtype_is_cast(backend):
    x = tensorlab.tensor(np.ones(3, np.float32), requires_grad=True, device=backend.device)
    y = x * 2.0
    y.backward(tensorlab.tensor(np.ones(3, np.float64), device=backend.device))
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(host(x.grad), [2.0, 2.0, 2.0])


def test_a_shared_subexpression_and_a_reused_leaf_get_all_their_gradient(backend):
    """Diamonds in the graph: gradients from every path add up (compared with PyTorch)."""

    def build(x, w):
        h = x * w  # used three times below
        return (h * h + h) * x + h / (w * w + 1.0)

    check_against_torch(
        build, build, [np.array([0.5, -1.0, 2.0]), np.array([1.5, 0.3, -0.7])], device=backend.device, name="diamond"
    )


def test_an_unused_output_of_a_multi_output_op_gets_a_zero_gradient(backend):
    x = tensorlab.tensor(np.arange(6.0), requires_grad=True, device=backend.device)
    a, b, c = F.chunk(x, 3)
    (b * 2.0).sum().backward()
    np.testing.assert_array_equal(host(x.grad), [0, 0, 2, 2, 0, 0])


def test_leaf_gradients_are_never_the_same_array(backend):
    """(a + b).backward() hands a and b the same upstream array: each leaf must keep its own copy."""
    a = tensorlab.tensor(np.ones(3), requires_grad=True, device=backend.device)
    b = tensorlab.tensor(np.ones(3), requires_grad=True, device=backend.device)
    (a + b).sum().backward()
    assert a.grad is not b.grad
    (a * 5.0).sum().backward()  # a later backward into a alone
    np.testing.assert_array_equal(host(a.grad), [6.0, 6.0, 6.0])
    np.testing.assert_array_equal(host(b.grad), [1.0, 1.0, 1.0])


def test_a_function_instance_called_twice_says_to_make_a_new_one(backend):
    from tensorlab.ops.elementwise import Exp

    a = tensorlab.tensor(np.array([0.5, 1.0]), requires_grad=True, device=backend.device)
    b = tensorlab.tensor(np.array([-1.0, 2.0]), requires_grad=True, device=backend.device)
    op = Exp()
    op(a)
    with pytest.raises(RuntimeError, match=r"^exp: this Exp instance was already called once.*create a new instance"):
        op(b)
    # the way it is meant: one instance per call, and each input gets its own gradient
    (Exp()(a) + Exp()(b)).sum().backward()
    np.testing.assert_allclose(host(a.grad), np.exp([0.5, 1.0]), rtol=1e-15)
    np.testing.assert_allclose(host(b.grad), np.exp([-1.0, 2.0]), rtol=1e-15)


def test_a_released_function_instance_cannot_be_called_again(backend):
    from tensorlab.ops.elementwise import Exp

    op = Exp()
    x = tensorlab.tensor(np.array([0.5]), requires_grad=True, device=backend.device)
    op(x).sum().backward()  # backward releases op (clears what it saved)
    with pytest.raises(RuntimeError, match="already called once"):
        op(x)


@pytest.mark.parametrize(
    "index, axis, bad",
    [
        ([0, 5], 0, 5),  # 3 rows: CuPy's take would return rows 0 and 2
        (np.array([[0, -4]]), 0, -4),
        ((Ellipsis, [1, 4]), 2, 4),
        ((0, None, [1, 2]), 1, 2),
        ((slice(None), np.array([0, 1]), np.array([3, -5])), 2, -5),
    ],
)
def test_integer_array_indices_out_of_bounds_are_an_error_on_every_backend(index, axis, bad, backend):
    x = tensorlab.tensor(np.arange(24.0).reshape(3, 2, 4), requires_grad=True, device=backend.device)
    size = x.shape[axis]
    with pytest.raises(
        IndexError,
        match=rf"^getitem: index {bad} is out of bounds for axis {axis} of size {size} "
        rf"\(x has shape \(3, 2, 4\)\)",
    ):
        x[index]


def test_integer_array_indices_in_bounds_including_negative_ones_work(backend):
    x = tensorlab.tensor(np.arange(24.0).reshape(3, 2, 4), requires_grad=True, device=backend.device)
    y = x[(np.array([[True, False]] * 3), [3, -4, 0])]  # a mask over two axes, then ids on the last
    np.testing.assert_array_equal(host(y.data), np.arange(24.0).reshape(3, 2, 4)[:, 0][[0, 1, 2], [3, 0, 0]])
    np.testing.assert_array_equal(host(x[[-3, 2]].data), np.arange(24.0).reshape(3, 2, 4)[[0, 2]])


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_of_a_0d_tensor_keeps_shape_and_backward_works(approximate, dtype, backend):
    x = tensorlab.tensor(np.array(0.7, dtype), requires_grad=True, device=backend.device)
    y = F.gelu(x, approximate=approximate)
    assert y.shape == () and y.dtype == dtype
    y.backward()
    t = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    torch.nn.functional.gelu(t, approximate=approximate).backward()
    assert x.grad.shape == ()
    np.testing.assert_allclose(float(host(x.grad)), t.grad.item(), rtol=1e-6 if dtype == np.float32 else 1e-14)


def test_grad_mode_is_per_thread():
    """no_grad() in one thread must not turn off recording in another (as in PyTorch)."""
    import threading

    inside, seen = threading.Event(), {}
    done = threading.Event()

    def worker():
        with tensorlab.no_grad():
            inside.set()
            done.wait(5)

    thread = threading.Thread(target=worker)
    thread.start()
    inside.wait(5)
    x = tensorlab.tensor(np.ones(2), requires_grad=True)
    seen["enabled"], seen["graph"] = tensorlab.is_grad_enabled(), (x * 2.0).requires_grad
    done.set()
    thread.join()
    assert seen == {"enabled": True, "graph": True}

    def check_other_thread_starts_enabled():
        seen["other"] = tensorlab.is_grad_enabled()

    with tensorlab.no_grad():
        other = threading.Thread(target=check_other_thread_starts_enabled)
        other.start()
        other.join()
    assert seen["other"] is True


# ----- graph lifetime --------------------------------------------------------------------------


def test_the_graph_is_released_after_backward(backend):
    x = tensorlab.tensor(np.ones(3), requires_grad=True, device=backend.device)
    y = (x * 2.0).sum()
    y.backward()
    with pytest.raises(RuntimeError, match=r"a second time.*retain_graph=True"):
        y.backward()


def test_retain_graph_allows_a_second_backward_which_accumulates(backend):
    x = tensorlab.tensor(np.ones(3), requires_grad=True, device=backend.device)
    y = (x * x * 2.0).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_array_equal(host(x.grad), [8.0, 8.0, 8.0])
    with pytest.raises(RuntimeError, match="a second time"):
        y.backward()


def test_a_chain_of_100000_ops_backprops_without_recursion(backend):
    """The backward walk is iterative: depth is not limited by sys.getrecursionlimit() (1000)."""
    x = tensorlab.tensor(np.array([1.0, 2.0]), requires_grad=True, device=backend.device)
    y = x
    for _ in range(100_000):
        y = -y
    y.sum().backward()
    np.testing.assert_array_equal(host(x.grad), [1.0, 1.0])  # (-1) ** 100000


# ----- no_grad, detach, leaving the graph -------------------------------------------------------


def test_no_grad_records_no_graph(backend):
    x = tensorlab.tensor(np.ones(3), requires_grad=True, device=backend.device)
    assert tensorlab.is_grad_enabled()
    with tensorlab.no_grad():
        assert not tensorlab.is_grad_enabled()
        y = (x * 2.0).sum()
    assert tensorlab.is_grad_enabled()
    assert not y.requires_grad and y.creator is None
    with pytest.raises(RuntimeError, match="does not require grad"):
        y.backward()


def test_no_grad_restores_the_mode_after_an_exception():
    with pytest.raises(ValueError):
        with tensorlab.no_grad():
            raise ValueError("boom")
    assert tensorlab.is_grad_enabled()


def test_detach_shares_data_and_stops_the_gradient(backend):
    x = tensorlab.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True, device=backend.device)
    d = x.detach()
    assert d.data is x.data and not d.requires_grad and d.is_leaf  # one array: a write into d shows in x
    assert d._version_counter is x._version_counter  # so does its version, as in PyTorch
    (x * d).sum().backward()  # d is a constant: d(x * c)/dx = c
    np.testing.assert_array_equal(host(x.grad), [1.0, 2.0, 3.0])


def test_copy_writes_in_place_as_pytorch_does(backend):
    """Broadcast to the shape, cast to the dtype, moved to the device, self returned: torch's copy_."""
    x = tensorlab.tensor(np.zeros((2, 3), np.float32), device=backend.device)
    t = torch.zeros((2, 3))
    alias = x.data
    assert x.copy_(tensorlab.tensor(np.array([1.5, 2.5, 3.5]))) is x  # from the host, float64
    t.copy_(torch.tensor([1.5, 2.5, 3.5], dtype=torch.float64))
    assert x.dtype == np.float32 and x.device == backend.device and x.data is alias  # the same memory
    np.testing.assert_array_equal(x.numpy(), t.numpy())
    x.copy_(np.ones((1, 1), np.int64))
    np.testing.assert_array_equal(x.numpy(), np.ones((2, 3)))


@pytest.mark.parametrize(
    "src, message",
    [
        (np.ones(4), "copy_(): expected a Tensor or an array that broadcasts to shape (2, 3), got shape (4,)"),
        (
            np.ones((2, 2, 3)),
            "copy_(): expected a Tensor or an array that broadcasts to shape (2, 3), got shape (2, 2, 3)",
        ),
        (1.0, "copy_(): expected a Tensor or an array that broadcasts to shape (2, 3), got float"),
    ],
)
def test_copy_refuses_what_does_not_fit_in_one_line(src, message):
    x = tensorlab.tensor(np.zeros((2, 3)))
    with pytest.raises(ValueError) as error:
        x.copy_(src)
    assert str(error.value) == message
    assert x._version == 0


def test_copy_into_a_tensor_that_requires_grad_needs_no_grad_as_in_pytorch():
    x = tensorlab.tensor(np.zeros(2), requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape("copy_(): this tensor requires grad")):
        x.copy_(np.ones(2))
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        torch.zeros(2, requires_grad=True).copy_(torch.ones(2))
    with tensorlab.no_grad():
        x.copy_(np.ones(2))
    np.testing.assert_array_equal(x.numpy(), [1.0, 1.0])
    assert x._version == 1


def test_numpy_returns_a_host_copy(backend):
    x = tensorlab.tensor(np.array([1.0, 2.0]), device=backend.device)
    a = x.numpy()
    assert type(a) is np.ndarray
    a[0] = 9.0
    assert x.numpy()[0] == 1.0


def test_item_gives_a_python_number(backend):
    assert tensorlab.tensor(2.5, device=backend.device).item() == 2.5
    assert isinstance(tensorlab.tensor([[7]], device=backend.device).item(), int)
    with pytest.raises(ValueError, match=r"item\(\) needs a tensor with one element, got shape \(2,\)"):
        tensorlab.tensor([1.0, 2.0], device=backend.device).item()


def test_to_cpu_and_device_names(backend):
    x = tensorlab.tensor(np.ones(2), requires_grad=True, device=backend.device)
    on_cpu = x.to("cpu")
    assert on_cpu.device == "cpu" and isinstance(on_cpu.data, np.ndarray) and on_cpu.requires_grad
    assert on_cpu.to("cpu") is on_cpu  # in the graph when it moves: tests/test_convert.py
    with pytest.raises(ValueError, match="device must be 'cpu' or 'cuda', got 'gpu'"):
        x.to("gpu")


def test_to_cuda_without_a_gpu_says_so():
    if tl_backend.gpu_available():
        pytest.skip("a GPU is present")
    problem = tl_backend.gpu_problem()  # real CuPy without a driver (CI installs it), or no CuPy at all
    assert problem.startswith(("CuPy finds no usable NVIDIA driver (", "CuPy is not installed ("))
    with pytest.raises(RuntimeError, match=re.escape(f"device 'cuda' was asked for, but {problem}")):
        tensorlab.tensor([1.0]).to("cuda")


def test_astype_and_array_facts(backend):
    x = tensorlab.tensor(np.ones((2, 3)), requires_grad=True, device=backend.device)
    y = x.astype(np.float32)
    assert y.dtype == np.float32 and y.requires_grad and not y.is_leaf  # in the graph: tests/test_convert.py
    assert (x.shape, x.ndim, x.size, len(x)) == ((2, 3), 2, 6, 2)
    assert "requires_grad=True" in repr(x) and "float64" in repr(x)


# ----- operators: Python scalars and NumPy arrays on either side ---------------------------------

A = np.array([[0.5, -1.5, 2.0], [1.0, 0.25, -0.75]])
M = np.array([[1.0, -2.0], [0.5, 0.0], [3.0, 1.0]])

# Each expression is written once and runs on both frameworks: x is the tensor (A's values, shape
# (2, 3)); a and m are the constants A and M as NumPy arrays for tensorlab, torch tensors for PyTorch.
OPERATORS = {
    "scalar-minus-x": lambda x, a, m: 2.0 - x,
    "x-minus-int": lambda x, a, m: x - 2,
    "x-plus-scalar": lambda x, a, m: x + 0.5,
    "scalar-plus-x": lambda x, a, m: 0.5 + x,
    "int-times-x": lambda x, a, m: 3 * x,
    "x-over-scalar": lambda x, a, m: x / 4.0,
    "one-over-x": lambda x, a, m: 1 / x,
    "x-squared": lambda x, a, m: x**2,
    "x-to-a-fraction": lambda x, a, m: (x * x + 1.0) ** 1.5,
    "neg": lambda x, a, m: -x,
    "array-times-x": lambda x, a, m: a * x,
    "x-times-array": lambda x, a, m: x * a,
    "array-minus-x": lambda x, a, m: a - x,
    "array-over-x": lambda x, a, m: a / x,
    "x-matmul-array": lambda x, a, m: x @ m,
    "array-matmul-x": lambda x, a, m: m @ x,
}


@pytest.mark.parametrize("name", OPERATORS)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_operators_with_python_scalars_and_numpy_arrays(name, dtype, backend):
    """Values and gradients as PyTorch; float32 stays float32 (a Python scalar never upcasts)."""
    expression = OPERATORS[name]
    a, m = A.astype(dtype), M.astype(dtype)
    out, _ = check_against_torch(
        lambda x: expression(x, a, m),
        lambda x: expression(x, torch.from_numpy(a), torch.from_numpy(m)),
        [A],
        dtype=dtype,
        device=backend.device,
        name=name,
    )
    assert isinstance(out[0], tensorlab.Tensor)


def test_x_matmul_y_and_tensor_methods(backend):
    def methods(x, y):
        z = (x @ y).T.reshape(2, 2, 2).transpose(1, 0, 2).swapaxes(0, 2).reshape((8,))
        return (
            z.exp().sum()
            + z.tanh().mean()
            + z.sigmoid().max()
            + z.relu().sum(axis=0)
            + (z * z + 1.0).sqrt().log().sum()
        )

    check_against_torch(
        methods,
        lambda x, y: _torch_methods(x, y),
        [np.arange(8.0).reshape(4, 2) / 8, np.array([[0.5, -1.0], [2.0, 0.25]])],
        device=backend.device,
        name="methods",
    )


def _torch_methods(x, y):
    z = (x @ y).T.reshape(2, 2, 2).permute(1, 0, 2).transpose(0, 2).reshape(8)
    return z.exp().sum() + z.tanh().mean() + z.sigmoid().amax() + z.relu().sum(0) + (z * z + 1.0).sqrt().log().sum()


def test_a_numpy_array_on_the_left_gives_a_tensor_not_an_object_array(backend):
    x = tensorlab.tensor(np.ones(3), device=backend.device)
    for result in (np.ones(3) + x, np.ones(3) * x, np.ones(3) - x, np.ones(3) / x, np.ones((2, 3)) @ x):
        assert isinstance(result, tensorlab.Tensor)
