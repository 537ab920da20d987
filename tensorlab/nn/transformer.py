"""The feed-forward network and the pre-norm transformer block.

A block reads the residual stream x (B, T, C), normalises it, lets attention and
then the feed-forward network each add their contribution back:
    x = x + attention(norm1(x)),   x = x + ffn(norm2(x))
"""
import numpy as np

from tensorlab import functional as F
from tensorlab.nn import init
from tensorlab.nn.attention import CausalSelfAttention
from tensorlab.nn.layers import Dropout, Linear, RMSNorm
from tensorlab.nn.module import Module

ACTIVATIONS = {"gelu": F.gelu, "relu": F.relu}


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
        h = ACTIVATIONS[self.activation](self.fc(x))                    # (B, T, d_ff)
        return self.dropout(self.proj(h))                               # (B, T, C)


class TransformerBlock(Module):
    """Pre-norm block: RMSNorm -> attention -> residual add, RMSNorm -> feed-forward -> residual add."""

    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, activation="gelu", bias=True, rope=False,
                 norm_eps=1e-5, n_layers=1, dtype=np.float32):
        super().__init__()
        self.norm1 = RMSNorm(d_model, norm_eps, dtype=dtype)
        self.attn = CausalSelfAttention(d_model, n_heads, dropout, bias, rope, n_layers, dtype)
        self.norm2 = RMSNorm(d_model, norm_eps, dtype=dtype)
        self.ffn = FeedForward(d_model, d_ff, activation, dropout, bias, n_layers, dtype)

    def forward(self, x, return_attention=False, kv_cache=None):
        a, att = self.attn(self.norm1(x), return_attention=True, kv_cache=kv_cache)
        x = x + a                                                       # (B, T, C)
        x = x + self.ffn(self.norm2(x))                                 # (B, T, C)
        return (x, att) if return_attention else x
