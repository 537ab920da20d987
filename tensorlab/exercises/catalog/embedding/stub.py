"""Exercise `embedding`: the gradient of an embedding lookup.

Forward (written for you):  y = weight[ids]
weight is a table of shape (V, C), one row of C numbers per id; ids is an integer array of
any shape; y has shape ids.shape + (C,), row weight[ids[n]] at each position n.

Your task: write `backward(gy)`. `gy` is dL/dy (shape ids.shape + (C,)). Return
`None, gweight`: None for the ids (integers take no gradient) and dL/dweight, shape (V, C).

Hint: y[n] = weight[ids[n]], so row v of the table receives gy[n] from every position n
where ids[n] == v, and nothing where v is never looked up. The same id can appear several
times; each use adds to the gradient. NumPy's `gw[ids] += gy` keeps only one of the
repeats; look up np.add.at.

Check it:  python -m tensorlab.exercises check embedding THIS_FILE.py
"""
import numpy as np  # noqa: F401 (for your backward)

from tensorlab.tensor import Function


class Embedding(Function):
    def forward(self, ids, weight):
        self.ids, self.weight_shape = ids, weight.shape
        return weight[ids]                                   # (..., C)

    def backward(self, gy):
        # TODO: gweight = ... (shape self.weight_shape); return None, gweight
        raise NotImplementedError("Embedding.backward: compute gweight, then return None, gweight")
