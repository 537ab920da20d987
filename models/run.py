"""A run from its start to its end: the Run holds the run directory and the Trainer that trains into it.

    with Run.new(out, cfg) as run:          # or Run.resume(path, {field: value of a flag})
        final = run.train()                 # the final metrics row; None when interrupted

The resume walk is train.py -> Run -> Trainer. Run.resume reads the run's config once
(run_dir.saved_config), applies the flags, takes the run's lock (run_dir.locked), checks what a
resume may change (run_dir.RESUME_POLICY), loads the data and restores the Trainer from `latest`.
`load_run` is the reading side (eval, generate): a run's config, tokenizer and model, the corpus
checked against the one the run trained on. The run directory's rules are models/run_dir.py, the
training loop models/trainer.py; train.py is the command line over them.
"""

import argparse
import contextlib
import math
import os
import sys
from pathlib import Path

import numpy as np
from tqdm import tqdm

import tensorlab
from models import checkpoint
from models import run_dir as run_dir_rules
from models.checkpoint import load_checkpoint, read_checkpoint
from models.corpus import CorpusError, load_corpus, sha256_hex
from models.data import random_window_split, split_tokens
from models.evaluate import evaluate
from models.metrics import MetricsError
from models.preprocess import preprocess
from models.pretrained_tokenizer import load_pretrained
from models.stop import STOP
from models.tokenizer import BPETokenizer
from models.train_config import ConfigError, TrainConfig
from models.trainer import Trainer
from models.transformer import TinyTransformerLM
from tensorlab import backend
from tensorlab.serialization import CheckpointError


class UsageError(Exception):
    """Bad input: printed as one line per problem, without a traceback, and the exit status is 2."""


class Parser(argparse.ArgumentParser):
    """The parser of every train.py command: its errors are UsageErrors (one line), not usage text."""

    def error(self, message):
        raise UsageError(message)


def corpus_text(cfg):
    """The config's corpus, preprocessed: the text a run trains on (its sha256 is the run's corpus_sha256)."""
    try:
        return preprocess(load_corpus(cfg.data, cfg.documents), cfg.preprocess)
    except (CorpusError, ValueError) as err:
        raise UsageError(str(err)) from None


def load_data(cfg, tokenizer=None, text=None):
    """The corpus (`text`, else read) as (tokenizer, train ids, val ids, corpus sha256).

    The tokenizer is the one given, else the pretrained one the config names, else one trained on the corpus.
    """
    text = corpus_text(cfg) if text is None else text
    try:
        if tokenizer is None and cfg.tokenizer is not None:
            tokenizer = load_pretrained(cfg.tokenizer, cfg.model.vocab_size)
        if tokenizer is None:
            tokenizer = BPETokenizer.train(text, cfg.model.vocab_size, cfg.pretokenizer)
        train_ids, val_ids = split_tokens(tokenizer.encode(text), cfg.val_fraction)
    except (CorpusError, ValueError) as err:
        raise UsageError(str(err)) from None
    seq_len = cfg.model.context_len
    for split, ids in (("training", train_ids), ("validation", val_ids)):
        if len(ids) < seq_len + 1:
            raise UsageError(
                f"corpus too small: its {split} split has {len(ids)} tokens, but seq_len={seq_len} "
                f"needs at least {seq_len + 1}; use more text, a smaller --seq-len or another "
                f"--val-fraction"
            )
    if cfg.split == "random_windows":  # validate on leaky windows, as report 000 did; see models/data.py
        train_ids, val_ids, _ = random_window_split(
            np.concatenate([train_ids, val_ids]), seq_len, cfg.val_fraction, cfg.seed
        )
    return tokenizer, train_ids, val_ids, sha256_hex(text.encode("utf-8"))


def load_tokenizer(path):
    """The tokenizer saved at `path`, or a UsageError naming the file."""
    try:
        return BPETokenizer.load(path)
    except Exception as err:  # tokenizers raises plain Exceptions on a JSON of the wrong shape
        raise UsageError(f"{path} is not a usable tokenizer file ({str(err).splitlines()[0][:120]})") from None


def training_bytes(cfg):
    """A lower bound on the memory training needs: weights, gradients and two AdamW moments, and a batch's logits."""
    m = cfg.model
    matrices = (3 if m.activation == "swiglu" else 2) * m.d_model * m.d_ff + 4 * m.d_model**2
    parameters = (1 if m.tie_weights else 2) * m.vocab_size * m.d_model + m.n_layers * matrices
    logits = 3 * cfg.batch_size * m.context_len * m.vocab_size  # logits, probabilities, their gradient
    return 4 * (4 * parameters + logits)  # float32


def checked_config(cfg):
    """`cfg` if every value is valid, its device works and its attention and model fit in memory, else UsageError."""
    try:
        cfg.check()
    except ConfigError as err:
        raise UsageError(str(err)) from None
    problem = backend.gpu_problem() if cfg.device == "cuda" else None
    if problem is not None:
        raise UsageError(f"--device cuda: {problem}; use --device cpu")
    m = cfg.model
    available = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") if hasattr(os, "sysconf") else math.inf
    attention_bytes = 6 * m.n_layers * cfg.batch_size * m.n_heads * m.context_len**2 * 4  # scores, probs, grads
    if cfg.device == "cpu" and attention_bytes > available / 2:
        fits = int(math.sqrt(available / 2 / (6 * m.n_layers * cfg.batch_size * m.n_heads * 4)))
        raise UsageError(
            f"--seq-len {m.context_len} at --batch-size {cfg.batch_size}, --n-heads {m.n_heads} and --n-layers "
            f"{m.n_layers} needs about {attention_bytes / 2**30:.3g} GiB for attention alone (this machine has "
            f"{available / 2**30:.0f} GiB); "
            + (
                f"with the others as they are, a --seq-len up to about {fits} fits"
                if fits
                else "not even --seq-len 1 fits: make --batch-size, --n-heads or --n-layers smaller"
            )
        )
    model_bytes = training_bytes(cfg)
    if model_bytes > available / 2:
        raise UsageError(
            f"a model of --vocab-size {m.vocab_size}, --d-model {m.d_model}, --d-ff {m.d_ff}, --n-layers "
            f"{m.n_layers} at --batch-size {cfg.batch_size} needs about {model_bytes / 2**30:.3g} GiB to train "
            f"(its weights, gradients, AdamW's moments and one batch's logits); this machine has "
            f"{available / 2**30:.0f} GiB: make it smaller"
        )
    return cfg


class Run:
    """A run directory held by this process (its lock, its open directory: run_dir.HeldDir) and its Trainer."""

    def __init__(self, held, trainer):
        self.path, self.held, self.trainer = held.path, held, trainer

    @classmethod
    def new(cls, path, cfg, on_step=None):
        """A context manager: a new run of config `cfg` into `path` (new, empty, or stopped before its first
        checkpoint), held while the block runs."""
        return cls.open(run_dir_rules.checked_path(path, "--out"), cfg, None, on_step)

    @classmethod
    def resume(cls, path, flags=None, on_step=None):
        """A context manager: the run at `path` restored from its latest checkpoint with `flags` ({field: value})
        applied to its config, held while the block runs."""
        path = run_dir_rules.checked_path(path, "--resume")
        saved = run_dir_rules.saved_config(path)
        return cls.open(path, saved.replace(**(flags or {})), saved, on_step)

    @classmethod
    @contextlib.contextmanager
    def open(cls, path, cfg, saved=None, on_step=None):
        """Hold `path` inside the block; yields its Run, resumed when `saved` (the config it trained with) is given.

        Everything is checked and the data loaded before anything is written.
        """
        checked_config(cfg)
        with run_dir_rules.locked(path) as held:
            yield cls(held, trainer_for(cfg, held, saved, on_step))

    def train(self, report=True):
        """Train to the end, then write the report; returns the final metrics row (None: interrupted)."""
        return train(self.trainer, report)


def trainer_for(cfg, held, saved, on_step):
    """The Trainer of the held run: new, or restored from `latest` when `saved` (the run's config) is given."""
    tokenizer, plan = None, "new"
    if saved is not None:
        plan = run_dir_rules.resume_plan(held.path)
        run_dir_rules.check_resume_changes(held.path, saved.to_dict(), cfg.to_dict())
        if (held.path / "tokenizer.json").is_file():  # else killed before it saved one
            tokenizer = load_tokenizer(held.path / "tokenizer.json")
    else:
        run_dir_rules.check_new_out(held.path)
    tokenizer, train_ids, val_ids, corpus_sha = load_data(cfg, tokenizer)
    trainer = Trainer(cfg, held, tokenizer, train_ids, val_ids, corpus_sha, on_step)
    if plan == "continue":  # else a run that never saved anything: it starts from step 0
        restore(trainer, held.path / "checkpoints" / "latest", corpus_sha, saved)
    return trainer


def load_run(run_dir, checkpoint_name="best", data=None, device=None, force=False):
    """A run's (config, tokenizer, model with the named checkpoint loaded, its state, corpus text or None), for eval
    and generate: the corpus (the run's, or `data`) is read and checked against the one the run trained on, unless
    `force` or the run is older than the fingerprint (then the text is None)."""
    run_dir = run_dir_rules.checked_path(run_dir, "RUN_DIR")
    for name in ("config.json", "tokenizer.json"):
        if not (run_dir / name).is_file():
            raise UsageError(f"{run_dir} is not a run directory: it has no {name}")
    try:
        cfg = TrainConfig.from_json(run_dir / "config.json")
        cfg = checked_config(cfg.replace(**{k: v for k, v in (("data", data), ("device", device)) if v}))
        tokenizer = load_tokenizer(run_dir / "tokenizer.json")
        tensorlab.manual_seed(cfg.seed)
        model = TinyTransformerLM(cfg.model_config(tokenizer.vocab_size)).to(cfg.device)
        path = checkpoint.in_run(run_dir, checkpoint_name)
        if not checkpoint.exists(path):
            raise UsageError(
                f"{run_dir} has no {checkpoint_name} checkpoint yet (none is written before the first "
                f"evaluation); continue the run with --resume {run_dir}"
            )
        state = load_checkpoint(path, model)
        run_dir_rules.check_tokenizer(state, tokenizer, checkpoint.checkpoint_path(path))
    except (ConfigError, CheckpointError, ValueError) as err:
        raise UsageError(str(err)) from None
    trained_on = state.get("corpus_sha256") or run_corpus_sha(run_dir)  # None: a run older than the fingerprint
    if force or trained_on is None:
        return cfg, tokenizer, model, state, None
    text = corpus_text(cfg)
    sha = sha256_hex(text.encode("utf-8"))
    if trained_on != sha:
        given = f"--data {data}" if data else f"the corpus at {cfg.data or 'the default place'}"
        raise UsageError(
            f"{given} is not the corpus {run_dir} was trained on (sha256 {sha[:12]}..., the run's "
            f"{trained_on[:12]}...); give that file with --data, or add --force to use this one anyway"
        )
    return cfg, tokenizer, model, state, text


def run_corpus_sha(run_dir):
    """The sha256 of the corpus the run trained on (from its latest checkpoint), or None."""
    try:
        return read_checkpoint(Path(run_dir) / "checkpoints" / "latest")["progress"]["corpus_sha256"]
    except (CheckpointError, KeyError, TypeError, AttributeError):
        return None


def restore(trainer, latest, corpus_sha, saved):
    """Load `latest` into the trainer; UsageError naming the file when it cannot continue this run."""
    try:
        state = load_checkpoint(latest, trainer.model)
        exact = trainer.load_state_dict(state)
    except (CheckpointError, MetricsError) as err:
        raise UsageError(f"cannot resume: {err}") from None
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise UsageError(
            f"cannot resume: {checkpoint.checkpoint_path(latest)} does not hold a training state "
            f"({type(err).__name__}: {err})"
        ) from None
    if trainer.progress.corpus_sha256 != corpus_sha:
        raise UsageError(
            f"cannot resume {trainer.run_dir}: the corpus differs from the one it was trained on "
            f"(sha256 {str(trainer.progress.corpus_sha256)[:12]}..., now {corpus_sha[:12]}...); "
            f"give that file with --data"
        )
    run_dir_rules.check_tokenizer(state, trainer.tokenizer, checkpoint.checkpoint_path(latest))
    step, max_steps = trainer.progress.step, trainer.cfg.max_steps
    if max_steps and max_steps < step:
        raise UsageError(
            f"cannot resume {trainer.run_dir} with --max-steps {max_steps}: it has reached step {step}; "
            f"give --max-steps {step} or more (0: no step limit)"
        )
    in_checkpoint = state.get("config")  # the settings it trained with, in today's layout (an older run's are flat)
    trained = TrainConfig.from_dict(in_checkpoint, f"{latest}") if in_checkpoint else saved
    trained_with = trained.to_dict()
    run_dir_rules.check_resume_changes(trainer.run_dir, trained_with, trainer.cfg.to_dict())
    changes = trainer.note_changes(trained_with)
    if changes:
        said = ", ".join(f"{name} {old!r} -> {new!r}" for name, (old, new) in changes.items())
        print(f"resuming at step {trainer.progress.step} with changed settings: {said}", file=sys.stderr)
    if not exact:
        print(
            f"note: {checkpoint.checkpoint_path(latest)} was saved on a GPU before tensorlab saved the dropout "
            "draw counts, so this resumed run draws other dropout masks than an uninterrupted one would",
            file=sys.stderr,
        )


def open_run_dir(trainer):
    """Clean what a killed run left, write config.json and tokenizer.json, and say what is trained where."""
    run_dir = trainer.run_dir
    trainer.check_in_place()
    run_dir_rules.open_for_training(trainer.files, trainer.cfg.to_json(), trainer.tokenizer)
    print(
        f"training {trainer.model.num_parameters():,} parameters on {len(trainer.train_ids):,} tokens "
        f"(validation {np.size(trainer.val_ids):,}); writing to {run_dir}",
        file=sys.stderr,
    )


def train(trainer, report=True):
    """Run a prepared Trainer to its end, then write the report; returns the final metrics row (None: interrupted)."""
    run_dir, cfg = trainer.run_dir, trainer.cfg
    open_run_dir(trainer)
    bar = tqdm(
        total=cfg.max_steps or None,
        initial=trainer.progress.step,
        desc=run_dir.name,
        unit="step",
        dynamic_ncols=True,
        mininterval=0.5,
    )
    user_on_step = trainer.on_step
    trainer.on_step = lambda step: (bar.update(1), user_on_step(step))

    def log(row):
        on = "every validation token" if row["full_eval"] else f"{cfg.eval_batches} validation batches"
        bar.write(
            f"step {row['step']}: val loss {row['val_loss']:.4f}, perplexity {row['perplexity']:.2f}, "
            f"bits/byte {row['bits_per_byte']:.4f} (on {on})"
        )

    try:
        with STOP as stop:
            final = trainer.fit(lambda: stop.requested, log)
    except KeyboardInterrupt:
        print(
            f"interrupted in the middle of a step or an evaluation: nothing more saved; the latest checkpoint is "
            f"the one saved before step {trainer.progress.step + 1}",
            file=sys.stderr,
        )
        return None
    finally:
        bar.close()
        trainer.on_step = user_on_step
    if final is None:
        print(
            f"interrupted at step {trainer.progress.step}: saved {run_dir / 'checkpoints' / 'latest'}; "
            f"continue with python train.py --resume {run_dir}",
            file=sys.stderr,
        )
        return None
    return report_end(trainer, final, report)


def report_end(trainer, final, report):
    """After the last step: the ordered-split comparison, the report, and where everything is; returns `final`."""
    run_dir = trainer.run_dir
    trainer.check_in_place()
    if trainer.cfg.split == "random_windows":
        final = {**final, **compare_with_ordered_split(trainer, final)}
    if report:
        from models.report import write_outputs  # matplotlib loads only when a run finishes

        write_outputs(trainer, final)
    outputs = (
        "report.md, metrics.jsonl, samples.txt, topk.md, figures/, checkpoints/"
        if report
        else "metrics.jsonl, checkpoints/ (no report: --no-report)"
    )
    print(
        f"done: final val loss {final['val_loss']:.4f}, perplexity {final['perplexity']:.2f}, bits per byte "
        f"{final['bits_per_byte']:.4f} (on every validation token)\noutputs in {run_dir}: {outputs}",
        file=sys.stderr,
    )
    return final


def compare_with_ordered_split(run, final):
    """The random-window split's number beside the ordered held-out tail's, which training never saw."""
    text = corpus_text(run.cfg)
    _, _, ordered = random_window_split(
        run.tokenizer.encode(text), run.cfg.model.context_len, run.cfg.val_fraction, run.cfg.seed
    )
    honest = evaluate(run.model, ordered, run.tokenizer, run.cfg.batch_size)
    note = (
        f"random-window split: validation perplexity {final['perplexity']:.2f} is optimistic; the ordered "
        f"held-out tail gives {honest['perplexity']:.2f} ({honest['perplexity'] / final['perplexity']:.2f}x "
        f"higher), because overlapping windows put validation text into training"
    )
    print(note, file=sys.stderr)
    return {
        "ordered_val_loss": honest["loss"],
        "ordered_perplexity": honest["perplexity"],
        "ordered_bits_per_byte": honest["bits_per_byte"],
        "split_note": note,
    }
