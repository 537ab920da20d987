"""Exercise `adamw`: one step of the AdamW optimizer, in NumPy.

AdamW (Loshchilov & Hutter, 2019), as torch.optim.AdamW does it. At step t (counting from
1), for a parameter p with gradient g, running means m and v (both zero before step 1),
learning rate lr, betas (b1, b2), eps and weight_decay wd:

    p = p - lr * wd * p                      decoupled weight decay: shrink the weight itself
    m = b1 * m + (1 - b1) * g                running mean of the gradient
    v = b2 * v + (1 - b2) * g^2              running mean of its square (elementwise)
    m_hat = m / (1 - b1^t)                   bias correction: m and v start at 0, so early
    v_hat = v / (1 - b2^t)                   on they are too small; this undoes that
    p = p - lr * m_hat / (sqrt(v_hat) + eps)

Your task: write `adamw_step`. It gets NumPy arrays param, grad, m, v (all the same shape),
the step number t as `step`, and the settings; it returns the new (param, m, v). It may
update the arrays it gets in place or make new ones.

Hint: the checker runs three steps from m = v = 0 and compares each with tensorlab.optim.AdamW;
if something is off it tells you which of param, m and v, and which slip it looks like.

Check it:  python -m tensorlab.exercises check adamw THIS_FILE.py
"""
import numpy as np  # noqa: F401 (for your code)


def adamw_step(param, grad, m, v, step, lr, betas, eps, weight_decay):
    """One AdamW update of `param` with gradient `grad`; returns (param, m, v)."""
    b1, b2 = betas
    # TODO: the five lines above, then return param, m, v
    raise NotImplementedError("adamw_step: write the update, then return param, m, v")
