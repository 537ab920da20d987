"""Reference solution for exercise `log_softmax_nll`: mean negative log-likelihood of log-softmax."""
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
        # loss = (1/N) sum_n (log_z[n] - x[n, t[n]])  =>  gx = gy * (softmax(x) - onehot(t)) / N
        n = len(self.targets)
        gx = self.p.copy()
        gx[np.arange(n), self.targets] -= 1                             # subtract the one-hot
        return gy * gx / n, None
