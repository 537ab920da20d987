"""Causal multi-head self-attention, written out step by step.

Shape letters: B batch, T time, C = d_model channels, H heads, D = C / H per head.
Each position t looks at positions 0..t only (the causal mask), through H heads
that each attend in their own D-dimensional subspace:
    att = softmax(q k^T / sqrt(D) with future positions set to -inf),  y = att v
The module runs that as one fused op (tensorlab/ops/attention.py); with fused=False it
runs the same steps as separate primitive ops (`composed_attention` below), which is
slower but lets you watch every step in the graph.
"""
import numpy as np

from tensorlab import backend
from tensorlab import functional as F
from tensorlab.nn import init
from tensorlab.nn.layers import Dropout, Linear
from tensorlab.nn.module import Module
from tensorlab.nn.positional import apply_rope, rope_tables
from tensorlab.ops.attention import CausalAttention
from tensorlab.tensor import Tensor


def composed_attention(q, k, v, future, dropout):
    """The attention of CausalAttention from primitive ops; returns y (B, H, T, D) and att (B, H, T, T)."""
    scores = (q @ k.swapaxes(-1, -2)) * (1.0 / np.sqrt(q.shape[-1]))  # (B, H, T, T)
    scores = F.masked_fill(scores, future, -np.inf)
    att = F.softmax(scores, axis=-1)                                # (B, H, T, T), rows sum to 1
    return dropout(att) @ v, att                                    # (B, H, T, D)


class CausalSelfAttention(Module):
    """Fused q/k/v projection, H heads of scaled dot-product attention under a causal mask, output projection.

    `bias` switches the biases of the q/k/v projection; `proj_bias` those of the output projection
    (None: the same as `bias`).
    """

    MAX_CACHED = 8  # masks and RoPE tables kept; one forward needs at most 3

    def __init__(self, d_model, n_heads, dropout=0.0, bias=True, rope=False, n_layers=1, dtype=np.float32,
                 fused=True, proj_bias=None):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"attention: d_model={d_model} must be divisible by n_heads={n_heads}")
        self.n_heads, self.rope, self.fused = n_heads, rope, fused
        self.qkv = Linear(d_model, 3 * d_model, bias, dtype=dtype)
        self.proj = Linear(d_model, d_model, bias if proj_bias is None else proj_bias, std=init.residual_std(n_layers), dtype=dtype)
        self.attn_dropout = Dropout(dropout)
        self.resid_dropout = Dropout(dropout)
        self._constants = {}  # (name, T, device, dtype) -> Tensor: masks and RoPE tables, the latest few kept

    def forward(self, x, return_attention=False):
        B, T, C = x.shape
        H, D = self.n_heads, C // self.n_heads
        q, k, v = F.chunk(self.qkv(x), 3, axis=-1)                      # 3 x (B, T, C)
        q.name, k.name, v.name = "q", "k", "v"                          # labels in tensorlab.graph
        q, k, v = (t.reshape(B, T, H, D).transpose(0, 2, 1, 3) for t in (q, k, v))  # (B, H, T, D)
        if self.rope:
            cos, sin = self._constant("cos", T, x), self._constant("sin", T, x)
            rotate = F.rope if self.fused else apply_rope
            q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        if self.fused:
            op = CausalAttention(self.attn_dropout.p, self.training)
            y = op(q, k, v)                                             # (B, H, T, D)
            att = Tensor(op.weights)                                    # (B, H, T, T), for looking at only
        else:
            y, att = composed_attention(q, k, v, self._constant("future", T, x), self.attn_dropout)
        y = y.transpose(0, 2, 1, 3).reshape(B, T, C)                    # heads side by side again
        y = self.resid_dropout(self.proj(y))                            # (B, T, C)
        return (y, att) if return_attention else y

    def _constant(self, name, T, like):
        """The causal mask ('future': True above the diagonal) or a RoPE table, cached per length and device.

        The cache keeps the MAX_CACHED most recently used entries: generation grows T one step at a
        time, and a long-running process must not keep a table for every length it ever saw.
        """
        key = (name, T, like.device, like.dtype)
        if key in self._constants:
            self._constants[key] = self._constants.pop(key)             # most recently used goes last
        else:
            while len(self._constants) >= self.MAX_CACHED:
                del self._constants[next(iter(self._constants))]        # drop the least recently used
            if name == "future":
                array = np.triu(np.ones((T, T), dtype=bool), k=1)       # (T, T): True where key is after query
            else:
                cos, sin = rope_tables(T, like.shape[-1] // self.n_heads)
                array = (cos if name == "cos" else sin).astype(like.dtype)
            self._constants[key] = Tensor(backend.to_device(array, like.device))
        return self._constants[key]

    def extra_repr(self):
        return f"n_heads={self.n_heads}, rope={self.rope}, fused={self.fused}"
