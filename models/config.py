"""The configuration of the tiny transformer language model."""
from dataclasses import asdict, dataclass, fields

POSITIONAL_ENCODINGS = ("sinusoidal", "learned", "rope")
ACTIVATIONS = ("gelu", "relu")
DTYPES = ("float32", "float64")


@dataclass
class ModelConfig:
    """Every size and switch of TinyTransformerLM; `ModelConfig.from_dict` rejects unknown keys."""
    vocab_size: int = 500
    context_len: int = 128      # T: the most tokens the model sees at once
    d_model: int = 128          # C: width of the residual stream
    n_layers: int = 4
    n_heads: int = 4            # H; each head has D = d_model / n_heads channels
    d_ff: int = 512             # hidden width of the feed-forward network
    dropout: float = 0.1
    pos_encoding: str = "rope"  # "sinusoidal" | "learned" | "rope"
    tie_weights: bool = True    # the LM head reuses the token embedding table
    activation: str = "gelu"    # "gelu" | "relu"
    norm_eps: float = 1e-5
    bias: bool = True           # biases in the linear layers
    dtype: str = "float32"      # "float32" | "float64"

    def __post_init__(self):
        for name in ("vocab_size", "context_len", "d_model", "n_layers", "n_heads", "d_ff"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"model config: {name} must be a positive integer, got {value!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"model config: d_model={self.d_model} must be divisible by n_heads={self.n_heads}")
        if self.pos_encoding == "rope" and (self.d_model // self.n_heads) % 2:
            raise ValueError(f"model config: rope needs an even head size, got d_model/n_heads = "
                             f"{self.d_model // self.n_heads}")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"model config: dropout must be in [0, 1), got {self.dropout}")
        for name, allowed in (("pos_encoding", POSITIONAL_ENCODINGS), ("activation", ACTIVATIONS),
                              ("dtype", DTYPES)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"model config: {name} must be one of {', '.join(allowed)}; "
                                 f"got {getattr(self, name)!r}")

    @classmethod
    def from_dict(cls, values):
        """Build from a dict, naming any key that is not a field."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"model config: unknown key(s) {', '.join(unknown)}; "
                             f"known keys are {', '.join(sorted(known))}")
        return cls(**values)

    def to_dict(self):
        return asdict(self)
