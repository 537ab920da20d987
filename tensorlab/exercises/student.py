"""The student's code, run in a process of its own (child.py), and telling them where it went wrong.

`Student(path, source)` starts the child: `python -I -S -B` in an empty temporary working folder,
with a HOME of its own there, and only a private copy of this tensorlab package (a zip of its
bytecode, `engine_zip`) and NumPy importable (never the folder the package came from: no
teachers/, tests/ or other files). The student's source is sent to it (a private copy of their
file, read once); `call` asks it to run a piece of the student's code (child.HANDLERS) and returns
the data it sends back, within the time limit of the case (`time_limit`): a case past it stops the
child and raises TimeLimit.
On Linux the student's processes cannot read or write this one's memory, and none outlives its check,
however it left (a double fork, setsid): this process adopts them and stops every one with the child
(`guard_the_checker`). When this process is root (a container, Gradescope), the student's code runs as
the user `nobody` wherever nobody can run this Python and NumPy, or as TENSORLAB_STUDENT_USER (`student_user`).
"""

import contextlib
import ctypes
import functools
import importlib.util
import io
import linecache
import marshal
import os
import pickle
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import types
import zipfile
from pathlib import Path

import numpy as np

from tensorlab.exercises import child

TENSORLAB = Path(__file__).resolve().parent.parent  # the tensorlab package folder
BOOT = (  # the engine's zip, then its folder (NumPy)
    "import sys; sys.path[:0] = [sys.argv[1] + '/tensorlab.zip', sys.argv[1]]; "
    "from tensorlab.exercises.child import serve; serve(int(sys.argv[2]))"
)
STARTUP = 120  # seconds a child may take to start (Python, NumPy, tensorlab) on a busy machine
RELAY = 0.1  # seconds between looks at what the student's code printed, while waiting for its answer
SHOWN = 20_000  # bytes of what the student's code printed that a check passes on (the rest is counted)
_UNSTOPPABLE = set()  # strays of the student's code this process may not stop (Student._stop)
PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_CHILD_SUBREAPER = 4, 24, 36  # Linux's prctl options (guard_the_checker)
STUDENT_USER = "TENSORLAB_STUDENT_USER"  # the user a root checker runs the student's code as (student_user)
CAP_SYS_PTRACE = 19  # the right to trace any process: root's, dropped for the student's process (guard_the_checker)
try:
    PRCTL = ctypes.CDLL(None).prctl  # looked up once here: _cannot_trace runs between fork and exec
except (AttributeError, OSError, TypeError):  # not Linux
    PRCTL = None


class StudentError(Exception):
    """The student's file cannot be checked; `lines` say why and what to do."""

    def __init__(self, *lines):
        super().__init__("\n".join(lines))
        self.lines = list(lines)


class NotWritten(StudentError):
    """A function of the student's still raises NotImplementedError: the exercise is not done yet."""


class TimeLimit(BaseException):
    """The student's code ran past the time limit (its process is stopped).

    A BaseException, so that no `except Exception` of the checker's takes it for the student's error.
    """


class Wrong(Exception):
    """A quick check (`Student.quick`, search.py) ends at its first failed case, without a diagnosis."""


class Stopped(Exception):
    """The run ends here, with one line to print (a hung case, Ctrl-C)."""

    def __init__(self, line, code):
        super().__init__(line)
        self.line, self.code = line, code


class Student:
    """The student's file, run in a child process; `call(handler, **arguments)` runs a piece of it there.

    `source` is the file's text (default: read from `path` now); `echo` gets what their code prints
    (None: dropped). Use as a context manager: the child and its folder are gone after the block.
    With `quick` set, a check only says whether the file passes: it stops at the first failed case (Wrong).
    """

    quick = False

    def __init__(self, path, source=None, echo=None):
        self.path, self.echo, self.budget, self.deadline, self.ended = str(path), echo, None, None, None
        try:
            source = Path(path).read_bytes() if source is None else source
            source = source.decode() if isinstance(source, bytes) else source
        except UnicodeDecodeError:
            raise StudentError(f"{path} is not a text file of Python code (it is not valid UTF-8).") from None
        self.source, self.shown, self.unshown, self.ready, self.turn = source, 0, 0, False, 0

    def __enter__(self):
        self.folder = Path(tempfile.mkdtemp(prefix="tensorlab-check-"))
        try:
            return self._start()
        except BaseException:  # a full disk, a process that cannot start: nothing of this check's is left behind
            shutil.rmtree(self.folder, ignore_errors=True)
            raise

    def _start(self):
        engine, work, home = (self.folder / name for name in ("engine", "work", "home"))
        for folder in (engine, work, home):
            folder.mkdir()
        (engine / "tensorlab.zip").write_bytes(engine_zip(TENSORLAB))
        (engine / "numpy").symlink_to(Path(np.__file__).parent, target_is_directory=True)
        user = student_user()
        for root, dirs, files in os.walk(self.folder) if user else ():  # the check's folder is nobody's own
            for name in [".", *dirs, *files]:
                os.lchown(os.path.join(root, name), *user)
        printed = self.folder / "printed"  # what the student's code prints: it appends, this process reads
        appended = open(printed, "ab")  # handed to the child, closed below
        self.output = open(printed, "rb")  # closed in __exit__
        printed.unlink()
        read, write = os.pipe()
        guard_the_checker()
        self.others = children()  # this process's children that are not the student's
        env = dict(os.environ, HOME=str(home), TMPDIR=str(work), USERPROFILE=str(home))
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-S", "-u", "-B", "-c", BOOT, str(engine), str(write)],
            cwd=work,
            env=env,
            stdin=subprocess.PIPE,
            stdout=appended,
            stderr=subprocess.STDOUT,
            pass_fds=(write,),
            start_new_session=True,  # its own process group: stopped whole, with whatever it started
            **_as(user),
        )
        os.close(write)
        appended.close()
        self.replies = os.fdopen(read, "rb", buffering=0)
        return self

    def __exit__(self, *exc):
        self._stop(grace=0)  # its exit code says nothing now: no moment to end by itself
        self.replies.close()
        self._relay()
        if self.unshown and self.echo is not None:
            self.echo(f"\n[and {self.unshown} more bytes printed by your code, not shown]\n")
        self.output.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    @contextlib.contextmanager
    def time_limit(self, seconds):
        """Calls in the block end with TimeLimit once the student's code has run `seconds` in all (None or 0: no
        limit); the checker's own work between the calls does not count."""
        self.budget = seconds or None
        try:
            yield
        finally:
            self.budget = None

    def load(self, time_limit=None):
        """Run the student's file's top level (within `time_limit` seconds)."""
        name = Path(self.path).name
        try:
            if not self.ready:
                self.deadline = time.monotonic() + STARTUP
                self._receive()  # the child is ready: its start does not count against the student's time
                self.ready = True
        except (TimeLimit, EOFError, BrokenPipeError):  # before the student's file was sent: not its fault
            raise RuntimeError(f"the process to run {name} in did not start (exit code {self._stop()})") from None
        try:
            with self.time_limit(time_limit):
                self.call("load", display=self.path, source=self.source)
        except TimeLimit:
            raise StudentError(
                f"Running {name} (before any check) did not finish within {time_limit:g} s: "
                f"code at its top level never ends. Put your code inside the functions."
            ) from None

    def call(self, handler, **arguments):
        """What child.HANDLERS[handler](**arguments) returned in the child; a StudentError for what it raised."""
        if self.ended:
            raise StudentError(f"(not run: {self.ended})")
        self.turn += 1  # each request's number, which its answer carries back
        message = pickle.dumps((self.turn, handler, arguments))
        started = time.monotonic()
        self.deadline = None if self.budget is None else started + self.budget
        try:
            child.send(self.process.stdin, message)
            reply = self._receive()
        except (TimeLimit, KeyboardInterrupt):
            self._stop(grace=0)
            self.ended = "the student's code was stopped"
            raise
        except (BrokenPipeError, EOFError):
            code = self._stop()
            self.ended = f"the process running your code ended (exit code {code}) before it answered"
            raise StudentError(
                f"Your code ended the process that runs it (exit code {code}): an exit(), os._exit() or a crash "
                f"of Python itself. Remove it, and check again."
            ) from None
        finally:
            self._relay()
            if self.budget is not None:
                self.budget -= time.monotonic() - started
        try:
            turn, answer = child.unpack(reply)
        except Exception:  # noqa: BLE001 (whatever came down the pipe is the student's process's)
            raise StudentError("The process running your code sent back something that is not an answer.") from None
        if not (isinstance(turn, int) and turn == self.turn):  # a second process answered too: the replies are out
            self._stop(grace=0)  # of step from here on
            self.ended = "two processes of your code answered the checker"
            raise StudentError(
                "Your code answered the checker twice: a process it started (an os.fork()) runs the checker's "
                "requests too. Remove it, and check again."
            )
        if isinstance(answer, dict) and "error" in answer:
            lines = [str(line) for line in answer["error"]]
            raise (NotWritten if answer.get("not_written") else StudentError)(*lines)
        return answer

    def _receive(self):
        header = self._read(child.HEADER.size)
        (length,) = child.HEADER.unpack(header)
        if length > child.LARGEST:
            raise EOFError
        return self._read(length)

    def _read(self, size):
        chunks, left = [], size
        with selectors.DefaultSelector() as selector:
            selector.register(self.replies, selectors.EVENT_READ)
            while left:
                if self.deadline is not None and time.monotonic() > self.deadline:
                    raise TimeLimit()
                if not selector.select(RELAY):
                    self._relay()  # what the student's code prints shows while it runs
                    continue
                chunk = self.replies.read(min(left, 1 << 20))
                if not chunk:
                    raise EOFError
                chunks.append(chunk)
                left -= len(chunk)
        return b"".join(chunks)

    def _stop(self, grace=0.5):
        """Stop the child and everything it started; its exit code. With `grace`, the child first gets its stdin
        closed and that long to end by itself, so that its exit code is its own; without, it is killed before
        its stdin is closed, so that closing never waits on a child that does not read."""
        if grace:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(grace)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, 9)
        with contextlib.suppress(OSError):
            self.process.stdin.close()
        code = self.process.wait()
        while strays := children() - self.others - _UNSTOPPABLE:  # what the student's code started and left, adopted
            for pid in strays:  # here (guard_the_checker): all stopped at once, so none forks while the others are
                try:
                    os.kill(pid, signal.SIGKILL)
                except PermissionError:  # a process this one may not stop (a setuid program)
                    _UNSTOPPABLE.add(pid)
                except ProcessLookupError:
                    pass
            for pid in strays - _UNSTOPPABLE:  # ended, and its children this process's, once waitpid returns: the
                with contextlib.suppress(ChildProcessError):  # next pass stops them
                    os.waitpid(pid, 0)
        return code

    def _relay(self):
        """Pass on what the student's code printed since the last call (up to SHOWN bytes in all)."""
        end = self.output.seek(0, os.SEEK_END)
        self.output.seek(self.shown)
        text = self.output.read(max(min(end, SHOWN) - self.shown, 0))
        self.shown, self.unshown = self.shown + len(text), max(end - SHOWN, 0)  # before a Ctrl-C can come between
        if self.echo is not None and text:
            self.echo(text.decode(errors="replace"))


def guard_the_checker():
    """On Linux, make this process, where verdicts are computed, one that the student's processes can neither trace
    nor open through /proc (its memory, its working folder): it is not dumpable, which keeps out a process of the
    same user without the right to trace any process (root's, which `_cannot_trace` takes from theirs). And have the
    processes they leave behind (a double fork, setsid) handed to it instead of to init, so that `_stop` finds them."""
    if PRCTL is not None:
        PRCTL(PR_SET_DUMPABLE, 0, 0, 0, 0)
        PRCTL(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _cannot_trace():
    """In the student's process before it starts, when the checker runs as root (a container, Gradescope): it keeps
    all root's rights but the right to trace any process, gone for good at exec."""
    if PRCTL is not None:
        PRCTL(PR_CAPBSET_DROP, CAP_SYS_PTRACE, 0, 0, 0)


def student_user():
    """(uid, gid) of the user a root checker runs the student's code as: TENSORLAB_STUDENT_USER names it ('nobody'
    when unset; empty: this process's user). As that user the student's code has no root's rights: it cannot change
    your files, signal this process or read its /proc entries. None when this process is not root, or when nobody
    (unset) cannot run this Python and NumPy in the folder checks run in (a Python under /root, mode 700): then the
    student's code runs as this process's user, as root without the right to trace (`_cannot_trace`)."""
    name = os.environ.get(STUDENT_USER, "nobody")
    return _usable(name, STUDENT_USER in os.environ) if name and os.geteuid() == 0 else None


@functools.cache
def _usable(name, named):
    """(uid, gid) of user `name` when it can run this Python and NumPy from the folder checks run in; else None, or,
    for a user the environment `named`, a RuntimeError saying why."""
    try:
        import pwd

        entry = pwd.getpwnam(name)
    except (ImportError, KeyError):
        if named:
            raise RuntimeError(f"{STUDENT_USER}={name!r} names no user of this system") from None
        return None
    if entry.pw_uid == 0:
        return None  # root itself: as this process, without the right to trace
    user, numpy_folder = (entry.pw_uid, entry.pw_gid), str(Path(np.__file__).parents[1])
    probe = "import os, sys; os.stat(sys.argv[2]); sys.path.insert(0, sys.argv[1]); import numpy"  # reached, run
    command = [sys.executable, "-I", "-S", "-c", probe, numpy_folder, tempfile.gettempdir()]
    options = dict(cwd="/", env={}, capture_output=True, timeout=STARTUP, check=True)
    try:
        subprocess.run(command, **options, **_as(user))
    except (OSError, subprocess.SubprocessError):
        if named:
            raise RuntimeError(
                f"{STUDENT_USER}={name!r}: that user cannot run {sys.executable} with NumPy in {tempfile.gettempdir()}"
            ) from None
        return None
    return user


def _as(user):
    """Popen's arguments that start the student's process as `user` ((uid, gid), no other group), or, without one,
    as this process's user: as root, without the right to trace others (a user has no such right to give up)."""
    if user:
        return {"user": user[0], "group": user[1], "extra_groups": []}
    return {"preexec_fn": _cannot_trace if os.geteuid() == 0 else None}


def children():
    """The ids of this process's child processes, from /proc (an empty set where there is no /proc)."""
    me, found = os.getpid(), set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == me:  # the field after "(command name)"
                found.add(int(stat.parent.name))
    return found


NOT_GRADED = (
    "NOT GRADED: the engine's or NumPy's files changed during an earlier check, and every check runs them. Put them "
    "back (reinstall) and grade again."
)


def engine_files():
    """What every check's process runs, the engine and NumPy, as `snapshot` lists them: once a check's code changed
    them, a later check may run that code (NumPy's folder is every check's; the engine's zip is made from its folder
    once a process), so a class is graded only while this stays as it was (NOT_GRADED)."""
    return snapshot([TENSORLAB, Path(np.__file__).parent])


def snapshot(folders):
    """{path: (size, modified, changed, mode)} for every file and folder under `folders`: any change shows here.

    A file's change time (st_ctime) is set by the system on every write, rename or chmod, and no program can set it
    back, so a file rewritten with its old size and modification time shows too.
    """
    found = {}
    for folder in folders:
        for root, dirs, files in os.walk(folder):
            for name in [".", *dirs, *files]:
                path = os.path.join(root, name)
                try:
                    stat = os.lstat(path)
                except OSError:
                    continue
                found[path] = (stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_mode)
    return found


@functools.lru_cache(maxsize=2)
def engine_zip(folder):
    """The package at `folder` as the bytes of a zip Python imports from: each module compiled here, once, and named
    for its source file (watch.py knows the engine's code by that name), every other file as it is. One file to
    write for each check, where a copy of the folder was two hundred."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        for path in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            name = f"tensorlab/{path.relative_to(folder).as_posix()}"
            if path.suffix == ".py":  # no source beside it in the zip: the bytecode's header has no time to check
                code = compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
                bundle.writestr(name + "c", importlib.util.MAGIC_NUMBER + bytes(12) + marshal.dumps(code))
            else:
                bundle.write(path, name)
    return buffer.getvalue()


def later(answer):
    """Raise what a later step of a call raised (child._later), once its earlier data has been judged."""
    error = answer.get("later_error")
    if error:
        raise (NotWritten if error.get("not_written") else StudentError)(*[str(line) for line in error["error"]])


def run_cases(cases, limit, out, student):
    """Run `(header, run)` pairs; run() -> lines (empty: passed). Returns the number failed.

    A case past the time limit or a Ctrl-C ends the whole run with Stopped and one line.
    """
    failed = 0
    for header, run in cases:
        try:
            with student.time_limit(limit):
                lines = run()
        except TimeLimit:
            raise Stopped(
                f"{header}: STOPPED: it did not finish within {limit:g} s (a loop that never ends?). "
                f"Fix it, or give it longer with --time-limit SECONDS.",
                1,
            ) from None
        except KeyboardInterrupt:
            raise Stopped(f"{header}: interrupted (Ctrl-C); the cases after it were not checked.", 130) from None
        if lines and student.quick:
            raise Wrong(header)
        out(f"{header}: {'FAILED' if lines else 'ok'}")
        for line in lines:
            for part in line.splitlines() or [""]:
                out("    " + part if part else "")
        failed += bool(lines)
    return failed


def find(module, name, path, kind="class"):
    """The object called `name` in the student's module, or a StudentError saying it is missing."""
    found = getattr(module, name, None)
    if found is None:
        defined = sorted(
            n
            for n, v in vars(module).items()
            if isinstance(v, type) or isinstance(v, types.FunctionType)
            if getattr(v, "__module__", None) == module.__name__
        )
        listed = ", ".join(defined) if defined else "nothing"
        raise StudentError(
            f"{Path(path).name} has no {kind} named {name!r} (it defines {listed}). Keep the name the stub gave it."
        )
    return found


def describe_exception(error, path, what):
    """Lines saying that `what` raised `error`, and the line of the student's file it came from."""
    if isinstance(error, NotImplementedError):
        return [
            f"{what} is not written yet: it still raises NotImplementedError.",
            f"Open {path}, replace the `raise NotImplementedError(...)` line with your code, and run the check again.",
        ]
    lines = [f"{what} raised {type(error).__name__}: {error}"]
    found = _last_frame(error, path)
    if found:
        code, number = found
        lines.append(f"  at line {number} of {Path(path).resolve().name}, in {code.co_name}:")
        line = linecache.getline(code.co_filename, number).strip()
        if line:
            lines.append(f"      {line}")
    return lines


def raising_function(error, path):
    """'Value.__add__': the function of the student's file that raised `error`, or None."""
    found = _last_frame(error, path)
    return found[0].co_qualname if found else None


def _last_frame(error, path):
    """(code, line number) of the last frame of `error`'s traceback in the file at `path`, or None."""
    path, found = Path(path).resolve(), None
    for frame, number in traceback.walk_tb(error.__traceback__):
        if _resolved(frame.f_code.co_filename) == path:
            found = frame.f_code, number
    return found


@functools.lru_cache(maxsize=64)
def _resolved(filename):
    """The file's resolved path (None if the system cannot say), once per name: a RecursionError's 1000 frames
    name a few files."""
    try:
        return Path(filename).resolve()
    except OSError:
        return None
