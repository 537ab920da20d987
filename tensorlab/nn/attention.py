"""Causal multi-head self-attention, written out step by step.

Shape letters: B batch, T time, C = d_model channels, H heads, D = C / H per head.
Each position t looks at positions 0..t only (the causal mask), through H heads
that each attend in their own D-dimensional subspace:
    att = softmax(q k^T / sqrt(D) with future positions set to -inf),  y = att v
The module runs that as one fused op (tensorlab/ops/attention.py); with fused=False it
runs the same steps as separate primitive ops (`composed_attention` below), which is
slower but lets you watch every step in the graph.

For generation, forward(x, kv_cache=KVCache()) keeps the keys and values of the
positions seen so far, so the next call feeds only the new positions: their queries
attend to the cached keys plus their own (inference only: no graph runs through the cache).
"""

import numpy as np

from tensorlab import backend
from tensorlab import functional as F
from tensorlab.nn import init
from tensorlab.nn.config import expect_config
from tensorlab.nn.layers import Dropout, Linear
from tensorlab.nn.module import Module
from tensorlab.nn.positional import apply_rope, rope_tables
from tensorlab.ops.attention import CausalAttention, causal_mask
from tensorlab.tensor import Tensor, is_grad_enabled


def composed_attention(q, k, v, future, dropout):
    """The attention of CausalAttention from primitive ops; returns y (B, H, T, D) and att (B, H, T, T)."""
    scores = (q @ k.swapaxes(-1, -2)) * (1.0 / np.sqrt(q.shape[-1]))  # (B, H, T, T)
    scores = F.masked_fill(scores, future, -np.inf)
    att = F.softmax(scores, axis=-1)  # (B, H, T, T), rows sum to 1
    return dropout(att) @ v, att  # (B, H, T, D)


class KVCache:
    """One layer's keys and values (B, H, T_seen, D) of the positions fed so far."""

    def __init__(self):
        self.k = self.v = None

    @property
    def length(self):
        return 0 if self.k is None else self.k.shape[2]

    def extend(self, k, v):
        """Append the new positions' k, v (B, H, T_new, D); return all keys and values so far."""
        if self.k is None:
            self.k, self.v = k, v
        else:
            self.k, self.v = F.concatenate([self.k, k], axis=2), F.concatenate([self.v, v], axis=2)
        return self.k, self.v


class CausalSelfAttention(Module):
    """Fused q/k/v projection, H heads of scaled dot-product attention under a causal mask, output projection.

    Sizes and switches come from `config` (tensorlab/nn/config.py): d_model, n_heads, dropout, qkv_bias,
    proj_bias, pos_encoding ("rope" rotates q and k), n_layers (the output projection's initial std)
    and dtype. fused=False runs `composed_attention` instead of the fused op: the same numbers, every step
    in the graph.
    """

    MAX_CACHED = 8  # masks and RoPE tables kept; one forward needs at most 3

    def __init__(self, config, *, fused=True):
        super().__init__()
        c = expect_config(config, "CausalSelfAttention")
        self.n_heads, self.rope, self.fused = c.n_heads, c.pos_encoding == "rope", fused
        self.qkv = Linear(c.d_model, 3 * c.d_model, c.qkv_bias, dtype=c.dtype)
        self.proj = Linear(c.d_model, c.d_model, c.proj_bias, std=init.residual_std(c.n_layers), dtype=c.dtype)
        self.attn_dropout = Dropout(c.dropout)
        self.resid_dropout = Dropout(c.dropout)
        self._constants = {}  # (name, T, device, dtype) -> Tensor: masks and RoPE tables, the latest few kept

    def forward(self, x, return_attention=False, kv_cache=None):
        B, T, C = x.shape
        H, D = self.n_heads, C // self.n_heads
        q, k, v = F.chunk(self.qkv(x), 3, axis=-1)  # 3 x (B, T, C)
        q.name, k.name, v.name = "q", "k", "v"  # labels in tensorlab.graph
        q, k, v = (t.reshape(B, T, H, D).transpose(0, 2, 1, 3) for t in (q, k, v))  # (B, H, T, D)
        if kv_cache is not None:
            y, att = self._attend_after_cache(q, k, v, kv_cache, x)
        else:
            y, att = self._attend(q, k, v, x)
        y = y.transpose(0, 2, 1, 3).reshape(B, T, C)  # heads side by side again
        y = self.resid_dropout(self.proj(y))  # (B, T, C)
        return (y, att) if return_attention else y

    def _attend(self, q, k, v, x):
        T = q.shape[2]
        if self.rope:
            cos, sin = self._constant("cos", T, x), self._constant("sin", T, x)
            rotate = F.rope if self.fused else apply_rope
            q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        if self.fused:
            op = CausalAttention(self.attn_dropout.p, self.training)
            y = op(q, k, v)  # (B, H, T, D)
            att = Tensor(op.weights)  # (B, H, T, T), for looking at only
        else:
            y, att = composed_attention(q, k, v, self._constant("future", T, x), self.attn_dropout)
        return y, att

    def _attend_after_cache(self, q, k, v, kv_cache, x):
        """New positions start..start+T-1 attend to every cached position and to themselves, causally."""
        if is_grad_enabled():
            raise RuntimeError("attention: the key/value cache is for inference; run it under no_grad()")
        start, T = kv_cache.length, q.shape[2]
        if self.rope:  # rotate by the absolute positions start..start+T-1
            cos, sin = (Tensor(self._constant(name, start + T, x).data[start:]) for name in ("cos", "sin"))
            q, k = F.rope(q, cos, sin), F.rope(k, cos, sin)
        k, v = kv_cache.extend(k, v)  # (B, H, start + T, D)
        # query i sits at position start + i and may see keys 0..start + i
        future = Tensor(backend.to_device(causal_mask(T, start + T), x.device))  # (T, start + T)
        return composed_attention(q, k, v, future, self.attn_dropout)

    def _constant(self, name, T, like):
        """The causal mask ('future': True above the diagonal) or a RoPE table, cached per length and device.

        The cache keeps the MAX_CACHED most recently used entries: generation grows T one step at a
        time, and a long-running process must not keep a table for every length it ever saw.
        """
        key = (name, T, like.device, like.dtype)
        if key in self._constants:
            self._constants[key] = self._constants.pop(key)  # most recently used goes last
        else:
            while len(self._constants) >= self.MAX_CACHED:
                del self._constants[next(iter(self._constants))]  # drop the least recently used
            if name == "future":
                array = causal_mask(T)  # (T, T): True where key is after query
            else:
                cos, sin = rope_tables(T, like.shape[-1] // self.n_heads)
                array = (cos if name == "cos" else sin).astype(like.dtype)
            table = Tensor(backend.to_device(array, like.device))
            table.name = {"future": "causal mask", "cos": "RoPE cos", "sin": "RoPE sin"}[name]  # tensorlab.graph
            table.constant = True  # labels: a constant the module made, not an input
            self._constants[key] = table
        return self._constants[key]

    def extra_repr(self):
        return f"n_heads={self.n_heads}, rope={self.rope}, fused={self.fused}"
