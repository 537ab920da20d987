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

causal_attention_forward and causal_attention_backward below are these formulas in plain NumPy.
On the CPU the op runs them from tensorlab/kernels/attention.py: a few batch elements at a time,
in cache, on every core, in place; tests/test_kernels.py checks them against the ones here.
"""

import math

import numpy as np

from tensorlab import backend, kernels
from tensorlab.kernels import attention as fast
from tensorlab.ops.dropout import dropout_mask
from tensorlab.ops.dtypes import check_floating, check_same_dtype
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


def causal_attention_forward(q, k, v, bias, mask=None):
    """y = (P M) v with P = softmax(q k^T / sqrt(D) + bias) row by row; returns y and P for the backward.

    bias is the additive causal mask (T, T) of causal_bias; mask M is dropout's, or None (M = 1).
    """
    scale = 1 / math.sqrt(q.shape[-1] or 1)  # D = 0: y is empty, whatever the scale
    S = (q * scale) @ k.swapaxes(-1, -2) + bias  # (B, H, T, T); scaling q costs less than scaling S
    e, _ = exp_and_max(S, axis=-1)
    P = e / e.sum(axis=-1, keepdims=True)
    y = (P if mask is None else P * mask) @ v
    return y, P


def causal_attention_backward(gy, q, k, v, P, mask=None):
    # y = (P * M) v, P = softmax(S), S = q k^T / sqrt(D) + bias
    #   =>  gv = (P M)^T gy,  gP = (gy v^T) M,  gS = P * (gP - rowsum(gP P)),
    #       gq = gS k / sqrt(D),  gk = gS^T q / sqrt(D)
    scale = 1 / math.sqrt(gy.shape[-1] or 1)
    gv = (P if mask is None else P * mask).swapaxes(-1, -2) @ gy
    gP = gy @ v.swapaxes(-1, -2)
    if mask is not None:
        gP = gP * mask
    gS = P * (gP - (gP * P).sum(axis=-1, keepdims=True))
    return gS @ k * scale, gS.swapaxes(-1, -2) @ q * scale, gv


class CausalAttention(Function):
    """softmax(q k^T / sqrt(D) + causal mask) v; after forward, `.weights` holds P (B, H, T, T).

    causal_attention_forward and causal_attention_backward; on the CPU their kernels
    (tensorlab/kernels/attention.py).
    """

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
        check_same_dtype("causal_attention", q, k, v)
        check_floating("causal_attention", q)  # as PyTorch's scaled_dot_product_attention
        B, H, T, _ = q.shape
        device = backend.device_of(q)
        self.mask = None if not self.dropout_p else dropout_mask((B, H, T, T), self.dropout_p, q.dtype, device)
        forward = kernels.choose(fast.causal_attention_forward, causal_attention_forward, q)
        y, self.weights = forward(q, k, v, causal_bias(T, q.dtype, device), self.mask)
        self.q, self.k, self.v = q, k, v
        return y  # (B, H, T, D)

    def backward(self, gy):
        backward = kernels.choose(fast.causal_attention_backward, causal_attention_backward, gy)
        return backward(gy, self.q, self.k, self.v, self.weights, self.mask)
