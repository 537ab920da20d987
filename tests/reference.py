"""The one helper every op test uses: run an op in tensorlab and in PyTorch, compare everything.

    check_against_torch(F.softmax, torch.softmax_last, [x])

builds a tensorlab copy and a PyTorch copy of every input (float64 unless `dtype` says
otherwise), runs both forwards, and compares the outputs' shape, dtype and values (an
output PyTorch gives no gradient, as a comparison's, must not require one here). It
then backpropagates the SAME random upstream gradient u through both (a plain .sum()
would hide a backward that returns zeros for softmax, whose true gradient of a sum is
exactly zero) and compares every input's gradient, element by element. A failure
names the op, the output or input, the worst element and both values.
"""

import numpy as np
import torch

import tensorlab
import tensorlab.functional as F
from tensorlab import backend as tl_backend

TOLERANCES = {  # (rtol, atol) by dtype: |ours - torch| <= atol + rtol * |torch|
    "float64": (1e-7, 1e-9),
    "float32": (1e-5, 1e-5),
}


def check_against_torch(
    tl_fn, torch_fn, inputs, *, dtype="float64", device="cpu", upstream_seed=0, rtol=None, atol=None, name=None
):
    """Compare tl_fn(*inputs) with torch_fn(*inputs): outputs and every input's gradient.

    inputs: NumPy arrays or Python scalars. Floating arrays are cast to `dtype` and require
    grad in both frameworks; integer and boolean arrays go in as constants (class ids, masks);
    Python scalars go in as they are. tl_fn may return a Tensor or a tuple of them (split),
    torch_fn the same. tl_fn runs first (a torch_fn may read what it recorded, as dropout's
    mask). Returns (tensorlab outputs, torch outputs) as tuples.
    """
    name = name or getattr(tl_fn, "__name__", "op")
    default_rtol, default_atol = TOLERANCES[dtype]
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol

    tl_inputs = [_tensorlab_input(x, dtype, device) for x in inputs]
    torch_inputs = [_torch_input(x, dtype) for x in inputs]
    tl_out = _as_tuple(tl_fn(*tl_inputs))
    torch_out = _as_tuple(torch_fn(*torch_inputs))
    assert len(tl_out) == len(torch_out), f"{name}: tensorlab returned {len(tl_out)} outputs, PyTorch {len(torch_out)}"

    # ----- forward: shape, dtype, device, values
    for k, (ours, theirs) in enumerate(zip(tl_out, torch_out)):
        what = f"{name}: output {k}" if len(tl_out) > 1 else f"{name}: output"
        assert isinstance(ours, tensorlab.Tensor), f"{what} is a {type(ours).__name__}, not a Tensor"
        assert str(ours.dtype) == _dtype_name(theirs.dtype), (
            f"{what} has dtype {ours.dtype} in tensorlab but {_dtype_name(theirs.dtype)} in PyTorch"
        )
        assert ours.device == device, f"{what} is on {ours.device}, its inputs on {device}"
        assert_close(what, ours.numpy(), theirs.detach().numpy(), rtol, atol)

    # ----- no gradient at all (comparisons, argmax): neither side may offer one
    if not any(y.requires_grad for y in torch_out):
        for k, ours in enumerate(tl_out):
            assert not ours.requires_grad and ours.creator is None, (
                f"{name}: output {k} requires grad in tensorlab; PyTorch's takes no gradient"
            )
        return tl_out, torch_out

    # ----- backward: the same random upstream gradient for both
    rng = np.random.default_rng(upstream_seed)
    upstream = [rng.standard_normal(tuple(y.shape)).astype(_dtype_name(y.dtype)) for y in torch_out]
    if len(tl_out) == 1:
        tl_out[0].backward(tensorlab.tensor(upstream[0], device=device))
    else:  # several outputs: one scalar L = sum_k sum(y_k * u_k), so the walk gathers them in one pass
        terms = [F.sum(F.mul(y, tensorlab.tensor(u, device=device))) for y, u in zip(tl_out, upstream)]
        total = terms[0]
        for term in terms[1:]:
            total = total + term
        total.backward()
    torch.autograd.backward(list(torch_out), [torch.from_numpy(u) for u in upstream])

    for i, (ours, theirs) in enumerate(zip(tl_inputs, torch_inputs)):
        if not (isinstance(ours, tensorlab.Tensor) and ours.requires_grad):
            continue
        what = f"{name}: gradient of input {i} (shape {tuple(ours.shape)})"
        assert ours.grad is not None, f"{what}: tensorlab gave no gradient"
        assert ours.grad.shape == ours.shape and ours.grad.dtype == ours.dtype, (
            f"{what} has shape {ours.grad.shape} and dtype {ours.grad.dtype}; it must match its input"
        )
        assert tl_backend.device_of(ours.grad) == device, f"{what} is not on {device}"
        expected = np.zeros(ours.shape, dtype) if theirs.grad is None else theirs.grad.numpy()
        assert_close(what, tl_backend.to_device(ours.grad, "cpu"), expected, rtol, atol)
    return tl_out, torch_out


def assert_close(what, ours, theirs, rtol, atol):
    """Element-by-element |ours - theirs| <= atol + rtol * |theirs| (NaN matches NaN), with a clear report."""
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    if ours.dtype.kind in "biu" and theirs.dtype.kind in "biu":  # booleans and indices: compared exactly
        ours, theirs, rtol, atol = ours.astype(np.float64), theirs.astype(np.float64), 0, 0
    assert ours.shape == theirs.shape, f"{what}: shape {ours.shape} in tensorlab, {theirs.shape} in PyTorch"
    close = np.isclose(ours, theirs, rtol=rtol, atol=atol, equal_nan=True)
    if close.all():
        return
    with np.errstate(invalid="ignore"):
        excess = np.where(close, -np.inf, np.nan_to_num(np.abs(ours - theirs) - rtol * np.abs(theirs), nan=np.inf))
    worst = np.unravel_index(int(np.argmax(excess)), ours.shape)
    raise AssertionError(
        f"{what} differs from PyTorch at {int((~close).sum())} of {close.size} elements "
        f"(rtol={rtol:g}, atol={atol:g}); worst at index {tuple(int(i) for i in worst)}: "
        f"tensorlab {ours[worst]!r}, PyTorch {theirs[worst]!r}"
    )


def torch_index(index):
    """A NumPy-style index (slices, ints, None, ..., arrays) with its arrays as torch tensors."""
    if isinstance(index, tuple):
        return tuple(torch_index(part) for part in index)
    return torch.from_numpy(index) if isinstance(index, np.ndarray) else index


def _tensorlab_input(x, dtype, device):
    if not isinstance(x, np.ndarray):
        return x
    if x.dtype.kind == "f":
        return tensorlab.tensor(x.astype(dtype), requires_grad=True, device=device)
    return tensorlab.tensor(x, device=device)


def _torch_input(x, dtype):
    if not isinstance(x, np.ndarray):
        return x
    if x.dtype.kind == "f":
        return torch.tensor(x.astype(dtype), requires_grad=True)
    return torch.from_numpy(x.copy())


def _as_tuple(y):
    return tuple(y) if isinstance(y, (tuple, list)) else (y,)


def _dtype_name(torch_dtype):
    return str(torch_dtype).replace("torch.", "")
