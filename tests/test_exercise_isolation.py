"""A verdict no submission can reach (issue 31): the hostile files of a class, each planted and graded.

Each is graded through the command line (`python -m teachers.classroom grade`, as a teacher runs
it) and read back from the gradebook's CSV. Before the student's code ran in a process of its own,
each of these passed or did its damage: the repository's root was on the check's import path, the
check ran with the grader's HOME and working folder, read the verdict from the student's process,
and graded each file where it lay on disk.
"""

import contextlib
import csv
import ctypes
import io
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from teachers import classroom, grade
from tensorlab.exercises import child
from tensorlab.exercises import student as student_module
from tensorlab.exercises.__main__ import main
from tensorlab.exercises.student import TENSORLAB

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "teachers" / "solutions"
WRONG_MUL = ("return unbroadcast(gy * self.b, self.a.shape)", "return gy * self.b")  # a slip, no sum


def grade_class(submissions, out, *options):
    """The gradebook's rows (student, exercise) -> row, and what grade printed on stderr."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = classroom.main(["grade", str(submissions), "--out", str(out), "--time-limit", "5", *options])
    assert code == 0, err.getvalue()
    with open(f"{out}.csv", newline="") as file:
        return {(r["student"], r["exercise"]): r for r in csv.DictReader(file)}


def hand_in(submissions, student, name, source):
    (submissions / student).mkdir(parents=True, exist_ok=True)
    (submissions / student / f"{name}.py").write_text(source)


def solution(name):
    return (SOLUTIONS / f"{name}.py").read_text()


@pytest.fixture
def teacher(tmp_path, monkeypatch):
    """A teacher's working folder (the current one), with a HOME of their own: (working folder, HOME)."""
    work, home = tmp_path / "teacher", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    (work / "notes.txt").write_text("the teacher's notes")
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOME", str(home))
    return work, home


def test_importing_the_teachers_solution_fails_even_graded_from_the_checkout(tmp_path, monkeypatch):
    """`from teachers.solutions.softmax import Softmax`: the checkout is not importable where the student's code is."""
    monkeypatch.chdir(ROOT)  # the teacher grades from the checkout, teachers/ beside them
    submissions = tmp_path / "submissions"
    hand_in(submissions, "mallory", "softmax", "from teachers.solutions.softmax import Softmax  # noqa: F401\n")
    hand_in(
        submissions,
        "mallory",
        "matmul",
        "import sys\nsys.path.insert(0, '.')\nfrom teachers.solutions.matmul import *\n",
    )
    hand_in(submissions, "alice", "softmax", solution("softmax"))
    rows = grade_class(submissions, tmp_path / "book" / "gradebook")
    assert rows["alice", "softmax"]["status"] == "passed", rows["alice", "softmax"]  # the right answer still passes
    for name in ("softmax", "matmul"):
        row = rows["mallory", name]
        assert row["status"] == "failed" and "No module named 'teachers'" in row["diagnosis"], row


def test_a_file_that_rewrites_a_classmates_file_is_tampered_and_the_classmate_graded_on_their_own(tmp_path, teacher):
    submissions = tmp_path / "submissions"
    victim = submissions / "zed" / "mul.py"
    hand_in(submissions, "zed", "mul", solution("mul").replace(*WRONG_MUL))
    right = solution("mul")
    hand_in(
        submissions,
        "amy",  # graded before zed
        "mul",
        f"from pathlib import Path\nPath({str(victim)!r}).write_text({right!r})\n{right}",
    )
    rows = grade_class(submissions, tmp_path / "book" / "gradebook")
    assert victim.read_text() == right  # the write succeeded: the student's code runs with the grader's rights
    assert rows["amy", "mul"]["status"] == "tampered" and rows["amy", "mul"]["diagnosis"].startswith("TAMPERED: ")
    assert str(victim) in rows["amy", "mul"]["diagnosis"]
    assert rows["zed", "mul"]["status"] == "failed", rows  # graded on the file zed handed in


def test_deleting_a_file_of_the_teachers_working_folder_or_writing_the_gradebooks_is_tampered(tmp_path, teacher):
    work, _ = teacher
    submissions, book = tmp_path / "submissions", tmp_path / "book"
    book.mkdir()
    right = solution("exp_log")
    hand_in(submissions, "amy", "exp_log", f"import os\nos.remove({str(work / 'notes.txt')!r})\n{right}")
    hand_in(
        submissions, "bea", "exp_log", f"open({str(book / 'gradebook.csv')!r}, 'w').write('bea,exp_log,yes')\n{right}"
    )
    hand_in(submissions, "cid", "exp_log", right)
    rows = grade_class(submissions, book / "gradebook")
    assert not (work / "notes.txt").exists()
    for student in ("amy", "bea"):
        assert rows[student, "exp_log"]["diagnosis"].startswith("TAMPERED: "), rows[student, "exp_log"]
        assert rows[student, "exp_log"]["status"] == "tampered"
    assert rows["cid", "exp_log"]["status"] == "passed", rows["cid", "exp_log"]  # graded after both, untouched


def test_what_the_students_code_writes_into_home_stays_in_a_home_of_its_own(tmp_path, teacher):
    _, home = teacher
    submissions = tmp_path / "submissions"
    source = (
        "import os\nfrom pathlib import Path\n"
        "Path.home().joinpath('owned.txt').write_text('x')\n"
        "Path(os.path.expanduser('~/.bashrc')).write_text('echo owned')\n" + solution("exp_log")
    )
    hand_in(submissions, "amy", "exp_log", source)
    rows = grade_class(submissions, tmp_path / "book" / "gradebook")
    assert rows["amy", "exp_log"]["status"] == "passed", rows  # harmless there: its own HOME, gone after the check
    assert sorted(home.iterdir()) == []


def test_after_a_file_that_changes_the_engine_no_row_is_graded(tmp_path, teacher, monkeypatch):
    """Every check's process runs the engine (and NumPy): once a check changed them, no later verdict can be trusted."""
    engine = tmp_path / "installed" / "tensorlab"
    shutil.copytree(TENSORLAB, engine)  # the engine the checks run here: the test changes this copy, not the checkout
    monkeypatch.setattr(student_module, "TENSORLAB", engine)
    monkeypatch.setattr(grade, "TENSORLAB", engine)
    submissions, right = tmp_path / "submissions", solution("exp_log")
    hand_in(submissions, "amy", "exp_log", right)
    hand_in(submissions, "bea", "exp_log", f"open({str(engine / 'tensor.py')!r}, 'a').write('# changed\\n')\n{right}")
    hand_in(submissions, "cid", "exp_log", right)
    hand_in(submissions, "dan", "exp_log", right.replace("return gy * self.y", "return gy / self.y"))
    hand_in(submissions, "eve", "mul", solution("mul"))  # and no exp_log: not handed in, whatever the engine
    rows = grade_class(submissions, tmp_path / "book" / "gradebook")
    assert (engine / "tensor.py").read_text().endswith("# changed\n")
    assert [rows[s, "exp_log"]["status"] for s in ("amy", "bea", "cid", "dan", "eve")] == [
        "passed",
        "tampered",
        "not graded",
        "not graded",
        "not handed in",
    ]
    assert rows["dan", "exp_log"]["diagnosis"] == grade.NOT_GRADED


def test_a_file_that_prints_a_passing_record_and_exits_fails(tmp_path, teacher):
    submissions = tmp_path / "submissions"
    fake = {"exercise": "exp_log", "passed": True, "exit_code": 0, "diagnosis": "", "cases": []}
    for stream in ("sys.stdout", "sys.__stdout__", "sys.stderr"):
        hand_in(
            submissions,
            f"eve_{stream.replace('.', '_')}",
            "exp_log",
            f"import json, sys\n{stream}.write(json.dumps({fake!r}) + '\\n')\n{stream}.flush()\nsys.exit(0)\n",
        )
    hand_in(
        submissions, "fay", "exp_log", f"import json, os\nos.write(1, json.dumps({fake!r}).encode())\nos._exit(0)\n"
    )
    rows = grade_class(submissions, tmp_path / "book" / "gradebook")
    assert len(rows) == 4 and all(r["status"] == "failed" for r in rows.values()), rows
    printed = io.StringIO()  # and `check --json` prints the checker's record, not the student's
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
        code = main(["check", "exp_log", str(submissions / "fay" / "exp_log.py"), "--json"])
    assert code == 1 and json.loads(printed.getvalue())["passed"] is False


def test_a_forged_answer_down_the_checkers_own_pipe_fails(tmp_path, teacher):
    """Bytes written to every open descriptor, the checker's reply pipe among them, are no answer."""
    submissions = tmp_path / "submissions"
    forged = (
        "import os\nfor fd in range(3, 64):\n    try:\n        os.write(fd, b'\\x10' + bytes(7) + b'PK' * 8)\n"
        "    except OSError:\n        pass\n"
    )
    hand_in(submissions, "amy", "exp_log", forged + solution("exp_log").replace("return gy * self.y", "return gy"))
    rows = grade_class(submissions, tmp_path / "book" / "gradebook")
    assert rows["amy", "exp_log"]["status"] == "failed", rows


def test_a_right_file_that_forks_fails_saying_so_not_as_the_checkers_fault(tmp_path, teacher):
    """Two processes then answer the checker's requests: a reply out of turn is the file's error, not a NOT CHECKED."""
    submissions = tmp_path / "submissions"
    right = solution("exp_log")
    hand_in(submissions, "amy", "exp_log", "import os\nos.fork()\n" + right)
    forks = right.replace("return gy * self.y", "os.fork()\n        return gy * self.y")
    hand_in(submissions, "bob", "exp_log", "import os\n" + forks)
    rows = grade_class(submissions, tmp_path / "book" / "gradebook")
    for student in ("amy", "bob"):
        row = rows[student, "exp_log"]
        assert row["status"] == "failed" and "answered the checker twice" in row["diagnosis"], row


def test_the_student_process_sees_only_the_engine_and_numpy(tmp_path, teacher):
    """Where the student's code runs: an empty working folder, its own HOME, nothing on the path but the engine."""
    submissions = tmp_path / "submissions"
    probe = (
        "import os, sys\nfrom pathlib import Path\n"
        "import tensorlab\n"
        "assert os.listdir('.') == [], os.listdir('.')\n"
        f"assert Path.home() != Path({str(teacher[1])!r})\n"
        "for name in ('teachers', 'tests', 'torch', 'models'):\n"
        "    try:\n        __import__(name)\n    except ImportError:\n        pass\n"
        "    else:\n        raise AssertionError(name + ' is importable')\n"
        "assert not (Path(tensorlab.__file__).parents[1] / 'teachers').exists()\n"
    )
    hand_in(submissions, "amy", "exp_log", probe + solution("exp_log"))
    rows = grade_class(submissions, tmp_path / "book" / "gradebook")
    assert rows["amy", "exp_log"]["status"] == "passed", rows["amy", "exp_log"]["diagnosis"]


LEAVE = """
import os, random, time
def _leave(rng, depth):  # a random tree of processes: each leaves its session or not, its parent ends or waits
    if os.fork():
        return
    if rng.random() < 0.5:
        os.setsid()
    open(os.path.join(PIDS, str(os.getpid())), "w").close()
    if depth < 3:
        for _ in range(rng.randint(1, 2)):
            _leave(rng, depth + 1)
    if depth < 3 and rng.random() < 0.5:
        os._exit(0)  # its children are orphans now
    time.sleep(1)
    open(os.path.join(PIDS, "ran-on-" + str(os.getpid())), "w").close()
    os._exit(0)
_leave(random.Random(SEED), 1)
"""


@pytest.mark.parametrize("seed", range(4))
def test_no_process_the_students_code_starts_outlives_its_check(tmp_path, teacher, seed):
    """However the student's code leaves the check (a double fork, setsid, a tree of them; drawn from `seed`), every
    process it started is stopped with it: nothing runs on after the check to change the gradebook or the next row."""
    submissions, pids = tmp_path / "submissions", tmp_path / "pids"
    pids.mkdir()
    source = f"PIDS, SEED = {str(pids)!r}, {seed}\n" + LEAVE + solution("exp_log")
    hand_in(submissions, "amy", "exp_log", source)
    rows = grade_class(submissions, tmp_path / "book" / "gradebook")
    assert rows["amy", "exp_log"]["status"] == "passed", rows  # it started them, and the check went on
    started = [int(p.name) for p in pids.iterdir()]
    assert started
    alive = [pid for pid in started if _exists(pid)]
    time.sleep(1.5)
    assert alive == [] and not list(pids.glob("ran-on-*")), (alive, sorted(p.name for p in pids.iterdir()))


def _exists(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_the_students_code_can_neither_read_nor_write_the_checkers_memory(tmp_path):
    """The checker, where every verdict is computed, is closed to the student's process through /proc: its memory
    (which the student's code could write a pass into) and its working folder. Run as a teacher's user, without the
    right to trace any process (a root test runner gives CAP_SYS_PTRACE up for the check): the checker's not being
    dumpable is what keeps it closed. A root checker (tests/hostile_class.py) takes that right from the student's."""
    opened, refused = tmp_path / "opened", tmp_path / "refused"
    probe = (
        "import os\n"
        "for name, look in (('mem', lambda p: open(p, 'r+b').close()), ('cwd', os.readlink)):\n"
        "    try:\n"
        "        look('/proc/%d/%s' % (os.getppid(), name))\n"
        f"        open({str(opened)!r} + '-' + name, 'w').close()\n"
        "    except OSError:\n"
        f"        open({str(refused)!r} + '-' + name, 'w').close()\n"
    )
    (tmp_path / "exp_log.py").write_text(probe + solution("exp_log"))

    prctl = ctypes.CDLL(None).prctl  # looked up here: between fork and exec only the call runs

    def as_a_user():
        prctl(24, 19, 0, 0, 0)  # PR_CAPBSET_DROP CAP_SYS_PTRACE, gone after exec (as a user: no effect)

    done = subprocess.run(
        [sys.executable, "-m", "tensorlab.exercises", "check", "exp_log", str(tmp_path / "exp_log.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        preexec_fn=as_a_user,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in tmp_path.glob("*-*")) == ["refused-cwd", "refused-mem"]


# ----- no crash reaches the student ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "old", "raising", "where"),
    [
        ("value", "        self.grad = 0.0\n", "        self.grad = 1 / 0", "in __init__"),  # the constructor
        ("softmax", "import numpy as np\n", "import no_such_module", "in <module>"),  # an import
        ("matmul", "        self.a, self.b = a, b\n", "        raise KeyError('a')", "in forward"),
        ("adamw", "import numpy as np\n", "np.frobnicate()", "in <module>"),
    ],
)
def test_a_student_constructor_or_import_that_raises_is_one_line_naming_their_file_and_line(
    tmp_path, name, old, raising, where
):
    source = solution(name)
    assert old in source, f"teachers/solutions/{name}.py no longer holds {old!r}"
    source = source.replace(old, old + raising + "\n", 1)
    (tmp_path / f"{name}.py").write_text(source)
    line = source.splitlines().index(raising) + 1
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
        code = main(["check", name, str(tmp_path / f"{name}.py"), "--json"])
    record = json.loads(printed.getvalue())  # a record, not a traceback
    assert code == 1 and record["passed"] is False and record["exit_code"] == 1
    diagnosis = record["diagnosis"]
    assert "\n" not in diagnosis and f"at line {line} of {name}.py, {where}:" in diagnosis, diagnosis
    assert "Traceback" not in diagnosis and "tensorlab/exercises" not in diagnosis, diagnosis


def test_a_fault_of_the_checkers_own_is_still_one_record(tmp_path, monkeypatch):
    from tensorlab.exercises import check

    def broken(*args, **kwargs):
        raise KeyError("a bug")

    monkeypatch.setattr(check, "check", broken)
    (tmp_path / "exp_log.py").write_text(solution("exp_log"))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
        code = main(["check", "exp_log", str(tmp_path / "exp_log.py"), "--json"])
    record = json.loads(printed.getvalue())
    assert code == 3 and record["passed"] is False and record["exit_code"] == 3 and check.check is broken
    assert record["diagnosis"].startswith("The checker itself failed (KeyError: 'a bug', at line "), record


# ----- as root, the student's code runs as nobody -------------------------------------------------------------------
AS_ROOT = [  # what root's rights would let the student's code do to the grader: (name, code given `path`, a file of
    # the teacher's, `folder`, the teacher's folder, and `checker`, the grading process's id)
    ("write", "open(path, 'a').write('#')"),
    ("delete", "os.remove(path)"),
    ("chmod", "os.chmod(path, 0o777)"),
    ("create", "open(os.path.join(folder, 'new.txt'), 'w')"),
    ("rename", "os.rename(folder, folder + '-moved')"),
    ("kill", "os.kill(checker, signal.SIGKILL)"),
    ("stop", "os.kill(checker, signal.SIGSTOP)"),
    ("memory", "open('/proc/%d/mem' % checker, 'r+b')"),
    ("environ", "open('/proc/%d/environ' % checker).read()"),
    ("maps", "open('/proc/%d/maps' % checker).read()"),
]


def test_graded_as_root_the_students_code_can_do_nothing_roots_rights_would_allow(python_nobody_can_run):
    """Gradescope and containers grade as root. There the student's process runs as the user nobody (when nobody can
    run the grader's Python and NumPy), so each of these is refused by the system instead of detected after the fact,
    while the right answer it holds still passes and the classmate is graded on their own file."""
    base, python = python_nobody_can_run
    submissions, teacher, marks = base / "submissions", base / "teacher", base / "marks"
    teacher.mkdir()
    (teacher / "notes.txt").write_text("the teacher's notes")
    marks.mkdir()
    marks.chmod(0o777)  # like /tmp: the one place nobody can write its marks
    hand_in(submissions, "zed", "mul", solution("mul").replace(*WRONG_MUL))
    attacks = "".join(
        f"try:\n    {code}\n    open(os.path.join(marks, 'done-{name}'), 'w')\n"
        f"except OSError:\n    open(os.path.join(marks, 'refused-{name}'), 'w')\n"
        for name, code in AS_ROOT
    )
    for name, victim in (("exp_log", teacher / "notes.txt"), ("mul", submissions / "zed" / "mul.py")):
        head = (
            "import os, signal\n"
            f"path, folder, marks = {str(victim)!r}, {str(victim.parent)!r}, {str(marks)!r}\nchecker = os.getppid()\n"
        )
        hand_in(submissions, "amy", name, head + attacks + solution(name))  # amy is graded before zed
    before = {path: path.read_bytes() for path in (teacher / "notes.txt", submissions / "zed" / "mul.py")}
    done = subprocess.run(
        [python, "-m", "teachers.classroom", "grade", str(submissions), "--out", str(base / "book" / "gradebook")],
        cwd=ROOT,
        env={"PATH": os.environ["PATH"], "HOME": str(teacher), "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in marks.iterdir()) == sorted(f"refused-{name}" for name, _ in AS_ROOT)
    assert {path: path.read_bytes() for path in before} == before
    with open(base / "book" / "gradebook.csv", newline="") as file:
        rows = {(r["student"], r["exercise"]): r["status"] for r in csv.DictReader(file)}
    assert rows["amy", "exp_log"] == rows["amy", "mul"] == "passed" and rows["zed", "mul"] == "failed", rows


def test_where_nobody_cannot_reach_the_check_folder_the_student_code_runs_as_root(python_nobody_can_run, tmp_path):
    """A TMPDIR only root can enter (tmp_path: mode 700): the check folder is made there, out of nobody's reach, so
    the student's code runs as root, as before, and the file is checked (not a checker that cannot start)."""
    base, python = python_nobody_can_run
    (base / "exp_log.py").write_text(solution("exp_log"))
    done = subprocess.run(
        [python, "-m", "tensorlab.exercises", "check", "exp_log", str(base / "exp_log.py")],
        cwd=ROOT,
        env={"PATH": os.environ["PATH"], "TMPDIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_student_user_that_cannot_be_used_is_one_line_not_a_silent_root(python_nobody_can_run, tmp_path):
    """TENSORLAB_STUDENT_USER names the user a root checker runs the student's code as: one that does not exist, or
    cannot run the Python, is said in one line (no verdict), never quietly replaced by root."""
    _, python = python_nobody_can_run
    (tmp_path / "exp_log.py").write_text(solution("exp_log"))
    for user, why in (("no-such-user", "names no user of this system"), ("root", "")):
        done = subprocess.run(
            [python, "-m", "tensorlab.exercises", "check", "exp_log", str(tmp_path / "exp_log.py")],
            cwd=ROOT,
            env={"PATH": os.environ["PATH"], "TENSORLAB_STUDENT_USER": user},
            capture_output=True,
            text=True,
            timeout=120,
        )
        if why:
            assert done.returncode == 3 and f"TENSORLAB_STUDENT_USER='{user}' {why}" in done.stdout, done.stdout
        else:  # root itself can run anything: the code runs as root, by the teacher's choice
            assert done.returncode == 0, done.stdout + done.stderr


def test_an_answer_comes_back_as_sent_and_a_forged_one_raises():
    """child.pack/unpack, the only way data comes back from the student's process, on drawn values: nested lists,
    tuples and dicts of numbers, strings, None and arrays of every kind of number (0-d, empty, big-endian, strided,
    NumPy scalars) come back equal, of the same dtype and shape, writable; objects by their type's name. A message
    changed anywhere (truncated, its tree's dtype, shape or offset replaced: an object or string dtype, a structure,
    a negative size, an offset past the end) raises, and never gives an array of anything but numbers."""
    rng = np.random.default_rng(0)
    dtypes = ["<f8", ">f8", "<f4", "<f2", "<i8", ">i4", "|u1", "|b1", "<c16"]

    def drawn(depth=0):
        kind = rng.integers(7 if depth < 3 else 4)
        if kind == 0:
            shape = tuple(int(n) for n in rng.integers(0, 4, rng.integers(0, 4)))
            a = (rng.standard_normal(shape) * 100).astype(rng.choice(dtypes))
            return a[::-1] if a.ndim and rng.random() < 0.3 else a  # strided
        if kind == 1:
            return rng.choice([None, True, 3, -2.5, float("inf"), "gy", np.float32(1.5), np.int64(7)])
        if kind == 2:
            return np.float64("nan")
        if kind == 3:
            return object()
        items = [drawn(depth + 1) for _ in range(rng.integers(0, 4))]
        return [items, tuple(items), {f"k{i}": v for i, v in enumerate(items)}][kind - 4]

    def same(a, b):
        if isinstance(a, (np.ndarray, np.generic)) and a.dtype.kind in "biufc":
            b_array = isinstance(b, np.ndarray) and b.flags.writeable
            return b_array and a.dtype == b.dtype and np.shape(a) == b.shape and np.array_equal(a, b, equal_nan=True)
        if isinstance(a, (list, tuple)):
            return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
        if isinstance(a, dict):
            return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
        if isinstance(a, (type(None), bool, int, float, str)):
            return a == b or a != a and b != b
        return type(b).__name__ == type(a).__name__

    for _ in range(300):
        value = drawn()
        assert same(value, child.unpack(child.pack(value))), value
    message = child.pack([np.arange(6.0).reshape(2, 3), np.ones(2, ">i4")])
    head = child.HEADER.size
    text = message[head : head + int.from_bytes(message[:head], "little")]  # the tree
    forged = [message[:cut] for cut in (0, 4, head + 5, len(message) - 1)]
    for old, new in [
        (b'"<f8"', b'"|O"'),
        (b'"<f8"', b'"<U2"'),
        (b'"<f8"', b'"f8,f8"'),
        (b'"<f8"', b'"(2,)f8"'),
        (b"[2, 3]", b"[-1]"),
        (b"[2, 3]", b"[2, 3.0]"),
        (b"[2, 3], 0", b"[2, 3], 48"),
        (b", 0]", b", -8]"),
    ]:
        assert old in text, (old, text)
        changed = message.replace(old, new, 1)
        length = len(changed) - len(message) + int.from_bytes(message[:head], "little")
        forged.append(length.to_bytes(head, "little") + changed[head:])
    for data in forged:
        with pytest.raises(Exception):  # noqa: B017, PT011 (student.call turns any exception into one line)
            child.unpack(data)
