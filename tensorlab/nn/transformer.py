"""The feed-forward network and the transformer block, pre-norm or post-norm.

A block reads the residual stream x (B, T, C) and lets attention and then the
feed-forward network each add their contribution back. Where the normalisation sits:
    pre-norm  (GPT-2):        x = x + attention(norm1(x)),   x = x + ffn(norm2(x))
    post-norm (Vaswani 2017): x = norm1(x + attention(x)),   x = norm2(x + ffn(x))
The normalisation is RMSNorm, LayerNorm, or none at all (the identity); the feed-forward network is
FeedForward (GELU or ReLU) or, with activation="swiglu", the gated SwiGLUFeedForward. Each part takes
the one config, as nanoGPT's Block(config): the switches are named and checked in tensorlab/nn/config.py.
"""

from tensorlab import functional as F
from tensorlab.nn import init
from tensorlab.nn.attention import CausalSelfAttention
from tensorlab.nn.config import expect_config
from tensorlab.nn.layers import Dropout, LayerNorm, Linear, RMSNorm
from tensorlab.nn.module import Module
from tensorlab.nn.swiglu import SwiGLUFeedForward

NONLINEARITIES = {"gelu": F.gelu, "relu": F.relu}  # FeedForward's; "swiglu" is SwiGLUFeedForward


class Identity(Module):
    """Returns its input: the 'norm' of a model without normalisation."""

    def forward(self, x):
        return x


def make_norm(config):
    """The normalisation config.norm names over d_model: RMSNorm, LayerNorm or, for "none", Identity."""
    c = expect_config(config, "make_norm")
    if c.norm == "none":
        return Identity()
    return (RMSNorm if c.norm == "rmsnorm" else LayerNorm)(c.d_model, c.norm_eps, dtype=c.dtype)


class FeedForward(Module):
    """Two linear maps with a nonlinearity between: C -> d_ff -> C, applied at every position.

    From `config`: d_model, d_ff, activation ("gelu" or "relu"), dropout, ffn_bias, n_layers (the
    projection's initial std) and dtype.
    """

    def __init__(self, config):
        super().__init__()
        c = expect_config(config, "FeedForward")
        if c.activation not in NONLINEARITIES:
            raise ValueError(
                f"FeedForward: activation must be one of {', '.join(NONLINEARITIES)}, got {c.activation!r} "
                "(swiglu is SwiGLUFeedForward)"
            )
        self.activation = c.activation
        self.fc = Linear(c.d_model, c.d_ff, c.ffn_bias, dtype=c.dtype)
        self.proj = Linear(c.d_ff, c.d_model, c.ffn_bias, std=init.residual_std(c.n_layers), dtype=c.dtype)
        self.dropout = Dropout(c.dropout)

    def forward(self, x):
        h = NONLINEARITIES[self.activation](self.fc(x))  # (B, T, d_ff)
        return self.dropout(self.proj(h))  # (B, T, C)


class TransformerBlock(Module):
    """Attention then feed-forward, each with a residual add; the norms before (pre) or after (post) the add.

    Every size and switch comes from `config` (a TransformerConfig, tensorlab/nn/config.py; the model's
    ModelConfig is one), and the parts read theirs from the same config.
    """

    def __init__(self, config):
        super().__init__()
        c = expect_config(config, "TransformerBlock")
        self.norm_position = c.norm_position
        self.norm1 = make_norm(c)
        self.attn = CausalSelfAttention(c)
        self.norm2 = make_norm(c)
        self.ffn = SwiGLUFeedForward(c) if c.activation == "swiglu" else FeedForward(c)

    def forward(self, x, return_attention=False, kv_cache=None):
        if self.norm_position == "pre":
            a, att = self.attn(self.norm1(x), return_attention=True, kv_cache=kv_cache)
            x = x + a  # (B, T, C)
            x = x + self.ffn(self.norm2(x))  # (B, T, C)
        else:
            a, att = self.attn(x, return_attention=True, kv_cache=kv_cache)
            x = self.norm1(x + a)  # (B, T, C)
            x = self.norm2(x + self.ffn(x))  # (B, T, C)
        return (x, att) if return_attention else x

    def extra_repr(self):
        return f"norm_position={self.norm_position}"
