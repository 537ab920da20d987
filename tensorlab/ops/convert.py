"""Moving a tensor to another device or dtype inside the graph, as PyTorch's `.to`: the gradient goes back.

y = x, held on another device or in another dtype, so dy/dx = 1: the backward hands gy back to where x
lives, in x's dtype. (`detach()` gives a tensor outside the graph instead.)
"""

from tensorlab import backend
from tensorlab.tensor import Function


class ToDevice(Function):
    name = "to"

    def __init__(self, device):
        self.device = device

    def forward(self, x):
        self.source = backend.device_of(x)
        return backend.to_device(x, self.device)

    def backward(self, gy):
        # y = x on another device  =>  gx = gy, moved back to x's device
        return backend.to_device(gy, self.source)


class AsType(Function):
    name = "astype"

    def __init__(self, dtype):
        self.dtype = dtype

    def forward(self, x):
        self.source = x.dtype
        return x.astype(self.dtype)

    def backward(self, gy):
        # y = x in another dtype  =>  gx = gy, in x's dtype
        return gy.astype(self.source)
