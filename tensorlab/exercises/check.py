"""The one checker: an exercise's cases run on the student's code, each judged here.

An exercise (catalog/NAME/) is a title and a list of cases. A case names what it needs from the
student's file (`target`, a class or a function, of `kind`) and, given the run's random numbers,
makes its header and its run: run(student, results) -> the lines saying what is wrong, [] when
it passes (`results` maps the headers judged so far to whether they passed). A gradient case
(gradient.py) checks a backward against the analytic gradient; a Probe runs a small program whose
right answer is known (the engine track, AdamW). One seed, printed in the first line (`--seed N`
replays it), draws every case's numbers, so answers saved from an earlier run do not fit. A case
has a time limit (student.run_cases).
"""

import copy
import functools
import secrets
from dataclasses import dataclass, field

import numpy as np

from tensorlab.exercises.gradient import RTOL
from tensorlab.exercises.report import KEEPDIMS_NOTE
from tensorlab.exercises.student import NotWritten, StudentError, run_cases


@dataclass
class Exercise:
    """One exercise: its name on the command line, a one-line title, its cases and the words of its verdict."""

    name: str
    title: str
    cases: list
    against: str = f"your backward vs the analytic gradient (float64, to {RTOL:g} relative)"
    agrees: str = "your backward agrees with the analytic gradient"
    unit: str = "case"


@dataclass(eq=False)
class Probe:
    """A case with a fixed title: run(student, results, rng) -> lines."""

    title: str
    target: str
    kind: str
    run: object
    settings: dict = field(default_factory=dict)

    def prepare(self, rng):
        return self.title, lambda student, results: self.run(student, results, copy.deepcopy(rng))  # same numbers


def new_seed():
    """A seed for one check run: six digits, easy to type back after --seed."""
    return secrets.randbelow(1_000_000)


def check(exercise, student, out=print, time_limit=None, seed=None, first=()):
    """Check every case of `exercise` on the student's file (a started student.Student); True when all pass.

    The case numbers in `first` run before the others, each with its own inputs all the same: a quick check
    (search.py) stops at the first case that fails, most likely one that failed before.
    """
    seed = new_seed() if seed is None else seed
    student.load(time_limit)
    for target, kind in dict.fromkeys((case.target, case.kind) for case in exercise.cases):
        student.call("find", name=target, kind=kind)
    total, unit = len(exercise.cases), exercise.unit
    out(
        f"Checking {student.path} against {total} {unit}s drawn with seed {seed} (--seed {seed} draws them again): "
        f"{exercise.against}."
    )
    not_written, results, passed = set(), {}, []

    def run(case, header, work):
        if case.target in not_written:
            return [f"({case.target} is not written yet, see above)"]
        try:
            lines = work(student, results)
        except NotWritten as error:
            not_written.add(case.target)
            lines = error.lines
        except StudentError as error:
            lines = error.lines
        results[header] = not lines
        if not lines:
            passed.append(case)
        return lines

    runs = []
    for number, case in enumerate(exercise.cases, 1):
        header, work = prepared(case, seed, number)
        runs.append((f"{unit} {number}/{total}  {header}", lambda c=case, h=header, w=work: run(c, h, w)))
    runs = [runs[n - 1] for n in first] + [r for n, r in enumerate(runs, 1) if n not in first]
    failed = run_cases(runs, time_limit, out, student)
    if failed and not not_written and _fails_only_with_keepdims(exercise.cases, passed):
        out(KEEPDIMS_NOTE)
    if failed:
        out(
            f"FAILED: {failed} of {total} {unit}s. Start with the first failed {unit} above, and check again after "
            f"each fix."
        )
    else:
        out(f"PASSED: {exercise.agrees} in all {total} {unit}s.")
    return not failed


@functools.lru_cache(maxsize=512)
def prepared(case, seed, number):
    """(header, work) of case `number` on the numbers of run `seed`, made once: a search (search.py) checks hundreds
    of edits of one file on the same two seeds, and a case's inputs and reference gradient cost more than the
    student's code. `work` can run any number of times, on the same numbers each time."""
    return case.prepare(np.random.default_rng([seed, number]))


def _fails_only_with_keepdims(cases, passed):
    """The cases that fail are exactly those with keepdims=True."""
    return bool(passed) and all((case.settings.get("keepdims") is True) == (case not in passed) for case in cases)
