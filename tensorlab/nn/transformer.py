"""The feed-forward network and the transformer block, pre-norm or post-norm.

A block reads the residual stream x (B, T, C) and lets attention and then the
feed-forward network each add their contribution back. Where the normalisation sits:
    pre-norm  (GPT-2):        x = x + attention(norm1(x)),   x = x + ffn(norm2(x))
    post-norm (Vaswani 2017): x = norm1(x + attention(x)),   x = norm2(x + ffn(x))
The normalisation is RMSNorm, LayerNorm, or none at all (the identity); the feed-forward network is
FeedForward (GELU or ReLU) or, with activation="swiglu", the gated SwiGLUFeedForward.
"""

import numpy as np

from tensorlab import functional as F
from tensorlab.nn import init
from tensorlab.nn.attention import CausalSelfAttention
from tensorlab.nn.layers import Dropout, LayerNorm, Linear, RMSNorm
from tensorlab.nn.module import Module
from tensorlab.nn.swiglu import SwiGLUFeedForward

ACTIVATIONS = {"gelu": F.gelu, "relu": F.relu}
NORMS = ("rmsnorm", "layernorm", "none")
NORM_POSITIONS = ("pre", "post")


class Identity(Module):
    """Returns its input: the 'norm' of a model without normalisation."""

    def forward(self, x):
        return x


def make_norm(kind, dim, eps=1e-5, dtype=np.float32):
    """RMSNorm, LayerNorm or Identity, by name ("rmsnorm", "layernorm", "none")."""
    if kind not in NORMS:
        raise ValueError(f"norm must be one of {', '.join(NORMS)}, got {kind!r}")
    if kind == "none":
        return Identity()
    return (RMSNorm if kind == "rmsnorm" else LayerNorm)(dim, eps, dtype=dtype)


class FeedForward(Module):
    """Two linear maps with a nonlinearity between: C -> d_ff -> C, applied at every position."""

    def __init__(self, d_model, d_ff, activation="gelu", dropout=0.0, bias=True, n_layers=1, dtype=np.float32):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"feed-forward: activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
        self.activation = activation
        self.fc = Linear(d_model, d_ff, bias, dtype=dtype)
        self.proj = Linear(d_ff, d_model, bias, std=init.residual_std(n_layers), dtype=dtype)
        self.dropout = Dropout(dropout)

    def forward(self, x):
        h = ACTIVATIONS[self.activation](self.fc(x))  # (B, T, d_ff)
        return self.dropout(self.proj(h))  # (B, T, C)


class TransformerBlock(Module):
    """Attention then feed-forward, each with a residual add; the norms before (pre) or after (post) the add.

    Biases: `bias` for the q/k/v projection, `proj_bias` for attention's output projection and
    `ffn_bias` for both feed-forward layers (None: the same as `bias`).
    """

    def __init__(
        self,
        d_model,
        n_heads,
        d_ff,
        dropout=0.0,
        activation="gelu",
        bias=True,
        rope=False,
        norm_eps=1e-5,
        n_layers=1,
        dtype=np.float32,
        norm="rmsnorm",
        norm_position="pre",
        proj_bias=None,
        ffn_bias=None,
    ):
        super().__init__()
        if norm_position not in NORM_POSITIONS:
            raise ValueError(f"transformer block: norm_position must be 'pre' or 'post', got {norm_position!r}")
        self.norm_position = norm_position
        self.norm1 = make_norm(norm, d_model, norm_eps, dtype)
        self.attn = CausalSelfAttention(d_model, n_heads, dropout, bias, rope, n_layers, dtype, proj_bias=proj_bias)
        self.norm2 = make_norm(norm, d_model, norm_eps, dtype)
        ffn_bias = bias if ffn_bias is None else ffn_bias
        if activation == "swiglu":  # gated: proj(silu(gate(x)) * up(x))
            self.ffn = SwiGLUFeedForward(d_model, d_ff, dropout, ffn_bias, n_layers, dtype)
        else:
            self.ffn = FeedForward(d_model, d_ff, activation, dropout, ffn_bias, n_layers, dtype)

    def forward(self, x, return_attention=False, kv_cache=None):
        if self.norm_position == "pre":
            a, att = self.attn(self.norm1(x), return_attention=True, kv_cache=kv_cache)
            x = x + a  # (B, T, C)
            x = x + self.ffn(self.norm2(x))  # (B, T, C)
        else:
            a, att = self.attn(x, return_attention=True, kv_cache=kv_cache)
            x = self.norm1(x + a)  # (B, T, C)
            x = self.norm2(x + self.ffn(x))  # (B, T, C)
        return (x, att) if return_attention else x

    def extra_repr(self):
        return f"norm_position={self.norm_position}"
