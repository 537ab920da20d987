"""Reference solution for exercise `causal_attention`: y = softmax(q k^T / sqrt(D) + causal mask) v."""
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
        # y = P v, P = softmax(S), S = q k^T / sqrt(D)
        #   =>  gv = P^T gy,  gP = gy v^T,  gS = P * (gP - rowsum(gP * P)),  gq = gS k / sqrt(D),  gk = gS^T q / sqrt(D)
        p = self.p
        gv = p.swapaxes(-1, -2) @ gy                                     # (B, H, T, D)
        gp = gy @ self.v.swapaxes(-1, -2)                                # (B, H, T, T)
        gs = p * (gp - (gp * p).sum(axis=-1, keepdims=True))             # 0 where masked: P = 0 there
        gq = gs @ self.k * self.scale                                    # (B, H, T, D)
        gk = gs.swapaxes(-1, -2) @ self.q * self.scale                   # (B, H, T, D)
        return gq, gk, gv
