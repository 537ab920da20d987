"""Gradient clipping by the global L2 norm, as torch.nn.utils.clip_grad_norm_."""
import math

from tensorlab.tensor import Tensor


def clip_grad_norm_(parameters, max_norm):
    """Scale all grads in place by max_norm / (total + 1e-6) when that is < 1; return total = ||all grads||_2.

    The norm is taken over every gradient at once, as if they were one long vector,
    so clipping shrinks the whole update without changing its direction. The 1e-6
    guards the division when all gradients are zero. Parameters without a gradient
    are skipped. The total is measured before clipping and returned as a Python float.
    """
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    # total^2 = sum over grads of sum(g^2)
    total = math.sqrt(sum(float((g * g).sum()) for g in grads))
    scale = float(max_norm) / (total + 1e-6)
    if scale < 1:
        for g in grads:
            g *= scale                                  # g = g * max_norm / (total + 1e-6)
    return total


clip_grad_norm = clip_grad_norm_  # the same function under the name without the in-place underscore
