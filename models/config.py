"""The configuration of the tiny transformer language model: every size and switch, checked once.

ModelConfig is the blocks' TransformerConfig (tensorlab/nn/config.py: widths, heads, layers, norms,
activation, biases, dropout, positions, dtype) plus the settings of the model around the blocks: the
vocabulary, the context length, the embeddings and the head. The training config
(models/train_config.py) holds one as its `model` field, so each model setting is declared in one of
these two classes and nowhere else; the defaults are configs/default.json's.
"""

import math
from dataclasses import asdict, dataclass, fields

from tensorlab.nn.config import TransformerConfig, is_positive_integer


@dataclass(frozen=True)
class ModelConfig(TransformerConfig):
    """Every size and switch of TinyTransformerLM; invalid values raise ValueError naming the key.

    The blocks' settings are TransformerConfig's fields (d_model, n_layers, n_heads, d_ff, dropout,
    pos_encoding, activation, norm, norm_position, norm_eps, qkv_bias, proj_bias, ffn_bias, dtype).
    """

    vocab_size: int = 500  # V (a run sets it to what its trained tokenizer really has)
    context_len: int = 128  # T: the most tokens the model sees at once, = the training window
    tie_weights: bool = True  # the LM head reuses the token embedding table
    head_bias: bool = False  # bias of the LM head (only without tie_weights)
    embedding_std: float = 0.02  # std of the initial embedding tables: 0.02 as GPT-2; 1.0 is torch.nn.Embedding's

    def problems(self):
        """Every invalid value, one line each, naming the key; [] when all is well."""
        out = [
            f"model config: {name} must be a positive integer, got {getattr(self, name)!r}"
            for name in ("vocab_size", "context_len")
            if not is_positive_integer(getattr(self, name))
        ]
        if math.isfinite(self.embedding_std) and self.embedding_std <= 0:  # not finite: TransformerConfig.problems
            out.append(f"model config: embedding_std must be > 0, got {self.embedding_std}")
        if self.head_bias and self.tie_weights:
            out.append("model config: head_bias needs tie_weights false (a tied head is the embedding table)")
        return out + super().problems()

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
