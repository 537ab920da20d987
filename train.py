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
checkpoints/ (latest, best and a few model snapshots, .safetensors) and figures/. A run from its
start to its end is models/run.py's Run, the training loop models/trainer.py, a sweep models/sweep.py;
this file is the command line, and the resume walk is train.py -> Run -> Trainer.

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

import errno
import math
import sys
import time
from pathlib import Path

import numpy as np

import tensorlab
import tensorlab.command_line
import tensorlab.memory
import tensorlab.threads
from models.evaluate import evaluate
from models.export import cmd_export
from models.run import Parser, Run, UsageError, load_data, load_run
from models.run_dir import RunDirError, checked_path
from models.stop import STOP
from models.sweep import sweep
from models.train_config import ConfigError, TrainConfig, add_flags, flag_values
from models.trainer import NonFiniteError

# ----- the command line ----------------------------------------------------------------------------------


def train_parser():
    """The parser of plain `train.py [flags]`: --config, --out, --resume and one flag per TrainConfig field."""
    parser = Parser(
        prog="train.py",
        description="Train the tiny transformer LM (subcommands: eval, generate, sweep: see `train.py eval --help`).",
    )
    parser.add_argument("--config", metavar="FILE", help="JSON config file (configs/*.json)")
    parser.add_argument("--out", metavar="DIR", help="run directory (default: runs/<config name>-<time>)")
    parser.add_argument("--resume", metavar="RUN_DIR", help="continue this run from its latest checkpoint")
    parser.add_argument("--no-report", action="store_true", help="skip the figures, samples and report.md at the end")
    add_flags(parser)
    return parser


def resolve_config(args):
    """The config of a new run: the default or a --config file, then the flags."""
    base = TrainConfig() if args.config is None else TrainConfig.from_json(checked_path(args.config, "--config"))
    return base.replace(**flag_values(args))


def default_out(config_path):
    """runs/<config name>-<date-time>."""
    name = Path(config_path).stem if config_path else "default"
    return Path("runs") / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"


def cmd_train(argv, on_step=None):
    """train.py [--config FILE] [--out DIR | --resume RUN_DIR] [flags]"""
    args = train_parser().parse_args(argv)
    if args.resume is None:
        out = args.out if args.out is not None else default_out(args.config)
        run = Run.new(out, resolve_config(args), on_step)
    elif args.config is not None:
        raise UsageError("--resume continues a run with its own config.json; leave out --config")
    elif args.out is not None and Path(args.out) != Path(args.resume):
        raise UsageError("--resume writes into the run it continues; leave out --out")
    else:
        run = Run.resume(args.resume, flag_values(args), on_step)
    with run as run:
        return 0 if run.train(not args.no_report) else STOP.exit_status()


def eval_parser():
    parser = Parser(prog="train.py eval", description="Evaluate a run's checkpoint on every validation token.")
    parser.add_argument("run_dir")
    parser.add_argument("--checkpoint", default="best", help="best, latest, or snapshot_stepNNNNNN [best]")
    add_run_flags(parser)
    return parser


def add_run_flags(parser):
    """--data, --force and --device: where eval and generate find the run's corpus, and where they run."""
    parser.add_argument("--data", metavar="PATH", help="the corpus, if not where the run found it")
    parser.add_argument("--force", action="store_true", help="use --data even if it is not the run's corpus")
    parser.add_argument("--device", choices=("cpu", "cuda"), help="where to run the model [the run's device]")


def cmd_eval(argv):
    """train.py eval RUN_DIR [--checkpoint best|latest|snapshot_stepN] [--data PATH [--force]] [--device]"""
    args = eval_parser().parse_args(argv)
    cfg, tokenizer, model, state, text = load_run(args.run_dir, args.checkpoint, args.data, args.device, args.force)
    _, _, val_ids, _ = load_data(cfg, tokenizer, text)
    result = evaluate(model, val_ids, tokenizer, cfg.batch_size)
    print(
        f"{args.run_dir} ({args.checkpoint}, step {state.get('progress', state).get('step')}): val loss "
        f"{result['loss']:.4f}, perplexity {result['perplexity']:.3f}, bits per byte {result['bits_per_byte']:.4f} "
        f"({result['tokens']:,} tokens, {result['bytes']:,} bytes)"
    )
    return 0


def generate_parser():
    parser = Parser(prog="train.py generate", description="Continue a prompt with a trained run's model.")
    parser.add_argument("run_dir")
    parser.add_argument("--prompt", default="\n", help="text to continue [a newline]")
    parser.add_argument("--max-new-tokens", type=int, default=200)
    parser.add_argument("--temperature", type=float, default=0.8, help="0 picks the most likely token [0.8]")
    parser.add_argument("--top-k", type=int, default=None, help="sample only among the k most likely tokens")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checkpoint", default="best", help="best, latest, or snapshot_stepNNNNNN [best]")
    add_run_flags(parser)
    return parser


def cmd_generate(argv):
    """train.py generate RUN_DIR --prompt TEXT [--max-new-tokens --temperature --top-k --seed --data --device]"""
    args = generate_parser().parse_args(argv)
    if args.max_new_tokens < 0:
        raise UsageError(f"--max-new-tokens must be >= 0, got {args.max_new_tokens}")
    if not (math.isfinite(args.temperature) and args.temperature >= 0):
        raise UsageError(
            f"--temperature must be a finite number >= 0 (0 picks the most likely token), got {args.temperature}"
        )
    _, tokenizer, model, _, _ = load_run(args.run_dir, args.checkpoint, args.data, args.device, args.force)
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
    parser = Parser(
        prog="train.py sweep",
        description="Train several configs, each into its own subdirectory "
        "of --out, and compare them (sweep.md, sweep_perplexity.png). "
        "Run the same command again to continue an interrupted sweep.",
    )
    parser.add_argument("configs", nargs="+", metavar="CONFIG")
    parser.add_argument("--out", metavar="DIR", help="sweep directory (default: runs/sweep-<time>)")
    add_flags(parser)
    args = parser.parse_args(argv)
    out = checked_path(args.out, "--out") if args.out is not None else default_out("sweep")
    return sweep(args, out, on_step)


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
    except (UsageError, RunDirError, ConfigError) as err:
        for line in str(err).splitlines():
            print(f"train.py: error: {line}", file=sys.stderr)
        return 2
    except NonFiniteError as err:
        print(f"train.py: stopped: {err}", file=sys.stderr)
        return 3
    except BrokenPipeError:  # the reader of the output went away (`... | head`): not a file error; see exit_with
        raise
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
    tensorlab.command_line.exit_with(main)
