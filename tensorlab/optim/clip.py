"""Gradient clipping by the global L2 norm, as torch.nn.utils.clip_grad_norm_."""

import numpy as np

from tensorlab import backend
from tensorlab.tensor import Tensor


def global_norm(arrays):
    """The L2 norm of all `arrays` at once, as if they were one long vector.

    Each square is taken and summed in float64, where the arrays are, so a float32 gradient of 1e30 has the
    norm 1e30 (its square would overflow float32): the result is a 0-d float64 array (on a GPU, float() of it
    is the one transfer to the host).
    clip_grad_norm_ and models/layer_stats.py use it.
    """
    if not arrays:
        raise ValueError("global_norm: needs at least one array, got none")
    xp = backend.array_module(arrays[0])
    # total^2 = sum over arrays of sum(a^2): one 0-d sum per array, then one sum of those
    return xp.sqrt(xp.stack([xp.square(a, dtype=xp.float64).sum() for a in arrays]).sum())


def clip_grad_norm_(parameters, max_norm):
    """Scale all grads in place by max_norm / (total + 1e-6) when that is < 1; return total = ||all grads||_2.

    The norm is taken over every gradient at once, as if they were one long vector,
    so clipping shrinks the whole update without changing its direction. The 1e-6
    guards the division when all gradients are zero. Parameters without a gradient
    are skipped. The total is measured before clipping and returned as a Python float.
    Everything is computed where the gradients are: on a GPU the one transfer to the
    host is that returned float, taken after the scaling has been queued.
    """
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return 0.0
    xp = backend.array_module(grads[0])
    with np.errstate(over="ignore"):  # in the grads' dtype, as PyTorch's: inf beyond its range
        total = global_norm(grads).astype(xp.result_type(*(g.dtype for g in grads)))
    scale = xp.minimum(max_norm / (total + 1e-6), 1.0)  # 1 when no clipping is needed: g * 1 == g exactly
    for g in grads:
        g *= scale.astype(g.dtype)  # g = g * max_norm / (total + 1e-6)
    return float(total)


clip_grad_norm = clip_grad_norm_  # the same function under the name without the in-place underscore
