"""Reference solution for exercise `adamw`: one AdamW step, as torch.optim.AdamW."""
import numpy as np


def adamw_step(param, grad, m, v, step, lr, betas, eps, weight_decay):
    """One AdamW update of `param` with gradient `grad`; returns (param, m, v)."""
    b1, b2 = betas
    param = param - lr * weight_decay * param                # decay the weight, not through the gradient
    m = b1 * m + (1 - b1) * grad                             # m = b1 m + (1 - b1) g
    v = b2 * v + (1 - b2) * grad * grad                      # v = b2 v + (1 - b2) g^2
    m_hat = m / (1 - b1 ** step)                             # bias corrections: m, v started at 0
    v_hat = v / (1 - b2 ** step)
    param = param - lr * m_hat / (np.sqrt(v_hat) + eps)      # p = p - lr m_hat / (sqrt(v_hat) + eps)
    return param, m, v
