"""The command-line tools the tests run, found beside the Python that runs the tests, never on PATH; and a
command run into a pipe whose reader has gone (`... | head`).

`venv/bin/python -m pytest` with the venv not activated has its tools in venv/bin, and PATH may hold
other versions, or none: the interpreter's own folder is the one that pip installed them into.
"""

import os
import subprocess
import sys
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
