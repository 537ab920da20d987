"""Cross-entropy of logits against integer class ids, fused with its log-softmax.

For one row of logits x (V classes) and target class t:
    loss = -log softmax(x)_t = logsumexp(x) - x_t
and the mean over the N rows whose target is not `ignore_index`. The backward is the
famous  gx = (softmax(x) - onehot(t)) / N : we subtract 1 at the target instead of
building the one-hot matrix.
"""

from tensorlab import backend, threads
from tensorlab.ops.softmax import exp_and_max
from tensorlab.tensor import Function


class CrossEntropy(Function):
    name = "cross_entropy"

    def __init__(self, ignore_index=-100, targets_checked=False):
        self.ignore_index = ignore_index
        self.targets_checked = targets_checked  # True: the caller checked the targets on the host before moving them

    def forward(self, logits, targets):
        if not self.targets_checked:
            check_targets(logits, targets, self.ignore_index)
        xp = backend.array_module(logits)
        vocab = logits.shape[-1]
        x = logits.reshape(-1, vocab)  # (N, V)
        t = targets.reshape(-1)  # (N,)
        self.valid = t != self.ignore_index
        self.t = xp.where(self.valid, t, 0)  # any class for ignored rows; masked below
        self.rows = xp.arange(len(t))
        self.p = xp.empty_like(x)  # softmax, (N, V)
        logsumexp = xp.empty((len(t), 1), x.dtype)

        def rows(b):  # a block of rows at a time, in cache; the blocks spread over tensorlab.threads
            e, m = exp_and_max(x[b], axis=-1, out=self.p[b])
            total = e.sum(axis=-1, keepdims=True)
            e /= total  # softmax = exp(x - m) / total
            logsumexp[b] = xp.log(total) + m

        threads.for_each_block(rows, backend.cache_blocks(len(t), 3 * vocab * x.itemsize, x))
        nll = logsumexp[:, 0] - x[self.rows, self.t]  # logsumexp(x) - x_t, (N,)
        self.count = self.valid.sum(dtype=logits.dtype)  # a 0-d array: stays on the device
        self.logits_shape = logits.shape
        loss = (nll * self.valid).sum() / xp.maximum(self.count, 1)
        loss = xp.where(self.count > 0, loss, float("nan"))  # every target ignored: NaN, as in PyTorch
        return xp.asarray(loss, dtype=logits.dtype)

    def backward(self, gy):
        # loss = mean_n (logsumexp(x_n) - x_n[t_n])  =>  gx_n = gy * (softmax(x_n) - onehot(t_n)) / N
        # (every target ignored: the loss is NaN as in PyTorch, but the gradient is 0, not 0/0)
        scale = (gy / backend.array_module(gy).maximum(self.count, 1)) * self.valid[:, None]  # (N, 1); ignored: 0
        gx = self.p * scale
        gx[self.rows, self.t] -= scale[:, 0]
        return gx.reshape(self.logits_shape), None


def check_targets(logits, targets, ignore_index):
    """Raise unless `targets` are class ids in [0, V) or ignore_index (on a GPU: one transfer to the host)."""
    if logits.ndim < 1 or logits.dtype.kind != "f":
        raise TypeError(
            f"cross_entropy: logits must be a floating array of shape (..., V), "
            f"got shape {logits.shape} and dtype {logits.dtype}"
        )
    if targets.dtype.kind not in "iu":
        raise TypeError(
            f"cross_entropy: targets must be integer class ids, got dtype {targets.dtype} "
            f"(convert with .astype('int64') if they are whole numbers)"
        )
    if targets.shape != logits.shape[:-1]:
        raise ValueError(
            f"cross_entropy: targets of shape {targets.shape} must have the logits' shape "
            f"without the class axis, {logits.shape[:-1]} (logits are {logits.shape})"
        )
    vocab = logits.shape[-1]
    bad = ((targets < 0) | (targets >= vocab)) & (targets != ignore_index)
    if bad.any():
        first = tuple(int(i) for i in backend.array_module(bad).argwhere(bad)[0])
        raise ValueError(
            f"cross_entropy: target {int(targets[first])} at position {first} is out of range; "
            f"class ids must be in [0, {vocab - 1}] for {vocab} classes "
            f"(or equal ignore_index={ignore_index})"
        )
