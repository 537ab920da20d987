"""Exercise `function` (engine track 4 of 4): a new op, end to end.

A tensorlab op is a `Function` with `forward` (NumPy arrays in, an array out; keep on `self`
what backward needs) and `backward(gy)` (one gradient per input, each of its input's shape).
Calling `Hypot()(a, b)` on Tensors runs forward and records the op in the graph; the engine's
backward walk then calls your backward.

Your task: write both halves of `Hypot`, y = sqrt(a^2 + b^2) elementwise, with broadcasting
(a of shape (3, 4) with b of shape (4,), say): forward with NumPy, backward with the chain rule
and the sum over broadcast axes of the previous exercise (write it here again: this file may
only use NumPy). Make a new Hypot() for every call: one instance keeps one forward's values.

Check it:  python -m tensorlab.exercises check function THIS_FILE.py
"""
import numpy as np  # noqa: F401 (for your code)

from tensorlab.tensor import Function


class Hypot(Function):
    def forward(self, a, b):
        # TODO: y = sqrt(a^2 + b^2); keep what backward needs on self
        raise NotImplementedError("Hypot.forward: compute y, keep what backward needs")

    def backward(self, gy):
        # TODO: ga = ..., gb = ... (each of its input's shape)
        raise NotImplementedError("Hypot.backward: compute ga and gb, then return ga, gb")
