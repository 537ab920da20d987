"""Causal attention's formulas (causal_attention_forward and causal_attention_backward in
tensorlab/ops/attention.py), fast on the CPU.

A few batch elements at a time, so that each block's (H, T, T) scores stay in cache across the
passes, the blocks spread over tensorlab.threads. The forward computes the scores, their mask, exp
and normalisation in place, in the buffer that becomes P; it scales q (T x D numbers) rather than
the scores (T x T), and normalises with one reciprocal per row and a multiply. The backward
computes gS in place in the buffer of gP, and again scales q rather than gk, and gq block by block.
The sums along rows come from OpenBLAS (row sums) and einsum (rowsum(gP * P)), and the row maxima from
np.fmax (tensorlab/kernels/softmax.py): NumPy's own reductions along rows of T numbers are slower than
the exponentials.
"""

import math

import numpy as np

from tensorlab import kernels, threads
from tensorlab.kernels import plan
from tensorlab.kernels.softmax import exp_and_max


def causal_attention_forward(q, k, v, bias, mask=None):
    """y = (P M) v and P = softmax(q k^T / sqrt(D) + bias), as the formula gives them; mask M may be None."""
    q, k, v = (kernels.with_contiguous_rows(a) for a in (q, k, v))
    B, H, T, D = q.shape
    scale = q.dtype.type(1 / math.sqrt(D or 1))  # D = 0: y is empty, whatever the scale
    weights = np.empty((B, H, T, T), dtype=q.dtype)  # P
    y = np.empty_like(q)

    def forward_block(b):
        s = np.matmul(q[b] * scale, k[b].swapaxes(-1, -2), out=weights[b])  # q k^T / sqrt(D)
        s += bias
        exp_and_max(s, axis=-1, out=s)  # exp(S - rowmax), in place
        s *= 1 / kernels.row_sums(s)  # P: rows sum to 1
        np.matmul(s if mask is None else s * mask[b], v[b], out=y[b])  # (P M) v

    threads.for_each_block(forward_block, _batch_blocks(q))
    return y, weights


def causal_attention_backward(gy, q, k, v, weights, mask=None):
    """gq, gk, gv as the formula gives them, from P (`weights`) and the dropout mask M (or None)."""
    gy, q, k, v = (kernels.with_contiguous_rows(a) for a in (gy, q, k, v))
    scale = gy.dtype.type(1 / math.sqrt(gy.shape[-1] or 1))
    gq, gk, gv = np.empty_like(gy), np.empty_like(gy), np.empty_like(gy)

    def backward_block(b):
        p = weights[b]
        dropped = p if mask is None else p * mask[b]
        np.matmul(dropped.swapaxes(-1, -2), gy[b], out=gv[b])
        gs = gy[b] @ v[b].swapaxes(-1, -2)  # gP, (b, H, T, T)
        if mask is not None:
            gs *= mask[b]
        gs -= np.einsum("...i,...i->...", gs, p)[..., None]  # rowsum(gP * P), without the product's array
        gs *= p  # gS
        np.matmul(gs, k[b], out=gq[b])
        gq[b] *= scale
        np.matmul(gs.swapaxes(-1, -2), q[b] * scale, out=gk[b])

    threads.for_each_block(backward_block, _batch_blocks(gy))
    return gq, gk, gv


def _batch_blocks(a):
    """Blocks of batch elements of a (B, H, T, D) array, about three (H, T, T) arrays of each fitting in cache."""
    B, H, T, _ = a.shape
    return plan.cache_blocks(B, 3 * H * T * T * a.itemsize)
