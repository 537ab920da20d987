"""Cross-entropy of logits against integer class ids, fused with its log-softmax.

For one row of logits x (V classes) and target class t:
    loss = -log softmax(x)_t = logsumexp(x) - x_t
With label smoothing e the target is (1 - e) onehot(t) + e / V everywhere, so
    loss = (1 - e) (logsumexp(x) - x_t) + e (logsumexp(x) - mean_c x_c).
Rows whose target is ignore_index count for nothing. reduction 'mean' (the default) averages over
the N rows that are not ignored, 'sum' adds them, 'none' gives each row's loss (0 where ignored).
The backward is the famous  gx = w (softmax(x) - (1 - e) onehot(t) - e / V), w = gy / N for the
mean: we subtract at the target instead of building the one-hot matrix.

The forward's softmax and logsumexp are softmax_and_logsumexp below, in plain NumPy; on the CPU
the op runs them from tensorlab/kernels/cross_entropy.py (a block of rows at a time, in cache, on
every core), which tests/test_kernels.py checks against the one here.
"""

import numpy as np

from tensorlab import backend, kernels
from tensorlab.kernels import cross_entropy as fast
from tensorlab.layout import as_rows
from tensorlab.ops.softmax import exp_and_max
from tensorlab.tensor import Function

REDUCTIONS = {"mean": lambda losses: losses.mean(), "sum": lambda losses: losses.sum(), "none": lambda losses: losses}


def check_reduction(op_name, reduction):
    if reduction not in REDUCTIONS:
        raise ValueError(f"{op_name}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def softmax_and_logsumexp(x):
    """softmax(x) and logsumexp(x) over the last axis of x (N, V): exp(x - m) / total and log(total) + m,
    with m the row's max and total = sum exp(x - m) (exp_and_max: nothing overflows)."""
    e, m = exp_and_max(x, axis=-1)
    total = e.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):  # log 0 = -inf: no classes, or a row all -inf
        return e / total, backend.array_module(x).log(total) + m


class CrossEntropy(Function):
    name = "cross_entropy"

    def __init__(self, ignore_index=-100, reduction="mean", label_smoothing=0.0, targets_checked=False):
        check_reduction("cross_entropy", reduction)
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
        self.ignore_index, self.reduction, self.smoothing = ignore_index, reduction, label_smoothing
        self.targets_checked = targets_checked  # True: the caller checked the targets on the host before moving them

    def forward(self, logits, targets):
        if not self.targets_checked:
            check_targets(logits, targets, self.ignore_index)
        xp = backend.array_module(logits)
        vocab = logits.shape[-1]
        x = as_rows(logits)  # (N, V)
        t = targets.reshape(-1)  # (N,)
        self.valid = ~ignored(t, self.ignore_index)
        self.t = xp.where(self.valid, t, 0)  # any class for ignored rows; masked below
        self.rows = xp.arange(len(t))
        softmax = kernels.choose(fast.softmax_and_logsumexp, softmax_and_logsumexp, x)
        self.p, logsumexp = softmax(x)  # (N, V), (N, 1)
        target_logits = x[self.rows, self.t] if vocab else xp.zeros(len(t), x.dtype)  # no classes: all ignored
        losses = logsumexp[:, 0] - target_logits  # logsumexp(x) - x_t, (N,)
        if self.smoothing:
            smooth = logsumexp[:, 0] - x.mean(axis=-1)  # -mean_c log softmax(x)_c
            losses = (1 - self.smoothing) * losses + self.smoothing * smooth
        losses = xp.where(self.valid, losses, x.dtype.type(0))
        self.count = self.valid.sum(dtype=logits.dtype)  # a 0-d array: stays on the device
        self.logits_shape = logits.shape
        if self.reduction == "none":
            return losses.reshape(targets.shape)
        if self.reduction == "sum":
            return xp.asarray(losses.sum(), dtype=logits.dtype)
        loss = losses.sum() / xp.maximum(self.count, 1)
        loss = xp.where(self.count > 0, loss, float("nan"))  # every target ignored: NaN, as in PyTorch
        return xp.asarray(loss, dtype=logits.dtype)

    def backward(self, gy):
        # loss_n = (1 - e) (logsumexp(x_n) - x_n[t_n]) + e (logsumexp(x_n) - mean_c x_n[c])
        #   =>  gx_n = w_n (softmax(x_n) - (1 - e) onehot(t_n) - e / V),
        # w_n = gy / N for the mean over the N rows not ignored, gy for the sum, gy_n for 'none'; 0 if ignored
        # (every target ignored: the mean is NaN as in PyTorch, but the gradient is 0, not 0/0)
        xp = backend.array_module(gy)
        if self.reduction == "none":
            w = gy.reshape(-1, 1)
        else:
            w = gy if self.reduction == "sum" else gy / xp.maximum(self.count, 1)
            w = xp.broadcast_to(w, (len(self.t), 1))
        w = xp.where(self.valid[:, None], w, w.dtype.type(0))  # (N, 1); ignored rows: 0 (selected, so even for inf gy)
        gx = self.p * w
        if gx.shape[-1]:  # no classes: every target ignored, nothing to subtract (nor any e / V)
            gx[self.rows, self.t] -= (1 - self.smoothing) * w[:, 0]
            if self.smoothing:
                gx -= (self.smoothing / self.p.shape[-1]) * w
        return gx.reshape(self.logits_shape), None


def ignored(targets, ignore_index):
    """Where targets equal ignore_index; a value outside the targets' dtype (1e12 for int32 ids) matches none."""
    info = np.iinfo(targets.dtype)
    if not info.min <= ignore_index <= info.max:
        return backend.array_module(targets).zeros(targets.shape, dtype=bool)
    return targets == ignore_index


def check_targets(logits, targets, ignore_index, op_name="cross_entropy"):
    """Raise unless `targets` are class ids in [0, V) or ignore_index (on a GPU: one transfer to the host)."""
    if logits.ndim < 1 or logits.dtype.kind != "f":
        raise TypeError(
            f"{op_name}: {'logits' if op_name == 'cross_entropy' else 'input'} must be a floating array "
            f"of shape (..., V), got shape {logits.shape} and dtype {logits.dtype}"
        )
    if targets.dtype.kind not in "iu":
        raise TypeError(
            f"{op_name}: targets must be integer class ids, got dtype {targets.dtype} "
            f"(convert with .astype('int64') if they are whole numbers)"
        )
    if targets.shape != logits.shape[:-1]:
        raise ValueError(
            f"{op_name}: targets of shape {targets.shape} must have the input's shape "
            f"without the class axis, {logits.shape[:-1]} (input is {logits.shape})"
        )
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, (int, np.integer)):
        raise TypeError(f"{op_name}: ignore_index must be an int, got {ignore_index!r}")
    vocab = logits.shape[-1]
    bad = ((targets < 0) | (targets >= vocab)) & ~ignored(targets, ignore_index)
    if bad.any():
        first = tuple(int(i) for i in backend.array_module(bad).argwhere(bad)[0])
        raise ValueError(
            f"{op_name}: target {int(targets[first])} at position {first} is out of range; "
            f"class ids must be in [0, {vocab - 1}] for {vocab} classes "
            f"(or equal ignore_index={ignore_index})"
        )
