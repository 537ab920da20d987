"""TrainConfig: every setting of a training run in one dataclass, read from JSON and from flags.

The fields are the single list of settings: `add_flags` turns each into a command-line
flag (d_model -> --d-model), `from_json` reads a JSON object with the same keys, and
`problems` checks every value, one readable line per problem. Flags override the file:

    config = TrainConfig.from_json("configs/seed_d256.json").replace(lr=1e-3)
    config.check()                        # raises ConfigError listing every problem
"""
import argparse
import dataclasses
import json
import math
from dataclasses import dataclass, field, fields
from pathlib import Path

from models.config import ACTIVATIONS, DTYPES, POSITIONAL_ENCODINGS, ModelConfig
from models.tokenizer import MIN_BYTELEVEL_VOCAB, PRETOKENIZERS

SCHEDULES = ("warmup_cosine", "constant", "plateau")
DEVICES = ("cpu", "cuda")
CHOICES = {"pretokenizer": PRETOKENIZERS, "pos_encoding": POSITIONAL_ENCODINGS, "activation": ACTIVATIONS,
           "dtype": DTYPES, "schedule": SCHEDULES, "device": DEVICES}


class ConfigError(ValueError):
    """A config file or a flag value is wrong; the message has one line per problem."""


def _setting(default, help):
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class TrainConfig:
    """Data, tokenizer, model, optimizer and run settings; the defaults are configs/default.json."""
    # data and tokenizer
    data: str | None = _setting(None, "corpus file (default: $TENSORLAB_CORPUS, the cache, or a download)")
    vocab_size: int = _setting(500, "BPE vocabulary size")
    pretokenizer: str = _setting("bytelevel", "how text is cut before BPE (bytelevel is lossless)")
    val_fraction: float = _setting(0.1, "fraction of the tokens, taken from the end, that validates")
    # model
    seq_len: int = _setting(128, "tokens per training window, = the model's context length")
    d_model: int = _setting(192, "width of the residual stream")
    n_layers: int = _setting(4, "transformer blocks")
    n_heads: int = _setting(6, "attention heads per block")
    d_ff: int = _setting(768, "hidden width of the feed-forward network")
    dropout: float = _setting(0.0, "dropout probability")
    pos_encoding: str = _setting("rope", "positional encoding")
    tie_weights: bool = _setting(True, "the LM head reuses the token embedding")
    activation: str = _setting("gelu", "feed-forward nonlinearity")
    bias: bool = _setting(True, "biases in the linear layers")
    norm_eps: float = _setting(1e-5, "epsilon of RMSNorm")
    dtype: str = _setting("float32", "parameter dtype")
    # optimisation
    batch_size: int = _setting(32, "windows per training step (and per evaluation batch)")
    lr: float = _setting(3e-3, "peak learning rate of AdamW")
    min_lr: float = _setting(3e-4, "learning rate at the end of the cosine, and the plateau floor")
    warmup_steps: int = _setting(100, "steps of linear warmup from 0 to lr")
    schedule: str = _setting("warmup_cosine", "learning-rate schedule after warmup")
    plateau_factor: float = _setting(0.5, "plateau schedule: multiply lr by this when val loss stalls")
    plateau_patience: int = _setting(1, "plateau schedule: evaluations without improvement before lowering lr")
    weight_decay: float = _setting(0.1, "AdamW decoupled weight decay of matrices and embeddings")
    beta1: float = _setting(0.9, "AdamW beta1")
    beta2: float = _setting(0.99, "AdamW beta2")
    grad_clip: float = _setting(1.0, "clip the global gradient norm to this (0: no clipping)")
    # the run
    seed: int = _setting(1337, "seed of initialisation, dropout and batch sampling")
    device: str = _setting("cpu", "where to train")
    max_steps: int = _setting(0, "stop after this many steps (0: no step limit)")
    max_minutes: float = _setting(10.0, "stop after this many minutes of training (0: no time limit)")
    eval_interval: int = _setting(100, "evaluate, log and checkpoint every this many steps")
    checkpoint_interval: int = _setting(0, "also save the latest checkpoint every this many steps (0: at evaluations)")
    eval_batches: int = _setting(0, "validation batches per evaluation, spread evenly (0: all of them)")
    early_stopping_patience: int = _setting(0, "stop after this many evaluations without a better val loss (0: never)")

    # ----- reading and writing ----------------------------------------------------------------------
    @classmethod
    def from_dict(cls, values, source="config"):
        """Build from a dict of field values; unknown keys and wrong types raise ConfigError."""
        if not isinstance(values, dict):
            raise ConfigError(f"{source}: expected a JSON object of settings, got {type(values).__name__}")
        known = [f.name for f in fields(cls)]
        problems = [f"{source}: unknown key {key!r}; known keys are {', '.join(known)}"
                    for key in values if key not in known]
        by_name = {f.name: f for f in fields(cls)}
        problems += [f"{source}: {key} must be {_KIND_NAMES[_kind(by_name[key])]}, got {value!r}"
                     for key, value in values.items() if key in by_name and not _has_kind(value, by_name[key])]
        if problems:
            raise ConfigError("\n".join(problems))
        return cls(**{k: float(v) if _kind(by_name[k]) is float else v for k, v in values.items()})

    @classmethod
    def from_json(cls, path):
        """Read a JSON config file (any subset of the fields; the rest keep their defaults)."""
        try:
            values = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as err:
            raise ConfigError(f"cannot read config file {path}: {err.strerror}") from None
        except ValueError as err:
            raise ConfigError(f"config file {path} is not valid JSON: {err}") from None
        return cls.from_dict(values, source=f"config file {path}")

    def to_dict(self):
        return dataclasses.asdict(self)

    def to_json(self):
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def replace(self, **changes):
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)

    # ----- checking ----------------------------------------------------------------------------------
    def problems(self):
        """Every invalid value, one line each, naming the key and its flag; [] when all is well."""
        out = []

        def bad(name, rule):
            out.append(f"{name} (--{name.replace('_', '-')}) must be {rule}, got {getattr(self, name)!r}")

        for name in ("vocab_size", "seq_len", "d_model", "n_layers", "n_heads", "d_ff", "batch_size",
                     "eval_interval"):
            if getattr(self, name) < 1:
                bad(name, "a positive integer")
        for name in ("warmup_steps", "max_steps", "eval_batches", "early_stopping_patience", "seed",
                     "plateau_patience", "checkpoint_interval"):
            if getattr(self, name) < 0:
                bad(name, ">= 0")
        for name, allowed in CHOICES.items():
            if getattr(self, name) not in allowed:
                bad(name, "one of " + ", ".join(allowed))
        ranges = {  # name: (test, rule)
            "val_fraction": (lambda v: 0 < v < 1, "strictly between 0 and 1"),
            "dropout": (lambda v: 0 <= v < 1, "in [0, 1)"),
            "lr": (lambda v: v > 0, "> 0"),
            "min_lr": (lambda v: 0 <= v <= self.lr, f"in [0, lr={self.lr}]"),
            "plateau_factor": (lambda v: 0 < v < 1, "strictly between 0 and 1"),
            "weight_decay": (lambda v: v >= 0, ">= 0"),
            "beta1": (lambda v: 0 <= v < 1, "in [0, 1)"),
            "beta2": (lambda v: 0 <= v < 1, "in [0, 1)"),
            "grad_clip": (lambda v: v >= 0, ">= 0 (0 turns clipping off)"),
            "max_minutes": (lambda v: v >= 0, ">= 0 (0: no time limit)"),
            "norm_eps": (lambda v: v > 0, "> 0"),
        }
        for name, (ok, rule) in ranges.items():
            value = getattr(self, name)
            if not math.isfinite(value) or not ok(value):
                bad(name, rule)
        if self.pretokenizer == "bytelevel" and 1 <= self.vocab_size < MIN_BYTELEVEL_VOCAB:
            bad("vocab_size", f">= {MIN_BYTELEVEL_VOCAB} with the bytelevel pretokenizer (256 bytes + merges)")
        if self.max_steps == 0 and self.max_minutes == 0:
            out.append("max_steps and max_minutes are both 0, so the run would never end; "
                       "set --max-steps N or --max-minutes M")
        if not out:  # the shape rules (divisibility, RoPE's even head size) live in ModelConfig
            try:
                self.model_config()
            except ValueError as err:
                out.append(str(err))
        return out

    def check(self):
        """Raise ConfigError naming every problem; return self when there is none."""
        problems = self.problems()
        if problems:
            raise ConfigError("\n".join(problems))
        return self

    # ----- derived settings --------------------------------------------------------------------------
    def model_config(self, vocab_size=None):
        """The ModelConfig of this run (`vocab_size`: what the trained tokenizer really has)."""
        return ModelConfig(vocab_size=vocab_size or self.vocab_size, context_len=self.seq_len,
                           d_model=self.d_model, n_layers=self.n_layers, n_heads=self.n_heads, d_ff=self.d_ff,
                           dropout=self.dropout, pos_encoding=self.pos_encoding, tie_weights=self.tie_weights,
                           activation=self.activation, norm_eps=self.norm_eps, bias=self.bias, dtype=self.dtype)


# ----- command-line flags, one per field ----------------------------------------------------------------
_KIND_NAMES = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}


def _kind(f):
    """int, float, bool or str: what a field holds (`str | None` counts as str)."""
    return f.type if f.type in (int, float, bool) else str


def _has_kind(value, f):
    """Whether a JSON value fits field `f` (an int is a fine float; null only where the default is None)."""
    kind = _kind(f)
    if value is None:
        return f.default is None
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def add_flags(parser):
    """Add one flag per TrainConfig field to an argparse parser; unset flags stay absent from the result."""
    group = parser.add_argument_group("settings (each overrides the config file)")
    for f in fields(TrainConfig):
        flag = "--" + f.name.replace("_", "-")
        kind = _kind(f)
        help = f"{f.metadata['help']} [{f.default}]"
        if kind is bool:
            group.add_argument(flag, dest=f.name, action=argparse.BooleanOptionalAction,
                               default=argparse.SUPPRESS, help=help)
        else:
            group.add_argument(flag, dest=f.name, type=kind, choices=CHOICES.get(f.name), metavar=_metavar(f),
                               default=argparse.SUPPRESS, help=help)


def _metavar(f):
    if f.name in CHOICES:
        return "{" + ",".join(CHOICES[f.name]) + "}"
    return {int: "N", float: "X"}.get(_kind(f), "PATH" if f.name == "data" else "S")


def flag_values(namespace):
    """The TrainConfig fields that were given as flags in a parsed argparse namespace."""
    names = {f.name for f in fields(TrainConfig)}
    return {k: v for k, v in vars(namespace).items() if k in names}
