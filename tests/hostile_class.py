"""A class with one hostile student: seeded random attacks on the grader, then one property.

    python -m tests.hostile_class --scenarios 200 [--seed 0]     (from the repository root)

Each scenario grades a class of three in this process (`python -m teachers.classroom grade`, exercise exp_log,
time limit 2 s), in a scratch folder that is the teacher's working folder, with a HOME of its own, and with the engine
the checks copy moved to the scratch folder too (no scenario can change this checkout's). bob hands in a right file,
kim a wrong one; the hostile student (ann, max or zoe: before them, between, after) a right, wrong or unwritten file
with one to three of the 16 attacks of ATTACKS, each at the top of the file or at the start of a backward, each aimed
at a path drawn from the class's (a classmate's file or folder, the earlier gradebook, the teacher's working folder or
HOME, the engine's files); or a symbolic link to bob's file or to the solution. The checks make their temporary
folders apart, in the gradebook's folder or in the working folder (drawn: `--out /tmp/book` puts the gradebook
beside them).

The property:
- grade ends with 0, or with 130 and its one line when the student's code sent it SIGINT or SIGTERM (naming what that
  code changed, if anything; the earlier gradebook left as it was unless that code changed it); never a traceback;
- when the teacher's folder (the submissions, the gradebook's, the working folder) or the engine's files changed
  while the hostile file was checked (a witness of their contents, apart from grade's snapshot), its row reads
  "tampered"; otherwise a file whose answer is wrong or missing never reads "passed";
- bob passes and kim fails, whatever the hostile file did to their files (rows after it may read "not graded" once
  the engine's files or the checks' temporary folder changed);
- no process of the student's outlives its check (a daemon's mark once the check is over), the checker's memory is
  never opened (a breach mark), and no check leaves its temporary folder behind;
- where the student's code runs as nobody (a root grader, student.student_user), every attack is refused: no file
  changes and no signal reaches grade.
Every attack marks that it ran (in a folder no check watches), so a run can show that each did.
tests/test_hostile_class.py runs 33 scenarios.
"""

import contextlib
import csv
import io
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from teachers import classroom, grade  # noqa: E402
from tensorlab.exercises import student as student_module  # noqa: E402
from tests.tools import run_each, scenarios_main  # noqa: E402

SOLUTION = (ROOT / "teachers" / "solutions" / "exp_log.py").read_text()
STUB = (ROOT / "tensorlab" / "exercises" / "catalog" / "exp_log" / "stub.py").read_text()
RIGHT, SLIP = "        return gy * self.y\n", "        return gy / self.y\n"  # Exp's backward, and a slip in it
BACKWARD = "    def backward(self, gy):\n"
GRADEBOOK = ("book.csv", "book-grid.csv", "book.md")
EARLIER = "the gradebook of an earlier run\n"
HOSTILE = ("ann", "max", "zoe")  # the hostile student: graded before bob and kim, between them, or after

# attack name -> (the kind of path it needs: file, folder or none; lines of code, with {path}, {marks}, {delay},
# {checked} (a file made once the hostile file's check is over) and {checker}, this process's id, filled in: a process
# the student's code starts has that code's process as its parent)
ATTACKS = {
    "overwrite": ("file", ["open({path!r}, 'w').write('changed')"]),
    "append": ("file", ["open({path!r}, 'a').write('#')"]),
    "delete": ("file", ["os.remove({path!r})"]),
    "chmod": ("file", ["os.chmod({path!r}, 0o777)"]),
    "create": ("folder", ["open(os.path.join({path!r}, 'new.txt'), 'w').write('new')"]),
    "symlink": ("file", ["os.remove({path!r})", "os.symlink('/dev/null', {path!r})"]),
    "rename": ("folder", ["os.rename({path!r}, {path!r} + '-moved')"]),
    "daemon": (
        "file",
        [
            "if os.fork() == 0:",
            "    os.setsid()",
            "    if os.fork() == 0:",
            "        time.sleep({delay})",
            "        open({path!r}, 'a').write('#')",
            "        while not os.path.exists({checked!r}):",
            "            time.sleep(0.05)",
            "        open(os.path.join({marks!r}, 'survived-%d' % os.getpid()), 'w').close()",
            "    os._exit(0)",
        ],
    ),
    "memory": (
        None,
        [
            "open('/proc/{checker}/mem', 'r+b').close()",
            "open(os.path.join({marks!r}, 'breach'), 'w').close()",
        ],
    ),
    "forge": (None, ["print(json.dumps({{'exercise': 'exp_log', 'passed': True, 'exit_code': 0}}))", "os._exit(0)"]),
    "sigint": (None, ["os.kill({checker}, signal.SIGINT)", "time.sleep(1)"]),
    "sigterm": (None, ["os.kill({checker}, signal.SIGTERM)", "time.sleep(1)"]),
    "exit": (None, ["sys.exit(0)"]),
    "fork": (None, ["os.fork()"]),  # two processes run the rest, and both answer the checker
    "flood": (None, ["print('x' * 1_000_000)"]),
    "loop": (None, ["while True:", "    pass"]),
}


ENDERS = {"forge", "sigint", "sigterm", "exit", "loop"}  # attacks after which no code of the student's runs


def scenario(n, scratch):
    """Grade one drawn class in `scratch`; (what was drawn, [problems])."""
    rng = random.Random(n)
    teacher, home, marks = (scratch / name for name in ("teacher", "home", "marks"))
    submissions, out, engine = teacher / "submissions", teacher / "out", scratch / "engine" / "tensorlab"
    tmp = rng.choice([scratch / "tmp", out, teacher])  # where the checks make their folders: apart, or watched
    shutil.copytree(ROOT / "tensorlab", engine, ignore=shutil.ignore_patterns("__pycache__"))
    for folder in (home, marks, tmp, out):
        folder.mkdir(parents=True, exist_ok=True)
    marks.chmod(0o777)  # the student's code marks there, whichever user it runs as
    (teacher / "notes.txt").write_text("the teacher's notes\n")
    (home / ".profile").write_text("# the teacher's\n")
    (out / "book.csv").write_text(EARLIER)
    right, wrong = SOLUTION, SOLUTION.replace(RIGHT, SLIP)
    hostile = rng.choice(HOSTILE)
    base = rng.choice(["right", "wrong", "stub", "link"])  # link: a symbolic link to bob's file or the solution
    paths = {
        "file": [submissions / "bob" / "exp_log.py", submissions / "kim" / "exp_log.py", out / "book.csv"]
        + [teacher / "notes.txt", home / ".profile", engine / "exercises" / "child.py", engine / "tensor.py"],
        "folder": [submissions / "bob", out, teacher, home, engine / "ops"],
    }
    attacks = []
    for _ in range(rng.randint(1, 3)):
        name = rng.choice(sorted(ATTACKS))
        kind, lines = ATTACKS[name]
        path = str(rng.choice(paths[kind])) if kind else None
        delay = rng.choice([0, 0.2, 0.5])  # a daemon's, before it writes
        checked = marks / f"checked-{hostile}"
        code = [
            line.format(path=path, marks=str(marks), delay=delay, checked=str(checked), checker=os.getpid())
            for line in lines
        ]
        attacks.append((name, path, rng.choice(["top", "backward"]), code))
    attacks.sort(key=lambda attack: attack[0] in ENDERS)  # what ends the process runs last, so the others run
    source = {"right": right, "wrong": wrong, "stub": STUB, "link": STUB}[base]
    for name, _, where, code in reversed(attacks):  # each planted before the last: the first drawn runs first
        source = _plant(source, where, [f"open(os.path.join({str(marks)!r}, 'ran-{name}'), 'w').close()", *code])
    for student, text in (("bob", right), ("kim", wrong), (hostile, source)):
        (submissions / student).mkdir(parents=True)
        (submissions / student / "exp_log.py").write_text(text)
    if base == "link":  # no code of the student's runs: the link alone must not pass
        linked = rng.choice([submissions / "bob" / "exp_log.py", ROOT / "teachers" / "solutions" / "exp_log.py"])
        (submissions / hostile / "exp_log.py").unlink()
        (submissions / hostile / "exp_log.py").symlink_to(linked)
    what = f"scenario {n}: temporary folder {tmp.relative_to(scratch)}, {hostile}'s {base} file, " + ", ".join(
        f"{name}{f' {Path(path).relative_to(scratch)}' if path else ''} at {where}" for name, path, where, _ in attacks
    )

    witnessed = [teacher, engine]  # the submissions, the gradebook's folder, the working folder; the engine
    changed = {}  # student -> the paths under `witnessed` that changed during their check
    code, err = _grade(submissions, out, teacher, home, tmp, engine, witnessed, changed, marks)
    what += f" (ran: {', '.join(sorted(p.name[4:] for p in marks.glob('ran-*'))) or 'none'})"
    problems = []
    if "Traceback" in err or code not in (0, 130):
        problems.append(f"exit {code}: {err.strip()[-500:]}")
    left = sorted(p.name for p in tmp.glob("tensorlab-check-*"))  # (none, if the student's code moved tmp away)
    if left:
        problems.append(f"left behind: {left}")
    if (marks / "breach").exists():
        problems.append("the checker's memory was opened")
    if student_module.student_user() and (code or changed.get(hostile)):  # as nobody, refused: nothing to detect
        problems.append(f"as nobody, exit {code} and changed: {sorted(map(str, changed.get(hostile, ())))[:3]}")
    if code == 130:  # the student's code sent SIGINT or SIGTERM: the grading stops, saying so and what it changed
        told = err.startswith(f"Interrupted (Ctrl-C or SIGTERM) at {hostile}/exp_log.py") and err.count("\n") == 1
        if not told or (bool(changed[hostile]) != ("TAMPERED" in err)):
            problems.append(f"after SIGINT: {err.strip()[-400:]}; changed: {sorted(map(str, changed[hostile]))[:3]}")
        if out / "book.csv" not in changed[hostile] and (out / "book.csv").read_text() != EARLIER:
            problems.append("the earlier gradebook changed")
        return what, problems
    if code != 0:
        return what, problems
    rows = {r["student"]: r for r in csv.DictReader((out / "book.csv").open())}
    status = rows[hostile]["status"]
    if changed[hostile] and status != "tampered":
        shown = sorted(str(path.relative_to(scratch)) for path in changed[hostile])[:3]
        problems.append(f"{shown} changed; {hostile}'s row reads {status!r}: {rows[hostile]['diagnosis']}")
    if not changed[hostile] and base != "right" and status == "passed":
        problems.append(f"{hostile}'s {base} file passed")
    if status == "not graded":  # the checker's own failure: whatever the file does, it gets a verdict
        problems.append(f"{hostile}'s row has no verdict: {rows[hostile]['diagnosis']}")
    changed_under = changed[hostile] or []  # the engine, or the checks' temporary folder, which every check needs
    needed = any(path.is_relative_to(engine) or tmp.is_relative_to(path) for path in changed_under)
    for student, expected in (("bob", "passed"), ("kim", "failed")):
        allowed = {expected, "not graded"} if needed and student > hostile else {expected}
        if rows[student]["status"] not in allowed:
            problems.append(f"{student}'s row reads {rows[student]['status']!r}: {rows[student]['diagnosis']}")
    return what, problems


def _plant(source, where, code):
    """`source` with the attack's lines (each attack in a try, so the next runs) at its top or in Exp.backward."""
    block = ["try:", *(f"    {line}" for line in code), "except Exception:", "    pass"]
    imports = "import json, os, signal, sys, time\n"
    if where == "top":
        return imports + "\n".join(block) + "\n" + source
    body = "".join(f"        {line}\n" for line in block)
    return imports + source.replace(BACKWARD, BACKWARD + body, 1)


def _contents(folders):
    """{path: (mode, bytes)} of everything under `folders`: a witness of changes independent of grade's snapshot."""
    found = {}
    for folder in folders:
        for path in [folder, *folder.rglob("*")]:
            with contextlib.suppress(OSError):
                found[path] = (path.lstat().st_mode, path.read_bytes() if path.is_file() else sorted(os.listdir(path)))
    return found


def _grade(submissions, out, teacher, home, tmp, engine, witnessed, changed, marks):
    """(exit code, stderr) of `grade` run here: from `teacher`, HOME `home`, TMPDIR `tmp`, the engine at `engine`;
    changed[student]: the paths under `witnessed` that changed during that student's check, when `marks` gets a file
    checked-STUDENT."""
    err, graded = io.StringIO(), grade.row

    def row(student, *args, **kwargs):
        before = _contents(witnessed)
        try:
            return graded(student, *args, **kwargs)
        finally:
            after = _contents(witnessed)
            changed[student.name] = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
            (marks / f"checked-{student.name}").touch()

    with contextlib.ExitStack() as stack:
        stack.enter_context(contextlib.chdir(teacher))
        stack.enter_context(mock.patch.dict(os.environ, HOME=str(home)))
        stack.enter_context(mock.patch.object(tempfile, "tempdir", str(tmp)))
        for module, name, value in (
            (student_module, "TENSORLAB", engine),
            (grade, "TENSORLAB", engine),
            (grade, "row", row),
        ):
            stack.enter_context(mock.patch.object(module, name, value))
        stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
        stack.enter_context(contextlib.redirect_stderr(err))
        code = classroom.main(["grade", str(submissions), "--out", str(out / "book"), "--time-limit", "2"])
    return code, err.getvalue()


def run_scenarios(count, seed=0, report=print, seen=lambda what: None):
    """Run `count` scenarios from `seed`; [(what, problems)] of those that broke the property."""
    with tempfile.TemporaryDirectory(prefix="hostile-class-") as tmp:
        os.chmod(tmp, 0o755)  # where the checks' folders are: nobody's to enter when the student's code runs as nobody
        failures = run_each(lambda n: scenario(n, Path(tmp) / str(n)), count, seed, report, seen)
        for marks in Path(tmp).glob("*/marks"):  # for a hostile file grade never got to
            for name in HOSTILE:
                (marks / f"checked-{name}").touch()
        time.sleep(0.5)  # a daemon that outlived its check marks itself once the check is over
        survived = sorted(p.relative_to(tmp) for p in Path(tmp).glob("*/marks/survived-*"))
        if survived:
            failures.append(("after all scenarios", [f"processes outlived their check: {survived}"]))
            report(f"processes outlived their check: {survived}")
    return failures


if __name__ == "__main__":
    sys.exit(scenarios_main(__doc__, run_scenarios))
