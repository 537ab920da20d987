"""Cross-entropy's softmax and logsumexp (softmax_and_logsumexp in tensorlab/ops/cross_entropy.py), fast on
the CPU: a block of rows at a time, in cache, the blocks spread over tensorlab.threads, each block's
exponentials written straight into the softmax's buffer and normalised there in place.
"""

import numpy as np

from tensorlab import threads
from tensorlab.kernels import plan
from tensorlab.kernels.softmax import exp_and_max


def softmax_and_logsumexp(x):
    """softmax(x) (N, V) and logsumexp(x) (N, 1) over the last axis of x (N, V), as the formula gives them."""
    p = np.empty_like(x)
    logsumexp = np.empty((x.shape[0], 1), x.dtype)

    def rows(b):
        e, m = exp_and_max(x[b], axis=-1, out=p[b])
        total = e.sum(axis=-1, keepdims=True)
        e /= total  # softmax = exp(x - m) / total
        with np.errstate(divide="ignore"):  # log 0 = -inf: no classes, or a row all -inf
            logsumexp[b] = np.log(total) + m

    threads.for_each_block(rows, plan.cache_blocks(x.shape[0], 3 * x.shape[1] * x.itemsize))
    return p, logsumexp
