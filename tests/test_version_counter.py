"""The version counter (Tensor._version, PyTorch's design): the engine's writers bump it, each op notes the
versions of its inputs and outputs, and backward refuses an op whose saved memory was written since, in one
line naming the op and the tensor. `.data` is the plain array, untracked, as PyTorch's `.data`.

The table test writes into every input and every output of every case in tests/test_ops.py's table after
the forward and before the backward; the others pin each writer (copy_, the optimizers' step,
load_state_dict) on NumPy and on CuPy (the strict stand-in without a GPU), the views that share a counter,
the writes that must not count, and the message.
"""

import re

import numpy as np
import pytest
import torch
from test_ops import CASE_PARAMS

import tensorlab
from tensorlab import nn, optim

MODIFIED = "modified by an inplace operation"
_rng = np.random.default_rng(20261124)


def _changed(array):
    """Other values of the same kind: floats scaled (a positive input stays positive), others reversed."""
    if array.dtype.kind == "f":
        return array * 1.5
    return array.reshape(-1)[::-1].reshape(array.shape)


def _write(t):
    """Change t in place as a user of the engine can: copy_ under no_grad."""
    with tensorlab.no_grad():
        t.copy_(_changed(t.numpy()))


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
        assert MODIFIED in str(result) and "\n" not in str(result), f"{what}: {result}"
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
        _assert_refused_or_unchanged(_run(case, lambda inputs, outputs, i=i: _write(inputs[i])), clean, f"input {i}")
    probe = case.tl_fn(*[tensorlab.tensor(x) if isinstance(x, np.ndarray) else x for x in case.inputs])
    for k in range(len(probe) if isinstance(probe, tuple) else 1):
        _assert_refused_or_unchanged(_run(case, lambda inputs, outputs, k=k: _write(outputs[k])), clean, f"output {k}")


def test_data_is_the_plain_array_itself(backend):
    x = tensorlab.tensor(np.array([[1.0, 2.0], [3.0, 4.0]]), requires_grad=True, device=backend.device)
    for t in (x, x.sum(), x[0, 1], x.max(), x.mean(axis=0), x.detach()):  # 0-d results too: arrays, never scalars
        assert type(t.data) is type(backend.xp.zeros(1)) and t.data is t.data
    if backend.name == "numpy":
        assert type(x.data) is np.ndarray and repr(x.data) == repr(x.numpy())
        assert type(x.data.copy()) is np.ndarray


def test_writes_through_data_are_not_seen_as_in_pytorch():
    """PyTorch's .data has a version counter of its own: backward uses the new values, in both."""
    x = tensorlab.tensor(np.array([1.0, 2.0]), requires_grad=True)
    tx = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y, ty = (x * x).sum(), (tx * tx).sum()
    x.data[...] = 10.0
    tx.data[...] = 10.0
    y.backward()
    ty.backward()
    np.testing.assert_array_equal(x.grad, tx.grad.numpy())
    np.testing.assert_array_equal(x.grad, [20.0, 20.0])  # 2 * 10: the values now, as PyTorch gives


def _linear_loss(backend):
    """A parameter w and a loss whose graph saved w (matmul keeps it for x's gradient)."""
    w = nn.Parameter(tensorlab.tensor(_rng.standard_normal((3, 2)), device=backend.device))
    x = tensorlab.tensor(_rng.standard_normal((4, 3)), requires_grad=True, device=backend.device)
    return w, (x @ w).sum()


def _load(w):
    module = nn.Module()
    module.w = w
    module.load_state_dict({"w": np.zeros(w.shape)})


WRITERS = {
    "SGD step": lambda w: optim.SGD([w], lr=0.1).step(),
    "AdamW step": lambda w: optim.AdamW([w], lr=0.1).step(),
    "load_state_dict": _load,
    "copy_ under no_grad": lambda w: _copy(w, w.detach() * 2.0),
    "copy_ into a view": lambda w: _copy(w.reshape(6)[1:], np.zeros(5)),
    "copy_ into detach()": lambda w: w.detach().copy_(np.zeros(2)),
}


def _copy(target, src):
    with tensorlab.no_grad():
        target.copy_(src)


@pytest.mark.parametrize("write", WRITERS.values(), ids=WRITERS.keys())
def test_each_writer_of_the_engine_moves_the_version_and_backward_refuses(write, backend):
    w, loss = _linear_loss(backend)
    w.grad = backend.xp.ones(w.shape)  # what the optimizers step with
    before = w._version
    write(w)
    assert w._version > before
    with pytest.raises(
        RuntimeError, match=re.escape("backward(): matmul saved its input 1 (shape (3, 2), dtype float64)")
    ):
        loss.backward()


def test_an_optimizer_step_between_forward_and_backward_is_refused_like_pytorch(backend):
    """Both refuse; the step wrote into the weight that matmul saved."""
    w0, x0 = _rng.standard_normal((3, 2)), _rng.standard_normal((4, 3))
    w = nn.Parameter(tensorlab.tensor(w0, device=backend.device))
    tw = torch.nn.Parameter(torch.tensor(w0))
    opt, topt = optim.SGD([w], lr=0.1), torch.optim.SGD([tw], lr=0.1)
    x = tensorlab.tensor(x0, requires_grad=True, device=backend.device)
    tx = torch.tensor(x0, requires_grad=True)
    (x @ w).sum().backward()
    (tx @ tw).sum().backward()
    loss, tloss = (x @ w).sum(), (tx @ tw).sum()  # x's gradient needs w: both keep it
    opt.step()
    topt.step()
    with pytest.raises(RuntimeError, match=MODIFIED):
        tloss.backward()
    with pytest.raises(RuntimeError, match=re.escape("matmul saved its input 1 (shape (3, 2), dtype float64)")):
        loss.backward()


def test_a_view_taken_before_shares_the_counter_of_the_tensor_it_views(backend):
    """w.T, w.reshape(...), detach() and Parameter(w) look at w's memory: a write into w counts for them."""
    for view in (lambda w: w.T.T, lambda w: w.reshape(6).reshape(3, 2), lambda w: w.detach(), nn.Parameter):
        w, _ = _linear_loss(backend)
        v = view(w)
        assert v._version_counter is w._version_counter
        x = tensorlab.tensor(np.ones((4, 3)), requires_grad=True, device=backend.device)
        loss = (x @ v).sum()
        _copy(w, np.zeros((3, 2)))
        with pytest.raises(RuntimeError, match="matmul saved its input 1"):
            loss.backward()


def test_a_new_array_from_an_op_has_a_counter_of_its_own():
    x = tensorlab.tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = x * 2.0
    assert y._version_counter is not x._version_counter
    z = x.reshape(2, 1) * 1.0  # a fresh array made from a view
    _copy(x, np.zeros(2))
    assert z._version == 0 and x._version == 1


def test_an_output_the_op_saved_is_checked_too():
    x = tensorlab.tensor(np.array([0.0, 1.0]), requires_grad=True)
    y = x.exp()  # exp's backward reads y: gx = gy * y
    _copy(y, np.zeros(2))
    with pytest.raises(RuntimeError, match=re.escape("exp saved its output (shape (2,), dtype float64)")):
        y.sum().backward()


def test_an_input_the_op_did_not_save_may_change_as_in_pytorch():
    x = tensorlab.tensor(np.array([1.0, 2.0]), requires_grad=True)
    tx = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y, ty = x + 1.0, tx + 1.0
    _copy(x, np.full(2, 10.0))
    with torch.no_grad():
        tx.copy_(torch.full((2,), 10.0))
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_array_equal(x.grad, tx.grad.numpy())


def test_a_step_after_backward_and_a_new_forward_is_fine():
    """The normal loop: forward, backward, step, forward again; each graph sees its own values."""
    w = nn.Parameter(tensorlab.tensor(np.array([1.0, 2.0])))
    opt = optim.SGD([w], lr=0.5)
    for _ in range(3):
        opt.zero_grad()
        (w * w).sum().backward()
        opt.step()
    np.testing.assert_array_equal(w.numpy(), [0.0, 0.0])  # w - 0.5 * 2w = 0 at the first step, and stays
    assert w._version == 3


def test_the_message_is_one_line_and_says_what_to_do():
    x = tensorlab.tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = (x * x).sum()
    _copy(x, np.full(2, 10.0))
    with pytest.raises(RuntimeError) as error:
        y.backward()
    assert str(error.value) == (
        "backward(): mul saved its input 0 (shape (2,), dtype float64), which was modified by an inplace "
        "operation after mul ran (it is at version 1, mul saved version 0); call backward() before changing it "
        "(optimizer.step(), load_state_dict(), copy_()), or run the forward again after the change"
    )
