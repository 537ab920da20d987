"""`python -m tensorlab.exercises assignment DIR`: a folder to hand to students.

It holds one stub per exercise, in the order of the course, and a README with the task and
the command that checks each one. No solution is anywhere in it (they live in the repository's
teachers/solutions/, which is not part of the installed package).
"""

import shutil
import sys
from pathlib import Path

from tensorlab.exercises.catalog import EXERCISES

STUBS = Path(__file__).resolve().parent / "stubs"


def write(folder, prog):
    """Write the students' folder; 0 when written, 2 when `folder` exists and is not empty."""
    if folder.exists() and any(folder.iterdir()):
        print(f"{folder} already exists and is not empty; not writing into it. Give a new folder.", file=sys.stderr)
        return 2
    folder.mkdir(parents=True, exist_ok=True)
    for exercise in EXERCISES:
        shutil.copyfile(STUBS / f"{exercise.name}.py", folder / f"{exercise.name}.py")
    (folder / "README.md").write_text(readme(prog))
    print(f"Wrote {folder}: {len(EXERCISES)} exercises and README.md (no solutions).")
    return 0


def readme(prog):
    rows = "\n".join(
        f"| {number} | `{e.name}.py` | {e.title} | `{prog} check {e.name} {e.name}.py` |"
        for number, e in enumerate(EXERCISES, 1)
    )
    return f"""# Backpropagation exercises

Each file here is an exercise: its docstring says what to write, and its `forward` (where
there is one) is given. Replace every `raise NotImplementedError(...)` with your code, then
check the file from this folder (tensorlab must be importable: `pip install -e .` in the
tensorlab folder):

| # | file | what you write | check it with |
|---|------|----------------|---------------|
{rows}

The check runs your code against finite differences (or the reference optimizer) in float64,
and when something is wrong it says which input, which elements, and which slip it looks
like. Exit code 0: passed; 1: failed; 2: a usage error. Each case has a time limit of a few
seconds (`--time-limit SECONDS` changes it), so a loop that never ends is stopped and named.

Rules: a backward works on NumPy arrays only. Calling tensorlab's own ops or its autograd
inside your backward is refused by the checker: the point is to derive it yourself.

Work in order: the engine track first (a scalar `Value`, the order of the backward walk,
undoing broadcasting, a new `Function`), then the ops, up to attention and AdamW.
"""
