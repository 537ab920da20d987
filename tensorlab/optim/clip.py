"""Gradient clipping by the global L2 norm, as torch.nn.utils.clip_grad_norm_."""
from tensorlab import backend
from tensorlab.tensor import Tensor


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
    # total^2 = sum over grads of sum(g^2), in float64 (on the device: one 0-d array per grad, then one sum)
    total = xp.sqrt(xp.stack([(g * g).sum(dtype=xp.float64) for g in grads]).sum())
    scale = xp.minimum(max_norm / (total + 1e-6), 1.0)   # 1 when no clipping is needed: g * 1 == g exactly
    for g in grads:
        g *= scale.astype(g.dtype)                       # g = g * max_norm / (total + 1e-6)
    return float(total)


clip_grad_norm = clip_grad_norm_  # the same function under the name without the in-place underscore
