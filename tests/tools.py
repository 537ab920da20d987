"""The command-line tools the tests run, found beside the Python that runs the tests, never on PATH; a command
run into a pipe whose reader has gone (`... | head`); a small disk; the command line of the scenario generators.

`venv/bin/python -m pytest` with the venv not activated has its tools in venv/bin, and PATH may hold
other versions, or none: the interpreter's own folder is the one that pip installed them into.
"""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest


def installed_tool(name):
    """The path of the console script `name` installed beside sys.executable; fails the test run if missing."""
    path = Path(sys.executable).parent / name
    if not path.is_file():
        pytest.fail(f"{name} is not installed beside {sys.executable}: pip install -e '.[test]'")
    return str(path)


def run_into_a_closed_pipe(argv, cwd, buffering):
    """Run `argv` with its stdout a pipe whose reader closed before it starts (every write fails with EPIPE).

    buffering: "buffered" as in a user's shell (Python buffers a pipe, so the error comes at a flush) or
    "unbuffered" as with PYTHONUNBUFFERED=1 (the error comes at the first print); both must end quietly.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env.update({"PYTHONUNBUFFERED": "1"} if buffering == "unbuffered" else {})
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(argv, stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120, cwd=cwd, env=env)
    finally:
        os.close(write_end)


def run_each(scenario, count, seed, report, seen=lambda what: None):
    """scenario(n) -> (what, problems) for `count` seeds from `seed`: [(what, problems)] of those that broke the
    property, each also told to `report`; `seen(what)` is told what every scenario did."""
    failures = []
    for n in range(seed, seed + count):
        what, problems = scenario(n)
        seen(what)
        if problems:
            failures.append((what, problems))
            report(f"{what}\n    " + "\n    ".join(problems))
    return failures


def scenarios_main(doc, run_scenarios, **options):
    """The command line of a scenario generator (tests/fault_injector.py, tests/hostile_class.py,
    tests/junk_answers.py, tests/fuzz_kernels.py), `doc` its docstring: `--scenarios N --seed S`, and `--NAME` for
    each of `options` (name: (default, help)), handed to run_scenarios; exit status 1 when a scenario broke the
    property."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0, help="the first scenario's seed (each scenario has its own)")
    for name, (default, text) in options.items():
        parser.add_argument(f"--{name}", type=type(default), default=default, help=text)
    args = parser.parse_args()
    started = time.perf_counter()
    failures = run_scenarios(args.scenarios, args.seed, **{name: getattr(args, name) for name in options})
    print(f"{args.scenarios} scenarios in {time.perf_counter() - started:.0f} s: {len(failures)} broke the property")
    return 1 if failures else 0


def tmpfs(tmp_path, size):
    """Yield a tmpfs of `size` under tmp_path where this user may mount one (root, as CI runs the suite), unmounted
    after; else yield None (a user's own machine, a container without the right to mount)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        yield None
        return
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True)
