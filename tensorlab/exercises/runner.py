"""Checking one file: the student's code in a process of its own (student.Student), the verdict here.

`check_file` runs the checker (check.py) on the exercise's cases and says whether the file passed;
`run` does the same into a report.Report and returns the exit code of
`check`, for the command line, the teachers' `grade` and Gradescope's autograder alike: 0 passed, 1
failed, 130 Ctrl-C, NOT_CHECKED when the checker itself could not run.
"""

import contextlib
import stat
import traceback
import warnings
from pathlib import Path

import numpy as np

from tensorlab.exercises import check, search
from tensorlab.exercises.report import Report
from tensorlab.exercises.student import Stopped, Student, StudentError

NOT_CHECKED = 3  # the exit code when the checker could not run (a full disk, say): the file has no verdict


def run(exercise, path, time_limit, seed, report, source=None, echo=None):
    """Check the file at `path` (its text or bytes `source`, default: read it now) into `report`; the exit code.

    The student's code runs in a process of its own (student.Student); `echo` gets what it prints.
    """
    report(f"Exercise {exercise.name!r}: {exercise.title}")
    try:
        passed = check_file(exercise, path, report, time_limit, seed, source, echo)
    except Stopped as stop:
        report.stopped(stop.line)
        return stop.code
    except KeyboardInterrupt:
        report("Interrupted (Ctrl-C) before any case ran.")
        return 130
    except StudentError as error:
        report.cannot_check(error.lines)
        return 1
    except Exception as error:  # noqa: BLE001 (the checker's own fault or the machine's: no verdict, still one record)
        where = traceback.extract_tb(error.__traceback__)[-1]
        why = (str(error).splitlines() or [""])[0]
        report.cannot_check(
            [
                f"The checker itself failed ({type(error).__name__}: {why[:200]}{'...' if len(why) > 200 else ''}, at "
                f"line {where.lineno} of {Path(where.filename).name}): not a fault of your file. Tell your teacher."
            ],
            "NOT CHECKED: the checker could not run, so this says nothing about your file.",
        )
        return NOT_CHECKED
    return 0 if passed else 1


@contextlib.contextmanager
def quiet_numpy():
    """No NumPy warning (a mean of an empty slice, a division by zero) printed amid the cases: the verdicts are on
    the numbers, inf and NaN included. child.py does the same on the student's side."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


@quiet_numpy()
def check_file(exercise, path, out=print, time_limit=None, seed=None, source=None, echo=None):
    """True when the file passes every case; its report line by line to `out`.

    Raises StudentError when the file cannot be checked, Stopped when a case ran out of time or on Ctrl-C. A file
    that fails with its slip not named (Report.names_the_slip) gets the search for the one edit that makes it pass
    (search.py).
    """
    seed = check.new_seed() if seed is None else seed
    seen = Report(exercise, path, show=None)
    with Student(path, source, echo) as student:
        passed = check.check(
            exercise, student, out=lambda line: (seen(line), out(line)), time_limit=time_limit, seed=seed
        )
    failed = [n for n, case in enumerate(seen.cases, 1) if not case.passed]
    not_written = any("NotImplementedError" in line for case in seen.cases for line in case.lines)
    if failed and not not_written and not seen.names_the_slip():
        try:
            for line in search.found(exercise, path, student.source, seed, first=failed):
                out(line)
        except KeyboardInterrupt:  # the verdict stands (the cases' lines); only the search is cut short
            raise Stopped("(Ctrl-C: the search for the slip was stopped.)", 130) from None
    return passed


def handed_in_file(path):
    """The bytes of a file handed in for grading (grade, Gradescope), or why it is refused: a symbolic link (to a
    solution, a classmate's file, /dev/zero: unzip makes a zip's links), or no regular file (a FIFO would never end
    its read). A student's folder may be a link: that is the teacher's layout, not the student's upload."""
    shown = f"{path.parent.name}/{path.name}"
    if path.is_symlink():
        return f"{shown} is a symbolic link, not a file of the student's own: hand in the file."
    if not stat.S_ISREG(path.stat().st_mode):
        return f"{shown} is not a regular file: hand in the file."
    return path.read_bytes()
