"""Inverted dropout: zero each element with probability p, scale the survivors by 1/(1-p)."""

from tensorlab import backend, random
from tensorlab.tensor import Function


def dropout_mask(shape, p, dtype, device):
    """A mask holding 0 (dropped, probability p) or 1/(1-p) (kept), so x * mask keeps E[x]."""
    keep = random.generator(device).random(shape, dtype=dtype) >= p
    return keep * dtype.type(1 / (1 - p) if p < 1 else 0)


class Dropout(Function):
    def __init__(self, p):
        if not 0 <= p <= 1:
            raise ValueError(f"dropout: p must be a probability in [0, 1], got {p}")
        self.p = p

    def forward(self, x):
        self.mask = dropout_mask(x.shape, self.p, x.dtype, backend.device_of(x))
        return x * self.mask

    def backward(self, gy):
        # y = x * mask  =>  gx = gy * mask (the same mask as forward)
        return gy * self.mask
