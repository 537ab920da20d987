"""tensorlab: reverse-mode automatic differentiation from scratch on NumPy (and CuPy)."""

from tensorlab import functional
from tensorlab.gradcheck import GradcheckError, gradcheck
from tensorlab.random import manual_seed
from tensorlab.tensor import Tensor, is_grad_enabled, no_grad, tensor

__all__ = ["Tensor", "tensor", "no_grad", "is_grad_enabled", "functional", "manual_seed", "gradcheck", "GradcheckError"]
