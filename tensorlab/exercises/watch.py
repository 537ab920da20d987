"""Running a student's code under watch: a time limit, Ctrl-C, and what the code called.

- `time_limit(seconds)`: a case that does not return in time raises `TimeLimit` (SIGALRM, so
  on Linux and macOS, in the main thread; elsewhere there is no limit rather than a wrong one).
- `Stopped`: the one line a run ends with when a case hung or the student pressed Ctrl-C.
- `watch(code)`: while the student's function runs, a profile hook records every call into
  tensorlab itself or another library's autograd (a backward must be the student's own NumPy,
  not the engine's ops or autograd; switching the hook off counts too) and the local variables
  of the student's frame when it returns, so the checker can compare each intermediate step
  (gp, gs, ...) with the reference's. Three kinds of call are seen:
  - Python functions in tensorlab's engine files, or in the installed packages of torch, jax,
    tensorflow, mlx or autograd;
  - C functions of those libraries (`torch._softmax_backward_data`, a Tensor's methods): the
    hook's 'c_call' events, judged by the module the function was defined in;
  - copies of tensorlab's own code under another file name (`inspect.getsource` of an op,
    compiled again and run): every function compiled from the engine's files is known by its
    bytecode and the names it uses (`fingerprint`), whatever file name a copy was compiled
    under, and code compiled from the student's own file (`register_student_code`) is theirs
    even when it happens to read like the engine's.
  It runs in the checker's own process: it keeps honest students honest and names the
  shortcut, it is not a sandbox.
"""

import contextlib
import functools
import signal
import sys
import threading
import time
import types
from pathlib import Path

import numpy as np

TENSORLAB = Path(__file__).resolve().parent.parent  # the tensorlab package folder
# what a backward may not call: the engine's ops and their wrappers, and autograd itself (making a
# Tensor, or the Function.backward a stub inherits, is not an answer and is left to the other checks)
ENGINE_FILES = ("ops/", "functional.py", "nn/", "optim/", "graph/", "gradcheck.py")
AUTOGRAD = {"tensor.py": ("Tensor.backward", "Function.__call__", "topological_order")}
# other libraries' autograd is the same shortcut
OTHER_AUTOGRAD = {"torch", "jax", "jaxlib", "autograd", "tensorflow", "mlx", "keras", "paddle", "mxnet"}
SMALLEST_COPY = 20  # bytes of bytecode: a smaller engine function (`self.axis = axis`) is no answer to copy
_student_code = {}  # id -> code object compiled from a student's file (kept alive, so that ids stay unique)


class TimeLimit(BaseException):
    """The student's code ran past the time limit.

    A BaseException, so that `except Exception` in their code or ours cannot swallow it.
    """


class Stopped(Exception):
    """The run ends here, with one line to print (a hung case, Ctrl-C)."""

    def __init__(self, line, code):
        super().__init__(line)
        self.line, self.code = line, code


@contextlib.contextmanager
def time_limit(seconds):
    """Raise TimeLimit in the block when it runs longer than `seconds` (None or 0: no limit)."""
    usable = seconds and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable:
        yield
        return

    def expire(signum, frame):
        raise TimeLimit()

    previous = signal.signal(signal.SIGALRM, expire)
    started = time.monotonic()
    pending, interval = signal.setitimer(signal.ITIMER_REAL, seconds)  # someone else's alarm (pytest-timeout)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if pending:  # theirs again, with the time it had left
            signal.setitimer(signal.ITIMER_REAL, max(pending - (time.monotonic() - started), 1e-3), interval)


def run_cases(cases, limit, out):
    """Run `(header, run)` pairs; run() -> lines (empty: passed). Returns the number failed.

    A case past the time limit or a Ctrl-C ends the whole run with Stopped and one line.
    """
    failed = 0
    for header, run in cases:
        try:
            with time_limit(limit):
                lines = run()
        except TimeLimit:
            raise Stopped(
                f"{header}: STOPPED: it did not finish within {limit:g} s (a loop that never ends?). "
                f"Fix it, or give it longer with --time-limit SECONDS.",
                1,
            ) from None
        except KeyboardInterrupt:
            raise Stopped(f"{header}: interrupted (Ctrl-C); the cases after it were not checked.", 130) from None
        out(f"{header}: {'FAILED' if lines else 'ok'}")
        for line in lines:
            for part in line.splitlines() or [""]:
                out("    " + part if part else "")
        failed += bool(lines)
    return failed


class Watch:
    """What one call of the student's function did: tensorlab functions it called, its locals at return.

    Also how often it called each function of the student's own file (`calls`): a backward that
    runs its op's forward again and again is finite differences.
    """

    def __init__(self, code):
        self.code = code
        self.engine_calls = []  # 'tensorlab/ops/softmax.py: Softmax.backward', in call order
        self.student_calls = {}  # id of a code object of the student's file -> how often it was called
        self.locals = {}  # name -> array: the student's frame when it returned

    def calls(self, function):
        """How often `function` (of the student's file) ran inside the watched call."""
        return self.student_calls.get(id(getattr(function, "__code__", None)), 0)

    def profile(self, frame, event, arg):
        if event == "call":
            code = frame.f_code
            where = _engine_file(code.co_filename)
            name = code.co_qualname
            if where and (where.startswith(ENGINE_FILES) or name in AUTOGRAD.get(where, ())):
                self.engine_calls.append(f"tensorlab/{where}: {name}")
            elif _library(code.co_filename) in OTHER_AUTOGRAD:
                self.engine_calls.append(f"{_library(code.co_filename)}: {name}")
            elif where is None and id(code) in _student_code:
                self.student_calls[id(code)] = self.student_calls.get(id(code), 0) + 1
            elif where is None:
                original = _engine_code().get(fingerprint(code))
                if original:
                    self.engine_calls.append(
                        f"tensorlab/{original}, a copy of it compiled under the name {Path(code.co_filename).name!r}"
                    )
        elif event == "c_call":
            library = _c_library(arg)
            if library in OTHER_AUTOGRAD:
                self.engine_calls.append(f"{library}: {getattr(arg, '__qualname__', arg)} (a C function)")
        elif event == "return" and frame.f_code is self.code:
            self.locals = {name: value for name, value in frame.f_locals.items() if isinstance(value, np.ndarray)}


@contextlib.contextmanager
def watch(code):
    """Watch calls made while the block runs; `code` is the student's function's code object."""
    watcher = Watch(code)
    previous = sys.getprofile()
    sys.setprofile(watcher.profile)
    try:
        yield watcher
    finally:
        if sys.getprofile() != watcher.profile:  # the student's code switched the watch off
            watcher.engine_calls.append("sys.setprofile: the checker's watch switched off")
        sys.setprofile(previous)


def register_student_code(code):
    """Mark `code` and every function compiled with it as the student's own (their file, compiled by the checker)."""
    for each in _nested(code):
        _student_code[id(each)] = each


def fingerprint(code):
    """What a function does, whatever its file, line numbers or local names: its bytecode and the names it uses."""
    return code.co_code, code.co_names


def engine_use_line(name, calls):
    """The one line saying that a backward used tensorlab itself (or another autograd), or None."""
    if not calls:
        return None
    who = "tensorlab itself" if calls[0].startswith(("tensorlab/", "sys.")) else "another library's autograd"
    return (
        f"{name} calls {who} ({calls[0]}): that is the engine's answer, not yours. Write the "
        f"gradient with NumPy only, on the arrays backward gets (gy and what forward saved)."
    )


@functools.cache
def _engine_code():
    """fingerprint -> 'ops/softmax.py: Softmax.backward' for every function compiled from the engine's files."""
    known = {}
    for path in sorted(TENSORLAB.rglob("*.py")):
        where = path.relative_to(TENSORLAB).as_posix()
        if not where.startswith(ENGINE_FILES) and where not in AUTOGRAD:
            continue
        for code in _nested(compile(path.read_text(), str(path), "exec")):
            if where in AUTOGRAD and code.co_qualname not in AUTOGRAD[where]:
                continue
            if len(code.co_code) >= SMALLEST_COPY and code.co_name != "<module>":
                known.setdefault(fingerprint(code), f"{where}: {code.co_qualname}")
    return known


def _nested(code):
    """`code` and every code object compiled inside it (functions, classes, lambdas, comprehensions)."""
    found = [code]
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            found += _nested(constant)
    return found


def _c_library(function):
    """'torch' for a C function (or method) defined in an installed package, else None."""
    owner = getattr(function, "__self__", None)
    module = getattr(function, "__module__", None) or (
        type(owner).__module__ if owner is not None and not isinstance(owner, types.ModuleType) else None
    )
    if module is None and isinstance(owner, types.ModuleType):
        module = owner.__name__
    if module is None:
        objclass = getattr(function, "__objclass__", None)
        module = getattr(objclass, "__module__", None)
    return module.partition(".")[0] if isinstance(module, str) else None


@functools.cache
def _library(filename):
    """'torch' for a file of an installed package (the folder under site-packages), else None."""
    parts = Path(filename).parts
    for i, part in enumerate(parts[:-1]):
        if part in ("site-packages", "dist-packages"):
            return parts[i + 1]
    return None


@functools.cache
def _engine_file(filename):
    """'ops/softmax.py' for a file inside the tensorlab package, else None."""
    try:
        return Path(filename).resolve().relative_to(TENSORLAB).as_posix()
    except ValueError:
        return None
