"""tensorlab: reverse-mode automatic differentiation from scratch on NumPy (and CuPy)."""
from tensorlab.tensor import Tensor, tensor, no_grad, is_grad_enabled
from tensorlab import functional
from tensorlab.random import manual_seed
from tensorlab.gradcheck import gradcheck, GradcheckError

__all__ = ["Tensor", "tensor", "no_grad", "is_grad_enabled", "functional", "manual_seed", "gradcheck", "GradcheckError"]
