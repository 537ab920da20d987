"""Positional information for a transformer: sinusoidal tables and rotary embeddings (RoPE).

Shape letters: B batch, T time (positions), C channels, H heads, D = C / H per head.
"""

import numpy as np

from tensorlab import functional as F


def sinusoidal_table(length, dim):
    """(T, C) table, PE[t, 2i] = sin(t / 10000^(2i/C)), PE[t, 2i+1] = cos(t / 10000^(2i/C)) (Vaswani et al.)."""
    positions = np.arange(length)[:, None]  # (T, 1)
    rates = 1.0 / 10000 ** (np.arange(0, dim, 2) / dim)  # (ceil(C/2),)
    table = np.zeros((length, dim))
    table[:, 0::2] = np.sin(positions * rates)
    table[:, 1::2] = np.cos(positions * rates[: dim // 2])
    return table


def rope_tables(length, head_dim):
    """cos and sin tables (T, D) for rotary embeddings, each frequency repeated for both halves of D."""
    if head_dim % 2:
        raise ValueError(f"rope: the head dimension must be even to rotate pairs, got {head_dim}")
    rates = 1.0 / 10000 ** (np.arange(0, head_dim, 2) / head_dim)  # (D/2,)
    angles = np.arange(length)[:, None] * rates  # (T, D/2)
    angles = np.concatenate([angles, angles], axis=-1)  # (T, D)
    return np.cos(angles), np.sin(angles)


def apply_rope(x, cos, sin):
    """Rotate each pair (x[..., i], x[..., i + D/2]) by the angle of its position: x cos + rotate_half(x) sin.

    x is (B, H, T, D); cos and sin are (T, D) constants. rotate_half(x) = [-x2, x1] for x = [x1, x2].
    """
    x1, x2 = F.chunk(x, 2, axis=-1)  # 2 x (B, H, T, D/2)
    rotated = F.concatenate([-x2, x1], axis=-1)  # (B, H, T, D)
    return x * cos + rotated * sin
