"""`python -m teachers.classroom assignment DIR [--wheel] [--gradescope]`: a folder to hand to students.

It holds one stub per exercise, in the order of the course, a README with the task, the file
names to hand in and the command that checks each one, and GUIDE.md, the guide to the checker's
messages (docs/exercises.md up to its teachers' section). No solution is anywhere in it (they live in the repository's
teachers/solutions/, which is not part of the installed package).

With --wheel it also holds a wheel of the engine, built from this checkout's tensorlab/ alone
(no teachers/, tests/ or docs/), and the README installs that wheel instead of a checkout. The
wheel is the whole engine: its ops keep their backwards, because the checker's references are
the engine's own (stages.py runs its autograd, adamw is compared with tensorlab.optim.AdamW) and
students train models with it later. docs/exercises.md, "For teachers", says what that leaves open.

With --gradescope it also holds autograder.zip, a Gradescope autograder: the wheel, setup.sh
(installs it), run_autograder (runs teachers/gradescope.py, which writes results.json) and
settings.json (the exercises graded, the hint level, the time limit per case: edit to taste).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from tensorlab.exercises.catalog import EXERCISES, stub

SOURCE = Path(__file__).resolve().parents[1]  # the checkout: pyproject.toml beside tensorlab/ and teachers/


GUIDE = SOURCE / "docs" / "exercises.md"
GRADESCOPE = Path(__file__).resolve().parent / "gradescope.py"
SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, building the autograder's image: Python 3.11 and the engine's wheel (NumPy with it).
set -e
apt-get update -q
apt-get install -y -q python3.11 python3.11-venv
python3.11 -m venv /autograder/venv
/autograder/venv/bin/pip install -q /autograder/source/tensorlab-*.whl
"""
RUN = """#!/usr/bin/env bash
# Gradescope runs this for each submission: /autograder/submission/*.py -> /autograder/results/results.json
exec /autograder/venv/bin/python /autograder/source/gradescope.py
"""
TIME_LIMIT = 5.0  # seconds per case on Gradescope, as `check` has


def write(folder, prog, wheel=False, gradescope=False):
    """Write the students' folder; 0 when written, 1 when it or the wheel cannot be written, 2 when `folder` is not
    a new or empty folder. It is made whole beside `folder`, then renamed into place: a failure leaves nothing."""
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        print(f"{folder} exists and is not an empty folder; not writing into it. Give a new folder.", file=sys.stderr)
        return 2
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as scratch, tempfile.TemporaryDirectory(dir=folder.parent) as staging:
            built = build_wheel(Path(scratch)) if wheel or gradescope else None
            if (wheel or gradescope) and built is None:
                return 1
            guide = _fill(Path(staging) / "hand-out", prog, built, wheel, gradescope)
            if folder.exists():
                folder.rmdir()  # the empty folder given: the hand-out takes its place
            os.rename(Path(staging) / "hand-out", folder)
    except OSError as error:
        print(f"Could not write {folder} ({error.strerror or error}); nothing was written there.", file=sys.stderr)
        return 1
    extra = f", {built.name} (the engine to install)" if wheel else ""
    extra += ", GUIDE.md (the checker's messages)" if guide else ""
    extra += ", autograder.zip (for Gradescope; not for students)" if gradescope else ""
    print(f"Wrote {folder}: {len(EXERCISES)} exercises{extra} and README.md (no solutions).")
    return 0


def _fill(folder, prog, built, wheel, gradescope):
    """Write the hand-out into the new `folder`; whether it holds GUIDE.md."""
    folder.mkdir()
    if wheel:
        shutil.copyfile(built, folder / built.name)
    if gradescope:
        autograder(folder / "autograder.zip", built)
    for exercise in EXERCISES:
        shutil.copyfile(stub(exercise.name), folder / f"{exercise.name}.py")
    guide = GUIDE.is_file()
    if guide:  # the students' part of the guide to the messages
        text = GUIDE.read_text()
        (folder / "GUIDE.md").write_text(text[: text.index("## For teachers")].rstrip() + "\n")
    (folder / "README.md").write_text(readme(prog, built.name if wheel else None, guide))
    return guide


def autograder(path, wheel):
    """Gradescope's autograder zip: the wheel, setup.sh, run_autograder, gradescope.py and settings.json."""
    settings = {"exercises": [e.name for e in EXERCISES], "hints": "fix", "time_limit": TIME_LIMIT}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as bundle:
        bundle.write(wheel, wheel.name)
        bundle.write(GRADESCOPE, "gradescope.py")
        bundle.writestr("settings.json", json.dumps(settings, indent=2) + "\n")
        for name, text in (("setup.sh", SETUP), ("run_autograder", RUN)):
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o755 << 16  # executable, as Gradescope runs them
            bundle.writestr(info, text)


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


def readme(prog, wheel=None, guide=False):
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

Hand in each file under the name it has here (`matmul.py`, not `my_matmul.py`): a file under
another name is not found, and is graded "not handed in". Edit the files in this folder, or copy
one out with `{prog} stub NAME` (it writes NAME.py).

The check runs your code against the analytic gradient (or the reference optimizer) in
float64, on inputs drawn fresh on every run (the seed is printed; `--seed SEED` replays it),
and when something is wrong it says which input, which elements, and which slip it looks
like. Exit code 0: passed; 1: failed; 2: a usage error. Each case has a time limit of a few
seconds (`--time-limit SECONDS` changes it), so a loop that never ends is stopped and named.

Rules: a backward works on NumPy arrays only. Calling tensorlab's own ops or its autograd
inside your backward is refused by the checker: the point is to derive it yourself.

Work in order: the engine track first (a scalar `Value`, the order of the backward walk,
undoing broadcasting, a new `Function`), then the ops, up to attention and AdamW.
""" + (
        "\nGUIDE.md, in this folder, says what each of the checker's messages means, and what `--hints` does.\n"
        if guide
        else ""
    )
