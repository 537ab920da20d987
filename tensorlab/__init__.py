"""tensorlab: reverse-mode automatic differentiation from scratch on NumPy (and CuPy)."""

from tensorlab import functional, roundoff
from tensorlab.gradcheck import GradcheckError, gradcheck
from tensorlab.random import manual_seed
from tensorlab.tensor import Function, Tensor, is_grad_enabled, no_grad, tensor

roundoff.install_from_environment(Function)  # TENSORLAB_ROUNDOFF_CHAOS=SEED: every op rounds as another machine

__all__ = ["Tensor", "tensor", "no_grad", "is_grad_enabled", "functional", "manual_seed", "gradcheck", "GradcheckError"]
