"""The configuration of the tiny transformer language model: every size and switch, checked once.

The training config (models/train_config.py) holds one of these as its `model` field, so
each model setting is declared here and nowhere else; the defaults are configs/default.json's.
"""

from dataclasses import asdict, dataclass, fields

from tensorlab.nn.transformer import NORM_POSITIONS, NORMS

POSITIONAL_ENCODINGS = ("sinusoidal", "learned", "rope")
ACTIVATIONS = ("gelu", "relu", "swiglu")
DTYPES = ("float32", "float64")
CHOICES = {
    "pos_encoding": POSITIONAL_ENCODINGS,
    "activation": ACTIVATIONS,
    "dtype": DTYPES,
    "norm": NORMS,
    "norm_position": NORM_POSITIONS,
}
SIZES = ("vocab_size", "context_len", "d_model", "n_layers", "n_heads", "d_ff")


@dataclass(frozen=True)
class ModelConfig:
    """Every size and switch of TinyTransformerLM; invalid values raise ValueError naming the key."""

    vocab_size: int = 500  # V (a run sets it to what its trained tokenizer really has)
    context_len: int = 128  # T: the most tokens the model sees at once, = the training window
    d_model: int = 192  # C: width of the residual stream
    n_layers: int = 4
    n_heads: int = 6  # H; each head has D = d_model / n_heads channels
    d_ff: int = 768  # hidden width of the feed-forward network
    dropout: float = 0.0
    pos_encoding: str = "rope"  # "sinusoidal" | "learned" | "rope"
    tie_weights: bool = True  # the LM head reuses the token embedding table
    activation: str = "gelu"  # feed-forward: "gelu" | "relu" | "swiglu" (gated, three matrices)
    norm: str = "rmsnorm"  # "rmsnorm" | "layernorm" | "none" (blocks and the final norm)
    norm_position: str = "pre"  # "pre": x + f(norm(x)) (GPT-2); "post": norm(x + f(x)) (Vaswani et al.)
    norm_eps: float = 1e-5
    qkv_bias: bool = True  # biases of attention's q/k/v projection
    proj_bias: bool = True  # bias of attention's output projection
    ffn_bias: bool = True  # biases of both feed-forward layers
    head_bias: bool = False  # bias of the LM head (only without tie_weights)
    embedding_std: float = 0.02  # std of the initial embedding tables: 0.02 as GPT-2; 1.0 is torch.nn.Embedding's
    dtype: str = "float32"  # "float32" | "float64"

    def __post_init__(self):
        problems = self.problems()
        if problems:
            raise ValueError("\n".join(problems))

    def problems(self):
        """Every invalid value, one line each, naming the key; [] when all is well."""
        out = []
        for name in SIZES:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                out.append(f"model config: {name} must be a positive integer, got {value!r}")
        for name, allowed in CHOICES.items():
            if getattr(self, name) not in allowed:
                out.append(f"model config: {name} must be one of {', '.join(allowed)}; got {getattr(self, name)!r}")
        if not 0 <= self.dropout < 1:
            out.append(f"model config: dropout must be in [0, 1), got {self.dropout}")
        if not self.embedding_std > 0:
            out.append(f"model config: embedding_std must be > 0, got {self.embedding_std}")
        if not self.norm_eps > 0:
            out.append(f"model config: norm_eps must be > 0, got {self.norm_eps}")
        if self.head_bias and self.tie_weights:
            out.append("model config: head_bias needs tie_weights false (a tied head is the embedding table)")
        if out:
            return out
        if self.d_model % self.n_heads:
            out.append(f"model config: d_model={self.d_model} must be divisible by n_heads={self.n_heads}")
        elif self.pos_encoding == "rope" and (self.d_model // self.n_heads) % 2:
            out.append(
                f"model config: rope needs an even head size, got d_model/n_heads = {self.d_model // self.n_heads}"
            )
        return out

    @classmethod
    def from_dict(cls, values):
        """Build from a dict, naming any key that is not a field."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(
                f"model config: unknown key(s) {', '.join(unknown)}; known keys are {', '.join(sorted(known))}"
            )
        return cls(**values)

    def to_dict(self):
        return asdict(self)


def expand_bias(values):
    """A copy of a model config dict with an older version's `bias` (one switch for every linear layer) as
    today's qkv_bias, proj_bias and ffn_bias."""
    values = dict(values)
    if "bias" in values:
        bias = values.pop("bias")
        values.update(qkv_bias=bias, proj_bias=bias, ffn_bias=bias)
    return values


def as_today(values):
    """A model config dict that an older tensorlab wrote, in today's keys (expand_bias); a key added since
    takes its default, which is what that older version did."""
    return {**ModelConfig().to_dict(), **expand_bias(values)}
