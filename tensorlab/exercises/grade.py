"""`python -m tensorlab.exercises grade SUBMISSIONS_DIR`: check a whole class into a gradebook.

SUBMISSIONS_DIR holds one folder per student, named after the student, with their exercise files
in it under the stubs' names (matmul.py, softmax.py, ...). Every exercise that some student handed
in is graded for every student (a missing file is a row that failed). Each check runs as its own
`check NAME FILE --json` process, in an empty working folder, with the time limit per case and a
limit on the whole process: a student's loop that never ends, a crash, or an exit from their code
fails that row and the grading goes on. The gradebook is written as CSV and as a Markdown table,
one row per student and exercise: student, exercise, passed, diagnosis (at the hint level), seed.

A row passes only when the check's exit code is 0 and its JSON says so; what the student's code
prints goes to stderr, so a file that prints a passing record and exits before any check fails.
It is not a sandbox, and not proof against a student set on fooling it: their code runs in the
checker's process with the grader's rights (it could write a forged record straight to the
process's stdout and exit). Grade code you do not trust in a container, and read what passes.
"""

import csv
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tensorlab.exercises.catalog import EXERCISES

COLUMNS = ("student", "exercise", "passed", "diagnosis", "seed")
# A whole check may take this many case limits plus STARTUP seconds (no exercise has more than 14 cases or
# probes; a right answer is checked in about a second); past that its process is stopped from outside.
MOST_CASES = 20
STARTUP = 30.0


def grade(folder, out, hints, time_limit):
    """Check every student's files, write out.csv and out.md; 0 when written, 2 on a usage error."""
    if not folder.is_dir():
        print(f"{folder}: no such folder. Give the folder that holds one folder per student.", file=sys.stderr)
        return 2
    if not time_limit > 0:
        print("grade needs a time limit per case: give --time-limit SECONDS above 0.", file=sys.stderr)
        return 2
    students = sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    names = [e.name for e in EXERCISES if any((student / f"{e.name}.py").is_file() for student in students)]
    if not names:
        print(
            f"{folder} has no student folder with an exercise file in it (alice/matmul.py, say): nothing to grade.",
            file=sys.stderr,
        )
        return 2
    rows = [row(student, name, hints, time_limit) for student in students for name in names]
    csv_path, md_path = out.with_name(out.name + ".csv"), out.with_name(out.name + ".md")
    out.parent.mkdir(parents=True, exist_ok=True)
    write_csv(rows, csv_path)
    md_path.write_text(markdown(rows, hints))
    passed = sum(r["passed"] == "yes" for r in rows)
    print(
        f"Graded {len(students)} students on {len(names)} exercises ({', '.join(names)}): {passed} of {len(rows)} "
        f"passed. Gradebook: {csv_path} and {md_path}."
    )
    return 0


def row(student, name, hints, time_limit):
    """The gradebook row of one student's exercise."""
    path = student / f"{name}.py"
    if not path.is_file():
        return _row(student, name, False, f"not handed in: there is no {name}.py in {student.name}/")
    result = run_check(name, path, hints, time_limit)
    return _row(student, name, result["passed"], result["diagnosis"], result.get("seed"))


def run_check(name, path, hints, time_limit):
    """`check NAME FILE --json` in its own process: its JSON, or one that says how the check died."""
    limit = time_limit * (MOST_CASES + 1) + STARTUP
    command = [sys.executable, "-m", "tensorlab.exercises", "check", name, str(path.resolve())]
    command += ["--json", "--hints", hints, "--time-limit", str(time_limit)]
    package_parent = str(Path(__file__).resolve().parents[2])  # this tensorlab, installed or not
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [package_parent, os.environ.get("PYTHONPATH")])))
    with tempfile.TemporaryDirectory() as empty, tempfile.TemporaryFile("w+") as errors:
        try:
            done = subprocess.run(
                command, cwd=empty, env=env, stdout=subprocess.PIPE, stderr=errors, text=True, timeout=limit
            )
        except subprocess.TimeoutExpired:
            return {"passed": False, "diagnosis": f"the check did not finish within {limit:g} s and was stopped."}
        errors.seek(0)
        last_error = (errors.read().strip().splitlines() or [""])[-1]
    try:
        result = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        result = None
    if done.returncode not in (0, 1) or not isinstance(result, dict):
        why = f": {last_error}" if last_error else ""
        return {"passed": False, "diagnosis": f"the check crashed (exit code {done.returncode}){why}"}
    return dict(result, passed=result.get("passed") is True and done.returncode == 0)


def _row(student, name, passed, diagnosis, seed=None):
    return {
        "student": student.name,
        "exercise": name,
        "passed": "yes" if passed else "no",
        "diagnosis": diagnosis,
        "seed": "" if seed is None else str(seed),
    }


def write_csv(rows, path):
    with path.open("w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)


def markdown(rows, hints):
    """The gradebook as a Markdown table (a `|` in a diagnosis escaped)."""
    lines = [
        f"# Gradebook ({sum(r['passed'] == 'yes' for r in rows)} of {len(rows)} passed; hints: {hints})",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "|".join("---" for _ in COLUMNS) + "|",
    ]
    for r in rows:
        lines.append("| " + " | ".join(r[c].replace("|", "\\|") for c in COLUMNS) + " |")
    return "\n".join(lines) + "\n"
