"""The version counter (tensorlab/version_counter.py): a value changed in place after an op saved it never
reaches a gradient. Backward either refuses in one line naming the op and the tensor, or gives the gradient
of the values the forward saw.

The table test writes into every input and every output of every case in tests/test_ops.py's table after
the forward and before the backward; the others pin each way of writing, the reads that must not count,
the optimizer step between forward and backward (refused by PyTorch too), and the message.
"""

import re

import numpy as np
import pytest
import torch
from test_ops import CASE_PARAMS

import tensorlab
from tensorlab import optim

CHANGED = "changed in place after"
_rng = np.random.default_rng(20261124)


def _changed(array):
    """Other values of the same kind: floats scaled (a positive input stays positive), others reversed."""
    if array.dtype.kind == "f":
        return array * 1.5
    return array.reshape(-1)[::-1].reshape(array.shape)


def _run(case, write=None):
    """Forward the case in float64, let `write(inputs, outputs)` change something, backward a random upstream
    gradient (seeded: the same in every run); the inputs' gradients, or the RuntimeError backward raised."""
    inputs = [
        tensorlab.tensor(x.astype(np.float64) if x.dtype.kind == "f" else x, requires_grad=x.dtype.kind == "f")
        if isinstance(x, np.ndarray)
        else x
        for x in case.inputs
    ]
    outputs = case.tl_fn(*inputs)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    upstream = np.random.default_rng(0)
    grads = [upstream.standard_normal(y.shape) if y.dtype.kind == "f" else None for y in outputs]
    if write is not None:
        write([x for x in inputs if isinstance(x, tensorlab.Tensor)], outputs)
    try:
        for y, g in zip(outputs, grads):
            if g is not None and y.requires_grad:
                y.backward(g, retain_graph=True)
    except RuntimeError as error:
        return error
    return [x.grad for x in inputs if isinstance(x, tensorlab.Tensor) and x.requires_grad]


def _assert_refused_or_unchanged(result, clean, what):
    if isinstance(result, RuntimeError):
        assert CHANGED in str(result) and "\n" not in str(result), f"{what}: {result}"
        return
    for got, want in zip(result, clean):
        if want is None:  # no gradient reaches this input (argmax's output is an index)
            assert got is None, f"{what}: a gradient appeared"
            continue
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14, err_msg=f"{what}: a wrong gradient, silently")


@pytest.mark.parametrize("case", CASE_PARAMS)
def test_writing_an_input_or_output_after_forward_never_gives_a_wrong_gradient(case):
    clean = _run(case)
    if isinstance(clean, RuntimeError):
        pytest.fail(f"the clean run raised: {clean}")
    n_inputs = sum(isinstance(x, np.ndarray) for x in case.inputs)
    for i in range(n_inputs):

        def write_input(inputs, outputs, i=i):
            inputs[i].data[...] = _changed(inputs[i].numpy())

        _assert_refused_or_unchanged(_run(case, write_input), clean, f"input {i} written")
    probe = case.tl_fn(*[tensorlab.tensor(x) if isinstance(x, np.ndarray) else x for x in case.inputs])
    for k in range(len(probe) if isinstance(probe, tuple) else 1):

        def write_output(inputs, outputs, k=k):
            if isinstance(outputs[k].data, np.ndarray):  # a NumPy scalar (np.sum's 0-d result) takes no writes
                outputs[k].data[...] = _changed(outputs[k].numpy())

        _assert_refused_or_unchanged(_run(case, write_output), clean, f"output {k} written")


def _x_times_x():
    x = tensorlab.tensor(np.array([1.0, 2.0]), requires_grad=True)
    return x, x * x


WRITES = {
    "setitem": lambda x: x.data.__setitem__(..., 10.0),
    "setitem on a slice of a slice": lambda x: x.data[0:2][1:].__setitem__(..., 10.0),
    "+=": lambda x: x.data.__iadd__(1.0),
    "*=": lambda x: x.data.__imul__(3.0),
    "ufunc out=": lambda x: np.add(x.data, 1.0, out=x.data),
    "ufunc.at": lambda x: np.add.at(x.data, [0], 1.0),
    "np.copyto": lambda x: np.copyto(x.data, np.array([5.0, 6.0])),
    "np.put": lambda x: np.put(x.data, [1], [7.0]),
    "fill": lambda x: x.data.fill(3.0),
    "sort": lambda x: (x.data.__setitem__(..., [2.0, 1.0]), x.data.sort()),
    "a transposed view": lambda x: x.data.reshape(2, 1).T.__setitem__(..., 4.0),
    "through detach()": lambda x: x.detach().data.__setitem__(0, 9.0),
}


@pytest.mark.parametrize("write", WRITES.values(), ids=WRITES.keys())
def test_every_way_of_writing_through_data_is_counted(write):
    x, y = _x_times_x()
    write(x)
    with pytest.raises(RuntimeError, match=re.escape("backward(): mul saved its input 0 (shape (2,), dtype float64)")):
        y.sum().backward()


def test_a_write_into_a_view_tensor_counts_for_the_tensor_it_views():
    x = tensorlab.tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = (x * x).sum()
    x.reshape(2, 1).data[1, 0] = 5.0  # the reshape's data is x's memory
    with pytest.raises(RuntimeError, match="mul saved its input 0"):
        y.backward()


READS = {
    "np.sum": lambda x: np.sum(x.data),
    "arithmetic": lambda x: x.data * 2 + 1,
    "a copy, then written": lambda x: x.data.copy().__setitem__(..., 5.0),
    "np.asarray": lambda x: np.asarray(x.data).sum(),
    "numpy()": lambda x: x.numpy().__setitem__(..., 5.0),
    "a new array put in .data": lambda x: setattr(x, "data", np.array([7.0, 8.0])),
}


@pytest.mark.parametrize("read", READS.values(), ids=READS.keys())
def test_reads_and_fresh_arrays_do_not_count(read):
    x, y = _x_times_x()
    read(x)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad, [2.0, 4.0])  # d(x^2)/dx = 2x at the values forward saw


def test_an_output_the_op_saved_is_watched_too():
    x = tensorlab.tensor(np.array([0.0, 1.0]), requires_grad=True)
    y = x.exp()  # exp's backward reads y: gx = gy * y
    y.data[...] = 0.0
    with pytest.raises(RuntimeError, match=re.escape("exp saved its output (shape (2,), dtype float64)")):
        y.sum().backward()


def test_an_input_the_op_did_not_save_may_change_as_in_pytorch():
    x = tensorlab.tensor(np.array([1.0, 2.0]), requires_grad=True)
    tx = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y, ty = x + 1.0, tx + 1.0
    x.data[...] = 10.0
    with torch.no_grad():
        tx[...] = 10.0
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_array_equal(x.grad, tx.grad.numpy())


def test_an_optimizer_step_between_forward_and_backward_is_refused_like_pytorch():
    """Both refuse; the step wrote into the weight that matmul saved."""
    w0 = _rng.standard_normal((3, 2))
    x0 = _rng.standard_normal((4, 3))
    w = tensorlab.nn.Parameter(tensorlab.tensor(w0))
    opt = optim.SGD([w], lr=0.1)
    tw = torch.nn.Parameter(torch.tensor(w0))
    topt = torch.optim.SGD([tw], lr=0.1)
    (tensorlab.tensor(x0) @ w).sum().backward()
    (torch.tensor(x0) @ tw).sum().backward()
    x, tx = tensorlab.tensor(x0, requires_grad=True), torch.tensor(x0, requires_grad=True)
    loss, tloss = (x @ w).sum(), (tx @ tw).sum()  # x's gradient needs w: both keep it
    opt.step()
    topt.step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        tloss.backward()
    with pytest.raises(RuntimeError, match=re.escape("matmul saved its input 1 (shape (3, 2), dtype float64)")):
        loss.backward()


def test_a_step_after_backward_and_a_new_forward_is_fine():
    """The normal loop: forward, backward, step, forward again; each graph sees its own values."""
    w = tensorlab.nn.Parameter(tensorlab.tensor(np.array([1.0, 2.0])))
    opt = optim.SGD([w], lr=0.5)
    for _ in range(3):
        opt.zero_grad()
        (w * w).sum().backward()
        opt.step()
    np.testing.assert_array_equal(w.numpy(), [0.0, 0.0])  # w - 0.5 * 2w = 0 at the first step, and stays


def test_the_message_is_one_line_and_says_what_to_do():
    x, y = _x_times_x()
    x.data[...] = 10.0
    with pytest.raises(RuntimeError) as error:
        y.sum().backward()
    message = str(error.value)
    assert "\n" not in message and "change it after backward()" in message and ".data.copy()" in message


def test_watched_arrays_compute_like_plain_ones():
    x = tensorlab.tensor(np.array([[1.0, 2.0], [3.0, 4.0]]))
    assert type(x.data * 2) is np.ndarray and type(np.exp(x.data)) is np.ndarray  # results come back plain
    assert isinstance(x.data, np.ndarray) and np.shares_memory(x.data, x.numpy()) is False
    np.testing.assert_array_equal(x.data @ x.data, np.array([[7.0, 10.0], [15.0, 22.0]]))
    d = x.data
    d += 1.0
    np.testing.assert_array_equal(x.numpy(), [[2.0, 3.0], [4.0, 5.0]])  # `+=` changed x itself


def test_setting_data_back_does_not_grow_a_chain_of_views():
    x = tensorlab.tensor(np.zeros(3))
    original = x._data
    for _ in range(100):
        x.data *= 2.0  # Python: x.data = x.data.__imul__(2.0)
    assert x._data is original


def test_the_array_an_in_place_operator_hands_back_is_still_watched():
    x = tensorlab.tensor(np.array([1.0, 2.0]), requires_grad=True)
    d = x.data
    d += 0.0  # Python rebinds d to what `+=` returns
    y = x * x
    d[0] = 5.0
    with pytest.raises(RuntimeError, match="mul saved its input 0"):
        y.sum().backward()
