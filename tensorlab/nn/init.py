"""Weight initialisation, as in GPT-2.

Every matrix (linear weights, embedding tables) starts as Normal(0, 0.02); biases
start at 0 and norm weights at 1. The output projections that write into the
residual stream (attention's `proj`, the feed-forward's `proj`) use a smaller std,
0.02 / sqrt(2 * n_layers): each block adds two such outputs to the residual, and
this keeps the residual's variance from growing with depth (GPT-2 paper, sec. 2.3).
"""

import numpy as np

from tensorlab import random
from tensorlab.nn.parameter import Parameter

GPT2_STD = 0.02


def normal(shape, std=GPT2_STD, dtype=np.float32):
    """A Parameter on the CPU drawn from Normal(0, std) with tensorlab's seeded generator."""
    return Parameter((random.generator("cpu").standard_normal(shape) * std).astype(dtype))


def constant(shape, value, dtype=np.float32):
    """A Parameter on the CPU filled with `value` (0 for biases, 1 for norm weights)."""
    return Parameter(np.full(shape, value, dtype=dtype))


def residual_std(n_layers):
    """The std of projections into the residual stream: 0.02 / sqrt(2 * n_layers)."""
    return GPT2_STD / np.sqrt(2 * n_layers)
