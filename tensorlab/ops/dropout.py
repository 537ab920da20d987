"""Inverted dropout: zero each element with probability p, scale the survivors by 1/(1-p)."""
from tensorlab import backend, random
from tensorlab.tensor import Function


class Dropout(Function):
    def __init__(self, p):
        if not 0 <= p <= 1:
            raise ValueError(f"dropout: p must be a probability in [0, 1], got {p}")
        self.p = p

    def forward(self, x):
        keep = random.generator(backend.device_of(x)).random(x.shape, dtype=x.dtype) >= self.p
        # the mask already holds the 1/(1-p) scale; p = 1 keeps nothing
        self.mask = keep * x.dtype.type(1 / (1 - self.p)) if self.p < 1 else keep * x.dtype.type(0)
        return x * self.mask

    def backward(self, gy):
        # y = x * mask  =>  gx = gy * mask (the same mask as forward)
        return gy * self.mask

