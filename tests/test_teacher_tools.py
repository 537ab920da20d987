"""The teacher's tools: a wheel to hand out, `check --json`, `grade` into a gradebook, `--hints`.

See docs/exercises.md, "For teachers". A planted mistake is a reference solution with a line
changed, as in tests/test_exercises.py. Subprocesses run where the tools do (the wheel installed
in a fresh virtual environment; `grade` runs each check in a process of its own).
"""

import contextlib
import csv
import errno
import io
import json
import os
import random
import re
import resource
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
import zipfile
from pathlib import Path

import pytest
from tools import run_into_a_closed_pipe

from teachers import assignment, classroom, grade
from tensorlab.exercises import report
from tensorlab.exercises.__main__ import main

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "teachers" / "solutions"
SOFTMAX_RETURN = "return self.y * (gy - (gy * self.y).sum(axis=self.axis, keepdims=True))"
ADD_ACCUMULATES = "            self.grad += out.grad\n            other.grad += out.grad"  # Value.__add__'s backward
SEED = ("--seed", "4242")  # the same inputs in runs that are compared
DIAGONAL_ONLY = "return gy * self.y * (1 - self.y)"  # the slip softmax names "You used y(1 - y)"


def planted(folder, name, old, new, filename=None):
    source = (SOLUTIONS / f"{name}.py").read_text()
    assert old in source, f"teachers/solutions/{name}.py no longer contains {old!r}"
    path = folder / (filename or f"{name}.py")
    path.write_text(source.replace(old, new))
    return path


def run_main(*argv):
    """Exit code, stdout and stderr of `python -m tensorlab.exercises *argv` (assignment and grade: of
    `python -m teachers.classroom *argv`), run in this process."""
    out, err = io.StringIO(), io.StringIO()
    command = classroom.main if argv[0] in ("assignment", "grade") else main
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = command([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


# ----- the wheel ----------------------------------------------------------------------------------------------------
def test_the_students_wheel_has_no_solutions_installs_alone_and_checks_a_solution(tmp_path):
    course = tmp_path / "course"
    code, out, err = run_main("assignment", course, "--wheel")
    assert code == 0, err
    [wheel] = course.glob("tensorlab-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "tensorlab/exercises/catalog/softmax/stub.py" in names and "tensorlab/ops/softmax.py" in names
    assert not [n for n in names if n.startswith(("teachers/", "tests/", "docs/")) or "solutions" in n], names
    classroom_tools = ("grade.py", "assignment.py", "gradescope.py", "mutate.py", "classroom.py")
    assert not [n for n in names if n.endswith(classroom_tools)], names  # the teachers' tools stay in the checkout
    readme = (course / "README.md").read_text()
    assert f"    pip install {wheel.name}\n" in readme and "pip install -e" not in readme
    assert f"{wheel.name} (the engine to install)" in out

    # a fresh environment: NumPy from this one (no network), tensorlab only from the wheel
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.check_output(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
        ).strip()
    )
    numpy_only = tmp_path / "numpy_only"
    numpy_only.mkdir()
    here = Path(sysconfig.get_paths()["purelib"])
    for name in ("numpy", "numpy.libs"):
        if (here / name).exists():
            (numpy_only / name).symlink_to(here / name)
    (site / "numpy_only.pth").write_text(f"{numpy_only}\n")
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index"]
    done = subprocess.run(install + [str(wheel)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]

    where = subprocess.run(
        [
            python,
            "-c",
            "import tensorlab, importlib.util; print(tensorlab.__file__, importlib.util.find_spec('teachers'))",
        ],
        cwd=course,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert where.stdout.split() == [str(site / "tensorlab" / "__init__.py"), "None"], where.stdout + where.stderr
    (course / "softmax.py").write_text((SOLUTIONS / "softmax.py").read_text())  # the student's finished file
    checked = subprocess.run(
        [python, "-m", "tensorlab.exercises", "check", "softmax", "softmax.py", "--json"],
        cwd=course,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    record = json.loads(checked.stdout)
    assert record["passed"] and record["exercise"] == "softmax" and all(c["passed"] for c in record["cases"])
    planted(course, "softmax", SOFTMAX_RETURN, DIAGONAL_ONLY, "wrong.py")
    wrong = subprocess.run(
        [python, "-m", "tensorlab.exercises", "check", "softmax", "wrong.py"],
        cwd=course,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert wrong.returncode == 1 and "You used y(1 - y)" in wrong.stdout, wrong.stdout + wrong.stderr


def test_without_wheel_the_readme_still_installs_a_checkout(tmp_path):
    code, out, _ = run_main("assignment", tmp_path / "course")
    assert code == 0 and not list((tmp_path / "course").glob("*.whl"))
    assert "`pip install -e .` in the\ntensorlab folder" in (tmp_path / "course" / "README.md").read_text()


# ----- check --json -------------------------------------------------------------------------------------------------
def cases_of(plain):
    """[(header, passed, lines under it)] from the plain run's output."""
    cases = []
    for line in plain.splitlines():
        match = re.match(r"^(\S.*): (ok|FAILED)$", line)
        if match:
            cases.append((match[1], match[2] == "ok", []))
        elif cases and (line.startswith("    ") or not line) and not cases[-1][1]:
            cases[-1][2].append(line[4:])
    return cases


@pytest.mark.parametrize(
    "name, old, new",
    [
        ("softmax", SOFTMAX_RETURN, DIAGONAL_ONLY),
        ("matmul", "return gy @ self.b.T, self.a.T @ gy", "return gy @ self.b.T, gy.T @ self.a"),
        ("value", ADD_ACCUMULATES, ADD_ACCUMULATES.replace("+=", "=")),
        ("adamw", "m_hat = m / (1 - b1 ** step)", "m_hat = m"),
        ("softmax", SOFTMAX_RETURN, SOFTMAX_RETURN),  # right: passes
    ],
)
def test_json_says_what_the_plain_run_says(tmp_path, name, old, new):
    path = planted(tmp_path, name, old, new)
    code, plain, _ = run_main("check", name, path, *SEED)  # the same inputs in both runs
    json_code, printed, _ = run_main("check", name, path, "--json", *SEED)
    record = json.loads(printed)  # stdout is the object alone
    assert json_code == code == record["exit_code"] and record["passed"] is (code == 0)
    assert set(record) == {"exercise", "file", "passed", "exit_code", "hints", "seed", "diagnosis", "cases"}
    assert record["exercise"] == name and record["file"] == str(path) and record["hints"] == "fix"
    assert record["seed"] == int(SEED[1]) and f"seed {SEED[1]}" in plain
    assert [(c["case"], c["passed"], c["lines"]) for c in record["cases"]] == cases_of(plain)
    assert len(record["cases"]) >= 2
    if code == 0:
        assert record["diagnosis"] == ""
    else:
        header, _, lines = next(case for case in cases_of(plain) if not case[1])
        explained = lines[: lines.index("")] if "" in lines else lines  # the table after the blank line is left out
        assert record["diagnosis"] == f"{header}: " + " ".join(line.strip() for line in explained)


def test_json_keeps_the_students_prints_off_stdout_and_reports_a_file_it_cannot_check(tmp_path):
    path = planted(tmp_path, "exp_log", "return gy * self.y", "print('my debug line')\n        return gy * self.y")
    code, printed, errors = run_main("check", "exp_log", path, "--json")
    assert code == 0 and json.loads(printed)["passed"] and "my debug line" in errors
    broken = tmp_path / "broken.py"
    broken.write_text("def f(:\n")
    code, printed, _ = run_main("check", "exp_log", broken, "--json")
    record = json.loads(printed)
    assert code == 1 and not record["passed"] and record["cases"] == []
    assert record["diagnosis"].startswith("broken.py, line 1: Python cannot read this file")
    code, printed, errors = run_main("check", "exp_log", tmp_path / "missing.py", "--json")
    record = json.loads(printed)  # --json always prints a record
    assert code == 2 and record["exit_code"] == 2 and not record["passed"] and "no such file" in errors
    assert record["diagnosis"].startswith(f"{tmp_path / 'missing.py'}: no such file")


def test_json_names_a_case_stopped_at_its_time_limit(tmp_path):
    """In a subprocess, so that a broken time limit fails this test instead of hanging the suite."""
    path = planted(tmp_path, "exp_log", "return gy * self.y", "while True:\n            pass")
    done = subprocess.run(
        [sys.executable, "-m", "tensorlab.exercises", "check", "exp_log", str(path), "--json", "--time-limit", "0.3"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    record = json.loads(done.stdout)
    assert done.returncode == 1 and not record["passed"]
    assert record["cases"][-1]["passed"] is False
    assert record["cases"][-1]["lines"][0].startswith("STOPPED: it did not finish within 0.3 s")
    assert record["diagnosis"].startswith(record["cases"][-1]["case"] + ": STOPPED: it did not finish within 0.3 s")


# ----- --hints --------------------------------------------------------------------------------------------------------
HINTED = [
    # (exercise, old, new, the words that name the mistake, the words of the fix)
    ("softmax", SOFTMAX_RETURN, "return self.y * gy", "The row-sum term is missing", "subtract the sum over the row"),
    (
        "embedding",
        "np.add.at(gw, self.ids, gy)",
        "gw[self.ids] = gy",
        "Repeated ids overwrite",
        "np.add.at(gw, ids, gy)",
    ),
    ("value", ADD_ACCUMULATES, ADD_ACCUMULATES.replace("+=", "="), "Forgetting to accumulate", "write `self.grad +="),
    (
        "function",
        "unbroadcast(gy * self.b / self.y, self.b.shape)",
        "gy * self.b / self.y",
        "A missing sum over the broadcast axes",  # a second sentence: kept while no clause gives the fix
        "gb.sum",
    ),
    ("adamw", "np.sqrt(v_hat) + eps", "np.sqrt(v_hat + eps)", "eps belongs outside the square root", "divide by"),
    ("exp_log", "return gy / self.x", "return gy * np.log(self.x)", "You multiplied gy by log(x)", "is 1/x"),
]


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("name, old, new, mistake, fix", HINTED, ids=[h[0] for h in HINTED])
def test_hint_levels_fix_name_none(tmp_path, name, old, new, mistake, fix):
    path = planted(tmp_path, name, old, new)
    outputs = {hints: run_main("check", name, path, "--hints", hints, *SEED) for hints in report.LEVELS}
    records = {
        hints: json.loads(run_main("check", name, path, "--json", "--hints", hints, *SEED)[1])
        for hints in report.LEVELS
    }
    assert {code for code, _, _ in outputs.values()} == {1}
    fix_out, name_out, none_out = outputs["fix"][1], outputs["name"][1], outputs["none"][1]
    assert fix_out == run_main("check", name, path, *SEED)[1]  # fix is the default: what the checker always printed
    assert mistake in fix_out and fix in fix_out
    assert mistake in name_out and fix not in name_out
    assert mistake not in none_out and fix not in none_out
    case_lines = [line for line in fix_out.splitlines() if re.match(r"^\S.*: (ok|FAILED)$", line)]
    assert case_lines and set(case_lines) <= set(none_out.splitlines())  # every case, passed or failed
    assert set(none_out.splitlines()) <= set(fix_out.splitlines())  # and nothing the full report does not say
    assert mistake in records["fix"]["diagnosis"] + " ".join(sum((c["lines"] for c in records["fix"]["cases"]), []))
    assert fix not in json.dumps(records["name"]) and mistake in json.dumps(records["name"])
    assert mistake not in json.dumps(records["none"]) and records["none"]["diagnosis"].endswith(": failed")
    assert all(case["lines"] == [] for case in records["none"]["cases"])


def test_name_keeps_the_facts_and_cuts_before_the_fix():
    facts = [
        "input 'b' (shape (4, 4)): 12 of 16 elements are wrong.",
        "Step by step against the reference: gP (your `gp`) right; the first step that goes wrong is gS, the "
        "gradient of S (shape (1, 2, 3, 3)): your `gs` differs from it at (0, 0, 0, 0).",
        "MatMul.backward raised ValueError: matmul: Input operand 1 has a mismatch (size 4 is different from 2)",
    ]
    for line in facts:
        assert report.named(line) == line
    assert report.named("'q' and 'k': The 1/sqrt(D) scale is missing: S = q k^T / sqrt(D), so both carry it.") == (
        "'q' and 'k': The 1/sqrt(D) scale is missing."
    )
    assert report.named("m is off: beta1 and 1 - beta1 are swapped. m = beta1 * m + (1 - beta1) * grad.") == (
        "m is off: beta1 and 1 - beta1 are swapped."
    )


def test_none_says_only_the_first_line_of_why_a_file_cannot_be_checked(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("def f(:\n")
    _, fix_out, _ = run_main("check", "matmul", broken)
    code, none_out, _ = run_main("check", "matmul", broken, "--hints", "none")
    assert code == 1 and "Fix the syntax there" in fix_out  # what to do: a hint
    assert none_out.splitlines() == [
        "Exercise 'matmul': y = a @ b for matrices: which factor is transposed, and where",
        "broken.py, line 1: Python cannot read this file: invalid syntax.",
        "FAILED: the file could not be checked.",
    ]


# ----- grade ----------------------------------------------------------------------------------------------------------
def test_grade_writes_the_gradebook_of_a_class(tmp_path):
    submissions = tmp_path / "submissions"
    for student in ("alice", "bob", "carol"):
        (submissions / student).mkdir(parents=True)
    (submissions / ".git").mkdir()  # not a student
    for name in ("softmax", "matmul"):  # alice: the reference solutions
        (submissions / "alice" / f"{name}.py").write_text((SOLUTIONS / f"{name}.py").read_text())
    planted(submissions / "bob", "softmax", SOFTMAX_RETURN, DIAGONAL_ONLY)  # bob: a wrong one, matmul not handed in
    (submissions / "bob" / "exp_log.py").write_text((SOLUTIONS / "exp_log.py").read_text())  # bob alone did exp_log
    planted(submissions / "carol", "softmax", SOFTMAX_RETURN, "while True:\n            pass")  # never ends
    (submissions / "carol" / "matmul.py").write_text("import os\n\nos._exit(3)\n")  # kills the checker's process
    (submissions / "carol" / "notes.txt").write_text("not an exercise")

    out = tmp_path / "books" / "gradebook"
    code, printed, errors = run_main("grade", submissions, "--out", out, "--hints", "name", "--time-limit", "0.5")
    assert code == 0, errors
    assert printed == (
        "Graded 3 students on 3 exercises (matmul, exp_log, softmax): 3 of 6 files handed in passed; "
        "3 not handed in; 0 tampered.\n"
        f"Gradebook: {out}.csv (a row per check), {out}-grid.csv (a row per student, with the score) and {out}.md.\n"
    )  # the exercises in the course's order; "not handed in" counted apart
    with open(f"{out}.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    assert list(rows[0]) == ["student", "exercise", "status", "diagnosis", "seed"]
    statuses = [(r["student"], r["exercise"], r["status"]) for r in rows]
    assert statuses == [
        ("alice", "matmul", "passed"),
        ("alice", "exp_log", "not handed in"),
        ("alice", "softmax", "passed"),
        ("bob", "matmul", "not handed in"),
        ("bob", "exp_log", "passed"),
        ("bob", "softmax", "failed"),
        ("carol", "matmul", "failed"),
        ("carol", "exp_log", "not handed in"),
        ("carol", "softmax", "failed"),
    ]
    diagnoses = [r["diagnosis"] for r in rows]
    assert diagnoses[:5] == ["", "there is no exp_log.py in alice/", "", "there is no matmul.py in bob/", ""]
    # bob's softmax row is what `check --json --hints name` says of his file, with the row's seed
    bob = submissions / "bob" / "softmax.py"
    _, printed, _ = run_main("check", "softmax", bob, "--json", "--hints", "name", "--seed", rows[5]["seed"])
    assert diagnoses[5] == json.loads(printed)["diagnosis"]
    assert "You used y(1 - y)" in diagnoses[5] and "row-sum term" not in diagnoses[5]  # named, no fix
    assert diagnoses[6].startswith("Your code ended the process that runs it (exit code 3)"), diagnoses[6]
    assert diagnoses[7] == "there is no exp_log.py in carol/"
    stopped = r"case 1/\d+  Softmax: .*: STOPPED: it did not finish within 0\.5 s \(a loop that never ends\?\)\."
    assert re.fullmatch(stopped, diagnoses[8]), diagnoses[8]
    ran = [True, False, True, False, True, True, False, False, True]  # where a check ran, its seed is in the row
    assert [r["seed"].isdigit() for r in rows] == ran
    assert len({r["seed"] for r in rows if r["seed"]}) == 5  # a fresh seed for each check

    with open(f"{out}-grid.csv", newline="") as file:
        table = list(csv.DictReader(file))
    assert table == [
        {"student": s, "score": str(sum(st == "passed" for n, _, st in statuses if n == s)), "out of": "3"}
        | {e: st for n, e, st in statuses if n == s}
        for s in ("alice", "bob", "carol")
    ]
    assert [t["score"] for t in table] == ["2", "1", "0"]

    page = Path(f"{out}.md").read_text().splitlines()
    assert page[0] == "# Gradebook (3 of 6 files handed in passed; 3 not handed in; 0 tampered; hints: name)"
    cells = [[cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]] for line in page if line.startswith("|")]
    assert cells[0] == ["student", "score", "out of", "matmul", "exp_log", "softmax"]
    assert cells[2:5] == [[str(v) for v in t.values()] for t in table]
    assert cells[5] == list(grade.COLUMNS)
    assert cells[7:] == [[r[c] for c in grade.COLUMNS] for r in rows]


def test_the_gradebook_says_the_most_specific_failed_case(tmp_path):
    """matmul without the transpose in ga: the non-square case raises, the square one names the slip."""
    folder = tmp_path / "submissions" / "bob"
    folder.mkdir(parents=True)
    planted(folder, "matmul", "return gy @ self.b.T, self.a.T @ gy", "return gy @ self.b, self.a.T @ gy")
    code, _, errors = run_main("grade", tmp_path / "submissions", "--out", tmp_path / "book")
    assert code == 0, errors
    with open(tmp_path / "book.csv", newline="") as file:
        [row] = list(csv.DictReader(file))
    assert row["status"] == "failed" and "raised" not in row["diagnosis"], row
    assert "In ga you multiply gy by b where its transpose belongs" in row["diagnosis"], row
    assert re.match(r"case [2-9]/\d+  MatMul: ", row["diagnosis"]), row


def test_grade_stops_a_check_that_outlives_its_limit(tmp_path):
    """A backward that blocks an alarm is stopped all the same: the time limit is kept by the checker's process."""
    folder = tmp_path / "dave"
    folder.mkdir()
    path = planted(
        folder,
        "exp_log",
        "return gy * self.y",
        "import signal\n        signal.signal(signal.SIGALRM, signal.SIG_IGN)\n        while True:\n            pass",
    )
    row = grade.row(folder, "exp_log", path.read_bytes(), "fix", 0.5)
    assert row["status"] == "failed" and row["seed"].isdigit(), row
    assert re.fullmatch(r"case 1/\d+  Exp: .*: STOPPED: it did not finish within 0\.5 s .*", row["diagnosis"]), row


@pytest.mark.parametrize("writes", [False, True])
def test_a_gradebook_beside_the_temporary_folder_is_no_tampering(tmp_path, monkeypatch, writes):
    """Before: with the temporary folder in a watched one (`--out /tmp/gradebook`), every row was TAMPERED, the check's
    own folder made and removed there (found by tests/hostile_class.py); a file the student's code makes there
    still is."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    folder = tmp_path / "frank"
    folder.mkdir()
    evil = f"open({str(temporary / 'evil')!r}, 'w').close()\n" if writes else ""
    path = planted(folder, "exp_log", "import numpy as np\n", f"import numpy as np\n{evil}")
    row = grade.row(folder, "exp_log", path.read_bytes(), "fix", 5.0, [tmp_path])
    assert row["status"] == ("tampered" if writes else "passed"), row
    assert not writes or f"{temporary / 'evil'}" in row["diagnosis"], row


def test_a_file_that_prints_a_passing_record_and_exits_fails_its_row(tmp_path):
    """The verdict is computed in the checker's process: what the student's code prints is never read."""
    folder = tmp_path / "eve"
    folder.mkdir()
    fake = json.dumps({"passed": True, "diagnosis": ""})
    (folder / "exp_log.py").write_text(f"import sys\nprint({fake!r})\nsys.exit(0)\n")
    row = grade.row(folder, "exp_log", (folder / "exp_log.py").read_bytes(), "fix", 5.0)
    assert row["status"] == "failed", row
    assert row["diagnosis"].startswith("Your code ended the process that runs it (exit code 0)"), row


@pytest.mark.parametrize("seed", range(3))
def test_ctrl_c_stops_the_grading_and_no_check_cut_short_is_a_row(tmp_path, seed):
    """Ctrl-C at a moment drawn from `seed`, while a class of right files is graded: the grading stops (130) and
    writes no gradebook, the earlier one left as it was; before, the check cut short was a row "failed" (a right
    file failed) and the grading went on."""
    started = tmp_path / "started"
    submissions, book = tmp_path / "submissions", tmp_path / "out" / "book"
    right = (SOLUTIONS / "exp_log.py").read_text()
    for student in ("amy", "bob", "cid", "dan"):
        (submissions / student).mkdir(parents=True)
        mark = f"open({str(started)!r}, 'a').close()\n" if student == "bob" else ""
        (submissions / student / "exp_log.py").write_text(f"import time\n{mark}time.sleep(0.3)\n{right}")
    book.parent.mkdir()
    (book.parent / "book.csv").write_text("the gradebook of an earlier run\n")
    grading = subprocess.Popen(
        [sys.executable, "-m", "teachers.classroom", "grade", str(submissions), "--out", str(book)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as a terminal's Ctrl-C, in any shell
    )
    while not started.exists() and grading.poll() is None:
        time.sleep(0.01)
    time.sleep(random.Random(seed).uniform(0, 1.4))  # in bob's check or a later one
    grading.send_signal(signal.SIGINT)
    out, err = grading.communicate(timeout=120)
    if grading.returncode == 0:
        rows = list(csv.DictReader((book.parent / "book.csv").open()))
        assert [r["status"] for r in rows] == ["passed"] * 4, rows
    else:
        assert grading.returncode == 130, (out, err)
        assert err.startswith("Interrupted (Ctrl-C or SIGTERM) at ") and "no gradebook written" in err, err
        assert sorted(p.name for p in book.parent.iterdir()) == ["book.csv"]
        assert (book.parent / "book.csv").read_text() == "the gradebook of an earlier run\n"


@pytest.mark.parametrize("seed", range(6))
def test_a_full_disk_fails_no_file_and_loses_no_gradebook(tmp_path, seed):
    """The disk fills at a size drawn from `seed`, log-uniform from 10 bytes to 100 kB (every write past it fails, as on
    a full disk: RLIMIT_FSIZE): no traceback; a right file is never a row "failed" (the checker could not run: "not
    graded", one line); no check's folder is left behind; the gradebook is written whole, or the earlier one is left
    as it was. Before, every row read "failed" with the names of every file of the engine, and the folders stayed."""
    limit = int(10 ** random.Random(seed).uniform(1, 5))
    submissions, book, scratch = tmp_path / "submissions", tmp_path / "out" / "book", tmp_path / "tmp"
    for student in ("amy", "bob"):
        (submissions / student).mkdir(parents=True)
        (submissions / student / "exp_log.py").write_text((SOLUTIONS / "exp_log.py").read_text())
    book.parent.mkdir()
    scratch.mkdir()
    (book.parent / "book.csv").write_text("the gradebook of an earlier run\n")
    done = subprocess.run(
        [sys.executable, "-m", "teachers.classroom", "grade", str(submissions), "--out", str(book)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        # Python's own bytecode cache is kept out: before 3.12 its writes ignored a short write, so a full disk left
        # truncated .pyc files in the checkout that break every later import (CPython gh-126606, not the checker's)
        env=dict(os.environ, TMPDIR=str(scratch), PYTHONDONTWRITEBYTECODE="1"),
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY)),
    )
    assert "Traceback" not in done.stderr and list(scratch.iterdir()) == [], (limit, done.stderr)
    if done.returncode == 1:
        assert done.stderr.startswith(f"Could not write the gradebook {book}.csv (") and done.stderr.count("\n") == 1
        assert sorted(p.name for p in book.parent.iterdir()) == ["book.csv"]
        assert (book.parent / "book.csv").read_text() == "the gradebook of an earlier run\n"
        return
    assert done.returncode == 0, (limit, done.stdout, done.stderr)
    rows = list(csv.DictReader((book.parent / "book.csv").open()))
    assert len(rows) == 2 and {r["status"] for r in rows} <= {"passed", "not graded"}, (limit, rows)
    for r in rows:
        assert r["status"] == "passed" or (
            r["diagnosis"].startswith("The checker itself failed (") and len(r["diagnosis"]) < 400
        ), r


def test_a_hand_out_that_cannot_be_written_is_one_line_and_leaves_nothing(tmp_path, monkeypatch):
    """Before: a traceback for an --out that is a file's child or a file (NotADirectoryError), and a half-written
    folder when a write failed. The hand-out is made beside its folder and renamed into place."""
    (tmp_path / "a_file").write_text("x")
    code, _, errors = run_main("assignment", tmp_path / "a_file")
    assert code == 2 and errors.strip().endswith("is not an empty folder; not writing into it. Give a new folder.")
    code, _, errors = run_main("assignment", tmp_path / "a_file" / "course")
    assert code == 1 and errors.count("\n") == 1 and errors.endswith("); nothing was written there.\n")

    def full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(assignment, "readme", full)  # the last file written
    code, _, errors = run_main("assignment", tmp_path / "course")
    assert code == 1 and "(No space left on device); nothing was written there." in errors
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]  # no folder, no staging left behind


def test_stub_and_check_on_paths_that_are_no_file_are_one_line(tmp_path):
    """Found by hand beside tests/fuzz_flags.py: stub into a missing folder was a traceback, stub onto a dangling
    link wrote where it pointed, and check of a folder or a FIFO said "no such file"."""
    code, _, errors = run_main("stub", "mul", tmp_path / "nowhere" / "mul.py")
    assert code == 2 and errors.startswith(f"Cannot write {tmp_path / 'nowhere' / 'mul.py'} (No such file")
    (tmp_path / "link").symlink_to(tmp_path / "target")
    code, _, errors = run_main("stub", "mul", tmp_path / "link")
    assert code == 2 and "already exists; not overwriting it" in errors and not (tmp_path / "target").exists()
    os.mkfifo(tmp_path / "fifo")
    for path in (tmp_path, tmp_path / "fifo"):
        code, _, errors = run_main("check", "mul", path)
        assert code == 2 and errors == f"{path} is not a file (a folder, a FIFO): give the .py file you wrote.\n"


def test_a_link_handed_in_fails_its_row_whatever_it_points_at(tmp_path):
    """Before: mul.py linked to teachers/solutions/mul.py (as unzip makes a zip's links) passed: grade read through
    the link. A student's folder that is a link (the teacher's layout) is still read."""
    submissions = tmp_path / "submissions"
    (submissions / "mallory").mkdir(parents=True)
    (submissions / "mallory" / "mul.py").symlink_to(SOLUTIONS / "mul.py")
    (tmp_path / "downloads" / "bob").mkdir(parents=True)
    (tmp_path / "downloads" / "bob" / "mul.py").write_text((SOLUTIONS / "mul.py").read_text())
    (submissions / "bob").symlink_to(tmp_path / "downloads" / "bob")
    code, _, errors = run_main("grade", submissions, "--out", tmp_path / "book")
    assert code == 0, errors
    rows = {(r["student"], r["exercise"]): r for r in csv.DictReader((tmp_path / "book.csv").open())}
    assert rows["mallory", "mul"]["status"] == "failed", rows["mallory", "mul"]
    assert rows["mallory", "mul"]["diagnosis"] == (
        "mallory/mul.py is a symbolic link, not a file of the student's own: hand in the file."
    )
    assert rows["bob", "mul"]["status"] == "passed", rows["bob", "mul"]


def test_grade_usage_errors_exit_2(tmp_path):
    code, _, errors = run_main("grade", tmp_path / "nowhere")
    assert code == 2 and "no such folder" in errors
    (tmp_path / "empty" / "alice").mkdir(parents=True)
    code, _, errors = run_main("grade", tmp_path / "empty")
    assert code == 2 and "nothing to grade" in errors
    code, _, errors = run_main("grade", tmp_path / "empty", "--time-limit", "0")
    assert code == 2 and "above 0" in errors


@pytest.mark.parametrize(
    "flag, value, expected",
    [
        ("--seed", "-1", "expected a whole number >= 0, got '-1'"),
        ("--seed", "1e3", "expected a whole number >= 0, got '1e3'"),
        ("--time-limit", "-1", "expected a finite number of seconds >= 0, got '-1'"),
        ("--time-limit", "nan", "expected a finite number of seconds >= 0, got 'nan'"),
        ("--time-limit", "inf", "expected a finite number of seconds >= 0, got 'inf'"),
    ],
)
def test_a_bad_flag_is_a_usage_error_never_a_verdict_on_the_file(flag, value, expected):
    """Found by tests/fuzz_flags.py: --seed -1 was "The checker itself failed" (exit 3), --time-limit -1 failed a
    right file ("did not finish within -1 s"), nan checked with no limit at all. grade's --time-limit is the same."""
    code, out, errors = run_main("check", "mul", SOLUTIONS / "mul.py", flag, value)
    assert code == 2 and not out and errors.splitlines()[-1].endswith(f"error: argument {flag}: {expected}")
    if flag == "--time-limit":
        code, _, errors = run_main("grade", SOLUTIONS, flag, value)
        assert code == 2 and errors.splitlines()[-1].endswith(f"error: argument {flag}: {expected}")


# ----- the docs' commands run as printed ------------------------------------------------------------------------------
def teachers_commands():
    page = (ROOT / "docs" / "exercises.md").read_text()
    section = page[page.index("## For teachers") :]
    blocks = re.findall(r"^```sh\n(.*?)^```", section, flags=re.MULTILINE | re.DOTALL)
    return [line for block in blocks for line in block.splitlines() if line.strip()]


def test_every_command_of_the_teachers_section_works_as_printed(tmp_path):
    """From a checkout (here: a folder holding teachers/), with a submissions folder beside it."""
    checkout = tmp_path / "tensorlab"
    checkout.mkdir()
    (checkout / "teachers").symlink_to(ROOT / "teachers")
    alice = tmp_path / "submissions" / "alice"
    alice.mkdir(parents=True)
    (alice / "softmax.py").write_text((SOLUTIONS / "softmax.py").read_text())
    commands = teachers_commands()
    assert [c.split()[2:4] for c in commands] == [
        ["tensorlab.exercises", "check"],
        ["teachers.classroom", "assignment"],
        ["tensorlab.exercises", "check"],
        ["teachers.classroom", "grade"],
    ]
    assert "--gradescope" in commands[1]
    for command in commands:
        argv = command.split()
        assert argv[:2] == ["python", "-m"], command
        env = dict(os.environ, PYTHONPATH=str(ROOT))  # this checkout's tensorlab, not another installed one
        done = subprocess.run(
            [sys.executable] + argv[1:], cwd=checkout, env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, command + "\n" + done.stdout[-2000:] + done.stderr[-2000:]
    assert list((tmp_path / "course-for-students").glob("tensorlab-*.whl"))
    assert (tmp_path / "course-for-students" / "autograder.zip").is_file()
    with open(tmp_path / "gradebook.csv", newline="") as file:
        assert [(r["student"], r["exercise"], r["status"]) for r in csv.DictReader(file)] == [
            ("alice", "softmax", "passed")
        ]


def test_a_pipe_in_a_diagnosis_stays_inside_its_markdown_cell():
    row = grade._row(Path("submissions/alice"), "mul", "failed", "|yours - reference| > 1e-12 (|a| + 1)", 123456)
    line = grade.markdown([row], grade.grid([row], ["mul"]), "fix").splitlines()[-1]
    cells = [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
    assert cells == ["alice", "mul", "failed", "|yours - reference| > 1e-12 (|a| + 1)", "123456"]


@pytest.mark.parametrize("buffering", ["buffered", "unbuffered"])
def test_a_reader_that_stops_early_ends_the_check_quietly(tmp_path, buffering):
    """`check ... | head -1`: the pipe's reader is gone before the check writes; no traceback, exit 141."""
    stub = tmp_path / "softmax.py"
    assert run_main("stub", "softmax", str(stub))[0] == 0
    argv = [sys.executable, "-m", "tensorlab.exercises", "check", "softmax", str(stub)]
    done = run_into_a_closed_pipe(argv, ROOT, buffering)
    assert done.returncode == 141 and done.stderr == "", done.stderr[-2000:]
