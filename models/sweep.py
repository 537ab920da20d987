"""`train.py sweep`: train several configs, each into its own run of one sweep directory, and compare them."""

import sys

from models import checkpoint, plots
from models import run_dir as run_dir_rules
from models.report import sweep_table
from models.run import UsageError, prepare_run, train
from models.stop import STOP
from models.train_config import ConfigError, TrainConfig, flag_values
from tensorlab.serialization import write_atomically


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
        "steps": progress.step,
        "minutes": final["elapsed_s"] / 60,
        "tokens/s": progress.step * cfg.batch_size * cfg.model.context_len / max(progress.train_time_s, 1e-9),
        "best val loss": progress.best_val_loss,
        "final val loss": final["val_loss"],
        "perplexity": final["perplexity"],
        "bits per byte": final["bits_per_byte"],
        "tokenizer": f"{cfg.tokenizer or cfg.pretokenizer} {trainer.tokenizer.vocab_size}",
    }
