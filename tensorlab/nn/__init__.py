"""Neural-network building blocks, named as in torch.nn."""

from tensorlab.nn.attention import CausalSelfAttention
from tensorlab.nn.config import TransformerConfig
from tensorlab.nn.layers import Dropout, Embedding, LayerNorm, Linear, RMSNorm
from tensorlab.nn.module import Module, ModuleList
from tensorlab.nn.parameter import Parameter
from tensorlab.nn.swiglu import SwiGLUFeedForward
from tensorlab.nn.transformer import FeedForward, TransformerBlock

__all__ = [
    "Parameter",
    "Module",
    "ModuleList",
    "Linear",
    "Embedding",
    "RMSNorm",
    "LayerNorm",
    "Dropout",
    "TransformerConfig",
    "CausalSelfAttention",
    "FeedForward",
    "SwiGLUFeedForward",
    "TransformerBlock",
]
