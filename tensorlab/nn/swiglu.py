"""The SwiGLU feed-forward block (Shazeer 2020, "GLU Variants Improve Transformer"; used by PaLM and LLaMA).

A gated variant of FeedForward: one linear map makes a gate, another the values, and SiLU of the gate
scales the values before the projection back, at every position:
    y = proj(silu(gate(x)) * up(x)),   C -> d_ff (twice) -> C
With three matrices instead of two, d_ff = 2/3 of FeedForward's keeps the parameter count.
"""

import numpy as np

from tensorlab import functional as F
from tensorlab.nn import init
from tensorlab.nn.layers import Dropout, Linear
from tensorlab.nn.module import Module


class SwiGLUFeedForward(Module):
    """proj(silu(gate(x)) * up(x)), then dropout; the arguments are FeedForward's, less the activation."""

    def __init__(self, d_model, d_ff, dropout=0.0, bias=True, n_layers=1, dtype=np.float32):
        super().__init__()
        self.gate = Linear(d_model, d_ff, bias, dtype=dtype)
        self.up = Linear(d_model, d_ff, bias, dtype=dtype)
        self.proj = Linear(d_ff, d_model, bias, std=init.residual_std(n_layers), dtype=dtype)
        self.dropout = Dropout(dropout)

    def forward(self, x):
        h = F.silu(self.gate(x)) * self.up(x)  # (B, T, d_ff)
        return self.dropout(self.proj(h))  # (B, T, C)
