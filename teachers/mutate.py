"""Every mutant of every solution caught: wrong answers derived from teachers/solutions/ mechanically.

    python -m teachers.mutate [NAME ...] [--sample N] [--seed S] [--second N]     (from the checkout's root)

The technique of mutmut and cosmic-ray: each mutant is a solution with one change
(tensorlab/exercises/edits.py, the edits the checker's own search undoes) in the code a student
writes (a backward and its helpers; the whole of value, topo, unbroadcast, function and
adamw_step): an operator swapped, a sign or a term dropped, `=` for `+=`, a constant changed, a
reduction dropped or swapped, keepdims or the axis dropped or changed, a transpose removed or
added, a tie flipped, `&` for `|`, a math function dropped, a saved value or a variable swapped for
another, the gradients returned in another order, a condition negated, a statement dropped.

Each mutant runs where a student's code runs (tensorlab.exercises.student) on the exercise's
inputs and on edge inputs (fresh seeds, zeros, ties, inputs near 1,000: logits, scores), and its
answers are compared with the solution's. A mutant whose answers differ anywhere must be
rejected by the checker; one that gives the solution's answers everywhere is equivalent (listed,
with the change that left the answers alone). For each exercise it prints the mutants, how
many differ, how many the checker rejects, how many of those its diagnosis names (a slip named
in a failed case while none says only facts, such as which elements or which shape are wrong; or
the one edit the search found: Report.names_the_slip), the equivalent ones and the unnamed ones.
Exit code 1 when a mutant that differs is accepted. --sample N checks N mutants per exercise (the test
suite's run); without it, every mutant (minutes per exercise). --second N checks instead N mutants of two
changes per exercise (a mutant of a mutant, drawn from --seed): each that differs must be rejected too; the
search undoes one change, so their naming is no goal.
"""

import argparse
import ast
import random
import re
import sys
from pathlib import Path

import numpy as np

from tensorlab.exercises import check, stages
from tensorlab.exercises.catalog import BY_NAME, EXERCISES, adamw, topo, unbroadcast, value
from tensorlab.exercises.edits import distinct, edits
from tensorlab.exercises.gradient import Case
from tensorlab.exercises.report import Report
from tensorlab.exercises.runner import check_file
from tensorlab.exercises.search import students_part
from tensorlab.exercises.student import Stopped, Student, StudentError

SOLUTIONS = Path(__file__).resolve().parent / "solutions"
UNDOING = re.compile(
    r"added (to|around)|a term added|minus sign added|\+= for =|-> np.add.at|added$|keepdims -> False|in place"
    r"|\.T -> |max subtracted|saved value put in|if -> while"
)
TIME_LIMIT = 10.0
RAISED = "raised: "  # begins the answer to a request the student's code raised on
RTOL = 1e-9  # answers closer than this (relative to the largest) are the same up to rounding


# ----- the mutants ---------------------------------------------------------------------------------------------
def mutants(name):
    """[(what changed, source)] for the solution of exercise `name`: one change each (edits.py), no two alike.

    The edits that only undo a slip (a sign, a function or a reduction added to a term) are left out: a
    student leaves things out more than they put them in, and the checker's search tries them all anyway.
    """
    return _one_change(name, (SOLUTIONS / f"{name}.py").read_text())


def _one_change(name, source):
    found = [edit for edit in edits(source, students_part(BY_NAME[name])) if not UNDOING.search(edit[1])]
    return [(f"line {line}: {what}", text) for line, what, text in distinct(found)]


def second_order(name, count, seed):
    """`count` mutants of two changes each, drawn from `seed`: a mutant of a mutant (a slip on a slip)."""
    rng, firsts, found = random.Random(f"{seed}{name}"), mutants(name), []
    solution = ast.dump(ast.parse((SOLUTIONS / f"{name}.py").read_text()))
    while len(found) < count:
        first, source = rng.choice(firsts)
        seconds = [(w, text) for w, text in _one_change(name, source) if ast.dump(ast.parse(text)) != solution]
        if seconds:
            second, text = rng.choice(seconds)
            found.append((f"{first}, then {second}", text))
    return found


# ----- the answers compared --------------------------------------------------------------------------------------
def requests(exercise, seed):
    """[(handler, arguments)]: what each mutant and the solution answer, edge inputs included."""
    rng = np.random.default_rng(seed)
    if isinstance(exercise.cases[0], Case):
        found = []
        for case in exercise.cases:
            for edge in (None, None, "zeros", "ties", "near 1000"):
                inputs = [_edge(x, edge) for x in case.make(rng)]
                settings = case.draw(rng, inputs) if case.draw else case.settings
                with np.errstate(all="ignore"):
                    shape = np.shape(stages.forward(case.graph, inputs, settings))
                gy = np.asarray(rng.standard_normal(shape))
                found.append(("op", dict(cls=case.cls, settings=settings, inputs=inputs, gy=gy)))
        return found
    if exercise.name == "value":
        values = [value.probe_values(i, rng) for i in range(len(value.PROBES))]
        return [("value", dict(index=i, values=v, upstream=u)) for i, v in enumerate(values) for u in (None, 1.7)]
    if exercise.name == "topo":
        return [("topo", dict(graphs=make(rng))) for _, make in topo.GRAPHS]
    if exercise.name == "unbroadcast":
        shapes = unbroadcast.SHAPES + unbroadcast.SMALL_PAIRS + unbroadcast.every_small_pair(4, (1, 2))  # 4 axes too
        return [("function", dict(name="unbroadcast", args=(rng.standard_normal(g), s))) for g, s in shapes]
    shape = adamw.SHAPE
    return [
        ("function", dict(name="adamw_step", args=(rng.standard_normal(shape), g, rng.standard_normal(shape) * 0.1,
                                                   rng.random(shape) * 0.1, t), settings=settings))
        for settings in adamw.CASES
        for t in (1, 2, 3)
        for g in (rng.standard_normal(shape), np.zeros(shape))
    ]  # fmt: skip


def _edge(x, edge):
    if x.dtype.kind != "f" or edge is None:
        return x
    if edge == "zeros":
        return np.zeros_like(x)
    if edge == "ties":
        return np.round(x)  # repeated values, and zeros
    return x * 3 + 1000  # logits and scores near 1,000


def answers(student, asked):
    """What the student's process answers to each request: its data, or "raised: " and the first line raised."""
    found = []
    for handler, arguments in asked:
        try:
            answer = student.call(handler, **arguments)
        except (StudentError, Stopped) as error:
            answer = _raised(str(error).splitlines())
        if isinstance(answer, dict):
            answer.pop("locals", None)
            answer.pop("shown", None)
            if "later_error" in answer:
                answer["later_error"] = _raised(answer["later_error"]["error"])
            if handler == "topo":  # an order is right or not: which right order a mutant gives does not matter
                answer = [not topo.judge(o, g) for g, o in zip(arguments["graphs"], answer["orders"])]
        found.append(answer)
    return found


def _raised(lines):
    """What a request answers when the student's code raised: RAISED and the first line saying what."""
    return RAISED + (str(lines[0]) if lines else "")


def same(a, b):
    """The mutant's answer `a` is the solution's `b`, up to rounding."""
    if isinstance(b, np.ndarray) or isinstance(a, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)) or a.shape != b.shape:
            return False
        if a.dtype.kind not in "biuf" or b.dtype.kind not in "biuf":
            return a.dtype == b.dtype and np.array_equal(a, b)
        scale = float(np.abs(np.where(np.isfinite(b), b, 0)).max(initial=0))
        with np.errstate(all="ignore"):
            return bool(np.allclose(a, b, rtol=RTOL, atol=RTOL * scale, equal_nan=True))
    if isinstance(b, dict):
        return isinstance(a, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in b)
    if isinstance(b, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(b, float) and isinstance(a, float):
        return a == b or (np.isnan(a) and np.isnan(b)) or abs(a - b) <= RTOL * max(abs(b), 1.0)
    return type(a) is type(b) and a == b


def solution_answers(name, asked):
    """The solution's answers to `asked`: every one data, for a mutant's answers to be compared with.

    A request the solution cannot answer (a handler the student's process no longer has, arguments it does not
    take) would make every mutant "raise" alike, the same as the solution: each would count as equivalent and none
    as differing. So that is an error of this tool, said in one line.
    """
    with Student(f"{name}.py", (SOLUTIONS / f"{name}.py").read_text()) as student:
        student.load()
        found = answers(student, asked)
    for (handler, _), answer in zip(asked, found):
        raised = answer.get("later_error") if isinstance(answer, dict) else answer
        if isinstance(raised, str) and raised.startswith(RAISED):
            raise RuntimeError(f"{name}: the solution cannot answer a {handler!r} request ({raised})")
    return found


# ----- the run --------------------------------------------------------------------------------------------------
def judge(exercise, source, asked, reference, seed, search=True):
    """(differs, rejected, named) for one mutant's source; without `search`, the verdict alone (check.py)."""
    report = Report(exercise, f"{exercise.name}.py", "fix", show=None)
    try:
        if search:
            passed = check_file(exercise, f"{exercise.name}.py", report, TIME_LIMIT, seed, source)
        else:
            with Student(f"{exercise.name}.py", source) as student:
                passed = check.check(exercise, student, out=report, time_limit=TIME_LIMIT, seed=seed)
    except StudentError as error:
        passed = False
        report.cannot_check(error.lines)
    except Stopped as stop:
        passed = False
        report.stopped(stop.line)
    with Student(f"{exercise.name}.py", source) as student:
        try:
            student.load(TIME_LIMIT)
        except StudentError:
            pass  # every request answers "raised"
        given = answers(student, asked)
    differs = not all(same(a, b) for a, b in zip(given, reference))
    return differs, not passed, report.names_the_slip()


def run(names, sample=None, seed=0, out=print, second=0):
    """Check the mutants of each exercise (with `second`, that many of two changes); {name: counts}, and the lines of
    what slipped through."""
    counts, slipped = {}, []
    for name in names:
        exercise = BY_NAME[name]
        found = second_order(name, second, seed) if second else mutants(name)
        chosen = range(len(found))
        if sample and not second:
            chosen = sorted(random.Random(f"{seed}{name}").sample(chosen, min(sample, len(found))))
        asked = requests(exercise, seed)
        reference = solution_answers(name, asked)
        tally = dict(mutants=len(found), checked=0, differ=0, rejected=0, named=0, equivalent=0)
        equivalent, unnamed = [], []
        for i in chosen:
            what, source = found[i]
            differs, rejected, named = judge(exercise, source, asked, reference, seed + i, search=not second)
            tally["checked"] += 1
            tally["differ"] += differs
            tally["rejected"] += rejected
            tally["named"] += rejected and named
            if not differs:
                tally["equivalent"] += 1
                equivalent.append(f"{what}{' (rejected all the same)' if rejected else ''}")
            elif not rejected:
                slipped.append(f"{name}: {what}")
            elif not named and not second:  # the search undoes one change: naming two is no goal
                unnamed.append(what)
        counts[name] = tally
        out(
            f"{name:<17} {tally['mutants']:>4} mutants, {tally['checked']:>4} checked: {tally['differ']:>4} differ, "
            f"{tally['rejected']:>4} rejected ({tally['named']} named), {tally['equivalent']} equivalent"
        )
        for line in equivalent:
            out(f"    equivalent (the solution's answers on every input tried): {line}")
        for line in unnamed:
            out(f"    rejected, the slip not named: {line}")
    for line in slipped:
        out(f"ACCEPTED, though its answers differ: {line}")
    return counts, slipped


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help="exercises (default: all)")
    parser.add_argument("--sample", type=int, help="check N mutants of each exercise, drawn from --seed")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--second", type=int, default=0, metavar="N", help="instead, N mutants of two changes each")
    args = parser.parse_args(argv)
    _, slipped = run(args.names or [e.name for e in EXERCISES], args.sample, args.seed, second=args.second)
    return 1 if slipped else 0


if __name__ == "__main__":
    sys.exit(main())
