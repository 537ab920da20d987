"""Embedding lookup: row ids[n] of the weight table.

The backward is a scatter-add, backend.segment_sum's; on the CPU the op runs
tensorlab/kernels/embedding.py's, which adds in another order, faster.
"""

from tensorlab import backend, kernels
from tensorlab.kernels import embedding as fast
from tensorlab.tensor import Function


class Embedding(Function):
    def __init__(self, ids_checked=False):
        self.ids_checked = ids_checked  # True: the caller checked the ids on the host before moving them

    def forward(self, ids, weight):
        if not self.ids_checked:
            check_ids(ids, weight.shape)
        self.ids, self.weight_shape = ids, weight.shape
        return weight[ids]  # (..., C)

    def backward(self, gy):
        # y[n] = W[ids[n]]  =>  gW[v] = sum of gy[n] over every n with ids[n] = v (scatter-add)
        vocab, width = self.weight_shape
        scatter_add = kernels.choose(fast.segment_sum, backend.segment_sum, gy)
        return None, scatter_add(self.ids.reshape(-1), gy.reshape(self.ids.size, width), vocab)


def check_ids(ids, weight_shape):
    """Raise unless `ids` are integers in [0, V) for a (V, C) table (on a GPU: one transfer to the host)."""
    if len(weight_shape) != 2:
        raise ValueError(f"embedding: weight must be a 2-D table (V, C), got shape {weight_shape}")
    if ids.dtype.kind not in "iu":
        raise TypeError(f"embedding: ids must be integers, got dtype {ids.dtype}")
    vocab = weight_shape[0]
    out_of_range = (ids < 0) | (ids >= vocab)
    if ids.size and bool(out_of_range.any()):
        bad = int(ids[out_of_range][0])
        raise ValueError(
            f"embedding: id {bad} is out of range for a table of {vocab} rows "
            f"(weight shape {weight_shape}); ids must be in [0, {vocab - 1}]"
        )
