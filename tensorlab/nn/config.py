"""TransformerConfig: every size and switch of a transformer block, named, defaulted and checked here once.

As in nanoGPT, the block and its parts take the whole config and read what they need:
    TransformerBlock(config), CausalSelfAttention(config), FeedForward(config), make_norm(config)
The language model's config (models/config.py, ModelConfig) extends this one with its vocabulary,
context length, embeddings and head, so these defaults are also the model's (configs/default.json).
"""

import math
from dataclasses import dataclass, fields

NORMS = ("rmsnorm", "layernorm", "none")
NORM_POSITIONS = ("pre", "post")
ACTIVATIONS = ("gelu", "relu", "swiglu")
POSITIONAL_ENCODINGS = ("sinusoidal", "learned", "rope")
DTYPES = ("float32", "float64")
CHOICES = {
    "pos_encoding": POSITIONAL_ENCODINGS,
    "activation": ACTIVATIONS,
    "dtype": DTYPES,
    "norm": NORMS,
    "norm_position": NORM_POSITIONS,
}


def is_positive_integer(value):
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


@dataclass(frozen=True)
class TransformerConfig:
    """Every size and switch of a transformer block; an invalid value raises ValueError naming the key."""

    d_model: int = 192  # C: width of the residual stream
    n_layers: int = 4  # blocks in the model; each output projection starts at std 0.02 / sqrt(2 n_layers)
    n_heads: int = 6  # H; each head has D = d_model / n_heads channels
    d_ff: int = 768  # hidden width of the feed-forward network
    dropout: float = 0.0  # on the attention weights and on each branch's output before its residual add
    pos_encoding: str = "rope"  # "sinusoidal" | "learned" (added to the embeddings) | "rope" (rotates q, k)
    activation: str = "gelu"  # feed-forward: "gelu" | "relu" | "swiglu" (gated, three matrices)
    norm: str = "rmsnorm"  # "rmsnorm" | "layernorm" | "none" (blocks and the final norm)
    norm_position: str = "pre"  # "pre": x + f(norm(x)) (GPT-2); "post": norm(x + f(x)) (Vaswani et al.)
    norm_eps: float = 1e-5
    qkv_bias: bool = True  # biases of attention's q/k/v projection
    proj_bias: bool = True  # bias of attention's output projection
    ffn_bias: bool = True  # biases of every feed-forward layer
    dtype: str = "float32"  # "float32" | "float64"

    def __post_init__(self):
        problems = self.problems()
        if problems:
            raise ValueError("\n".join(problems))

    def problems(self):
        """Every invalid value, one line each, naming the key; [] when all is well."""
        out = [
            f"model config: {name} must be a positive integer, got {getattr(self, name)!r}"
            for name in ("d_model", "n_layers", "n_heads", "d_ff")
            if not is_positive_integer(getattr(self, name))
        ]
        for name, allowed in CHOICES.items():
            if getattr(self, name) not in allowed:
                out.append(f"model config: {name} must be one of {', '.join(allowed)}; got {getattr(self, name)!r}")
        out += [  # every number setting, this class's and a subclass's: the rules below are for finite ones
            f"model config: {f.name} must be a finite number, got {getattr(self, f.name)!r}"
            for f in fields(self)
            if f.type is float and not math.isfinite(getattr(self, f.name))
        ]
        if math.isfinite(self.dropout) and not 0 <= self.dropout < 1:
            out.append(f"model config: dropout must be in [0, 1), got {self.dropout}")
        if math.isfinite(self.norm_eps) and self.norm_eps <= 0:
            out.append(f"model config: norm_eps must be > 0, got {self.norm_eps}")
        if out:
            return out  # the rules below divide by n_heads
        if self.d_model % self.n_heads:
            out.append(f"model config: d_model={self.d_model} must be divisible by n_heads={self.n_heads}")
        elif self.pos_encoding == "rope" and (self.d_model // self.n_heads) % 2:
            out.append(
                f"model config: rope needs an even head size, got d_model/n_heads = {self.d_model // self.n_heads}"
            )
        return out


def expect_config(config, owner):
    """`config` itself when it is a TransformerConfig (a ModelConfig is one); else one line naming `owner`."""
    if not isinstance(config, TransformerConfig):
        raise TypeError(
            f"{owner} takes a TransformerConfig, e.g. {owner}(nn.TransformerConfig(d_model=64, n_heads=4)); "
            f"got {type(config).__name__} {config!r}"
        )
    return config
