"""Exercise `log_softmax_nll`: the gradient of cross-entropy (log-softmax, then negative log-likelihood).

Forward (written for you), for logits x of shape (N, V) (N rows, V classes) and integer
targets t of shape (N,):
    log_softmax(x)[n, i] = x[n, i] - log sum_j exp(x[n, j])
    loss = -(1/N) sum_n log_softmax(x)[n, t[n]]          (a single number)
The forward keeps p = softmax(x) (shape (N, V)) and the targets on `self`.

Your task: write `backward(gy)`. `gy` is dL/dloss, a 0-d array (the loss is a number that
may feed into more computation). Return `gx, None`: dL/dx of shape (N, V), and None for the
targets (integers take no gradient).

Hint: for one row, d/dx_i of (log sum_j exp(x_j) - x_t) is softmax(x)_i - [i == t].
Don't forget the 1/N of the mean, nor gy (the chain rule).

Check it:  python -m tensorlab.exercises check log_softmax_nll THIS_FILE.py
"""
import numpy as np

from tensorlab.tensor import Function


class LogSoftmaxNLL(Function):
    def forward(self, logits, targets):
        m = logits.max(axis=-1, keepdims=True)                           # (N, 1) for stability
        log_z = m + np.log(np.exp(logits - m).sum(axis=-1, keepdims=True))  # (N, 1) log normaliser
        log_p = logits - log_z                                           # (N, V) log-softmax
        self.p, self.targets = np.exp(log_p), targets                    # (N, V) softmax, (N,)
        return np.asarray(-log_p[np.arange(len(targets)), targets].mean())

    def backward(self, gy):
        # TODO: gx = ... (shape (N, V)); return gx, None
        raise NotImplementedError("LogSoftmaxNLL.backward: compute gx, then return gx, None")
