"""`python -m tensorlab.exercises assignment DIR [--wheel]`: a folder to hand to students.

It holds one stub per exercise, in the order of the course, and a README with the task and
the command that checks each one. No solution is anywhere in it (they live in the repository's
teachers/solutions/, which is not part of the installed package).

With --wheel it also holds a wheel of the engine, built from this checkout's tensorlab/ alone
(no teachers/, tests/ or docs/), and the README installs that wheel instead of a checkout. The
wheel is the whole engine: its ops keep their backwards, because the checker's references are
the engine's own (stages.py runs its autograd, adamw is compared with tensorlab.optim.AdamW) and
students train models with it later. docs/exercises.md, "For teachers", says what that leaves open.
"""

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tensorlab.exercises.catalog import EXERCISES

STUBS = Path(__file__).resolve().parent / "stubs"
SOURCE = Path(__file__).resolve().parents[2]  # the checkout: pyproject.toml beside tensorlab/


def write(folder, prog, wheel=False):
    """Write the students' folder; 0 when written, 1 when the wheel cannot be built, 2 when `folder` is not empty."""
    if folder.exists() and any(folder.iterdir()):
        print(f"{folder} already exists and is not empty; not writing into it. Give a new folder.", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as scratch:
        built = build_wheel(Path(scratch)) if wheel else None
        if wheel and built is None:
            return 1
        folder.mkdir(parents=True, exist_ok=True)
        if built:
            shutil.copyfile(built, folder / built.name)
    for exercise in EXERCISES:
        shutil.copyfile(STUBS / f"{exercise.name}.py", folder / f"{exercise.name}.py")
    (folder / "README.md").write_text(readme(prog, built.name if built else None))
    extra = f", {built.name} (the engine to install)" if built else ""
    print(f"Wrote {folder}: {len(EXERCISES)} exercises{extra} and README.md (no solutions).")
    return 0


def build_wheel(scratch):
    """Build the engine's wheel from a copy of tensorlab/ (so the checkout stays clean); its path, or None."""
    if not (SOURCE / "pyproject.toml").is_file():
        print(
            f"--wheel builds from the tensorlab source folder, and {SOURCE} has no pyproject.toml (this tensorlab "
            f"is installed, not a checkout). Run the command from a checkout of tensorlab.",
            file=sys.stderr,
        )
        return None
    source = scratch / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copyfile(SOURCE / name, source / name)
    shutil.copytree(SOURCE / "tensorlab", source / "tensorlab", ignore=shutil.ignore_patterns("__pycache__"))
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet"]
    done = subprocess.run(command + [str(source), "-w", str(scratch)], capture_output=True, text=True)
    wheels = sorted(scratch.glob("tensorlab-*.whl"))
    if done.returncode != 0 or not wheels:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        print(
            f"Building the wheel failed (pip wheel, exit code {done.returncode}): {last}\n"
            f"It needs pip and setuptools in this Python: python -m pip install setuptools",
            file=sys.stderr,
        )
        return None
    return wheels[0]


def readme(prog, wheel=None):
    rows = "\n".join(
        f"| {number} | `{e.name}.py` | {e.title} | `{prog} check {e.name} {e.name}.py` |"
        for number, e in enumerate(EXERCISES, 1)
    )
    task = """Each file here is an exercise: its docstring says what to write, and its `forward` (where
there is one) is given. Replace every `raise NotImplementedError(...)` with your code, then
check the file from this folder"""
    if wheel:
        install = f"""First install tensorlab, once, from the wheel in this folder (in a virtual environment of
your own, best; pip fetches NumPy, the one thing it needs):

    pip install {wheel}

{task}:"""
    else:
        install = f"""{task} (tensorlab must be importable: `pip install -e .` in the
tensorlab folder):"""
    return f"""# Backpropagation exercises

{install}

| # | file | what you write | check it with |
|---|------|----------------|---------------|
{rows}

The check runs your code against the analytic gradient (or the reference optimizer) in
float64, on inputs drawn fresh on every run (the seed is printed; `--seed SEED` replays it),
and when something is wrong it says which input, which elements, and which slip it looks
like. Exit code 0: passed; 1: failed; 2: a usage error. Each case has a time limit of a few
seconds (`--time-limit SECONDS` changes it), so a loop that never ends is stopped and named.

Rules: a backward works on NumPy arrays only. Calling tensorlab's own ops or its autograd
inside your backward is refused by the checker: the point is to derive it yourself.

Work in order: the engine track first (a scalar `Value`, the order of the backward walk,
undoing broadcasting, a new `Function`), then the ops, up to attention and AdamW.
"""
