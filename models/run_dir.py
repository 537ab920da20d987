"""A run directory's rules: what it holds, who may write into it, and when a run may start or resume there.

    RUN/config.json, tokenizer.json     what the run trains and how it reads text
    RUN/metrics.jsonl, report.md, ...   what it measured
    RUN/checkpoints/latest.safetensors  the whole training state (resume starts here)
    RUN/checkpoints/best, snapshot_*    the model alone at its best and at growing intervals
    RUN/.lock                           a note: which process trains into RUN, since when

One process per run directory: `locked(run_dir)` takes an exclusive lock (flock on the directory
itself, so deleting .lock admits no second process) for the whole of a training or resume, and
yields a HeldDir: the directory held open. A second process is refused at once, in one line that
names the process holding it (from .lock's note). The kernel releases the lock when its process
ends, however it ends, so a killed run never blocks the next start. A HeldDir writes through its
open directory (HeldDir.files), and checks before every save that its path still leads there: a run
moved or deleted while it trains stops with one line, instead of re-creating half of itself.
Everything that deletes or rewrites run files (temporary files a kill left, config.json,
tokenizer.json) happens under the lock; `eval`, `generate` and `export` only read a run, and
every file they read is replaced atomically, so they are safe beside a running run.

A resume never destroys: `resume_plan` continues from checkpoints/latest, restarts from step 0
only a run that saved nothing past step 0, and refuses a run whose latest is gone while later
results remain (restarting would overwrite best and metrics.jsonl with an untrained model's).
What a resume does with each setting is RESUME_POLICY; the checkpoint and tokenizer.json must
belong together (check_tokenizer). The lock uses fcntl: POSIX systems (Linux, macOS) only.
"""

import contextlib
import fcntl
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from models import checkpoint
from models.metrics import MetricsError, read_metrics
from models.train_config import TrainConfig
from tensorlab.serialization import TEMP_SUFFIX, remove_temporary_files, write_atomically

LOCK_NAME = ".lock"
# what a run stopped before its first checkpoint holds; starting it again with the same --out reuses the directory
BEFORE_FIRST_CHECKPOINT = {"config.json", "tokenizer.json", "checkpoints", LOCK_NAME}


class RunDirError(Exception):
    """A run directory cannot be used as asked: one line saying why and what to do."""


RUN_FILES = ("config.json", "tokenizer.json", "metrics.jsonl", "checkpoints", LOCK_NAME)


def checked_path(path, flag):
    """`path` as a Path; RunDirError for an empty string (a shell variable that was not set)."""
    if not str(path).strip():
        raise RunDirError(f"{flag} is an empty string; give a directory")
    return Path(path)


def holds_a_run(path):
    """Whether `path` is a run directory or a part of one (what only training may write into)."""
    path = Path(path)
    return any((path / name).exists() for name in RUN_FILES) or (
        path.name in ("checkpoints", "figures") and any((path.parent / n).exists() for n in RUN_FILES)
    )


def check_writable(run_dir):
    """RunDirError unless `run_dir` can be created and written (checked before any work, nothing made)."""
    run_dir = Path(run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise RunDirError(f"--out {run_dir} is an existing file; choose a directory name")
    existing = run_dir
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise RunDirError(f"--out {run_dir}: {existing} is a file, not a directory; choose another --out")
    try:  # a real probe: permissions, read-only filesystems and root all answer truthfully
        fd, probe = tempfile.mkstemp(dir=existing, prefix=".tensorlab-probe-")
    except OSError as err:
        raise RunDirError(
            f"--out {run_dir}: cannot write in {existing} ({err.strerror}); choose another --out"
        ) from None
    os.close(fd)
    os.unlink(probe)


def check_new_out(run_dir):
    """RunDirError unless `run_dir` is new, empty, or a run stopped before its first checkpoint (then reused)."""
    run_dir = Path(run_dir)
    check_writable(run_dir)
    if not run_dir.exists():
        return
    names = {p.name for p in run_dir.iterdir() if not p.name.endswith(TEMP_SUFFIX)}
    if names - BEFORE_FIRST_CHECKPOINT or checkpoint.exists(run_dir / "checkpoints" / "latest"):
        raise RunDirError(
            f"--out {run_dir} already exists and is not empty; choose a new directory, "
            f"or continue that run with --resume {run_dir}"
        )


def saved_config(run_dir):
    """The TrainConfig of a run to resume, parsed once: its config.json, or, when that is gone, the config its
    latest checkpoint holds (said on stderr; training writes config.json again). RunDirError when neither exists."""
    path = Path(run_dir) / "config.json"
    if path.exists() or not checkpoint.exists(Path(run_dir) / "checkpoints" / "latest"):
        if not path.is_file():
            raise RunDirError(
                f"cannot resume {run_dir}: it has no config.json (a run stopped before it wrote one has nothing "
                f"to continue: run the command that started it again, with --out {run_dir})"
            )
        return TrainConfig.from_json(path)
    latest = checkpoint.checkpoint_path(Path(run_dir) / "checkpoints" / "latest")
    try:
        saved = checkpoint.read_checkpoint(latest).get("config")
    except checkpoint.CheckpointError as err:
        raise RunDirError(f"cannot resume {run_dir}: it has no config.json, and {err}") from None
    if not isinstance(saved, dict):
        raise RunDirError(f"cannot resume {run_dir}: it has no config.json, and {latest} holds no config either")
    print(f"note: {path} is missing: rebuilt from the config {latest} holds", file=sys.stderr)
    return TrainConfig.from_dict(saved, f"the config in {latest}")


def resume_plan(run_dir):
    """'continue' (from checkpoints/latest) or 'restart' (nothing saved past step 0); else RunDirError."""
    run_dir = Path(run_dir)
    if checkpoint.exists(run_dir / "checkpoints" / "latest"):  # this format or the old one
        return "continue"
    latest = checkpoint.checkpoint_path(run_dir / "checkpoints" / "latest")
    if latest.exists():
        raise RunDirError(f"cannot resume {run_dir}: {latest} is not a file; move it away and put the checkpoint back")
    saved = saved_results(run_dir)
    if saved:
        raise RunDirError(
            f"cannot resume {run_dir}: {latest} is missing, but the run has saved {', '.join(saved)}; "
            f"put latest back (resuming from step 0 would overwrite them), or train a new run with --out"
        )
    return "restart"


# Every setting, and what a resume does when it is given another value (tests/test_resume_flags.py checks that
# the table names every field of TrainConfig and ModelConfig, so a new setting cannot go without a policy):
#   refuse  the model's shape and function, how text becomes tokens and which tokens validate, the seed (the
#           random streams continue from the checkpoint) and the kind of schedule: RunDirError, in one line
#   apply   takes effect from the resumed step (every step reads the config in force: Trainer.apply_config),
#           recorded in config.json and the next evaluation row's config_changes (Trainer.note_changes)
#   limit   the run's bounds: extending a run is what a resume is for; applied, not listed as a change
#   ignore  not part of what is trained: the corpus's path (its content is checked by sha256), the comment
REFUSE, APPLY, LIMIT, IGNORE = "refuse", "apply", "limit", "ignore"
RESUME_POLICY = {
    **dict.fromkeys(("comment", "data"), IGNORE),
    **dict.fromkeys(("seed", "tokenizer", "pretokenizer", "documents", "preprocess", "val_fraction"), REFUSE),
    **dict.fromkeys(("split", "schedule"), REFUSE),
    **dict.fromkeys(("prompts", "batch_size", "lr", "min_lr", "warmup_steps", "plateau_factor"), APPLY),
    **dict.fromkeys(("plateau_patience", "weight_decay", "beta1", "beta2", "grad_clip", "device"), APPLY),
    **dict.fromkeys(("eval_interval", "log_interval", "checkpoint_interval", "eval_batches"), APPLY),
    "early_stopping_patience": APPLY,
    **dict.fromkeys(("max_steps", "max_minutes"), LIMIT),
    **dict.fromkeys(
        (
            f"model.{name}"
            for name in (
                *("vocab_size", "context_len", "d_model", "n_layers", "n_heads", "d_ff", "pos_encoding"),
                *("tie_weights", "activation", "norm", "norm_position", "norm_eps", "qkv_bias", "proj_bias"),
                *("ffn_bias", "head_bias", "embedding_std", "dtype"),
            )
        ),
        REFUSE,
    ),
    "model.dropout": APPLY,
}


def setting(config, name):
    """The value of setting `name` ("lr", "model.d_model") in a config dict (nested, or flat as older runs')."""
    section, _, key = name.rpartition(".")
    return (config.get(section, {}) if section else config).get(key)


def resume_changes(trained_with, asked, policy):
    """{name: [old, new]} of the settings under `policy` that differ between two config dicts."""
    return {
        name: [setting(trained_with, name), setting(asked, name)]
        for name, kind in RESUME_POLICY.items()
        if kind == policy and setting(trained_with, name) != setting(asked, name)
    }


def check_resume_changes(run_dir, trained_with, asked):
    """RunDirError naming every setting a resume refuses to change that differs between two config dicts."""
    refused = [
        f"{name.removeprefix('model.')} ({old!r} -> {new!r})"
        for name, (old, new) in resume_changes(trained_with, asked, REFUSE).items()
    ]
    if refused:
        raise RunDirError(
            f"cannot resume {run_dir} with another {', '.join(refused)}: a resume continues the same model, "
            f"tokens and random streams; train a new run with --out for that"
        )


def saved_results(run_dir):
    """What a run saved past step 0 besides config.json and tokenizer.json: the names of those files.

    A run killed inside its first evaluation leaves only step 0's results (best and the first snapshot of
    the untrained model, metrics' first row): a restart from step 0 writes them again, bit for bit, so
    they are not counted. Anything later is work that a restart would overwrite.
    """
    run_dir = Path(run_dir)
    found = [name for name in ("report.md", "samples.txt") if (run_dir / name).exists()]
    try:
        if any(row["step"] > 0 for row in read_metrics(run_dir)):
            found.append("metrics.jsonl")
    except MetricsError:
        found.append("metrics.jsonl")
    for path in sorted((run_dir / "checkpoints").glob("*")):
        if path.name.endswith(TEMP_SUFFIX) or path.name == "snapshot_step000000" + checkpoint.SUFFIX:
            continue
        try:
            if path.name == "best" + checkpoint.SUFFIX and checkpoint.read_checkpoint(path).get("step") == 0:
                continue
        except checkpoint.CheckpointError:
            pass
        found.append(f"checkpoints/{path.name}")
    return found


def open_for_training(run_dir, config_json, tokenizer):
    """Under the lock: delete what a kill left mid-write, write config.json and tokenizer.json (the ones in use).

    tokenizer.json is written every time, so a directory reused after a kill never keeps another run's.
    """
    run_dir = Path(run_dir)
    for directory in (run_dir, run_dir / "checkpoints"):
        remove_temporary_files(directory)  # left by a run killed while writing
    (run_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
    write_atomically(run_dir / "config.json", config_json.encode("utf-8"))
    tokenizer.save(run_dir / "tokenizer.json")


def check_tokenizer(state, tokenizer, path):
    """RunDirError unless the checkpoint `state` (read from `path`) was trained with `tokenizer`.

    A checkpoint written before tensorlab recorded the fingerprint has none, and is taken as it is.
    """
    recorded = state.get("tokenizer_sha256")
    if recorded is not None and recorded != tokenizer.fingerprint():
        raise RunDirError(
            f"{path} was trained with another tokenizer than the run's tokenizer.json (sha256 {recorded[:12]}..., "
            f"tokenizer.json {tokenizer.fingerprint()[:12]}...): its token ids would decode to other text; "
            f"put back the tokenizer.json of the run that wrote it"
        )


class HeldDir:
    """A run directory held by this process: its path, and the directory itself, open (`fd`) and locked.

    `files` leads to the open directory (/proc/self/fd/N on Linux), so what is written there lands in the
    directory that was locked, wherever it has been moved since; `check_in_place` stops the run when its
    path no longer leads to it.
    """

    def __init__(self, path, fd):
        self.path, self.fd = Path(path), fd
        proc = Path(f"/proc/self/fd/{fd}")
        self.files = proc if proc.is_dir() else self.path

    def check_in_place(self):
        """RunDirError when the run was moved or deleted since it was opened: nothing more may be written."""
        here = os.fstat(self.fd)
        try:
            there = os.stat(self.path)
        except OSError:
            there = None
        if here.st_nlink == 0 or there is None or (there.st_dev, there.st_ino) != (here.st_dev, here.st_ino):
            raise RunDirError(
                f"{self.path} was moved or deleted while this process trained into it; stopped without writing "
                f"more (what it had written is whole, wherever it is now: continue it there with --resume)"
            )


@contextlib.contextmanager
def locked(run_dir):
    """Hold the run directory's exclusive lock inside the block (the directory is made if needed); yields a HeldDir.

    A directory this call made, and that holds nothing but the lock's note when the block ends (the
    start was refused before anything was written), is removed again.
    """
    run_dir = Path(run_dir)
    check_writable(run_dir)
    made = not run_dir.exists()
    run_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunDirError(
                f"{run_dir} is in use: {_holder(run_dir / LOCK_NAME)}; wait for it to end, or stop it"
            ) from None
        run = HeldDir(run_dir, fd)
        write_atomically(run.files / LOCK_NAME, json.dumps(_who()).encode("utf-8"))
        try:
            yield run
        except OSError as err:  # name the file as the user knows it, not by the open directory's /proc path
            if isinstance(err.filename, str):
                err.filename = err.filename.replace(str(run.files), str(run_dir), 1)
            raise
        finally:
            if made and {p.name for p in run.files.iterdir()} == {LOCK_NAME}:
                (run.files / LOCK_NAME).unlink()
                run_dir.rmdir()
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _who():
    return {"pid": os.getpid(), "started": time.strftime("%Y-%m-%d %H:%M:%S"), "command": " ".join(sys.argv)[:200]}


def _holder(lock_path):
    """'process 1234 (python train.py ...) has trained into it since ...', from what the holder wrote."""
    try:
        who = json.loads(Path(lock_path).read_text(encoding="utf-8"))
        return f"process {who['pid']} ({who['command']}) has trained into it since {who['started']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process holds its lock"
