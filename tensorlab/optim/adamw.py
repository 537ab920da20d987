"""AdamW: Adam with decoupled weight decay (Loshchilov & Hutter, 2019), exactly as torch.optim.AdamW.

At step t (counting from 1), with gradient g:

    p = p - lr * weight_decay * p             decay the weight itself, not through the gradient
    m = b1 * m + (1 - b1) * g                 running mean of the gradient
    v = b2 * v + (1 - b2) * g^2               running mean of its square
    p = p - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)

m and v start at zero, so early on they are biased toward zero; dividing by
(1 - b^t) removes that bias. Plain Adam with L2 would add weight_decay * p to g,
where v rescales it; the decoupled form shrinks every weight at the same rate lr * wd.
"""

from tensorlab import backend
from tensorlab.optim.optimizer import Optimizer


class AdamW(Optimizer):
    """Adam with bias correction and decoupled weight decay (p -= lr * wd * p, then the Adam step)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        if lr < 0 or eps < 0 or weight_decay < 0:
            raise ValueError(f"AdamW: lr, eps and weight_decay must be >= 0, got {lr}, {eps}, {weight_decay}")
        if not (0 <= betas[0] < 1 and 0 <= betas[1] < 1):
            raise ValueError(f"AdamW: betas must lie in [0, 1), got {betas}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay))

    def update(self, p, grad, group, state):
        # float(): a NumPy float64 hyperparameter would upcast float32 arithmetic to float64
        lr, eps, weight_decay = float(group["lr"]), float(group["eps"]), float(group["weight_decay"])
        b1, b2 = (float(b) for b in group["betas"])
        xp = backend.array_module(p.data)
        if not state:
            state["step"] = 0
            state["exp_avg"] = xp.zeros(p.shape, p.dtype)  # m
            state["exp_avg_sq"] = xp.zeros(p.shape, p.dtype)  # v
        state["step"] += 1
        t, m, v = state["step"], state["exp_avg"], state["exp_avg_sq"]

        p.data *= 1 - lr * weight_decay  # p = p - lr wd p
        m *= b1
        m += (1 - b1) * grad  # m = b1 m + (1 - b1) g
        v *= b2
        v += (1 - b2) * grad * grad  # v = b2 v + (1 - b2) g^2
        # Python floats, so float32 arrays stay float32 (a NumPy float64 scalar would upcast them)
        bias_correction1 = 1 - b1**t
        bias_correction2 = 1 - b2**t
        denom = xp.sqrt(v) / bias_correction2**0.5 + eps  # sqrt(v_hat) + eps,  v_hat = v / (1 - b2^t)
        p.data -= (lr / bias_correction1) * m / denom  # p = p - lr m_hat / (sqrt(v_hat) + eps),  m_hat = m / (1 - b1^t)
