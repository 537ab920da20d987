"""Train the tiny transformer language model on Tiny Shakespeare; evaluate, sample and compare runs.

    python train.py                                    train the default config (about 10 minutes on 2 cores)
    python train.py --config configs/tiny.json --max-steps 200 --out runs/tiny
    python train.py --resume runs/tiny --max-steps 400  continue a run from its latest checkpoint
    python train.py eval runs/tiny                     a full validation pass of the best checkpoint
    python train.py generate runs/tiny --prompt "ROMEO:" --max-new-tokens 200 --temperature 0.8 --top-k 40
    python train.py sweep configs/seed_d128.json configs/seed_d256.json --out runs/sweep
    python train.py export runs/tiny                   one model.safetensors (config inside) for PyTorch

Every setting of models/train_config.py and models/config.py is a flag (d_model -> --d-model); flags
override --config. configs/seed_000.json ... seed_004.json reproduce the reference reports (docs/seeds.md).
--max-steps and --max-minutes both bound a run, whichever comes first (0 turns one off; the
default config stops after 10 minutes). Ctrl-C, SIGTERM or SIGHUP saves a checkpoint after the
current step; a killed run continues with --resume (or, killed before its first checkpoint, with
--out again), bitwise as if never stopped. One process at a time trains into a run directory; the
rules of the run directory (its files, its lock, when a resume may start) are models/run_dir.py.
A NaN or infinite loss stops the run with one line (exit status 3).
A run directory holds config.json, tokenizer.json, metrics.jsonl, report.md, samples.txt, topk.md,
checkpoints/ (latest, best and a few model snapshots, .safetensors) and figures/. The training
loop itself is models/trainer.py; this file is the command line.

The learning rate warms up linearly for warmup_steps, then follows a cosine down to min_lr
that ends at the horizon: max_steps, or, when max_minutes ends the run first, the number of
steps that fit in the time at the average speed so far. That estimate is renewed every step,
so on a machine whose speed changes the cosine still reaches min_lr when time runs out (on a
steady machine it is the cosine of the elapsed fraction of time). The lr is a function of the
step and the config in force (models/trainer.py lr_at), assigned before every step, so a resume
with another --lr, --min-lr or --warmup-steps follows the new curve from its step on. Runs bounded
by --max-steps alone are exactly repeatable from the seed; time-bounded ones depend on the machine's
speed. With --schedule plateau the lr warms up, then halves (plateau_factor) whenever the
validation loss stalls; constant warms up and stays.
"""

import argparse
import contextlib
import errno
import math
import os
import signal
import sys
import threading
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

import tensorlab
import tensorlab.memory
import tensorlab.threads
from models import checkpoint
from models import run_dir as run_dir_rules
from models.checkpoint import load_checkpoint, read_checkpoint
from models.corpus import CorpusError, load_corpus, sha256_hex
from models.data import random_window_split, split_tokens
from models.evaluate import evaluate
from models.export import cmd_export
from models.preprocess import preprocess
from models.pretrained_tokenizer import load_pretrained
from models.tokenizer import BPETokenizer
from models.train_config import ConfigError, TrainConfig, add_flags, flag_values
from models.trainer import MetricsError, NonFiniteError, Trainer
from models.transformer import TinyTransformerLM
from tensorlab import backend
from tensorlab.serialization import CheckpointError, write_atomically


class UsageError(Exception):
    """Bad input: printed as one line per problem, without a traceback, and the exit status is 2."""


# ----- data and the run directory ------------------------------------------------------------------------


def load_data(cfg, tokenizer=None):
    """The corpus as (tokenizer, train ids, val ids, corpus sha256).

    The tokenizer is the one given, else the pretrained one the config names, else one trained on the corpus.
    """
    try:
        if tokenizer is None and cfg.tokenizer is not None:
            tokenizer = load_pretrained(cfg.tokenizer, cfg.model.vocab_size)
        text = preprocess(load_corpus(cfg.data, cfg.documents), cfg.preprocess)
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
            f"--seq-len {m.context_len} needs about {attention_bytes / 2**30:.0f} GiB for attention alone "
            f"(this machine has {available / 2**30:.0f} GiB); at --batch-size {cfg.batch_size} a "
            f"--seq-len up to about {fits} fits"
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


def prepare_run(cfg, run, resume=False, on_step=None, saved=None):
    """Check everything, load the data and build the Trainer (restored from `latest` when resuming); writes nothing.

    `run` is the Run that run_dir.locked yields (or, in tests, a path): what it finds there must not change
    meanwhile. `saved` is the resumed run's config (run_dir.saved_config), when the caller has read it.
    """
    run_dir = run.path if isinstance(run, run_dir_rules.Run) else Path(run)
    checked_config(cfg)
    tokenizer = None
    if resume:
        saved = saved or run_dir_rules.saved_config(run_dir)
        plan = run_dir_rules.resume_plan(run_dir)
        run_dir_rules.check_resume_changes(run_dir, saved.to_dict(), cfg.to_dict())
        if (run_dir / "tokenizer.json").is_file():  # else killed before it saved one
            tokenizer = load_tokenizer(run_dir / "tokenizer.json")
    else:
        run_dir_rules.check_new_out(run_dir)
        plan = "new"
    tokenizer, train_ids, val_ids, corpus_sha = load_data(cfg, tokenizer)
    trainer = Trainer(cfg, run, tokenizer, train_ids, val_ids, corpus_sha, on_step)
    if plan == "continue":  # else a run that never saved anything: it starts from step 0
        restore(trainer, run_dir / "checkpoints" / "latest", corpus_sha, saved)
    return trainer


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
    if trainer.progress["corpus_sha256"] != corpus_sha:
        raise UsageError(
            f"cannot resume {trainer.run_dir}: the corpus differs from the one it was trained on "
            f"(sha256 {str(trainer.progress['corpus_sha256'])[:12]}..., now {corpus_sha[:12]}...); "
            f"give that file with --data"
        )
    run_dir_rules.check_tokenizer(state, trainer.tokenizer, checkpoint.checkpoint_path(latest))
    step, max_steps = trainer.progress["step"], trainer.cfg.max_steps
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
        print(f"resuming at step {trainer.progress['step']} with changed settings: {said}", file=sys.stderr)
    if not exact:
        print(
            f"note: {checkpoint.checkpoint_path(latest)} was saved on a GPU before tensorlab saved the dropout "
            "draw counts, so this resumed run draws other dropout masks than an uninterrupted one would",
            file=sys.stderr,
        )


# ----- training ------------------------------------------------------------------------------------------


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
        initial=trainer.progress["step"],
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
            f"the one saved before step {trainer.progress['step'] + 1}",
            file=sys.stderr,
        )
        return None
    finally:
        bar.close()
        trainer.on_step = user_on_step
    if final is None:
        print(
            f"interrupted at step {trainer.progress['step']}: saved {run_dir / 'checkpoints' / 'latest'}; "
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


class _StopOnSignal:
    """While active, a first Ctrl-C, SIGTERM or SIGHUP asks the loop to stop after the current step and save `latest`.

    `kill`, `docker stop`, a scheduler's pre-emption and a closed terminal send SIGTERM or SIGHUP:
    each is a polite request to stop, as Ctrl-C is. A second signal aborts at once (a KeyboardInterrupt):
    what is being written then is a temporary file, and the files already there stay whole.
    """

    SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")

    def __init__(self):
        self.requested, self.signum, self._old = False, None, {}

    def _handle(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested, self.signum = True, signum
        name = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        print(f"\n{name}: saving a checkpoint after this step (a second signal aborts)", file=sys.stderr)

    def exit_status(self):
        """128 + the signal's number, as a shell reports a process ended by it (130 for Ctrl-C)."""
        return 128 + (self.signum or signal.SIGINT)

    def __enter__(self):
        self.requested, self.signum = False, None
        if threading.current_thread() is threading.main_thread():
            for name in self.SIGNALS:
                if hasattr(signal, name):
                    number = getattr(signal, name)
                    self._old[number] = signal.signal(number, self._handle)
        return self

    def __exit__(self, *exc):
        for number, handler in self._old.items():
            signal.signal(number, handler)
        self._old.clear()


STOP = _StopOnSignal()


# ----- the command line ----------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors become one-line UsageErrors instead of usage text."""

    def error(self, message):
        raise UsageError(message)


def train_parser():
    """The parser of plain `train.py [flags]`: --config, --out, --resume and one flag per TrainConfig field."""
    parser = _Parser(
        prog="train.py",
        description="Train the tiny transformer LM (subcommands: eval, generate, sweep: see `train.py eval --help`).",
    )
    parser.add_argument("--config", metavar="FILE", help="JSON config file (configs/*.json)")
    parser.add_argument("--out", metavar="DIR", help="run directory (default: runs/<config name>-<time>)")
    parser.add_argument("--resume", metavar="RUN_DIR", help="continue this run from its latest checkpoint")
    parser.add_argument("--no-report", action="store_true", help="skip the figures, samples and report.md at the end")
    add_flags(parser)
    return parser


def compare_with_ordered_split(run, final):
    """The random-window split's number beside the ordered held-out tail's, which training never saw."""
    text = preprocess(load_corpus(run.cfg.data, run.cfg.documents), run.cfg.preprocess)
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


def resolve_config(args, saved=None):
    """The run's TrainConfig: the default, a --config file or a resumed run's config (`saved`, if read), then the
    flags."""
    if args.resume and args.config:
        raise UsageError("--resume continues a run with its own config.json; leave out --config")
    for flag in ("resume", "out", "config"):
        if getattr(args, flag) is not None:
            run_dir_rules.checked_path(getattr(args, flag), f"--{flag}")
    try:
        if args.resume:
            base = saved or run_dir_rules.saved_config(args.resume)
        else:
            base = TrainConfig.from_json(args.config) if args.config else TrainConfig()
        cfg = base.replace(**flag_values(args))  # a model flag is checked here, with its ModelConfig
    except ConfigError as err:
        raise UsageError(str(err)) from None
    return checked_config(cfg)


def default_out(config_path):
    """runs/<config name>-<date-time>."""
    name = Path(config_path).stem if config_path else "default"
    return Path("runs") / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"


def cmd_train(argv, on_step=None):
    """train.py [--config FILE] [--out DIR | --resume RUN_DIR] [flags]"""
    args = train_parser().parse_args(argv)
    saved = run_dir_rules.saved_config(run_dir_rules.checked_path(args.resume, "--resume")) if args.resume else None
    cfg = resolve_config(args, saved)
    run_dir = Path(args.resume) if args.resume else Path(args.out or default_out(args.config))
    if args.resume and args.out and Path(args.out) != run_dir:
        raise UsageError("--resume writes into the run it continues; leave out --out")
    with run_dir_rules.locked(run_dir) as run:
        trainer = prepare_run(cfg, run, bool(args.resume), on_step, saved)
        return 0 if train(trainer, not args.no_report) else STOP.exit_status()


def load_run(run_dir, checkpoint_name="best", data=None, device=None):
    """A run's config, tokenizer and model with the named checkpoint loaded (on `device`, default the run's)."""
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
        path = run_dir / "checkpoints" / checkpoint_name
        if not checkpoint.exists(path):
            raise UsageError(
                f"{run_dir} has no {checkpoint_name} checkpoint yet (none is written before the first "
                f"evaluation); continue the run with --resume {run_dir}"
            )
        state = load_checkpoint(path, model)
        run_dir_rules.check_tokenizer(state, tokenizer, checkpoint.checkpoint_path(path))
    except (ConfigError, CheckpointError, ValueError) as err:
        raise UsageError(str(err)) from None
    return cfg, tokenizer, model, state


def eval_parser():
    parser = _Parser(prog="train.py eval", description="Evaluate a run's checkpoint on every validation token.")
    parser.add_argument("run_dir")
    parser.add_argument("--checkpoint", default="best", help="best, latest, or snapshot_stepNNNNNN [best]")
    parser.add_argument("--data", metavar="PATH", help="the corpus, if not where the run found it")
    parser.add_argument("--force", action="store_true", help="evaluate on --data even if it is not the run's corpus")
    parser.add_argument("--device", choices=("cpu", "cuda"), help="where to evaluate [the run's device]")
    return parser


def cmd_eval(argv):
    """train.py eval RUN_DIR [--checkpoint best|latest|snapshot_stepN] [--data PATH [--force]] [--device]"""
    args = eval_parser().parse_args(argv)
    cfg, tokenizer, model, state = load_run(args.run_dir, args.checkpoint, args.data, args.device)
    _, _, val_ids, corpus_sha = load_data(cfg, tokenizer)
    trained_on = state.get("corpus_sha256") or run_corpus_sha(args.run_dir)
    if trained_on not in (None, corpus_sha) and not args.force:
        given = f"--data {args.data}" if args.data else f"the corpus at {cfg.data or 'the default place'}"
        raise UsageError(
            f"{given} is not the corpus {args.run_dir} was trained on (sha256 {corpus_sha[:12]}..., the run's "
            f"{trained_on[:12]}...); give that file with --data, or add --force to evaluate on this one anyway"
        )
    result = evaluate(model, val_ids, tokenizer, cfg.batch_size)
    print(
        f"{args.run_dir} ({args.checkpoint}, step {state.get('progress', state).get('step')}): val loss "
        f"{result['loss']:.4f}, perplexity {result['perplexity']:.3f}, bits per byte {result['bits_per_byte']:.4f} "
        f"({result['tokens']:,} tokens, {result['bytes']:,} bytes)"
    )
    return 0


def run_corpus_sha(run_dir):
    """The sha256 of the corpus the run trained on (from its latest checkpoint), or None."""
    try:
        return read_checkpoint(Path(run_dir) / "checkpoints" / "latest")["progress"]["corpus_sha256"]
    except (CheckpointError, KeyError, TypeError, AttributeError):
        return None


def generate_parser():
    parser = _Parser(prog="train.py generate", description="Continue a prompt with a trained run's model.")
    parser.add_argument("run_dir")
    parser.add_argument("--prompt", default="\n", help="text to continue [a newline]")
    parser.add_argument("--max-new-tokens", type=int, default=200)
    parser.add_argument("--temperature", type=float, default=0.8, help="0 picks the most likely token [0.8]")
    parser.add_argument("--top-k", type=int, default=None, help="sample only among the k most likely tokens")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checkpoint", default="best", help="best, latest, or snapshot_stepNNNNNN [best]")
    parser.add_argument("--device", choices=("cpu", "cuda"), help="where to run the model [the run's device]")
    return parser


def cmd_generate(argv):
    """train.py generate RUN_DIR --prompt TEXT [--max-new-tokens --temperature --top-k --seed --device]"""
    args = generate_parser().parse_args(argv)
    if args.max_new_tokens < 0:
        raise UsageError(f"--max-new-tokens must be >= 0, got {args.max_new_tokens}")
    if not (math.isfinite(args.temperature) and args.temperature >= 0):
        raise UsageError(
            f"--temperature must be a finite number >= 0 (0 picks the most likely token), got {args.temperature}"
        )
    _, tokenizer, model, _ = load_run(args.run_dir, args.checkpoint, device=args.device)
    if args.top_k is not None and not 1 <= args.top_k <= tokenizer.vocab_size:
        raise UsageError(f"--top-k must be in [1, {tokenizer.vocab_size}] (the vocabulary size), got {args.top_k}")
    try:
        args.prompt.encode("utf-8")
    except UnicodeEncodeError:  # bytes that are not UTF-8 reach Python as lone surrogates
        raise UsageError("--prompt is not valid UTF-8 text; give the prompt in UTF-8") from None
    prompt = tokenizer.encode(args.prompt)
    if not len(prompt):
        raise UsageError("--prompt is empty; give some text to continue")
    try:
        ids = model.generate(
            prompt[None, :], args.max_new_tokens, args.temperature, args.top_k, np.random.default_rng(args.seed)
        )
    except ValueError as err:
        raise UsageError(str(err)) from None
    print(tokenizer.decode(ids[0]))
    return 0


def cmd_sweep(argv, on_step=None):
    """train.py sweep CONFIG... [--out DIR] [flags for every run]: an interrupted sweep continues when run again."""
    parser = _Parser(
        prog="train.py sweep",
        description="Train several configs, each into its own subdirectory "
        "of --out, and compare them (sweep.md, sweep_perplexity.png). "
        "Run the same command again to continue an interrupted sweep.",
    )
    parser.add_argument("configs", nargs="+", metavar="CONFIG")
    parser.add_argument("--out", metavar="DIR", help="sweep directory (default: runs/sweep-<time>)")
    add_flags(parser)
    args = parser.parse_args(argv)
    out = run_dir_rules.checked_path(args.out, "--out") if args.out is not None else default_out("sweep")
    names = [Path(c).stem for c in args.configs]
    if len(set(names)) != len(names):
        raise UsageError(f"sweep: config names must differ (each names a subdirectory), got {', '.join(names)}")
    run_dir_rules.check_writable(out)
    if out.exists() and (
        not out.is_dir()
        or not {p.name for p in out.iterdir()} <= {*names, "sweep.md", "sweep_perplexity.png", run_dir_rules.LOCK_NAME}
    ):
        raise UsageError(
            f"--out {out} exists and holds more than this sweep's runs ({', '.join(names)}); choose a new directory"
        )
    with contextlib.ExitStack() as locks:
        here = locks.enter_context(run_dir_rules.locked(out))  # one sweep at a time writes sweep.md
        runs = [locks.enter_context(run_dir_rules.locked(out / name)) for name in names]
        return sweep(args, here, runs, on_step)


def sweep(args, here, runs, on_step):
    """Train (or continue) each config of the sweep into its run, then compare them; returns the exit status."""
    out, names, trainers = here.path, [run.path.name for run in runs], []
    for path, name, run in zip(args.configs, names, runs):  # check every config and its data before training any
        try:
            cfg = TrainConfig.from_json(path).replace(**flag_values(args))
        except ConfigError as err:
            raise UsageError(str(err)) from None
        started = checkpoint.exists(out / name / "checkpoints" / "latest")
        saved = run_dir_rules.saved_config(out / name) if started else None
        changed = saved and [
            k for k, v in saved.to_dict().items() if k not in ("comment", "data") and v != cfg.to_dict()[k]
        ]
        if changed:
            raise UsageError(
                f"sweep: {out / name} was trained with another {', '.join(changed)} than {path} now gives; "
                f"a sweep continues a run only with its own config: sweep into a new --out"
            )
        trainers.append(prepare_run(cfg, run, resume=started, on_step=on_step, saved=saved))
    rows, curves = [], {}
    for name, trainer in zip(names, trainers):
        final = finished_row(trainer) or train(trainer)
        if final is None:
            return STOP.exit_status()
        curves[name] = trainer.metrics
        rows.append(sweep_row(name, trainer, final))
    from models import plots
    from models.report import sweep_table

    table = sweep_table(rows)
    here.check_in_place()
    plots.sweep_perplexity(curves, here.files / "sweep_perplexity.png")
    write_atomically(
        here.files / "sweep.md", f"# Sweep\n\n{table}\n![validation perplexity](sweep_perplexity.png)\n".encode()
    )
    print(table + f"\nsweep outputs in {out}: sweep.md, sweep_perplexity.png", file=sys.stderr)
    return 0


def finished_row(trainer):
    """The final metrics row of a run that already finished (report written), else None."""
    done = (trainer.run_dir / "report.md").is_file() and trainer.metrics and trainer.metrics[-1].get("full_eval")
    return trainer.metrics[-1] if done and trainer.stop_reason() else None


def sweep_row(name, trainer, final):
    progress, cfg = trainer.progress, trainer.cfg
    return {
        "config": name,
        "parameters": trainer.model.num_parameters(),
        "steps": progress["step"],
        "minutes": final["elapsed_s"] / 60,
        "tokens/s": progress["step"] * cfg.batch_size * cfg.model.context_len / max(progress["train_time_s"], 1e-9),
        "best val loss": progress["best_val_loss"],
        "final val loss": final["val_loss"],
        "perplexity": final["perplexity"],
        "bits per byte": final["bits_per_byte"],
        "tokenizer": f"{cfg.tokenizer or cfg.pretokenizer} {trainer.tokenizer.vocab_size}",
    }


COMMANDS = {"eval": cmd_eval, "generate": cmd_generate, "sweep": cmd_sweep, "export": cmd_export}


def main(argv=None, on_step=None):
    """Run the command line `argv` (default sys.argv[1:]); returns the exit status.

    `on_step(step)`, if given, is called after every training step (tests interrupt runs with it).
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    command = COMMANDS.get(argv[0]) if argv else None
    try:
        if command in (None, cmd_sweep):
            return (command or cmd_train)(argv[1:] if command else argv, on_step=on_step)
        return command(argv[1:])
    except (UsageError, run_dir_rules.RunDirError, ConfigError) as err:
        for line in str(err).splitlines():
            print(f"train.py: error: {line}", file=sys.stderr)
        return 2
    except NonFiniteError as err:
        print(f"train.py: stopped: {err}", file=sys.stderr)
        return 3
    except BrokenPipeError:  # the reader of the output went away (`... | head`): stop quietly, as a Unix tool does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error when Python flushes
        return 141  # 128 + SIGPIPE: what a shell reports for a tool its pipe's reader stopped
    except OSError as err:  # a full disk (ENOSPC), a read-only (EROFS) or forbidden (EACCES) place, ...
        what = f"{err.filename or 'a file'}: {err.strerror or err}"
        if err.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM):
            what += "; free space or make it writable, then continue with --resume (files written before are whole)"
        print(f"train.py: error: cannot use {what}", file=sys.stderr)
        return 1
    except MemoryError:  # CuPy's OutOfMemoryError is one too
        print(
            "train.py: error: out of memory; try a smaller --batch-size or --seq-len (the attention of one layer "
            "holds batch_size * n_heads * seq_len^2 numbers)",
            file=sys.stderr,
        )
        return 2
    except SystemExit as exit:  # --help
        return exit.code or 0
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    tensorlab.memory.keep_freed_memory()
    tensorlab.threads.use_threads()  # every core for the element-wise passes too (OPENBLAS_NUM_THREADS limits it)
    sys.exit(main())
