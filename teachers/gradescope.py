"""Gradescope's autograder for the tensorlab exercises: check one submission, write results.json.

`python -m teachers.classroom assignment DIR --gradescope` puts this file in DIR/autograder.zip,
beside the engine's wheel, setup.sh, run_autograder and settings.json. On Gradescope,
run_autograder runs it for each submission: the student's files are in /autograder/submission/
(at any depth), and /autograder/results/results.json is what Gradescope reads back. The
environment variable AUTOGRADER_ROOT names another root (a test's temporary folder).

One test per exercise of settings.json, worth 1 point: passed or not, its output the check's
report at the hint level of settings.json (what `check` prints). A file not handed in scores 0
and says so. The student's code runs as in `check`: in a process of its own, the verdict here.
Gradescope runs it as root, so a file's code can write into the installed engine or NumPy, which
every later check runs: once their files differ from what they were before the first check, each
later exercise scores 0 and reads NOT GRADED.
"""

import json
import os
from pathlib import Path

from tensorlab.exercises.catalog import BY_NAME
from tensorlab.exercises.report import Report
from tensorlab.exercises.runner import handed_in_file, run
from tensorlab.exercises.student import NOT_GRADED, engine_files

HERE = Path(__file__).resolve().parent


def main():
    root = Path(os.environ.get("AUTOGRADER_ROOT", "/autograder"))
    settings = json.loads((HERE / "settings.json").read_text())
    handed_in = {}
    for path in sorted((root / "submission").rglob("*.py"), key=lambda p: len(p.parts)):
        handed_in.setdefault(path.name, path)  # the shallowest file of each name
    trusted = engine_files()  # before any of the student's code runs
    tests = [test(name, handed_in.get(f"{name}.py"), settings, trusted) for name in settings["exercises"]]
    results = {
        "score": sum(t["score"] for t in tests),
        "max_score": float(len(tests)),
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }
    (root / "results").mkdir(parents=True, exist_ok=True)
    (root / "results" / "results.json").write_text(json.dumps(results, indent=2))


def test(name, path, settings, trusted):
    """Gradescope's record of one exercise's check; none once an earlier check changed the engine's files."""
    exercise = BY_NAME[name]
    if path is None:
        score, output = 0.0, f"Not handed in: your submission has no {name}.py (hand in each file under its own name)."
    elif engine_files() != trusted:
        score, output = 0.0, NOT_GRADED
    elif isinstance(source := handed_in_file(path), str):  # a link (to /dev/zero, say), a FIFO
        score, output = 0.0, source
    else:
        lines = []
        report = Report(exercise, path.name, settings["hints"], show=lines.append)
        score = float(run(exercise, path, settings["time_limit"], None, report, source=source) == 0)
        output = "\n".join(lines)
    return {
        "name": f"{name}: {exercise.title}",
        "score": score,
        "max_score": 1.0,
        "output": output,
        "visibility": "visible",
    }


if __name__ == "__main__":
    main()
