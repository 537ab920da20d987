"""TrainConfig: every setting of a training run, read from JSON and from flags; it holds the ModelConfig.

The data, tokenizer, optimiser and run settings are fields here; every model setting is a field
of models.config.ModelConfig, held as `model` and declared nowhere else. A JSON config nests them:

    {"data": "corpus.txt", "lr": 0.001, "model": {"d_model": 256, "n_heads": 8, "context_len": 64}}

`add_flags` turns each field of both into a command-line flag (d_model -> --d-model; the model's
context_len is also --seq-len, the training window). Flags override the file:

    config = TrainConfig.from_json("configs/seed_d256.json").replace(lr=1e-3, d_model=128)
    config.check()                        # raises ConfigError listing every problem

Configs written before the model settings were nested (flat, with seq_len and bias) still load.
"""

import argparse
import dataclasses
import json
import math
from dataclasses import dataclass, field, fields
from pathlib import Path

from models.config import ModelConfig, expand_bias
from models.preprocess import STEPS
from models.prompts import MAX_PROMPTS, read_prompts_file
from models.tokenizer import MIN_BYTELEVEL_VOCAB, PRETOKENIZERS
from tensorlab.nn.config import CHOICES as MODEL_CHOICES

SCHEDULES = ("warmup_cosine", "constant", "plateau")
DEVICES = ("cpu", "cuda")
SPLITS = ("ordered", "random_windows")
CHOICES = {"pretokenizer": PRETOKENIZERS, "schedule": SCHEDULES, "device": DEVICES, "split": SPLITS, **MODEL_CHOICES}
MODEL_FIELDS = tuple(f.name for f in fields(ModelConfig))
MODEL_HELP = {
    "vocab_size": "BPE vocabulary size (the tokenizer's target; the model gets what it really has; "
    "with --tokenizer, the pretrained tokenizer's own size)",
    "context_len": "tokens per training window, = the model's context length (also --seq-len)",
}


class ConfigError(ValueError):
    """A config file or a flag value is wrong; the message has one line per problem."""


def _setting(default, help):
    return field(default=default, metadata={"help": help})


POSITIVE_COUNTS = ("batch_size", "eval_interval", "log_interval")  # integer settings that must be >= 1
MAX_MINUTES = 1_000_000  # about two years: a time limit past it is a typo (and its horizon would overflow)
COUNTS = (  # integer settings that must be >= 0
    "warmup_steps",
    "max_steps",
    "eval_batches",
    "early_stopping_patience",
    "seed",
    "documents",
    "plateau_patience",
    "checkpoint_interval",
)


@dataclass(frozen=True)
class TrainConfig:
    """Data, tokenizer, optimizer and run settings, plus the model's; the defaults are configs/default.json."""

    comment: str = _setting("", "free text: what the config is for, and how it differs from its source")
    # data and tokenizer
    data: str | None = _setting(
        None,
        "corpus: a text file, a directory of them, or tinystories (downloaded on first use) "
        "(default: $TENSORLAB_CORPUS, or Tiny Shakespeare from the cache or a download)",
    )
    documents: int = _setting(0, "use the first N documents of the corpus: files of a directory, stories (0: all)")
    preprocess: tuple = _setting((), "text preparation steps, in order, comma-separated: " + ", ".join(STEPS))
    tokenizer: str | None = _setting(
        None,
        "a pretrained tokenizer instead of one trained on the corpus: a tokenizer.json, a folder with vocab.json "
        "and merges.txt, or a Hugging Face hub name such as gpt2 (models/pretrained_tokenizer.py)",
    )
    pretokenizer: str = _setting("bytelevel", "how text is cut before BPE (bytelevel is lossless)")
    val_fraction: float = _setting(0.1, "fraction of the tokens, taken from the end, that validates")
    split: str = _setting(
        "ordered",
        "ordered: the last val_fraction validates; random_windows: the misleading "
        "random split of overlapping windows, reported beside the ordered one",
    )
    prompts: tuple = _setting((), f"sample prompts, at most {MAX_PROMPTS} (default: openings of validation passages)")
    # the model: every field of models.config.ModelConfig
    model: ModelConfig = _setting(ModelConfig(), "the model (models/config.py)")
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
    eval_interval: int = _setting(100, "evaluate on validation data and checkpoint every this many steps")
    log_interval: int = _setting(2, "log the mean training loss of every this many steps (and before each evaluation)")
    checkpoint_interval: int = _setting(0, "also save the latest checkpoint every this many steps (0: at evaluations)")
    eval_batches: int = _setting(0, "validation batches per evaluation, spread evenly (0: all of them)")
    early_stopping_patience: int = _setting(0, "stop after this many evaluations without a better val loss (0: never)")

    # ----- reading and writing ----------------------------------------------------------------------
    @classmethod
    def from_dict(cls, values, source="config"):
        """Build from a dict of field values (the model's nested under "model"); problems raise ConfigError."""
        if not isinstance(values, dict):
            raise ConfigError(f"{source}: expected a JSON object of settings, got {type(values).__name__}")
        values = _nest_flat_model_keys(values)
        model_values = values.get("model", {})
        if not isinstance(model_values, dict):
            raise ConfigError(f"{source}: model must be a JSON object of model settings, got {model_values!r}")
        problems = _type_problems(values, fields(cls), source, skip=("model",), also=MODEL_FIELDS)
        problems += _type_problems(model_values, fields(ModelConfig), f"{source}: model")
        if problems:
            raise ConfigError("\n".join(problems))
        try:
            model = ModelConfig(**_as_kinds(model_values, ModelConfig))
        except ValueError as err:
            raise ConfigError("\n".join(f"{source}: {line}" for line in str(err).splitlines())) from None
        return cls(**{**_as_kinds({k: v for k, v in values.items() if k != "model"}, cls), "model": model})

    @classmethod
    def from_json(cls, path):
        """Read a JSON config file (any subset of the fields; the rest keep their defaults)."""
        try:
            values = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as err:
            raise ConfigError(f"cannot read config file {path}: {err.strerror}") from None
        except ValueError as err:
            raise ConfigError(f"config file {path} is not valid JSON: {err}") from None
        except RecursionError:
            raise ConfigError(
                f"config file {path} is nested too deeply to be a config (a JSON object of settings)"
            ) from None
        return cls.from_dict(values, source=f"config file {path}")

    def to_dict(self):
        out = dataclasses.asdict(self)
        out.update(preprocess=list(self.preprocess), prompts=list(self.prompts))
        return out

    def to_json(self):
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def replace(self, **changes):
        """A copy with some fields changed; model fields (d_model=64) change the held ModelConfig.

        Raises ConfigError when the changed model is invalid.
        """
        model_changes = {k: changes.pop(k) for k in list(changes) if k in MODEL_FIELDS}
        if model_changes:
            try:
                changes["model"] = dataclasses.replace(changes.get("model", self.model), **model_changes)
            except ValueError as err:
                raise ConfigError(str(err)) from None
        return dataclasses.replace(self, **changes)

    # ----- checking ----------------------------------------------------------------------------------
    def problems(self):
        """Every invalid value, one line each, naming the key and its flag; [] when all is well.

        The model's own rules are checked once, when its ModelConfig is made.
        """
        out = []

        def bad(name, rule, value=None):
            out.append(f"{name} (--{name.replace('_', '-')}) must be {rule}, got {value or getattr(self, name)!r}")

        for name in POSITIVE_COUNTS:
            if getattr(self, name) < 1:
                bad(name, "a positive integer")
        for name in COUNTS:
            if getattr(self, name) < 0:
                bad(name, ">= 0")
        for name, allowed in CHOICES.items():
            if name not in MODEL_FIELDS and getattr(self, name) not in allowed:
                bad(name, "one of " + ", ".join(allowed))
        unknown_steps = [s for s in self.preprocess if s not in STEPS]
        if unknown_steps:
            bad("preprocess", "steps among " + ", ".join(STEPS), value=unknown_steps)
        ranges = {  # name: (test, rule)
            "val_fraction": (lambda v: 0 < v < 1, "strictly between 0 and 1"),
            "lr": (lambda v: v > 0, "> 0"),
            "min_lr": (lambda v: 0 <= v <= self.lr, f"in [0, lr={self.lr}]"),
            "plateau_factor": (lambda v: 0 < v < 1, "strictly between 0 and 1"),
            "weight_decay": (lambda v: v >= 0, ">= 0"),
            "beta1": (lambda v: 0 <= v < 1, "in [0, 1)"),
            "beta2": (lambda v: 0 <= v < 1, "in [0, 1)"),
            "grad_clip": (lambda v: v >= 0, ">= 0 (0 turns clipping off)"),
            "max_minutes": (lambda v: 0 <= v <= MAX_MINUTES, f"in [0, {MAX_MINUTES}] (0: no time limit)"),
        }
        for name, (ok, rule) in ranges.items():
            value = getattr(self, name)
            if not math.isfinite(value) or not ok(value):
                bad(name, rule)
        for name in ("data", "tokenizer"):  # an unset shell variable ("--data $CORPUS") must not mean the default
            if getattr(self, name) is not None and not getattr(self, name).strip():
                bad(name, "a path or a name, not an empty string")
        if self.tokenizer is not None and self.pretokenizer != "bytelevel":
            bad("pretokenizer", "bytelevel with a pretrained --tokenizer (it brings its own, byte-level)")
        if self.tokenizer is None and self.pretokenizer == "bytelevel" and self.model.vocab_size < MIN_BYTELEVEL_VOCAB:
            bad(
                "vocab_size",
                f">= {MIN_BYTELEVEL_VOCAB} with the bytelevel pretokenizer (256 bytes + merges)",
                value=self.model.vocab_size,
            )
        if any(not str(prompt).strip() for prompt in self.prompts):
            bad("prompts", "non-empty texts (the model continues each)", value=list(self.prompts))
        if len(self.prompts) > MAX_PROMPTS:  # its texts not quoted: a corpus given as --prompts is thousands of lines
            bad("prompts", f"at most {MAX_PROMPTS} texts (the report samples each)", value=f"{len(self.prompts):,}")
        if self.max_steps == 0 and self.max_minutes == 0:
            out.append(
                "max_steps and max_minutes are both 0, so the run would never end; set --max-steps N or --max-minutes M"
            )
        return out

    def check(self):
        """Raise ConfigError naming every problem; return self when there is none."""
        problems = self.problems()
        if problems:
            raise ConfigError("\n".join(problems))
        return self

    # ----- derived settings --------------------------------------------------------------------------
    def model_config(self, vocab_size):
        """The run's ModelConfig with the vocabulary the trained tokenizer really has."""
        return dataclasses.replace(self.model, vocab_size=vocab_size)


# ----- JSON values ----------------------------------------------------------------------------------------
_KIND_NAMES = {int: "an integer", float: "a number", bool: "true or false", str: "a string", tuple: "a list of strings"}
_RENAMED = {"seq_len": "context_len"}  # flat configs before the ModelConfig was nested


def _nest_flat_model_keys(values):
    """A flat config of the old layout (d_model, seq_len, bias... at the top) with those keys moved into model."""
    flat = {k: v for k, v in values.items() if _RENAMED.get(k, k) in MODEL_FIELDS or k == "bias"}
    if not flat:
        return values
    model = dict(values.get("model", {})) if isinstance(values.get("model"), dict) else {}
    for key, value in flat.items():
        model[_RENAMED.get(key, key)] = value
    return {**{k: v for k, v in values.items() if k not in flat}, "model": expand_bias(model)}


def _kind(f):
    """int, float, bool, tuple or str: what a field holds (`str | None` counts as str)."""
    return f.type if f.type in (int, float, bool, tuple) else str


def _has_kind(value, f):
    """Whether a JSON value fits field `f` (an int is a fine float; null only where the default is None)."""
    kind = _kind(f)
    if value is None:
        return f.default is None
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is tuple:
        return isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)
    return isinstance(value, kind)


def _type_problems(values, known_fields, source, skip=(), also=()):
    """One line per unknown key (listing the known ones, and `also`: the model's) and per value of a wrong type."""
    by_name = {f.name: f for f in known_fields}
    known = ", ".join(by_name) + (f" (model: {', '.join(also)})" if also else "")
    problems = [f"{source}: unknown key {key!r}; known keys are {known}" for key in values if key not in by_name]
    return problems + [
        f"{source}: {key} must be {_KIND_NAMES[_kind(by_name[key])]}, got {value!r}"
        for key, value in values.items()
        if key in by_name and key not in skip and not _has_kind(value, by_name[key])
    ]


def _as_kinds(values, cls):
    """JSON values as the field types: ints to floats where a float is meant, lists to tuples."""
    kinds = {f.name: _kind(f) for f in fields(cls)}
    return {k: kinds[k](v) if kinds[k] in (float, tuple) and v is not None else v for k, v in values.items()}


# ----- command-line flags, one per field ----------------------------------------------------------------
def _flag_fields():
    """(field, help) for every flag: the run's fields, then the model's."""
    run = [(f, f.metadata["help"]) for f in fields(TrainConfig) if f.name != "model"]
    return run + [(f, MODEL_HELP.get(f.name, f"model: {f.name.replace('_', ' ')}")) for f in fields(ModelConfig)]


def add_flags(parser):
    """Add one flag per setting to an argparse parser; unset flags stay absent from the result."""
    group = parser.add_argument_group("settings (each overrides the config file)")
    for f, help in _flag_fields():
        flags = ["--" + f.name.replace("_", "-")] + (["--seq-len"] if f.name == "context_len" else [])
        kind = _kind(f)
        help = f"{help} [{f.default}]"
        if kind is bool:
            group.add_argument(
                *flags, dest=f.name, action=argparse.BooleanOptionalAction, default=argparse.SUPPRESS, help=help
            )
        elif f.name == "prompts":
            group.add_argument(
                *flags,
                dest=f.name,
                type=_prompts_flag,
                metavar="FILE",
                default=argparse.SUPPRESS,
                help=help + " (a file, one prompt per line)",
            )
        elif kind is tuple:
            group.add_argument(
                *flags, dest=f.name, type=_comma_list, metavar="A,B", default=argparse.SUPPRESS, help=help
            )
        else:
            group.add_argument(
                *flags,
                dest=f.name,
                type=kind,
                choices=CHOICES.get(f.name),
                metavar=_metavar(f),
                default=argparse.SUPPRESS,
                help=help,
            )


def _prompts_flag(path):
    """read_prompts_file for --prompts, its message kept (argparse replaces a ValueError's with its own)."""
    try:
        return read_prompts_file(path)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("--prompts ")) from None


def _comma_list(text):
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _metavar(f):
    if f.name in CHOICES:
        return "{" + ",".join(CHOICES[f.name]) + "}"
    return {int: "N", float: "X"}.get(_kind(f), "PATH" if f.name in ("data", "tokenizer") else "S")


def flag_values(namespace):
    """The settings given as flags in a parsed argparse namespace (model ones too; TrainConfig.replace takes both)."""
    names = {f.name for f, _ in _flag_fields()}
    return {k: v for k, v in vars(namespace).items() if k in names}
