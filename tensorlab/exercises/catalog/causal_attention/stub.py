"""Exercise `causal_attention`: the gradient of causal scaled dot-product attention.

Shapes: q, k, v are (B, H, T, D): B batch, H heads, T positions, D channels per head.
Forward (written for you), for each batch and head:
    S = q k^T / sqrt(D)             (T, T) scores
    S[i, j] = -inf for j > i        position i may not look at the future
    P = softmax(S) along each row   (T, T) attention weights
    y = P v                         (T, D)

Your task: write `backward(gy)`. `gy` is dL/dy, shape (B, H, T, D). Return `gq, gk, gv`,
each of shape (B, H, T, D).

Hint: go backwards through the four lines, one at a time, reusing what you know:
  y = P v is a matrix product (the `matmul` exercise): it gives gv and gP.
  P = softmax(S) (the `softmax` exercise) gives gS from gP; masked entries have P = 0.
  S = q k^T / sqrt(D) is a matrix product again, with a constant factor: gq and gk.
With 4-D arrays `@` multiplies the last two axes; transpose with .swapaxes(-1, -2), not .T.

Check it:  python -m tensorlab.exercises check causal_attention THIS_FILE.py
"""
import numpy as np

from tensorlab.tensor import Function


class CausalAttention(Function):
    def forward(self, q, k, v):
        T, D = q.shape[-2:]
        self.scale = 1 / np.sqrt(D)
        s = q @ k.swapaxes(-1, -2) * self.scale                          # (B, H, T, T) scores
        s = np.where(np.tril(np.ones((T, T), dtype=bool)), s, -np.inf)   # j > i: masked
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        self.p = e / e.sum(axis=-1, keepdims=True)                       # (B, H, T, T) weights
        self.q, self.k, self.v = q, k, v
        return self.p @ v                                                # (B, H, T, D)

    def backward(self, gy):
        # TODO: gq = ..., gk = ..., gv = ...
        raise NotImplementedError("CausalAttention.backward: compute gq, gk and gv, then return gq, gk, gv")
