"""`.to(device)` and `.astype(dtype)` stay in the graph, as PyTorch's `.to`: the gradient goes back to the
source's device and dtype. `detach()` gives the leaf."""

import numpy as np
import pytest
import torch

import tensorlab
import tensorlab.functional as F


def test_astype_passes_the_gradient_back_in_the_source_dtype_as_torch():
    rng = np.random.default_rng(0)
    x64, w32 = rng.standard_normal((3, 4)), rng.standard_normal((3, 4)).astype(np.float32)
    x = tensorlab.tensor(x64, requires_grad=True)
    y = x.astype(np.float32)
    assert y.dtype == np.float32 and y.requires_grad and not y.is_leaf
    (F.exp(y) * tensorlab.tensor(w32)).sum().backward()

    xt = torch.tensor(x64, requires_grad=True)
    (torch.exp(xt.to(torch.float32)) * torch.from_numpy(w32)).sum().backward()
    assert x.grad.dtype == np.float64
    np.testing.assert_allclose(x.grad, xt.grad.numpy(), rtol=1e-6, atol=0)  # measured: 1.2e-7 (float32 exp)


def test_the_gradient_through_astype_matches_finite_differences():
    # float64 to float64 (a copy in the graph): float32 in the middle would drown eps=1e-6 in rounding
    x = tensorlab.tensor(np.random.default_rng(1).standard_normal(5), requires_grad=True)
    tensorlab.gradcheck(lambda x: F.tanh(x.astype(np.float64)) * x, [x], atol=1e-9, rtol=1e-7)


def test_astype_to_an_integer_dtype_takes_no_gradient_as_torch():
    x = tensorlab.tensor([1.5, -2.5], requires_grad=True)
    ids = x.astype(np.int64)
    assert ids.dtype == np.int64 and not ids.requires_grad and ids.is_leaf
    assert torch.tensor([1.5], requires_grad=True).to(torch.int64).requires_grad is False


def test_to_the_same_device_is_the_tensor_itself_and_detach_gives_a_leaf(backend):
    x = tensorlab.tensor(np.ones(3), requires_grad=True, device=backend.device)
    assert x.to(backend.device) is x
    y = (x * 2).detach()
    assert y.is_leaf and not y.requires_grad and y.device == backend.device


@pytest.mark.parametrize("source, target", [("cuda", "cpu"), ("cpu", "cuda")])
def test_to_another_device_passes_the_gradient_back_to_the_source_device(cuda, source, target):
    """On a GPU, or on the strict CuPy stand-in (tests/strict_cupy), which refuses mixed-device arithmetic."""
    w = np.arange(3.0)
    x = tensorlab.tensor(np.ones(3), requires_grad=True, device=source)
    y = x.to(target)
    assert y.device == target and not y.is_leaf
    (y * tensorlab.tensor(w, device=target)).sum().backward()
    assert x.grad is not None and type(x.grad) is type(x._data)  # on the source device
    np.testing.assert_array_equal(tensorlab.backend.to_device(x.grad, "cpu"), w)  # d(sum(w * x))/dx = w
