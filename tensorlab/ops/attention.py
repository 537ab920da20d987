"""Causal scaled dot-product attention in one op, with its backward derived by hand.

q, k, v are (B, H, T, D): B batch, H heads, T positions, D channels per head.
Forward, for each batch and head:
    S = q k^T / sqrt(D)                  (T, T) scores; S[i, j] = -inf for j > i (the future)
    P = softmax(S) along each row        (T, T) attention weights, row i sums to 1 over j <= i
    P' = P * M                           dropout on the weights (M = 1 when not training)
    y = P' v                             (T, D)
Backward, from gy = dL/dy:
    gv = P'^T gy                         (y = P' v is a matmul)
    gP = (gy v^T) * M
    gS = P * (gP - rowsum(gP * P))       (the softmax Jacobian; masked entries have P = 0, so gS = 0 there)
    gq = gS k / sqrt(D),  gk = gS^T q / sqrt(D)
Composed from primitives the same computation is matmul, mul, masked_fill, softmax,
dropout and matmul: six graph nodes and about twice the passes over the (T, T) scores.
tests/ prove that both agree with each other and with PyTorch.
"""

import math

import numpy as np

from tensorlab import backend, threads
from tensorlab.ops.dropout import dropout_mask
from tensorlab.ops.softmax import exp_and_max
from tensorlab.tensor import Function

_future_bias = {}  # (T, dtype, device) -> (T, T) array: 0 on and below the diagonal, -inf above


def causal_mask(T_q, T_k=None):
    """The causal mask, on the host: (T_q, T_k) bools, True where key j is in query i's future.

    The queries are the last T_q of the T_k positions (T_k > T_q after a key/value cache), so
    query i sits at position i + T_k - T_q and sees keys 0..i + T_k - T_q. The one builder of the
    mask in the engine: causal_bias and tensorlab/nn/attention.py use it.
    """
    T_k = T_q if T_k is None else T_k
    return np.triu(np.ones((T_q, T_k), dtype=bool), k=T_k - T_q + 1)


def causal_bias(T, dtype, device):
    """The additive causal mask (0 where a key may be seen, -inf in the future), built once per length, dtype
    and device."""
    key = (T, np.dtype(dtype).str, device)
    if key not in _future_bias:
        bias = np.where(causal_mask(T), -np.inf, 0).astype(dtype)
        _future_bias[key] = backend.to_device(bias, device)
    return _future_bias[key]


class CausalAttention(Function):
    """softmax(q k^T / sqrt(D) + causal mask) v; after forward, `.weights` holds P (B, H, T, T)."""

    name = "causal_attention"

    def __init__(self, dropout_p=0.0, training=False):
        if not 0 <= dropout_p < 1:
            raise ValueError(f"causal_attention: dropout_p must be in [0, 1), got {dropout_p}")
        self.dropout_p = dropout_p if training else 0.0

    def forward(self, q, k, v):
        if q.ndim != 4 or q.shape != k.shape or q.shape != v.shape:
            raise ValueError(
                f"causal_attention: q, k, v must share one shape (B, H, T, D); got {q.shape}, {k.shape}, {v.shape}"
            )
        xp = backend.array_module(q)
        B, H, T, D = q.shape
        self.scale = q.dtype.type(1 / math.sqrt(D))
        self.q_scaled, self.k, self.v = q * self.scale, k, v  # scaling q is cheaper than scaling (T, T)
        bias = causal_bias(T, q.dtype, backend.device_of(q))
        self.weights = xp.empty((B, H, T, T), dtype=q.dtype)  # P
        self.mask = (
            None
            if not self.dropout_p
            else dropout_mask(self.weights.shape, self.dropout_p, q.dtype, backend.device_of(q))
        )
        y = xp.empty_like(q)

        def forward_block(b):
            s = xp.matmul(self.q_scaled[b], k[b].swapaxes(-1, -2), out=self.weights[b])  # q k^T / sqrt(D)
            s += bias
            exp_and_max(s, axis=-1, out=s)  # exp(S - rowmax), in place
            s *= 1 / s.sum(axis=-1, keepdims=True)  # P: rows sum to 1
            xp.matmul(s if self.mask is None else s * self.mask[b], v[b], out=y[b])  # (P * M) v

        # A few batch elements at a time, so each (H, T, T) block stays in cache across the passes.
        threads.for_each_block(forward_block, backend.cache_blocks(B, 3 * H * T * T * q.itemsize, q))
        return y  # (B, H, T, D)

    def backward(self, gy):
        # y = (P * M) v, P = softmax(q k^T / sqrt(D) + mask)
        #   =>  gv = (P M)^T gy,  gS = P * (gP - rowsum(gP P)) with gP = (gy v^T) M,
        #       gq = gS k / sqrt(D),  gk = gS^T q / sqrt(D)
        xp = backend.array_module(gy)
        B, H, T, _ = gy.shape
        gq, gk, gv = xp.empty_like(gy), xp.empty_like(gy), xp.empty_like(gy)

        def backward_block(b):
            p = self.weights[b]
            dropped = p if self.mask is None else p * self.mask[b]
            xp.matmul(dropped.swapaxes(-1, -2), gy[b], out=gv[b])
            gs = gy[b] @ self.v[b].swapaxes(-1, -2)  # gP, (b, H, T, T)
            if self.mask is not None:
                gs *= self.mask[b]
            gs -= (gs * p).sum(axis=-1, keepdims=True)
            gs *= p  # gS
            xp.matmul(gs, self.k[b], out=gq[b])
            xp.matmul(gs.swapaxes(-1, -2), self.q_scaled[b], out=gk[b])

        threads.for_each_block(backward_block, backend.cache_blocks(B, 3 * H * T * T * gy.itemsize, gy))
        gq *= self.scale
        return gq, gk, gv
