"""A fault injector for run directories: seeded random scenarios, one property.

    python -m tests.fault_injector --scenarios 1000 [--seed 0]     (from the repository root)

Each scenario copies a finished tiny run, does one harmful thing to it and then runs a command of
train.py on it (in this process, so a scenario costs a fraction of a second):

    damage   a random file of the run truncated, one bit flipped, deleted, or a directory or FIFO in its place
    kill     the process dies at a random file write: before it, half way through its temporary file (left
             behind, as a SIGKILL leaves it), or just after its rename; it writes nothing more
    beside   any command while another process trains into the run (its lock held)
    full     the disk fills (ENOSPC) or turns read-only (EROFS) at a random write, and stays so

Every file of a run is written by tensorlab.serialization.write_atomically, so the faults strike there:
in every module that imported it, the function is replaced by one that counts the writes. After a kill or
a full disk, a random command runs, then the run is continued to its end.

The property: every command ends with status 0, or with one line on stderr saying what is wrong (no
traceback, no hang); and no finished work is lost: a checkpoint that was whole is still whole and at
least as far on, the metrics rows are still there, config.json and tokenizer.json are still there,
unless the scenario itself destroyed them. tests/test_fault_injector.py runs a hundred scenarios.
"""

import contextlib
import errno
import io
import json
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import train  # noqa: E402
from models import run_dir as run_dir_rules  # noqa: E402
from models.checkpoint import read_checkpoint  # noqa: E402
from models.metrics import read_metrics  # noqa: E402
from tensorlab import serialization  # noqa: E402
from tensorlab.serialization import TEMP_SUFFIX  # noqa: E402
from tests.tools import run_each, scenarios_main  # noqa: E402

CORPUS = ROOT / "tests" / "data" / "small_corpus.txt"
SETTINGS = [
    *("--config", ROOT / "configs" / "tiny.json", "--d-model", 16, "--d-ff", 32, "--n-heads", 2, "--vocab-size", 270),
    *("--batch-size", 4, "--seq-len", 16, "--eval-interval", 4, "--eval-batches", 1, "--no-report"),
]
FAULTS = ("damage", "kill", "beside", "full")
HANG_S = 30


class Killed(BaseException):
    """The process died here (a BaseException escapes every handler, as a SIGKILL would; later writes fail too)."""


def base_run(workdir):
    """A finished run of 8 steps (evaluations at 0, 4, 8; latest saved every 2 steps) on a 12 KB corpus."""
    corpus = workdir / "corpus.txt"
    corpus.write_bytes(CORPUS.read_bytes()[:12_000])
    out = workdir / "base"
    status, err = command(["--data", corpus, "--out", out, "--max-steps", 8, "--checkpoint-interval", 2, *SETTINGS])
    assert status == 0, err
    return out, corpus


def command(argv):
    """Run train.py `argv` here: (exit status, stderr); a Killed propagates."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = train.main([str(a) for a in argv])
    return status, err.getvalue()


@contextlib.contextmanager
def deadline(seconds):
    """TimeoutError when the block takes longer than `seconds` (a read of a FIFO waits forever)."""

    def hung(signum, frame):
        raise TimeoutError(f"no answer in {seconds} s")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def inventory(run):
    """What of the run is finished work: its whole checkpoints (name -> step), metrics rows, config, tokenizer."""
    found = {}
    for path in sorted((run / "checkpoints").glob("*.safetensors")) if (run / "checkpoints").is_dir() else []:
        try:
            if not path.is_file():
                continue
            state = read_checkpoint(path)
            found[path.name] = state.get("progress", state).get("step")
        except Exception:  # damaged: not finished work any more
            pass
    with contextlib.suppress(Exception):
        if (run / "metrics.jsonl").is_file():
            found["metrics"] = [json.dumps(row, sort_keys=True) for row in read_metrics(run)]
    for name in ("config.json", "tokenizer.json"):
        with contextlib.suppress(Exception):
            if not (run / name).is_file():
                continue
            found[name] = json.loads((run / name).read_text(encoding="utf-8"))
    return found


def losses(before, after):
    """What finished work `after` lacks that `before` had."""
    lost = []
    for name, value in before.items():
        now = after.get(name)
        if name.endswith(".safetensors") and (now is None or now < value):
            lost.append(f"{name} (step {value}) is now {now}")
        elif name == "metrics" and (now is None or now[: len(value)] != value):
            lost.append("metrics rows")
        elif name == "tokenizer.json" and now != value:
            lost.append(name)
        elif name == "config.json" and (now is None or {**now, "max_steps": 0} != {**value, "max_steps": 0}):
            lost.append(name)
    return lost


def judge(status, err, expect=None):
    """The property's first half: status 0, or one line saying what is wrong."""
    lines = [line for line in err.splitlines() if line.startswith("train.py")]
    if "Traceback" in err:
        return [f"a traceback: {err.strip().splitlines()[-1]}"]
    if expect is not None and status != expect:
        return [f"status {status}, expected {expect}: {err.strip()[-300:]}"]
    if status != 0 and len(lines) != 1:
        return [f"status {status} with {len(lines)} error lines: {err.strip()[-300:]}"]
    return []


def commands(rng, run, other, scratch, corpus):
    """A random command of train.py on `run` (`other` is another whole run, `scratch` a fresh path)."""
    choices = [
        ["eval", run, "--checkpoint", rng.choice(["best", "latest"])],
        ["generate", run, "--max-new-tokens", 3, "--prompt", "ab"],
        ["export", run, "--out", scratch],
        ["export", other, "--out", run],
        ["--resume", run, "--max-steps", int(rng.integers(8, 13)), "--no-report"],
        ["--data", corpus, "--out", run, "--max-steps", 4, *SETTINGS],
    ]
    return choices[int(rng.integers(len(choices)))]


def damage(rng, run):
    """Harm one random file or folder of the run; returns what was done."""
    paths = sorted(p for p in run.rglob("*") if p.name != run_dir_rules.LOCK_NAME)
    path = paths[int(rng.integers(len(paths)))]
    how = str(rng.choice(["truncate", "flip", "delete", "directory", "fifo"]))
    if how in ("truncate", "flip") and path.is_file():
        data = bytearray(path.read_bytes())
        if how == "truncate":
            data = data[: int(rng.integers(len(data))) if data else 0]
        elif data:
            data[int(rng.integers(len(data)))] ^= 1 << int(rng.integers(8))
        path.write_bytes(bytes(data))
    else:
        how = "delete" if how in ("truncate", "flip") else how
        shutil.rmtree(path) if path.is_dir() else path.unlink()
        if how == "directory":
            path.mkdir()
        elif how == "fifo":
            os.mkfifo(path)
    return f"{how} {path.relative_to(run)}"


KILL_STAGES = ("before", "half way", "after the rename")


@contextlib.contextmanager
def failing_writes(rng, after, error):
    """Every file write after the first `after` fails: Killed at a random stage of it (and every later write
    raises Killed: the process is dead), or an OSError `error` of a full or read-only disk. Yields [what happened]."""
    real, count, said = serialization.write_atomically, [0], []

    def write_atomically(target, data):
        count[0] += 1
        if count[0] <= after:
            return real(target, data)
        if error is not Killed:
            said[:] = said or [f"{errno.errorcode[error]} at write {count[0]} ({Path(target).name})"]
            raise OSError(error, os.strerror(error), str(target))
        if said:  # dead already: nothing more is written
            raise Killed
        stage = KILL_STAGES[int(rng.integers(len(KILL_STAGES)))]
        said.append(f"killed {stage} at write {count[0]} ({Path(target).name})")
        if stage == "half way":
            Path(target).parent.mkdir(parents=True, exist_ok=True)
            fd, _ = tempfile.mkstemp(dir=Path(target).parent, prefix=f".{Path(target).name}.", suffix=TEMP_SUFFIX)
            os.write(fd, data[: int(rng.integers(len(data) + 1))])
            os.close(fd)
        elif stage == "after the rename":
            real(target, data)
        raise Killed

    modules = [m for m in list(sys.modules.values()) if getattr(m, "write_atomically", None) is real]
    for module in modules:
        module.write_atomically = write_atomically
    try:
        yield said
    finally:
        for module in modules:
            module.write_atomically = real


def scenario(seed, base, corpus, workdir):
    """Draw and run one scenario; returns (its description, the problems found)."""
    rng = np.random.default_rng(seed)
    run, scratch = workdir / f"run{seed}", workdir / f"scratch{seed}"
    shutil.copytree(base, run)
    fault = FAULTS[seed % len(FAULTS)]
    argv = commands(rng, run, base, scratch, corpus)
    what, problems = [fault], []
    try:
        with deadline(HANG_S):
            problems += harm_and_run(rng, fault, argv, run, what, base, scratch, corpus)
    except TimeoutError as err:
        problems.append(f"hung: {err}")
    except Exception as err:  # noqa: BLE001 (an exception out of train.main is what the property forbids)
        problems.append(f"{type(err).__name__} out of train.main: {err}")
    finally:
        for path in (run, scratch):
            shutil.rmtree(path, ignore_errors=True)
    return f"scenario {seed}: {' '.join(what)}: {' '.join(map(str, argv))}".replace(str(workdir) + "/", ""), problems


def harm_and_run(rng, fault, argv, run, what, other, scratch, corpus):
    """Do the harm, run the command (after a kill or a full disk, then continue the run); the problems found."""
    problems = []
    if fault == "damage":
        what.append(damage(rng, run))
    before = inventory(run)
    if fault == "beside":
        with run_dir_rules.locked(run):
            expect = 0 if argv[0] in ("eval", "generate") or argv[:2] == ["export", run] else 2
            return judge(*command(argv), expect) + [f"lost {loss}" for loss in losses(before, inventory(run))]
    if fault in ("kill", "full"):  # a command that writes: the run continued (up to 12 writes), or an export
        error = Killed if fault == "kill" else int(rng.choice([errno.ENOSPC, errno.EROFS]))
        resume = rng.random() < 0.8
        argv[:] = ["--resume", run, "--max-steps", int(rng.integers(9, 14)), "--no-report"]
        argv[:] = argv if resume else ["export", run, "--out", scratch]
        try:
            with failing_writes(rng, int(rng.integers(0, 12)) if resume else 0, error) as said:
                status, err = command(argv)
                problems += judge(status, err) if fault == "full" else []
        except Killed:
            pass
        before = {**before, **{k: v for k, v in inventory(run).items() if k.endswith(".safetensors")}}
        then = commands(rng, run, other, scratch, corpus)  # any command afterwards, then the run continued
        what.append(
            f"{' '.join(map(str, argv))}: {' '.join(said) or 'no write failed'}; then {' '.join(map(str, then))};"
        )
        problems += judge(*command(then))
        argv[:] = ["--resume", run, "--max-steps", 13, "--no-report"]
    problems += judge(*command(argv))
    return problems + [f"lost {loss}" for loss in losses(before, inventory(run))]


def run_scenarios(count, seed=0, report=print, seen=lambda what: None):
    """Run `count` scenarios from `seed`; returns [(scenario, problems)] of those that broke the property.

    `seen(what)` is told what each scenario did."""
    with tempfile.TemporaryDirectory(prefix="fault-injector-") as tmp:
        workdir = Path(tmp)
        base, corpus = base_run(workdir)
        return run_each(lambda n: scenario(n, base, corpus, workdir), count, seed, report, seen)


if __name__ == "__main__":
    sys.exit(scenarios_main(__doc__, run_scenarios))
