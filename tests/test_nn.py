"""Every tensorlab.nn layer against its torch.nn counterpart: forward, input gradient and every parameter gradient.

One table, one row per layer and setting. Each row builds our layer, gives every parameter
random values (so a dropped bias or a weight read wrongly shows, which 1s and 0s would hide),
copies them into the torch layer by name, runs both on the same float64 input in the same
mode (train or eval), backpropagates the same random upstream gradient, and compares element
by element. Dropout in training mode draws its own mask in each framework, so it has its own
tests against the definition instead.
"""

from dataclasses import dataclass, field

import numpy as np
import pytest
import torch

import tensorlab
from models import torch_model as torch_twin
from tensorlab import nn

# float64: measured worst relative error over the whole table 5.5e-16 (forward) and 1.3e-15 (gradients,
# attention); 1e-13 sits within 100x of that, far below what a planted bug gives.
TOLERANCE = 1e-13


def small(bias=True, **overrides):
    """A small float64 TransformerConfig (`bias`: all three biases); our layer and its torch twin read the same one."""
    values = dict(d_model=16, n_heads=4, d_ff=24, n_layers=1, pos_encoding="learned", dtype="float64")
    return nn.TransformerConfig(**{**values, **overrides}, qkv_bias=bias, proj_bias=bias, ffn_bias=bias)


class TorchSwiGLU(torch.nn.Module):
    """The reference for nn.SwiGLUFeedForward, written from its formula: proj(silu(gate(x)) * up(x))."""

    def __init__(self, d_model, d_ff, bias=True, dropout=0.0):
        super().__init__()
        self.gate = torch.nn.Linear(d_model, d_ff, bias=bias)
        self.up = torch.nn.Linear(d_model, d_ff, bias=bias)
        self.proj = torch.nn.Linear(d_ff, d_model, bias=bias)
        self.dropout = torch.nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.proj(torch.nn.functional.silu(self.gate(x)) * self.up(x)))


@dataclass
class Row:
    name: str
    ours: object  # () -> tensorlab module
    theirs: object  # () -> torch module
    shape: tuple = (2, 5, 16)  # input shape; ints for Embedding
    training: bool = True
    ids: bool = False  # the input is integer ids (no input gradient)
    scale: float = 1.0  # input scale
    extra: dict = field(default_factory=dict)


ROWS = [
    Row("linear-bias", lambda: nn.Linear(16, 7, dtype=np.float64), lambda: torch.nn.Linear(16, 7)),
    Row(
        "linear-no-bias",
        lambda: nn.Linear(16, 7, bias=False, dtype=np.float64),
        lambda: torch.nn.Linear(16, 7, bias=False),
    ),
    Row(
        "embedding",
        lambda: nn.Embedding(11, 6, dtype=np.float64),
        lambda: torch.nn.Embedding(11, 6),
        shape=(3, 7),
        ids=True,
    ),
    Row("rms-norm-default", lambda: nn.RMSNorm(16, dtype=np.float64), lambda: torch.nn.RMSNorm(16, eps=1e-5)),
    Row(
        "rms-norm-eps-0.1",
        lambda: nn.RMSNorm(16, eps=0.1, dtype=np.float64),
        lambda: torch.nn.RMSNorm(16, eps=0.1),
        scale=0.3,
    ),
    Row(
        "rms-norm-no-affine",
        lambda: nn.RMSNorm(16, eps=1e-3, elementwise_affine=False, dtype=np.float64),
        lambda: torch.nn.RMSNorm(16, eps=1e-3, elementwise_affine=False),
        scale=0.3,
    ),
    Row("layer-norm-default", lambda: nn.LayerNorm(16, dtype=np.float64), lambda: torch.nn.LayerNorm(16)),
    Row(
        "layer-norm-eps-0.1",
        lambda: nn.LayerNorm(16, eps=0.1, dtype=np.float64),
        lambda: torch.nn.LayerNorm(16, eps=0.1),
        scale=0.3,
    ),
    Row(
        "layer-norm-no-bias",
        lambda: nn.LayerNorm(16, bias=False, dtype=np.float64),
        lambda: torch.nn.LayerNorm(16, bias=False),
    ),
    Row(
        "layer-norm-no-affine",
        lambda: nn.LayerNorm(16, eps=1e-3, elementwise_affine=False, dtype=np.float64),
        lambda: torch.nn.LayerNorm(16, eps=1e-3, elementwise_affine=False),
    ),
    Row("dropout-eval", lambda: nn.Dropout(0.4), lambda: torch.nn.Dropout(0.4), training=False),
    Row("dropout-p0-train", lambda: nn.Dropout(0.0), lambda: torch.nn.Dropout(0.0)),
    Row("dropout-p1-train", lambda: nn.Dropout(1.0), lambda: torch.nn.Dropout(1.0)),
    Row(
        "attention-learned-bias",
        lambda: nn.CausalSelfAttention(small()),
        lambda: torch_twin.TorchAttention(small()),
    ),
    Row(
        "attention-rope-no-bias",
        lambda: nn.CausalSelfAttention(small(n_heads=2, bias=False, pos_encoding="rope")),
        lambda: torch_twin.TorchAttention(small(n_heads=2, bias=False, pos_encoding="rope")),
    ),
    Row(
        "attention-composed-rope",
        lambda: nn.CausalSelfAttention(small(pos_encoding="rope"), fused=False),
        lambda: torch_twin.TorchAttention(small(pos_encoding="rope")),
    ),
    Row(
        "attention-dropout-eval",
        lambda: nn.CausalSelfAttention(small(dropout=0.3)),
        lambda: torch_twin.TorchAttention(small(dropout=0.3)),
        training=False,
    ),
    Row(
        "feed-forward-gelu",
        lambda: nn.FeedForward(small()),
        lambda: torch_twin.TorchFeedForward(small()),
    ),
    Row(
        "feed-forward-relu-no-bias-dropout-eval",
        lambda: nn.FeedForward(small(activation="relu", dropout=0.5, bias=False)),
        lambda: torch_twin.TorchFeedForward(small(activation="relu", dropout=0.5, bias=False)),
        training=False,
    ),
    Row(
        "swiglu-feed-forward",
        lambda: nn.SwiGLUFeedForward(small(activation="swiglu")),
        lambda: TorchSwiGLU(16, 24),
    ),
    Row(
        "swiglu-no-bias-dropout-eval",
        lambda: nn.SwiGLUFeedForward(small(activation="swiglu", d_ff=8, dropout=0.5, bias=False)),
        lambda: TorchSwiGLU(16, 8, bias=False, dropout=0.5),
        training=False,
    ),
    Row(
        "block-eps-0.1-rope",
        lambda: nn.TransformerBlock(small(pos_encoding="rope", norm_eps=0.1)),
        lambda: torch_twin.TorchBlock(small(pos_encoding="rope", norm_eps=0.1)),
        scale=0.3,
    ),
    Row(
        "block-relu-no-bias-eval",
        lambda: nn.TransformerBlock(small(n_heads=2, d_ff=8, dropout=0.2, activation="relu", bias=False)),
        lambda: torch_twin.TorchBlock(small(n_heads=2, d_ff=8, dropout=0.2, activation="relu", bias=False)),
        training=False,
    ),
]


def relative_error(ours, theirs):
    """max |ours - theirs| / max |theirs|, the error relative to the array's scale."""
    theirs = np.asarray(theirs, dtype=np.float64)
    return float(np.abs(np.asarray(ours, np.float64) - theirs).max() / max(np.abs(theirs).max(), 1e-300))


def run_both(row, seed=0):
    """Forward and backward through our layer and its torch twin; returns {what: (ours, theirs)}."""
    rng = np.random.default_rng(seed)
    tensorlab.manual_seed(seed)
    ours, theirs = row.ours(), row.theirs().double()
    for _, p in ours.named_parameters():
        p.data[...] = rng.standard_normal(p.shape) * 0.5 + (1.0 if p.ndim == 1 else 0.0)
    theirs.load_state_dict({name: torch.from_numpy(p.data.copy()) for name, p in ours.named_parameters()})
    ours.train(row.training)
    theirs.train(row.training)
    if row.ids:
        x_np = rng.integers(0, 11, size=row.shape)
        x_np[0, :3] = 4  # a repeated id: its gradients add up
        x, tx = x_np, torch.from_numpy(x_np)
    else:
        x_np = rng.standard_normal(row.shape) * row.scale
        x, tx = tensorlab.tensor(x_np, requires_grad=True), torch.tensor(x_np, requires_grad=True)
    y, ty = ours(x), theirs(tx)
    upstream = rng.standard_normal(y.shape)
    y.backward(upstream)
    ty.backward(torch.from_numpy(upstream))
    pairs = {"forward": (y.data, ty.detach().numpy())}
    if not row.ids:
        pairs["grad input"] = (x.grad, tx.grad.numpy())
    torch_params = dict(theirs.named_parameters())
    assert sorted(torch_params) == sorted(name for name, _ in ours.named_parameters()), row.name
    for name, p in ours.named_parameters():
        pairs[f"grad {name}"] = (p.grad, torch_params[name].grad.numpy())
    return pairs


@pytest.mark.parametrize("row", ROWS, ids=lambda row: row.name)
def test_layer_matches_torch_forward_and_every_gradient(row):
    for what, (ours, theirs) in run_both(row).items():
        assert ours is not None and np.shape(ours) == theirs.shape, f"{row.name}: {what} missing or misshaped"
        err = relative_error(ours, theirs)
        assert err <= TOLERANCE, f"{row.name}: {what} relative error {err:.1e} > {TOLERANCE}"


def test_the_table_covers_every_layer():
    layers = {name for name in nn.__all__ if name not in ("Parameter", "Module", "ModuleList", "TransformerConfig")}
    covered = {type(row.ours()).__name__ for row in ROWS}
    assert layers == covered, f"layers without a row: {sorted(layers - covered)}"


def test_settings_are_where_torch_puts_them():
    """The same positional meaning as torch.nn: LayerNorm(dim, eps, elementwise_affine, bias), Dropout() p=0.5."""
    assert nn.Dropout().p == torch.nn.Dropout().p == 0.5
    ours, theirs = nn.LayerNorm(8, 0.1, False), torch.nn.LayerNorm(8, 0.1, False)
    assert (ours.eps, ours.weight, ours.bias) == (theirs.eps, theirs.weight, theirs.bias) == (0.1, None, None)
    assert nn.LayerNorm(8, 1e-5, True, False).bias is None and nn.LayerNorm(8).bias is not None
    assert nn.RMSNorm(8, 0.1, False).weight is None and nn.RMSNorm(8, 0.1).eps == 0.1


# ----- dropout while training: its own mask in each framework, so checked against the definition -----
@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_in_training_zeroes_a_fraction_p_and_scales_the_rest(p):
    tensorlab.manual_seed(3)
    x = tensorlab.tensor(np.random.default_rng(0).uniform(1, 2, size=(200, 100)), requires_grad=True)
    layer = nn.Dropout(p)
    y = layer(x)
    kept = y.data != 0
    # 20,000 draws: the dropped fraction is within 4 standard deviations of p
    assert abs((1 - kept.mean()) - p) <= 4 * np.sqrt(p * (1 - p) / kept.size)
    np.testing.assert_allclose(y.data[kept], x.data[kept] / (1 - p), rtol=1e-15)
    upstream = np.random.default_rng(1).standard_normal(y.shape)
    y.backward(upstream)
    np.testing.assert_allclose(x.grad, upstream * kept / (1 - p), rtol=1e-15)
    layer.eval()
    assert layer(x) is x  # eval: the identity, as torch


def test_module_train_and_eval_reach_every_sub_module_like_torch():
    ours = nn.TransformerBlock(small(dropout=0.1))
    theirs = torch_twin.TorchBlock(small(dropout=0.1))
    for mode in (False, True):
        ours.train(mode)
        theirs.train(mode)
        assert [m.training for _, m in ours.named_modules()] == [mode] * len(list(ours.named_modules()))
        assert all(m.training == mode for m in theirs.modules())


def test_attention_constants_cache_is_bounded():
    """Generating token by token asks for masks and RoPE tables of every length: only the latest few stay."""
    for fused in (True, False):
        attention = nn.CausalSelfAttention(small(pos_encoding="rope"), fused=fused)
        for T in range(1, 40):
            attention(tensorlab.tensor(np.zeros((1, T, 16))))
        assert 0 < len(attention._constants) <= attention.MAX_CACHED
        lengths = {key[1] for key in attention._constants}
        assert 39 in lengths and 1 not in lengths  # the latest length kept, the oldest gone
