"""Embedding lookup: row ids[n] of the weight table."""
from tensorlab import backend
from tensorlab.tensor import Function


class Embedding(Function):
    def forward(self, ids, weight):
        _check_ids(ids, weight)
        self.ids, self.weight_shape = ids, weight.shape
        return weight[ids]                                   # (..., C)

    def backward(self, gy):
        # y[n] = W[ids[n]]  =>  gW[v] = sum of gy[n] over every n with ids[n] = v (scatter-add)
        xp = backend.array_module(gy)
        gw = xp.zeros(self.weight_shape, dtype=gy.dtype)
        backend.scatter_add_rows(gw, self.ids.reshape(-1), gy.reshape(-1, self.weight_shape[1]))
        return None, gw


def _check_ids(ids, weight):
    if weight.ndim != 2:
        raise ValueError(f"embedding: weight must be a 2-D table (V, C), got shape {weight.shape}")
    if ids.dtype.kind not in "iu":
        raise TypeError(f"embedding: ids must be integers, got dtype {ids.dtype}")
    vocab = weight.shape[0]
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= vocab):
        bad = int(ids.min()) if int(ids.min()) < 0 else int(ids.max())
        raise ValueError(f"embedding: id {bad} is out of range for a table of {vocab} rows "
                         f"(weight shape {weight.shape}); ids must be in [0, {vocab - 1}]")
