"""The SwiGLU feed-forward block (Shazeer 2020, "GLU Variants Improve Transformer"; used by PaLM and LLaMA).

A gated variant of FeedForward: one linear map makes a gate, another the values, and SiLU of the gate
scales the values before the projection back, at every position:
    y = proj(silu(gate(x)) * up(x)),   C -> d_ff (twice) -> C
With three matrices instead of two, d_ff = 2/3 of FeedForward's keeps the parameter count.
"""

from tensorlab import functional as F
from tensorlab.nn import init
from tensorlab.nn.config import expect_config
from tensorlab.nn.layers import Dropout, Linear
from tensorlab.nn.module import Module


class SwiGLUFeedForward(Module):
    """proj(silu(gate(x)) * up(x)), then dropout; from `config` as FeedForward (all but the activation)."""

    def __init__(self, config):
        super().__init__()
        c = expect_config(config, "SwiGLUFeedForward")
        self.gate = Linear(c.d_model, c.d_ff, c.ffn_bias, dtype=c.dtype)
        self.up = Linear(c.d_model, c.d_ff, c.ffn_bias, dtype=c.dtype)
        self.proj = Linear(c.d_ff, c.d_model, c.ffn_bias, std=init.residual_std(c.n_layers), dtype=c.dtype)
        self.dropout = Dropout(c.dropout)

    def forward(self, x):
        h = F.silu(self.gate(x)) * self.up(x)  # (B, T, d_ff)
        return self.dropout(self.proj(h))  # (B, T, C)
