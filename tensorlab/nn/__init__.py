"""Neural-network building blocks, named as in torch.nn."""
from tensorlab.nn.parameter import Parameter

__all__ = ["Parameter"]
