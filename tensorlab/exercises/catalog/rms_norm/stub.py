"""Exercise `rms_norm`: the gradient of RMSNorm over the last axis.

Forward (written for you), for x of shape (..., C) and weight of shape (C,):
    r = 1 / sqrt(mean(x^2 over the last axis) + eps)     one number per row, shape (..., 1)
    xhat = x * r                                          x scaled to root-mean-square 1
    y = xhat * weight                                     (weight broadcast over the rows)

Your task: write `backward(gy)`. `gy` is dL/dy (shape of x); return `gx, gweight` with the
shapes of x and weight.

Hint: gweight is like the `mul` exercise: weight is shared by every row. For gx, let
g = gy * weight (the gradient arriving at xhat). Within one row, every xhat_i depends on
every x_j through r; derive
    dr/dx_j = -r^3 x_j / C,    so   d xhat_i / d x_j = r delta_ij - x_i r^3 x_j / C
and simplify gx_j = sum_i g_i d xhat_i/d x_j in terms of r, xhat and mean(g * xhat).

Check it:  python -m tensorlab.exercises check rms_norm THIS_FILE.py
"""
import numpy as np

from tensorlab.tensor import Function


class RMSNorm(Function):
    def __init__(self, eps=1e-5):
        self.eps = eps

    def forward(self, x, weight):
        self.r = 1 / np.sqrt((x * x).mean(axis=-1, keepdims=True) + self.eps)  # (..., 1)
        self.xhat, self.weight = x * self.r, weight                             # (..., C), (C,)
        return self.xhat * weight

    def backward(self, gy):
        # TODO: gx = ..., gweight = ...
        raise NotImplementedError("RMSNorm.backward: compute gx and gweight, then return gx, gweight")
