"""SGD: stochastic gradient descent with optional momentum, Nesterov momentum and L2 weight decay.

The update is PyTorch's `torch.optim.SGD`, step for step:

    g = grad + weight_decay * p                       (L2 penalty folded into the gradient)
    b = g                        on the first step    (momentum buffer)
    b = momentum * b + (1 - dampening) * g            afterwards
    g = g + momentum * b   with nesterov,   g = b   without
    p = p - lr * g
"""

from tensorlab.optim.optimizer import Optimizer


class SGD(Optimizer):
    """p -= lr * g, where g is the gradient, optionally with weight decay and (Nesterov) momentum."""

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
        if lr < 0 or momentum < 0 or weight_decay < 0:
            raise ValueError(f"SGD: lr, momentum and weight_decay must be >= 0, got {lr}, {momentum}, {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: Nesterov momentum needs momentum > 0 and dampening = 0")
        super().__init__(
            params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov)
        )

    def update(self, p, grad, group, state):
        # float(): a NumPy float64 hyperparameter would upcast float32 arithmetic to float64
        lr, momentum, dampening = float(group["lr"]), float(group["momentum"]), float(group["dampening"])
        weight_decay = float(group["weight_decay"])
        g = grad
        if weight_decay != 0:
            g = g + weight_decay * p.data  # g = g + wd p
        if momentum != 0:
            b = state.get("momentum_buffer")
            if b is None:
                b = state["momentum_buffer"] = g.copy()  # b = g
            else:  # out of place: on a 0-d parameter NumPy gives scalars, which `b *= mu` would only rebind
                b = state["momentum_buffer"] = momentum * b + (1 - dampening) * g  # b = mu b + (1 - dampening) g
            g = g + momentum * b if group["nesterov"] else b  # g = g + mu b  (Nesterov)  or  g = b
        p.data -= lr * g  # p = p - lr g
