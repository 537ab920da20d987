"""Train the tiny transformer language model on Tiny Shakespeare; evaluate, sample and compare runs.

    python train.py                                    train the default config (about 10 minutes on 2 cores)
    python train.py --config configs/tiny.json --max-steps 200 --out runs/tiny
    python train.py --resume runs/tiny --max-steps 400  continue a run from its latest checkpoint
    python train.py eval runs/tiny                     a full validation pass of the best checkpoint
    python train.py generate runs/tiny --prompt "ROMEO:" --max-new-tokens 200 --temperature 0.8 --top-k 40
    python train.py sweep configs/seed_d128.json configs/seed_d256.json --out runs/sweep
    python train.py export runs/tiny                   model.safetensors + config.json for PyTorch (models/torch_model.py)

Every setting of models/train_config.py and models/config.py is a flag (d_model -> --d-model); flags
override --config. configs/seed_000.json ... seed_004.json reproduce the reference reports (docs/seeds.md).
--max-steps and --max-minutes both bound a run, whichever comes first (0 turns one off; the
default config stops after 10 minutes). Ctrl-C saves a checkpoint after the current step.
A run directory holds config.json, tokenizer.json, metrics.jsonl, report.md, samples.txt, topk.md,
checkpoints/ (latest, best and a few model snapshots) and figures/.

The learning rate warms up linearly for warmup_steps, then follows a cosine down to min_lr
that ends at the horizon: max_steps, or, when max_minutes ends the run first, the number of
steps that fit in the time at the average speed so far. That estimate is renewed every step,
so on a machine whose speed changes the cosine still reaches min_lr when time runs out (on a
steady machine it is the cosine of the elapsed fraction of time). Runs bounded by --max-steps
alone are exactly repeatable from the seed; time-bounded ones depend on the machine's speed.
"""
import argparse
import json
import math
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

import tensorlab
from models import plots
from models.checkpoint import load_checkpoint, restore_training_state, save_checkpoint, save_snapshot
from models.corpus import CorpusError, load_corpus, sha256_hex
from models.data import random_window_split, random_windows, split_tokens
from models.evaluate import evaluate
from models.export import cmd_export
from models.layer_stats import copy_weights, grad_norms, layer_groups, update_ratios
from models.report import sweep_table, write_outputs
from models.preprocess import preprocess
from models.tokenizer import BPETokenizer
from models.train_config import ConfigError, TrainConfig, add_flags, flag_values
from models.transformer import TinyTransformerLM
from tensorlab import backend
from tensorlab import random as tl_random
from tensorlab.optim import AdamW, ReduceLROnPlateau, WarmupCosine, clip_grad_norm_, weight_decay_groups
from tensorlab.serialization import CheckpointError, write_atomically


PLATEAU_STATE = ("best", "num_bad_steps", "cooldown_counter")  # what ReduceLROnPlateau remembers between evals


class UsageError(Exception):
    """Bad input: printed as one line per problem, without a traceback, and the exit status is 2."""


def on_step(step):
    """Called after every training step; tests replace it to interrupt a run."""


# ----- data, evaluation, learning rate -------------------------------------------------------------------

def load_data(cfg, tokenizer=None):
    """The corpus as (tokenizer, train ids, val ids, corpus sha256); trains the tokenizer unless one is given."""
    try:
        text = preprocess(load_corpus(cfg.data), cfg.preprocess)
        if tokenizer is None:
            tokenizer = BPETokenizer.train(text, cfg.model.vocab_size, cfg.pretokenizer)
        train_ids, val_ids = split_tokens(tokenizer.encode(text), cfg.val_fraction)
    except (CorpusError, ValueError) as err:
        raise UsageError(str(err)) from None
    seq_len = cfg.model.context_len
    for split, ids in (("training", train_ids), ("validation", val_ids)):
        if len(ids) < seq_len + 1:
            raise UsageError(f"corpus too small: its {split} split has {len(ids)} tokens, but seq_len={seq_len} "
                             f"needs at least {seq_len + 1}; use more text, a smaller --seq-len or another "
                             f"--val-fraction")
    if cfg.split == "random_windows":  # validate on leaky windows, as report 000 did; see models/data.py
        train_ids, val_ids, _ = random_window_split(np.concatenate([train_ids, val_ids]), seq_len,
                                                    cfg.val_fraction, cfg.seed)
    return tokenizer, train_ids, val_ids, sha256_hex(text.encode("utf-8"))


def get_batch(ids, cfg, rng):
    """A random batch of B windows from the training ids: x, y (B, T), on the host.

    The model checks host ids on the host and then moves them to its device: no GPU sync.
    """
    return random_windows(ids, cfg.batch_size, cfg.model.context_len, rng)


def estimate_loss(model, val_ids, tokenizer, cfg, full=False):
    """Validation loss, perplexity and bits per byte: on eval_batches evenly spread batches, or all of them."""
    return evaluate(model, val_ids, tokenizer, cfg.batch_size, 0 if full else cfg.eval_batches)


def get_lr(cfg, step, horizon):
    """The learning rate of `step`: linear warmup, then a cosine to min_lr at `horizon` (or constant)."""
    if cfg.schedule == "warmup_cosine":
        return WarmupCosine(cfg.lr, cfg.min_lr, cfg.warmup_steps, max(horizon, cfg.warmup_steps)).lr_at(step)
    return cfg.lr * min(1.0, step / cfg.warmup_steps) if cfg.warmup_steps else cfg.lr


def get_horizon(cfg, step, elapsed_s):
    """The step at which the cosine ends: max_steps, or the steps that fit in max_minutes at the speed so far."""
    ends = [cfg.max_steps] if cfg.max_steps else []
    if cfg.max_minutes and step > 0:
        ends.append(int(step * cfg.max_minutes * 60 / elapsed_s))
    return max(min(ends, default=10 ** 9), 1)


# ----- the run directory ---------------------------------------------------------------------------------

def read_metrics(run_dir):
    """The rows of a run's metrics.jsonl ([] when there is none yet)."""
    path = Path(run_dir) / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def write_metrics(run_dir, metrics):
    """Rewrite metrics.jsonl atomically with every row so far."""
    text = "".join(json.dumps(row) + "\n" for row in metrics)
    write_atomically(Path(run_dir) / "metrics.jsonl", text.encode("utf-8"))


def new_model(cfg, tokenizer):
    """A freshly initialised model for `cfg` (seeded), on cfg.device."""
    tensorlab.manual_seed(cfg.seed)
    return TinyTransformerLM(cfg.model_config(tokenizer.vocab_size)).to(cfg.device)


def checked_config(cfg):
    """`cfg` if every value is valid and its device exists, else UsageError."""
    try:
        cfg.check()
    except ConfigError as err:
        raise UsageError(str(err)) from None
    if cfg.device == "cuda" and not backend.gpu_available():
        raise UsageError("device cuda was asked for, but CuPy is not installed or sees no GPU; use --device cpu")
    return cfg


@dataclass
class Run:
    """Everything a training run works with; prepare_run makes one, train runs it."""
    cfg: TrainConfig
    run_dir: Path
    tokenizer: BPETokenizer
    train_ids: np.ndarray
    val_ids: np.ndarray
    model: TinyTransformerLM
    optimizer: AdamW
    batch_rng: np.random.Generator   # draws the training windows
    progress: dict                   # step, elapsed time, best val loss, ...: saved in every checkpoint
    metrics: list                    # the rows of metrics.jsonl
    tensorlab_rng: dict              # tensorlab.random's state once the model is built (or restored)


def prepare_run(cfg, run_dir, resume=False):
    """Check everything and load the data, model and state of a run; nothing is written yet."""
    run_dir = Path(run_dir)
    checked_config(cfg)
    if resume:
        for name in ("config.json", "tokenizer.json", "checkpoints/latest.json"):
            if not (run_dir / name).is_file():
                raise UsageError(f"cannot resume {run_dir}: it has no {name}")
        try:
            saved = TrainConfig.from_json(run_dir / "config.json")
            tokenizer = BPETokenizer.load(run_dir / "tokenizer.json")
        except ValueError as err:  # ConfigError is one
            raise UsageError(f"cannot resume {run_dir}: {err}") from None
        changed = [f"{k} ({getattr(saved, k)!r} -> {getattr(cfg, k)!r})"
                   for k in ("pretokenizer", "val_fraction", "preprocess", "split") if getattr(saved, k) != getattr(cfg, k)]
        if saved.model.vocab_size != cfg.model.vocab_size:
            changed.append(f"vocab_size ({saved.model.vocab_size} -> {cfg.model.vocab_size})")
        if changed:
            raise UsageError(f"cannot resume {run_dir} with another tokenizer or split: {', '.join(changed)}")
    elif run_dir.exists() and (not run_dir.is_dir() or any(run_dir.iterdir())):
        raise UsageError(f"--out {run_dir} already exists and is not empty; choose a new directory, "
                         f"or continue that run with --resume {run_dir}")
    else:
        tokenizer = None
    tokenizer, train_ids, val_ids, corpus_sha = load_data(cfg, tokenizer)

    model = new_model(cfg, tokenizer)
    optimizer = AdamW(weight_decay_groups(model.named_parameters(), cfg.weight_decay), lr=cfg.lr,
                      betas=(cfg.beta1, cfg.beta2))
    batch_rng = np.random.default_rng([cfg.seed, 1])  # its own stream, apart from tensorlab's (init, dropout)
    progress = dict(step=0, elapsed_s=0.0, train_time_s=0.0, best_val_loss=None, best_step=None,
                    evals_since_best=0, last_eval_step=None, snapshots=[], train_losses=[],
                    corpus_sha256=corpus_sha, plateau=None, stop_reason=None)
    metrics = []
    if resume:
        try:
            state = load_checkpoint(run_dir / "checkpoints" / "latest", model)
            progress = restore_training_state(state, optimizer, batch_rng)
        except (CheckpointError, ValueError, KeyError) as err:
            raise UsageError(f"cannot resume {run_dir}: {err}") from None
        if progress["corpus_sha256"] != corpus_sha:
            raise UsageError(f"cannot resume {run_dir}: the corpus differs from the one it was trained on "
                             f"(sha256 {progress['corpus_sha256'][:12]}..., now {corpus_sha[:12]}...); give that "
                             f"file with --data")
        metrics = [row for row in read_metrics(run_dir) if row["step"] <= progress["step"]]
    return Run(cfg, run_dir, tokenizer, train_ids, val_ids, model, optimizer, batch_rng, progress, metrics,
               tl_random.get_state())


# ----- training ------------------------------------------------------------------------------------------

def train(run):
    """Train a prepared run until max_steps, max_minutes or early stopping; then evaluate fully and report."""
    cfg, run_dir, tokenizer, model, optimizer = run.cfg, run.run_dir, run.tokenizer, run.model, run.optimizer
    train_ids, val_ids, batch_rng, progress, metrics = run.train_ids, run.val_ids, run.batch_rng, run.progress, run.metrics
    (run_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
    write_atomically(run_dir / "config.json", cfg.to_json().encode("utf-8"))
    if not (run_dir / "tokenizer.json").exists():
        tokenizer.save(run_dir / "tokenizer.json")

    plateau = None
    if cfg.schedule == "plateau":
        plateau = ReduceLROnPlateau(optimizer, factor=cfg.plateau_factor, patience=cfg.plateau_patience,
                                    min_lr=cfg.min_lr)
        for key, value in (progress["plateau"] or {}).items():
            setattr(plateau, key, value)
    groups = layer_groups(model)
    print(f"training {model.num_parameters():,} parameters on {len(train_ids):,} tokens "
          f"(validation {np.size(val_ids):,}); writing to {run_dir}", file=sys.stderr)

    def checkpoint(name):
        if plateau is not None:
            progress["plateau"] = {k: getattr(plateau, k) for k in PLATEAU_STATE}
        save_checkpoint(run_dir / "checkpoints" / name, model, optimizer, batch_rng, cfg, progress)

    def record_eval(step, final=False):
        """Evaluate, log a metrics row, keep the best and latest checkpoints; the final evaluation uses every token."""
        same_step = bool(metrics) and metrics[-1]["step"] == step
        if final and same_step and metrics[-1]["full_eval"]:
            return metrics[-1]  # this very model was just evaluated on every token
        val = estimate_loss(model, val_ids, tokenizer, cfg, full=final)
        losses = progress["train_losses"]
        row = dict(step=step, train_loss=float(np.mean(losses)) if losses else None, val_loss=val["loss"],
                   perplexity=val["perplexity"], bits_per_byte=val["bits_per_byte"], lr=last.get("lr"),
                   tokens_per_s=interval["tokens"] / interval["time"] if interval["time"] else None,
                   grad_norm=last.get("grad_norm"), elapsed_s=elapsed(), full_eval=final or cfg.eval_batches == 0,
                   layer_grad_norm=last.get("layer_grad_norm"), layer_update_ratio=last.get("layer_update_ratio"))
        if same_step:  # the final evaluation on every token replaces the one on eval_batches of this step
            replaced = metrics.pop()
            row.update({k: replaced[k] for k in ("train_loss", "tokens_per_s")})
        else:
            # "best" compares like with like: the loss on the same eval batches as every other evaluation
            score = val["loss"] if not final or cfg.eval_batches == 0 else estimate_loss(
                model, val_ids, tokenizer, cfg)["loss"]
            if progress["best_val_loss"] is None or score < progress["best_val_loss"]:
                progress.update(best_val_loss=score, best_step=step, evals_since_best=0)
                checkpoint("best")
            else:
                progress["evals_since_best"] += 1
        metrics.append(row)
        progress.update(train_losses=[], last_eval_step=step, elapsed_s=elapsed())
        interval.update(tokens=0, time=0.0)
        snaps = progress["snapshots"]  # at 0, 1, 2, 4, 8, ... eval intervals, and the end
        if not snaps or snaps[-1] != step and (final or step >= 2 * max(snaps[-1], cfg.eval_interval // 2)):
            save_snapshot(run_dir / "checkpoints" / f"snapshot_step{step:06d}", model, step)
            snaps.append(step)
        write_metrics(run_dir, metrics)
        checkpoint("latest")
        if plateau is not None and step >= cfg.warmup_steps and not same_step:
            plateau.step(val["loss"])
        return row

    start, elapsed_before = time.perf_counter(), progress["elapsed_s"]

    def elapsed():
        return elapsed_before + time.perf_counter() - start

    last, interval = {}, dict(tokens=0, time=0.0)
    step, progress["stop_reason"] = progress["step"], None
    tl_random.set_state(run.tensorlab_rng)  # as it was after the model was built (or the checkpoint loaded)
    bar = tqdm(total=cfg.max_steps or None, initial=step, desc=run_dir.name, unit="step", dynamic_ncols=True,
               mininterval=0.5)
    stop = _StopOnSignal()
    in_step = False
    try:
        with stop:
            while True:
                if step % cfg.eval_interval == 0 and progress["last_eval_step"] != step:
                    row = record_eval(step)
                    bar.write(f"step {step}: val loss {row['val_loss']:.4f}, perplexity {row['perplexity']:.2f}, "
                              f"bits/byte {row['bits_per_byte']:.4f}")
                if cfg.max_steps and step >= cfg.max_steps:
                    progress["stop_reason"] = f"reached max_steps={cfg.max_steps}"
                elif cfg.max_minutes and elapsed() >= cfg.max_minutes * 60:
                    progress["stop_reason"] = f"reached max_minutes={cfg.max_minutes:g}"
                elif cfg.early_stopping_patience and progress["evals_since_best"] >= cfg.early_stopping_patience:
                    progress["stop_reason"] = f"early stopping: no better val loss in {cfg.early_stopping_patience} evaluations"
                if progress["stop_reason"]:
                    break

                in_step, t0 = True, time.perf_counter()
                if plateau is None or step < cfg.warmup_steps:
                    lr = get_lr(cfg, step, get_horizon(cfg, step, elapsed()))
                    for group in optimizer.param_groups:
                        group["lr"] = lr
                x, y = get_batch(train_ids, cfg, batch_rng)
                _, loss = model(x, y)
                optimizer.zero_grad()
                loss.backward()
                layer_norms = grad_norms(groups)
                total_norm = (clip_grad_norm_(model.parameters(), cfg.grad_clip) if cfg.grad_clip
                              else math.sqrt(sum(n * n for n in layer_norms.values())))
                before = copy_weights(groups)
                optimizer.step()
                last = dict(lr=optimizer.param_groups[0]["lr"], grad_norm=total_norm, layer_grad_norm=layer_norms,
                            layer_update_ratio=update_ratios(groups, before))
                step += 1
                dt = time.perf_counter() - t0
                progress["step"] = step
                progress["train_time_s"] += dt
                progress["train_losses"].append(float(loss.item()))
                interval["tokens"] += x.size
                interval["time"] += dt
                in_step = False
                bar.update(1)
                bar.set_postfix(loss=f"{progress['train_losses'][-1]:.3f}", lr=f"{last['lr']:.2e}",
                                tok_s=f"{x.size / dt:.0f}")
                on_step(step)
                if stop.requested:
                    raise KeyboardInterrupt
    except KeyboardInterrupt:
        bar.close()
        if in_step:
            print(f"interrupted in the middle of a step: not saved; the latest checkpoint is at step "
                  f"{progress['last_eval_step']}", file=sys.stderr)
        else:
            progress["elapsed_s"] = elapsed()
            checkpoint("latest")
            print(f"interrupted at step {step}: saved {run_dir / 'checkpoints' / 'latest'}; continue with "
                  f"python train.py --resume {run_dir}", file=sys.stderr)
        return None
    bar.close()
    final = record_eval(step, final=True)
    if cfg.split == "random_windows":
        final = {**final, **compare_with_ordered_split(run, final)}
    write_outputs(run, final)
    print(f"done: final val loss {final['val_loss']:.4f}, perplexity {final['perplexity']:.2f}, bits per byte "
          f"{final['bits_per_byte']:.4f}\noutputs in {run_dir}: report.md, metrics.jsonl, samples.txt, topk.md, "
          f"figures/, checkpoints/", file=sys.stderr)
    return final


def compare_with_ordered_split(run, final):
    """The random-window split's number beside the ordered held-out tail's, which training never saw."""
    text = preprocess(load_corpus(run.cfg.data), run.cfg.preprocess)
    _, _, ordered = random_window_split(run.tokenizer.encode(text), run.cfg.model.context_len,
                                        run.cfg.val_fraction, run.cfg.seed)
    honest = estimate_loss(run.model, ordered, run.tokenizer, run.cfg, full=True)
    note = (f"random-window split: validation perplexity {final['perplexity']:.2f} is optimistic; the ordered "
            f"held-out tail gives {honest['perplexity']:.2f} ({honest['perplexity'] / final['perplexity']:.2f}x "
            f"higher), because overlapping windows put validation text into training")
    print(note, file=sys.stderr)
    return {"ordered_val_loss": honest["loss"], "ordered_perplexity": honest["perplexity"],
            "ordered_bits_per_byte": honest["bits_per_byte"], "split_note": note}


class _StopOnSignal:
    """While active, the first Ctrl-C only asks the loop to stop after the current step (a second one aborts)."""

    def __init__(self):
        self.requested, self._old = False, None

    def _handle(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        print("\nCtrl-C: saving a checkpoint after this step (press again to abort)", file=sys.stderr)

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc):
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)


# ----- the command line ----------------------------------------------------------------------------------

class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors become one-line UsageErrors instead of usage text."""
    def error(self, message):
        raise UsageError(message)


def train_parser():
    """The parser of plain `train.py [flags]`: --config, --out, --resume and one flag per TrainConfig field."""
    parser = _Parser(prog="train.py", description="Train the tiny transformer LM (subcommands: eval, generate, "
                                                  "sweep: see `train.py eval --help`).")
    parser.add_argument("--config", metavar="FILE", help="JSON config file (configs/*.json)")
    parser.add_argument("--out", metavar="DIR", help="run directory (default: runs/<config name>-<time>)")
    parser.add_argument("--resume", metavar="RUN_DIR", help="continue this run from its latest checkpoint")
    add_flags(parser)
    return parser


def resolve_config(args):
    """The run's TrainConfig: the default, a --config file or a resumed run's config.json, then the flags."""
    if args.resume and args.config:
        raise UsageError("--resume continues a run with its own config.json; leave out --config")
    try:
        if args.resume:
            if not (Path(args.resume) / "config.json").is_file():
                raise UsageError(f"cannot resume {args.resume}: it has no config.json")
            base = TrainConfig.from_json(Path(args.resume) / "config.json")
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


def cmd_train(argv):
    """train.py [--config FILE] [--out DIR | --resume RUN_DIR] [flags]"""
    args = train_parser().parse_args(argv)
    cfg = resolve_config(args)
    run_dir = Path(args.resume) if args.resume else Path(args.out or default_out(args.config))
    if args.resume and args.out and Path(args.out) != run_dir:
        raise UsageError("--resume writes into the run it continues; leave out --out")
    return 0 if train(prepare_run(cfg, run_dir, resume=bool(args.resume))) else 130


def load_run(run_dir, checkpoint="best", data=None):
    """A finished or running run's config, tokenizer and model with the named checkpoint loaded."""
    run_dir = Path(run_dir)
    for name in ("config.json", "tokenizer.json"):
        if not (run_dir / name).is_file():
            raise UsageError(f"{run_dir} is not a run directory: it has no {name}")
    try:
        cfg = TrainConfig.from_json(run_dir / "config.json")
        cfg = checked_config(cfg.replace(data=data) if data else cfg)
        tokenizer = BPETokenizer.load(run_dir / "tokenizer.json")
        model = new_model(cfg, tokenizer)
        state = load_checkpoint(run_dir / "checkpoints" / checkpoint, model)
    except (ConfigError, CheckpointError, ValueError) as err:
        raise UsageError(str(err)) from None
    return cfg, tokenizer, model, state


def cmd_eval(argv):
    """train.py eval RUN_DIR [--checkpoint best|latest|snapshot_stepN] [--data PATH]"""
    parser = _Parser(prog="train.py eval", description="Evaluate a run's checkpoint on every validation token.")
    parser.add_argument("run_dir")
    parser.add_argument("--checkpoint", default="best", help="best, latest, or snapshot_stepNNNNNN [best]")
    parser.add_argument("--data", metavar="PATH", help="the corpus, if not where the run found it")
    args = parser.parse_args(argv)
    cfg, tokenizer, model, state = load_run(args.run_dir, args.checkpoint, args.data)
    _, _, val_ids, _ = load_data(cfg, tokenizer)
    result = estimate_loss(model, val_ids, tokenizer, cfg, full=True)
    step = state.get("progress", state).get("step")
    print(f"{args.run_dir} ({args.checkpoint}, step {step}): val loss {result['loss']:.4f}, perplexity "
          f"{result['perplexity']:.3f}, bits per byte {result['bits_per_byte']:.4f} "
          f"({result['tokens']:,} tokens, {result['bytes']:,} bytes)")
    return 0


def cmd_generate(argv):
    """train.py generate RUN_DIR --prompt TEXT [--max-new-tokens --temperature --top-k --seed]"""
    parser = _Parser(prog="train.py generate", description="Continue a prompt with a trained run's model.")
    parser.add_argument("run_dir")
    parser.add_argument("--prompt", default="\n", help="text to continue [a newline]")
    parser.add_argument("--max-new-tokens", type=int, default=200)
    parser.add_argument("--temperature", type=float, default=0.8, help="0 picks the most likely token [0.8]")
    parser.add_argument("--top-k", type=int, default=None, help="sample only among the k most likely tokens")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checkpoint", default="best", help="best, latest, or snapshot_stepNNNNNN [best]")
    args = parser.parse_args(argv)
    if args.max_new_tokens < 0:
        raise UsageError(f"--max-new-tokens must be >= 0, got {args.max_new_tokens}")
    _, tokenizer, model, _ = load_run(args.run_dir, args.checkpoint)
    prompt = tokenizer.encode(args.prompt)
    if not len(prompt):
        raise UsageError("--prompt is empty; give some text to continue")
    try:
        ids = model.generate(prompt[None, :], args.max_new_tokens, args.temperature, args.top_k,
                             np.random.default_rng(args.seed))
    except ValueError as err:
        raise UsageError(str(err)) from None
    print(tokenizer.decode(ids[0]))
    return 0


def cmd_sweep(argv):
    """train.py sweep CONFIG... [--out DIR] [flags for every run]"""
    parser = _Parser(prog="train.py sweep", description="Train several configs, each into its own subdirectory "
                                                        "of --out, and compare them (sweep.md, sweep_perplexity.png).")
    parser.add_argument("configs", nargs="+", metavar="CONFIG")
    parser.add_argument("--out", metavar="DIR", help="sweep directory (default: runs/sweep-<time>)")
    add_flags(parser)
    args = parser.parse_args(argv)
    out = Path(args.out or default_out("sweep"))
    names = [Path(c).stem for c in args.configs]
    if len(set(names)) != len(names):
        raise UsageError(f"sweep: config names must differ (each names a subdirectory), got {', '.join(names)}")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"--out {out} already exists and is not empty; choose a new directory")
    runs = []
    for path, name in zip(args.configs, names):  # check every config and its data before training any
        try:
            cfg = TrainConfig.from_json(path).replace(**flag_values(args))
        except ConfigError as err:
            raise UsageError(str(err)) from None
        runs.append(prepare_run(cfg, out / name))
    rows, curves = [], {}
    for name, run in zip(names, runs):
        final = train(run)
        if final is None:
            return 130
        progress, cfg = run.progress, run.cfg
        curves[name] = run.metrics
        rows.append({"config": name, "parameters": run.model.num_parameters(), "steps": progress["step"],
                     "minutes": progress["elapsed_s"] / 60,
                     "tokens/s": progress["step"] * cfg.batch_size * cfg.model.context_len / max(progress["train_time_s"], 1e-9),
                     "best val loss": progress["best_val_loss"], "final val loss": final["val_loss"],
                     "perplexity": final["perplexity"], "bits per byte": final["bits_per_byte"],
                     "tokenizer": f"{cfg.pretokenizer} {run.tokenizer.vocab_size}"})
    table = sweep_table(rows)
    plots.sweep_perplexity(curves, out / "sweep_perplexity.png")
    write_atomically(out / "sweep.md", f"# Sweep\n\n{table}\n![validation perplexity](sweep_perplexity.png)\n"
                     .encode("utf-8"))
    print(table + f"\nsweep outputs in {out}: sweep.md, sweep_perplexity.png", file=sys.stderr)
    return 0


COMMANDS = {"eval": cmd_eval, "generate": cmd_generate, "sweep": cmd_sweep, "export": cmd_export}


def main(argv=None):
    """Run the command line `argv` (default sys.argv[1:]); returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    command = COMMANDS.get(argv[0]) if argv else None
    try:
        return command(argv[1:]) if command else cmd_train(argv)
    except UsageError as err:
        for line in str(err).splitlines():
            print(f"train.py: error: {line}", file=sys.stderr)
        return 2
    except SystemExit as exit:  # --help
        return exit.code or 0
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
