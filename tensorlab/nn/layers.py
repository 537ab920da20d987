"""The basic layers: Linear, Embedding, RMSNorm, LayerNorm, Dropout."""

import numpy as np

from tensorlab import functional as F
from tensorlab.nn import init
from tensorlab.nn.module import Module


class Linear(Module):
    """y = x W^T + b, with W of shape (out_features, in_features) as in PyTorch."""

    def __init__(self, in_features, out_features, bias=True, std=init.GPT2_STD, dtype=np.float32):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = init.normal((out_features, in_features), std, dtype)
        self.bias = init.constant((out_features,), 0.0, dtype) if bias else None

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Embedding(Module):
    """A table of `num_embeddings` learned vectors of size `embedding_dim`, looked up by integer id."""

    def __init__(self, num_embeddings, embedding_dim, std=init.GPT2_STD, dtype=np.float32):
        super().__init__()
        self.weight = init.normal((num_embeddings, embedding_dim), std, dtype)

    def forward(self, ids):
        return F.embedding(ids, self.weight)

    def extra_repr(self):
        return f"{self.weight.shape[0]}, {self.weight.shape[1]}"


class RMSNorm(Module):
    """x / sqrt(mean(x^2) + eps) * weight over the last axis (no centring, no bias).

    As torch.nn.RMSNorm, except that eps defaults to 1e-5 (PyTorch's None means the dtype's
    machine epsilon). elementwise_affine=False: no weight (a constant 1).
    """

    def __init__(self, dim, eps=1e-5, elementwise_affine=True, dtype=np.float32):
        super().__init__()
        self.dim, self.eps = dim, eps
        self.weight = init.constant((dim,), 1.0, dtype) if elementwise_affine else None

    def forward(self, x):
        return F.rms_norm(x, self.weight, eps=self.eps)

    def extra_repr(self):
        return f"{self.dim}, eps={self.eps}, elementwise_affine={self.weight is not None}"


class LayerNorm(Module):
    """(x - mean) / sqrt(var + eps) * weight + bias over the last axis, as torch.nn.LayerNorm.

    elementwise_affine=False: neither weight nor bias; bias=False: a weight but no bias.
    """

    def __init__(self, dim, eps=1e-5, elementwise_affine=True, bias=True, dtype=np.float32):
        super().__init__()
        self.dim, self.eps = dim, eps
        self.weight = init.constant((dim,), 1.0, dtype) if elementwise_affine else None
        self.bias = init.constant((dim,), 0.0, dtype) if elementwise_affine and bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight, self.bias, eps=self.eps)

    def extra_repr(self):
        return f"{self.dim}, eps={self.eps}, elementwise_affine={self.weight is not None}, bias={self.bias is not None}"


class Dropout(Module):
    """Zeroes elements with probability p while training; the identity in eval mode."""

    def __init__(self, p=0.5):
        super().__init__()
        self.p = p

    def forward(self, x):
        return F.dropout(x, self.p, training=self.training)

    def extra_repr(self):
        return f"p={self.p}"
