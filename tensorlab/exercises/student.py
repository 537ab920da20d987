"""Loading a student's file, and telling them in plain words where their code went wrong."""

import traceback
import types
from pathlib import Path

from tensorlab.exercises import watch


class StudentError(Exception):
    """The student's file cannot be checked; `lines` say why and what to do."""

    def __init__(self, *lines):
        super().__init__("\n".join(lines))
        self.lines = list(lines)


class NotWritten(StudentError):
    """A function of the student's still raises NotImplementedError: the exercise is not done yet."""


def load(path, time_limit=None):
    """Run the student's file as a fresh module and return it (its top level within `time_limit` seconds).

    The source is compiled and executed directly rather than imported, so no stale bytecode
    from an edit made within the same second can run, and no __pycache__ appears beside it.
    What it compiles is registered with the watch as the student's own code (watch.py).
    """
    path = Path(path)
    try:
        source = path.read_text()
    except UnicodeDecodeError:
        raise StudentError(f"{path} is not a text file of Python code (it is not valid UTF-8).") from None
    module = types.ModuleType(f"exercise_{path.stem}")
    module.__file__ = str(path)
    try:
        code = compile(source, str(path), "exec")
    except SyntaxError as error:
        lines = [f"{path.name}, line {error.lineno}: Python cannot read this file: {error.msg}."]
        if error.text:
            text = error.text.rstrip()
            indent = len(text) - len(text.lstrip())
            lines.append(f"    {text.strip()}")
            if error.offset:
                lines.append("    " + " " * max(error.offset - 1 - indent, 0) + "^")
        lines.append("Fix the syntax there (a missing bracket, colon or indentation is typical) and check again.")
        raise StudentError(*lines) from None
    watch.register_student_code(code)
    try:
        with watch.time_limit(time_limit):
            exec(code, module.__dict__)
    except watch.TimeLimit:
        raise StudentError(
            f"Running {path.name} (before any check) did not finish within {time_limit:g} s: "
            f"code at its top level never ends. Put your code inside the functions."
        ) from None
    except Exception as error:  # noqa: BLE001 (anything the student's top level raises is reported)
        raise StudentError(*describe_exception(error, path, f"Running {path.name} (before any check)")) from None
    return module


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
    path = Path(path).resolve()
    frames = [f for f in traceback.extract_tb(error.__traceback__) if _same_file(f.filename, path)]
    if frames:
        frame = frames[-1]
        lines.append(f"  at line {frame.lineno} of {path.name}, in {frame.name}:")
        if frame.line:
            lines.append(f"      {frame.line.strip()}")
    return lines


def raising_function(error, path):
    """'Value.__add__': the function of the student's file that raised `error`, or None."""
    path = Path(path).resolve()
    tb, found = error.__traceback__, None
    while tb is not None:
        if _same_file(tb.tb_frame.f_code.co_filename, path):
            found = tb.tb_frame.f_code.co_qualname
        tb = tb.tb_next
    return found


def _same_file(filename, path):
    try:
        return Path(filename).resolve() == path
    except OSError:
        return False
