"""`assignment DIR --gradescope`: an autograder zip whose run writes a valid Gradescope results.json.

Gradescope runs setup.sh once and run_autograder for each submission, with the student's files
in /autograder/submission/ and results.json read back from /autograder/results/. Here the zip
is unpacked into a temporary folder laid out the same way (AUTOGRADER_ROOT names it), and the
Python that run_autograder runs is run against it, with this checkout's tensorlab importable.
The fields checked are those Gradescope publishes for results.json (score, max_score, tests:
name, score, max_score, output, visibility).
"""

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from teachers import classroom
from tensorlab.exercises import EXERCISES
from tensorlab.exercises.student import NOT_GRADED

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "teachers" / "solutions"
VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}


def results_of(tmp_path, submission, engine=ROOT):
    """Build the zip, unpack it into an /autograder-like folder, run the autograder on `submission` (name -> text)
    with the tensorlab in folder `engine` installed."""
    course = tmp_path / "course"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
        assert classroom.main(["assignment", str(course), "--gradescope"]) == 0, err.getvalue()
    root = tmp_path / "autograder"
    with zipfile.ZipFile(course / "autograder.zip") as bundle:
        names = set(bundle.namelist())
        modes = {info.filename: info.external_attr >> 16 for info in bundle.infolist()}
        bundle.extractall(root / "source")
    assert {n for n in names if not n.endswith(".whl")} == {
        "setup.sh",
        "run_autograder",
        "gradescope.py",
        "settings.json",
    }
    assert len([n for n in names if n.startswith("tensorlab-") and n.endswith(".whl")]) == 1
    assert modes["setup.sh"] & 0o111 and modes["run_autograder"] & 0o111  # Gradescope runs them as programs
    assert "/autograder/source/gradescope.py" in (root / "source" / "run_autograder").read_text()
    (root / "submission" / "nested").mkdir(parents=True)
    for name, text in submission.items():  # a Path: a symbolic link to it
        path = root / "submission" / name
        path.symlink_to(text) if isinstance(text, Path) else path.write_text(text)
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), PYTHONPATH=str(engine))
    done = subprocess.run(
        [sys.executable, str(root / "source" / "gradescope.py")], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((root / "results" / "results.json").read_text())


def valid(results):
    """results.json as Gradescope reads it: {test name: test}, after checking every published field's type."""
    assert isinstance(results["score"], float) and isinstance(results["max_score"], float)
    assert results.get("visibility", "visible") in VISIBILITY
    for test in results["tests"]:
        assert set(test) == {"name", "score", "max_score", "output", "visibility"}, test
        assert isinstance(test["name"], str) and isinstance(test["output"], str)
        assert isinstance(test["score"], float) and isinstance(test["max_score"], float)
        assert 0 <= test["score"] <= test["max_score"] and test["visibility"] in VISIBILITY
    assert results["score"] == sum(t["score"] for t in results["tests"])
    assert results["max_score"] == sum(t["max_score"] for t in results["tests"]) == len(EXERCISES)
    return {test["name"].partition(":")[0]: test for test in results["tests"]}


def test_the_autograder_scores_a_right_and_a_wrong_submission(tmp_path):
    wrong = (SOLUTIONS / "softmax.py").read_text()
    slip = "return self.y * (gy - (gy * self.y).sum(axis=self.axis, keepdims=True))"
    assert slip in wrong
    submission = {
        "matmul.py": (SOLUTIONS / "matmul.py").read_text(),
        "softmax.py": wrong.replace(slip, "return gy * self.y * (1 - self.y)"),
        "nested/exp_log.py": (SOLUTIONS / "exp_log.py").read_text(),  # a file in a folder is found too
    }
    results = results_of(tmp_path, submission)
    tests = valid(results)
    assert list(tests) == [e.name for e in EXERCISES]  # in the course's order
    assert tests["matmul"]["score"] == tests["exp_log"]["score"] == 1.0 and results["score"] == 2.0
    assert "PASSED" in tests["matmul"]["output"]
    assert tests["softmax"]["score"] == 0.0 and "You used y(1 - y)" in tests["softmax"]["output"]
    assert tests["value"]["score"] == 0.0 and tests["value"]["output"].startswith("Not handed in: ")


def test_a_link_handed_in_scores_0_and_is_never_read(tmp_path):
    """Before: mul.py linked to /dev/zero was read without end (Gradescope's run ends with no results.json)."""
    submission = {"mul.py": Path("/dev/zero"), "matmul.py": (SOLUTIONS / "matmul.py").read_text()}
    tests = valid(results_of(tmp_path, submission))
    assert tests["mul"]["score"] == 0.0 and tests["matmul"]["score"] == 1.0
    assert tests["mul"]["output"].startswith("submission/mul.py is a symbolic link, not a file of the student's own")


def test_after_a_file_that_changes_the_engine_no_later_exercise_is_graded(tmp_path):
    """On Gradescope (root) a file's code can write into the installed engine, which every later check's process
    runs (a changed child.py could send back the engine's gradients for a stub): no later exercise is graded."""
    site = tmp_path / "site"
    shutil.copytree(ROOT / "tensorlab", site / "tensorlab", ignore=shutil.ignore_patterns("__pycache__"))
    change = f"open({str(site / 'tensorlab' / 'exercises' / 'child.py')!r}, 'a').write('# changed\\n')\n"
    right = {name: (SOLUTIONS / f"{name}.py").read_text() for name in ("function", "mul", "matmul", "exp_log")}
    submission = {f"{name}.py": change + text if name == "mul" else text for name, text in right.items()}
    results = results_of(tmp_path, submission, site)
    tests = valid(results)
    assert (site / "tensorlab" / "exercises" / "child.py").read_text().endswith("# changed\n")
    assert [tests[name]["score"] for name in right] == [1.0, 1.0, 0.0, 0.0]  # mul's own check ran on the old files
    assert tests["matmul"]["output"] == tests["exp_log"]["output"] == NOT_GRADED
