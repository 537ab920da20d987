"""The reference gradients, stage by stage, from the engine's own autograd.

Each gradient exercise has a reference graph: its forward written with tensorlab ops, with the
intermediate values a derivation goes through given names (attention: the weights P, the scores
S). Running the engine's backward through that graph with the student's gy gives the right
gradient of every named intermediate as well as of every input: the stages of the backward, in
the order a backward meets them. Nothing here is a hand-written backward; the checker compares
the student's variables with these numbers to say which step first goes wrong.
"""

from types import SimpleNamespace

import numpy as np

import tensorlab.functional as F
from tensorlab.tensor import Tensor, backward_observers


def reference(graph, names, inputs, settings, gy):
    """A namespace of everything a slip or a stage check needs, from one backward of `graph`.

    x[name]: the input arrays; settings; gy; value[stage]: the forward's intermediates;
    grad[name]: the right gradient of every input and named stage; stages: the stage names
    in the order backward reaches them.
    """
    tensors = [
        Tensor(np.array(x, dtype=np.float64) if x.dtype.kind == "f" else x, requires_grad=x.dtype.kind == "f")
        for x in inputs
    ]
    output, named = graph(*tensors, **settings)
    creators = {id(t.creator): (stage, t) for stage, t in named.items() if t.creator is not None}
    grads, reached = {}, []

    def observe(fn, output_grads, input_grads):
        if id(fn) in creators:
            stage, t = creators.pop(id(fn))
            grads[stage] = np.array(output_grads[t.output_index])
            reached.append(stage)

    backward_observers.append(observe)
    try:
        output.backward(np.array(gy, dtype=np.float64))
    finally:
        backward_observers.remove(observe)
    for name, t in zip(names, tensors):
        if t.requires_grad:
            grads[name] = np.zeros(t.shape) if t.grad is None else t.grad
    return SimpleNamespace(
        x=dict(zip(names, inputs)),
        settings=settings,
        gy=gy,
        grad=grads,
        stages=reached,
        value={stage: t.data for stage, t in named.items()},
        y=output.data,
    )


# ----- the reference graphs: forward in tensorlab ops, intermediates named ----------------------------------
def mul(a, b):
    return a * b, {}


def hypot(a, b):
    return F.sqrt(a * a + b * b), {}


def matmul(a, b):
    return a @ b, {}


def exp(x):
    return F.exp(x), {}


def log(x):
    return F.log(x), {}


def sum_(x, axis=None, keepdims=False):
    return F.sum(x, axis=axis, keepdims=keepdims), {}


def mean(x, axis=None, keepdims=False):
    return F.mean(x, axis=axis, keepdims=keepdims), {}


def maximum(a, b):
    return F.maximum(a, b), {}


def clamp(x, low, high):
    return F.clamp(x, low, high), {}


def var(x, axis=None, keepdims=False, correction=1):
    return F.var(x, axis=axis, keepdims=keepdims, correction=correction), {}


def softmax(x, axis=-1):
    return F.softmax(x, axis=axis), {}


def log_softmax_nll(logits, targets):
    log_p = F.log_softmax(logits, axis=-1)
    picked = log_p[np.arange(len(targets.data)), targets.data]
    return -F.mean(picked), {"log_p": log_p}


def rms_norm(x, weight, eps=1e-5):
    r = 1 / F.sqrt(F.mean(x * x, axis=-1, keepdims=True) + eps)
    xhat = x * r
    return xhat * weight, {"xhat": xhat, "r": r}


def embedding(ids, weight):
    return F.embedding(ids, weight), {}


def causal_attention(q, k, v):
    T, D = q.shape[-2:]
    s = q @ k.swapaxes(-1, -2) * (1 / np.sqrt(D))
    s = F.masked_fill(s, ~np.tril(np.ones((T, T), dtype=bool)), -np.inf)
    p = F.softmax(s, axis=-1)
    return p @ v, {"S": s, "P": p}
