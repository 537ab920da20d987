"""The losses of PyTorch's functional API beside cross_entropy: mse_loss, binary_cross_entropy (on
probabilities and on logits) and nll_loss, each with `reduction` 'mean' (the default), 'sum' or 'none'.

Notation: l_i the loss of element (or row) i, L = mean_i l_i, sum_i l_i, or l itself; gy the gradient
of L, and gl_i = gy / n, gy, or gy_i the gradient of each l_i that it implies.
"""

import math

import numpy as np

from tensorlab import backend
from tensorlab.layout import as_rows
from tensorlab.ops.cross_entropy import REDUCTIONS, check_reduction, check_targets, ignored
from tensorlab.ops.dtypes import check_floating, check_same_dtype, promote
from tensorlab.ops.elementwise import log_sigmoid, sigmoid
from tensorlab.tensor import Function


class ElementwiseLoss(Function):
    """Shared by the losses of an input and a target of the same shape, computed in PyTorch's common dtype.

    What PyTorch takes differs by loss: mse_loss any pair whose common dtype is floating, the binary cross
    entropies floats only (binary_cross_entropy of one dtype only): `takes` says which.
    """

    takes = "a floating common dtype"

    def __init__(self, reduction="mean"):
        check_reduction(self.name, reduction)
        self.reduction = reduction

    def __call__(self, x, target):
        shapes = [getattr(v, "shape", ()) for v in (x, target)]
        if shapes[0] != shapes[1]:
            raise ValueError(
                f"{self.name}: input of shape {shapes[0]} and target of shape {shapes[1]} must have the same shape"
            )
        arrays = [getattr(v, "data", v) for v in (x, target)]
        if self.takes != "a floating common dtype":
            for array in arrays:
                check_floating(self.name, array)
        if self.takes == "one floating dtype":
            check_same_dtype(self.name, *arrays)
        return super().__call__(*promote(self.name, x, target))

    def forward(self, x, target):
        check_floating(self.name, x)
        self.shape = x.shape
        return REDUCTIONS[self.reduction](self.losses(x, target))

    def loss_grad(self, gy):
        """gl: the gradient of each element's loss, given the gradient gy of the reduced loss."""
        if self.reduction == "none":
            return gy
        n = math.prod(self.shape) if self.reduction == "mean" else 1
        return backend.array_module(gy).broadcast_to(gy / gy.dtype.type(max(n, 1)), self.shape)


class MseLoss(ElementwiseLoss):
    name = "mse_loss"

    def losses(self, x, target):
        self.d = x - target
        return self.d * self.d

    def backward(self, gy):
        # l_i = (x_i - t_i)^2  =>  gx_i = 2 (x_i - t_i) gl_i,  gt_i = -gx_i
        gx = 2 * self.d * self.loss_grad(gy)
        return gx, -gx


class BinaryCrossEntropy(ElementwiseLoss):
    """On probabilities p in [0, 1]; each log is clamped at -100, as in PyTorch, so p = 0 or 1 stays finite."""

    name = "binary_cross_entropy"
    takes = "one floating dtype"

    def losses(self, p, target):
        xp = backend.array_module(p)
        if not ((p >= 0) & (p <= 1)).all():  # NaN is refused too, as PyTorch
            raise ValueError(f"binary_cross_entropy: every input must be a probability in [0, 1] (shape {p.shape})")
        self.p, self.target = p, target
        with np.errstate(divide="ignore"):
            log_p, log_q = xp.log(p), xp.log1p(-p)  # log p and log(1 - p)
        return -(target * xp.maximum(log_p, -100) + (1 - target) * xp.maximum(log_q, -100))

    def backward(self, gy):
        # l = -(t log p + (1 - t) log(1 - p))  =>  gp = gl (p - t) / (p (1 - p)),  gt = -gl log(p / (1 - p))
        # (PyTorch's guard: p (1 - p) no smaller than 1e-12, a float32 constant there; gt is infinite at p = 0
        # or 1, as there; log(p / (1 - p)) keeps the digits log p - log(1 - p) loses near p = 1/2)
        xp = backend.array_module(gy)
        gl = self.loss_grad(gy)
        p = self.p
        gp = gl * (p - self.target) / xp.maximum(p * (1 - p), p.dtype.type(np.float32(1e-12)))
        with np.errstate(divide="ignore"):
            return gp, -gl * xp.log(p / (1 - p))


class BinaryCrossEntropyWithLogits(ElementwiseLoss):
    """binary_cross_entropy of sigmoid(x), computed from the logits x without overflow."""

    name = "binary_cross_entropy_with_logits"
    takes = "floats"

    def losses(self, x, target):
        self.x, self.target = x, target
        # -(t log s + (1 - t) log(1 - s)), s = sigmoid(x), log(1 - s) = log s - x,  =  (1 - t) x - log s,
        # with log s = log_sigmoid(x), exact for any x (PyTorch's formula)
        return (1 - target) * x - log_sigmoid(x)

    def backward(self, gy):
        # l = (1 - t) x - log sigmoid(x)  =>  gx = gl (sigmoid(x) - t),  gt = -gl x
        gl = self.loss_grad(gy)
        return gl * (sigmoid(self.x) - self.target), -gl * self.x


class NllLoss(Function):
    """-log_probs[..., t] for class ids t over the last axis, skipping targets equal to ignore_index."""

    name = "nll_loss"

    def __init__(self, ignore_index=-100, reduction="mean"):
        check_reduction("nll_loss", reduction)
        self.ignore_index, self.reduction = ignore_index, reduction

    def forward(self, log_probs, targets):
        check_targets(log_probs, targets, self.ignore_index, op_name="nll_loss")
        xp = backend.array_module(log_probs)
        x = as_rows(log_probs)  # (N, C)
        self.valid = ~ignored(targets.reshape(-1), self.ignore_index)
        self.t = xp.where(self.valid, targets.reshape(-1), 0)  # any class for ignored rows; masked below
        self.rows, self.shape = xp.arange(len(self.t)), log_probs.shape
        self.count = self.valid.sum(dtype=x.dtype)
        picked = x[self.rows, self.t] if x.shape[-1] else xp.zeros(len(self.t), x.dtype)  # no classes: all ignored
        losses = xp.where(self.valid, -picked, x.dtype.type(0))
        if self.reduction == "none":
            return losses.reshape(targets.shape)
        if self.reduction == "sum":
            return losses.sum()
        mean = losses.sum() / xp.maximum(self.count, 1)
        return xp.where(self.count > 0, mean, x.dtype.type("nan"))  # every target ignored: NaN, as PyTorch

    def backward(self, gy):
        # l_n = -x[n, t_n]  =>  gx[n, t_n] = -gl_n (gl_n = gy / N over the N rows not ignored, gy, or gy_n);
        # every other element, and every ignored row, gets 0
        xp = backend.array_module(gy)
        if self.reduction == "none":
            gl = gy.reshape(-1)
        else:
            gl = gy if self.reduction == "sum" else gy / xp.maximum(self.count, 1)
        gx = xp.zeros((len(self.t), self.shape[-1]), dtype=gy.dtype)
        if gx.size:  # no classes: nothing to write
            gx[self.rows, self.t] = xp.where(self.valid, -gl, gy.dtype.type(0))  # selected: an inf gy gives 0 there
        return gx.reshape(self.shape), None
