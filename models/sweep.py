"""`train.py sweep`: train several configs, each into its own run of one sweep directory, and compare them."""

import contextlib
import sys
from pathlib import Path

from models import checkpoint
from models import run_dir as run_dir_rules
from models.report import sweep_table
from models.run import Run, UsageError
from models.stop import STOP
from models.train_config import ConfigError, TrainConfig, flag_values
from tensorlab.serialization import write_atomically


def sweep(args, out, on_step):
    """Train (or continue) each of args.configs into its run out/<config name>, then compare them; returns the exit
    status. Every config and its data are checked, and every run held, before any trains."""
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
    with contextlib.ExitStack() as held:
        here = held.enter_context(run_dir_rules.locked(out))  # one sweep at a time writes sweep.md
        runs = [
            held.enter_context(sweep_run(path, out / name, args, on_step)) for path, name in zip(args.configs, names)
        ]
        rows, curves = [], {}
        for name, run in zip(names, runs):
            final = finished_row(run.trainer) or run.train()
            if final is None:
                return STOP.exit_status()
            curves[name] = run.trainer.metrics
            rows.append(sweep_row(name, run.trainer, final))
        table = sweep_table(rows)
        here.check_in_place()
        from models import plots  # matplotlib, imported only to draw (as report.write_figures)

        plots.sweep_perplexity(curves, here.files / "sweep_perplexity.png")
        write_atomically(
            here.files / "sweep.md", f"# Sweep\n\n{table}\n![validation perplexity](sweep_perplexity.png)\n".encode()
        )
    print(table + f"\nsweep outputs in {out}: sweep.md, sweep_perplexity.png", file=sys.stderr)
    return 0


def sweep_run(path, run_dir, args, on_step):
    """The Run of config file `path` (with the flags) in `run_dir`: new, or continued when it trained with this
    very config; UsageError when its config was changed since."""
    try:
        cfg = TrainConfig.from_json(path).replace(**flag_values(args))
    except ConfigError as err:
        raise UsageError(str(err)) from None
    saved = run_dir_rules.saved_config(run_dir) if checkpoint.exists(run_dir / "checkpoints" / "latest") else None
    changed = saved and [
        k for k, v in saved.to_dict().items() if k not in ("comment", "data") and v != cfg.to_dict()[k]
    ]
    if changed:
        raise UsageError(
            f"sweep: {run_dir} was trained with another {', '.join(changed)} than {path} now gives; "
            f"a sweep continues a run only with its own config: sweep into a new --out"
        )
    return Run.open(run_dir, cfg, saved, on_step)


def finished_row(trainer):
    """The final metrics row of a run that already finished (report written), else None."""
    done = (trainer.run_dir / "report.md").is_file() and trainer.metrics and trainer.metrics[-1].get("full_eval")
    return trainer.metrics[-1] if done and trainer.stop_reason() else None


def sweep_row(name, trainer, final):
    progress, cfg = trainer.progress, trainer.cfg
    return {
        "config": name,
        "parameters": trainer.model.num_parameters(),
        "steps": progress.step,
        "minutes": final["elapsed_s"] / 60,
        "tokens/s": progress.step * cfg.batch_size * cfg.model.context_len / max(progress.train_time_s, 1e-9),
        "best val loss": progress.best_val_loss,
        "final val loss": final["val_loss"],
        "perplexity": final["perplexity"],
        "bits per byte": final["bits_per_byte"],
        "tokenizer": f"{cfg.tokenizer or cfg.pretokenizer} {trainer.tokenizer.vocab_size}",
    }
