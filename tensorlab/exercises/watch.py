"""The student's code under watch, in their own process (child.py): what it called, its locals.

`watch(code)`: while the student's function runs, a profile hook records every call into
tensorlab itself (a backward must be the student's own NumPy, not the engine's ops, kernels or
autograd; switching the hook off counts too) and the local variables of the student's frame
when it returns, so the checker can compare each intermediate step (gp, gs, ...) with the
reference's. Every file of the package counts as the engine except those that hold no answer
(NOT_ENGINE: the exercises themselves, the Tensor class and the backend), so a folder added to
the engine later is watched without a word here. No other library's autograd can be imported in
the student's process (only NumPy and tensorlab are there).

It runs in the student's process, so code set on fooling it can switch it off unseen: it names
the shortcut an honest student takes; the verdict on the numbers is the parent's (student.py).
The engine's code copied into the student's file (typed out, or its source compiled again at run
time) is the student's code to this watch: reading the engine is an honour-system matter
(docs/exercises.md).
"""

import contextlib
import functools
import sys
from pathlib import Path

import numpy as np

# the tensorlab package folder, from where this file's code was compiled: in a check's process the package is a zip
# of code compiled from the folder's files (student.engine_zip), each named for its file there
TENSORLAB = Path((lambda: None).__code__.co_filename).resolve().parent.parent
# what holds no answer: making a Tensor, or the Function.backward a stub inherits, is left to the other checks
# (roundoff.py: the wrapper TENSORLAB_ROUNDOFF_CHAOS puts around an op; the op it calls is the engine's answer)
NOT_ENGINE = ("exercises/", "__init__.py", "backend.py", "random.py", "threads.py", "memory.py", "roundoff.py")
AUTOGRAD = {"tensor.py": ("Tensor.backward", "Function.__call__", "topological_order")}  # of tensor.py, these count


def _is_engine(where, name):
    if where in AUTOGRAD:
        return name in AUTOGRAD[where]
    return not where.startswith(NOT_ENGINE)


class Watch:
    """What one call of the student's function did: tensorlab functions it called, its locals at return.

    Also how often it called each function of the student's own file (`calls`): a backward that
    runs its op's forward again and again is finite differences.
    """

    def __init__(self, code):
        self.code = code
        self.engine_calls = []  # 'tensorlab/ops/softmax.py: Softmax.backward', in call order
        self.student_calls = {}  # code object outside tensorlab -> how often it was called
        self.locals = {}  # name -> array: the student's frame when it returned

    def calls(self, function):
        """How often `function` (of the student's file) ran inside the watched call."""
        return self.student_calls.get(getattr(function, "__code__", None), 0)

    def profile(self, frame, event, arg):
        if event == "call":
            code = frame.f_code  # the student's own file is theirs, wherever it lies (a stub edited in the package)
            where = None if code.co_filename == self.code.co_filename else _engine_file(code.co_filename)
            name = code.co_qualname
            if where and _is_engine(where, name):
                self.engine_calls.append(f"tensorlab/{where}: {name}")
            elif where is None:
                self.student_calls[code] = self.student_calls.get(code, 0) + 1
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


def engine_use_line(name, calls):
    """The one line saying that a backward used tensorlab itself (or another autograd), or None."""
    if not calls:
        return None
    return (
        f"{name} calls tensorlab itself ({calls[0]}): that is the engine's answer, not yours. Write the "
        f"gradient with NumPy only, on the arrays backward gets (gy and what forward saved)."
    )


@functools.cache
def _engine_file(filename):
    """'ops/softmax.py' for a file inside the tensorlab package, else None."""
    try:
        return Path(filename).resolve().relative_to(TENSORLAB).as_posix()
    except ValueError:
        return None
