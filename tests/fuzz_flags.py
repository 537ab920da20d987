"""Command lines nobody wrote down: train.py's and `check`'s flags drawn from their parsers, valid, at an edge or wrong.

    python -m tests.fuzz_flags --scenarios 300 [--seed 0]        (from the repository root)

Each scenario draws a command of train.py (a new run, a resume, eval, generate, export, a sweep of one config) on a
copy of a finished tiny run, or the students' `python -m tensorlab.exercises check` on a right file, and adds up to
four options of that command's parser, read from the parser itself, so an option added later is drawn without a word
here. Each value is drawn for the option's kind: a whole number or a number (valid, at an edge such as 0, -1, 2**63,
nan or inf, or not a number), one of its choices or not, a path (missing, a folder, an empty, binary or FIFO file, the
corpus, the run, a config), a text (empty, not UTF-8, long); or the flag is misspelt or left without its value; a
new run or a sweep may read a config with a value, a key or its text gone wrong (junk_config). Only --max-steps
keeps to small values and check's --time-limit to generous ones (else a long run, or a right file failed, as asked),
and no value names a download (the corpus "tinystories", a tokenizer on the Hugging Face hub). The command runs in
this process, as tests/fault_injector.py runs its commands.

The property: the command ends within HANG_S with status 0, or with lines on stderr that are each train.py's own
("train.py: error: ..." or "train.py: stopped: ..."), no traceback and nothing raised out of train.main; a non-finite
number is never taken (no setting of train.py means anything by nan or inf); a run that ends with status 0 has a
whole latest checkpoint; and the run's finished work is never lost. `check` of a right file ends with 0, or with 2
and its parser's error line: a bad flag is never a verdict on the file. tests/test_fuzz_flags.py runs fifty scenarios.
"""

import argparse
import contextlib
import io
import json
import math
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import train  # noqa: E402
from models import export  # noqa: E402
from models.checkpoint import read_checkpoint  # noqa: E402
from tensorlab.exercises import __main__ as exercises  # noqa: E402
from tests.fault_injector import SETTINGS, base_run, command, deadline, inventory, losses  # noqa: E402
from tests.tools import run_each, scenarios_main  # noqa: E402

HANG_S = 60
ODD = 0.8  # the chance that a scenario's first option has a value at an edge or wrong (one of the pools' second list)
INTS = (["1", "2", "3", "8"], ["0", "-1", str(2**63), str(10**30), "x", "1.5", "", "1e3"])
SMALL_INTS = (["1", "2", "3"], ["-1", "x", "1.5", ""])  # --max-steps: a large one is a long run, as asked
SECONDS = (["0", "5", "30"], ["-1", "nan", "inf", "x", ""])  # check's --time-limit: a short one fails a right file
FLOATS = (["0.5", "0.01", "0.9"], ["1", "0", "-1", "nan", "inf", "-inf", "1e308", "5e-324", "x", "", "1,5"])
TEXTS = (["ROMEO:", "é"], ["", "x" * 5000, "\udcff", "\n", "--"])
JUNK_CONFIGS = 0.3  # the chance that a new run or a sweep reads a config with one thing wrong (junk_config)
JUNK = [None, "x", "1", [], {}, True, -1, 0, 2.5, 1e308, math.nan, math.inf, 10**30]  # a config's values gone wrong
CHECKPOINTS = (["best", "latest", "snapshot_step000004"], ["snapshot_step999999", "../config", "", "nope"])
PATHS = ("--out", "--config", "--data", "--resume", "--prompts", "--tokenizer")
NOT_DRAWN = {"-h", "--help"}  # argparse's own: prints usage and ends with 0
LOST_WORDS = re.compile(r"invalid \w+_\w+ value")  # argparse's words when a flag's type function raised: why is lost


def parsers():
    """{command: its argparse parser}, as train.py, models/export.py and tensorlab/exercises/__main__.py build them."""
    sweep = argparse.ArgumentParser()  # train.py builds sweep's in cmd_sweep: the same flags as a new run's
    train.add_flags(sweep)
    sweep.add_argument("--out")
    return {
        "train": train.train_parser(),
        "resume": train.train_parser(),
        "eval": train.eval_parser(),
        "generate": train.generate_parser(),
        "export": export.export_parser(),
        "sweep": sweep,
        "check": exercises.parser()._subparsers._group_actions[0].choices["check"],
    }


def places(workdir, run, corpus):
    """{what: path} a path option is drawn from: missing, a folder, empty, binary, a FIFO, the corpus, the run, a
    config."""
    found = {name: workdir / name for name in ("missing", "folder", "empty.txt", "binary.bin", "fifo")}
    if not found["folder"].exists():
        found["folder"].mkdir()
        found["empty.txt"].touch()
        found["binary.bin"].write_bytes(bytes(range(256)) * 4)
        os.mkfifo(found["fifo"])
    return found | {"corpus": corpus, "run": run, "config": ROOT / "configs" / "tiny.json"}


def draw_value(rng, action, paths, scratch, odd):
    """A value for the option `action`: one of its valid ones, or (odd) one at an edge or wrong."""
    name = action.option_strings[0]
    if action.choices:
        pool = (list(action.choices), ["bogus"])
    elif name == "--max-steps":
        pool = SMALL_INTS
    elif name == "--time-limit":
        pool = SECONDS
    elif action.type in (int, exercises.whole_number):
        pool = INTS
    elif action.type is float:
        pool = FLOATS
    elif name == "--checkpoint":
        pool = CHECKPOINTS
    elif name in PATHS:  # --out, --config, --data, --resume, --prompts, --tokenizer
        valid = {"--out": scratch, "--resume": paths["run"], "--config": paths["config"]}.get(name, paths["corpus"])
        pool = ([valid], [path for path in paths.values() if path != valid])
    else:
        pool = TEXTS
    drawn = pool[odd]
    return str(drawn[int(rng.integers(len(drawn)))])


def junk_config(rng, path):
    """Write configs/tiny.json to `path` with one thing wrong (a value of another type or out of range, a key
    dropped or unknown, the text cut short, a list for the object); returns `path`."""
    config = json.loads((ROOT / "configs" / "tiny.json").read_text())
    where = config["model"] if rng.random() < 0.5 else config
    key, how = str(rng.choice(sorted(where))), int(rng.integers(5))
    if how == 0:
        where[key] = JUNK[int(rng.integers(len(JUNK)))]
    elif how == 1:
        del where[key]
    elif how == 2:
        where[key + "s"] = where[key]
    text = json.dumps([config] if how == 4 else config)
    path.write_text(text[: int(rng.integers(len(text)))] if how == 3 else text)
    return path


def draw_options(rng, parser, paths, scratch):
    """Up to four options of `parser`, the first at an edge or wrong (ODD of the time: its value, or the flag
    misspelt or without its value), the others valid; a switch alone."""
    actions = [a for a in parser._actions if a.option_strings and not set(a.option_strings) & NOT_DRAWN]
    drawn = []
    for k, index in enumerate(rng.choice(len(actions), size=min(len(actions), int(rng.integers(1, 5))), replace=False)):
        action = actions[int(index)]
        flag = str(rng.choice(action.option_strings))
        odd = k == 0 and rng.random() < ODD
        if odd and rng.random() < 0.2:  # the flag misspelt, or without its value
            drawn.append([flag + "s"] if action.nargs == 0 or rng.random() < 0.5 else [flag])
        else:
            drawn.append([flag] if action.nargs == 0 else [flag, draw_value(rng, action, paths, scratch, odd)])
    return drawn


def base_command(kind, run, corpus, scratch):
    """The command a scenario's options are added to: it works as it is."""
    return {
        "train": ["--data", corpus, "--out", scratch, "--max-steps", 2, *SETTINGS],
        "resume": ["--resume", run, "--max-steps", 10, "--no-report"],
        "eval": ["eval", run],
        "generate": ["generate", run, "--max-new-tokens", 3, "--prompt", "ab"],
        "export": ["export", run, "--out", scratch],
        "check": ["check", "mul", ROOT / "teachers" / "solutions" / "mul.py"],
        "sweep": ["sweep", ROOT / "configs" / "tiny.json", "--out", scratch, "--data", corpus, "--max-steps", 2]
        + [a for a in SETTINGS[2:] if a != "--no-report"],  # sweep always writes its report
    }[kind]


def checked(argv):
    """Run `python -m tensorlab.exercises` `argv` here: (exit status, stderr)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = exercises.main(argv)
    return status, err.getvalue()


def judge(status, err, options, kind, out):
    """The property's problems with one command's outcome (`out`: where a new run went)."""
    if "Traceback" in err:
        return [f"a traceback: {err.strip().splitlines()[-1]}"]
    if kind == "check":  # a right file: passed, or the command line refused
        said = (err.strip().splitlines() or [""])[-1]
        if status == 0 or (status == 2 and said.startswith(exercises.PROG) and ": error: " in said):
            return [f"argparse's words for a type that raised: {said[:200]!r}"] if LOST_WORDS.search(said) else []
        return [f"a right file, status {status}: {said[:200]!r}"]
    ours = [line for line in err.splitlines() if line.startswith("train.py")]
    if status != 0:
        if status not in (1, 2, 3) or not ours:
            return [f"status {status} with no line of train.py's: {err.strip()[-300:]!r}"]
        strangers = [line for line in ours if not line.startswith(("train.py: error: ", "train.py: stopped: "))]
        strangers += [line for line in ours if LOST_WORDS.search(line)]
        return (
            [f"status {status}, a line not train.py's own, or with argparse's words: {strangers[0][:200]!r}"]
            if strangers
            else []
        )
    taken = [" ".join(o) for o in options if len(o) == 2 and _non_finite(o[1])]
    if taken:
        return [f"status 0 with a non-finite number taken: {', '.join(taken)}"]
    if kind == "train" and not _whole(Path(out)):
        return [f"status 0, but the new run in {Path(out).name} has no whole latest checkpoint"]
    return []


def _non_finite(text):
    try:
        return not math.isfinite(float(text))
    except ValueError:
        return False


def _whole(run):
    try:
        read_checkpoint(run / "checkpoints" / "latest.safetensors")
    except Exception:  # noqa: BLE001 (missing or damaged: not whole)
        return False
    return True


def scenario(seed, base, corpus, workdir, parsers_by_kind):
    """Draw and run one scenario; returns (its description, the problems found)."""
    rng = np.random.default_rng(seed)
    run, scratch = workdir / f"run{seed}", workdir / f"scratch{seed}"
    shutil.copytree(base, run)
    kind = str(rng.choice(list(parsers_by_kind)))
    options = draw_options(rng, parsers_by_kind[kind], places(workdir, run, corpus), scratch)
    argv = [str(a) for a in base_command(kind, run, corpus, scratch)] + [part for o in options for part in o]
    if kind in ("train", "sweep") and rng.random() < JUNK_CONFIGS:  # its config, not its flags, gone wrong
        tiny = argv.index(str(ROOT / "configs" / "tiny.json"))
        argv[tiny] = str(junk_config(rng, scratch.with_name(scratch.name + ".json")))
    before = inventory(run)
    if kind == "resume":
        before.pop("config.json")  # a resume writes its flags' settings into it
    try:
        with deadline(HANG_S):
            status, err = command(argv) if kind != "check" else checked(argv)
    except TimeoutError as err:
        problems = [f"hung: {err}"]
    except Exception as err:  # noqa: BLE001 (an exception out of the command is what the property forbids)
        problems = [f"{type(err).__name__} out of the command: {err}"]
    else:
        outs = [value for flag, value in zip(argv, argv[1:]) if flag == "--out"]  # argparse keeps the last
        problems = judge(status, err, options, kind, outs[-1] if outs else None)
        problems += [f"lost {x}" for x in losses(before, inventory(run))]
    finally:
        for path in (run, scratch):
            shutil.rmtree(path, ignore_errors=True)
    what = f"scenario {seed}: {kind}: {' '.join(repr(a) if not a or ' ' in a else a for a in argv)}"
    return what.replace(str(workdir) + "/", ""), problems


def run_scenarios(count, seed=0, report=print, seen=lambda what: None):
    """Run `count` scenarios from `seed`; returns [(scenario, problems)] of those that broke the property."""
    with tempfile.TemporaryDirectory(prefix="fuzz-flags-") as tmp:
        workdir = Path(tmp)
        base, corpus = base_run(workdir)
        by_kind = parsers()
        return run_each(lambda n: scenario(n, base, corpus, workdir, by_kind), count, seed, report, seen)


if __name__ == "__main__":
    sys.exit(scenarios_main(__doc__, run_scenarios))
