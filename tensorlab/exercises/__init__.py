"""Exercises: build the engine, then write backwards, and get told in plain words what is wrong.

    python -m tensorlab.exercises list                    the exercises, in order
    python -m tensorlab.exercises stub NAME [DEST]        copy an exercise's stub out to edit
    python -m tensorlab.exercises check NAME FILE         check your file; exit code 0 pass, 1 fail, 2 usage
check takes --hints none|name|fix (how much a diagnosis says); check --json prints one JSON object.
The teachers' tools (a course folder, its wheel, a Gradescope zip, grading a class) are in the
checkout's teachers/classroom.py: `python -m teachers.classroom assignment | grade`, never installed.

Layout:
    catalog/NAME/   one folder per exercise: stub.py (what the student edits) and __init__.py (its cases,
                    their reference graph in tensorlab ops, its slips and hints, as data)
    check.py        the one checker: every case of an exercise on the student's file, the verdict here
    gradient.py     a gradient case: the student's forward and backward on fresh inputs, against the
                    analytic gradient at 1e-12, then explained
    inputs.py       how gradient cases draw their inputs
    stages.py       the reference forward and the gradient of every named stage, from the engine's autograd
    slips.py        what a slip is: a mistake reproduced as the gradient it gives, named in the student's words
    edits.py        every one-change edit of a file (the mutation tool's wrong answers, the search's repairs)
    search.py       a slip nobody wrote down: the one edit of the student's file that makes it pass
    diagnose.py     the general slips: shape, sign, factor, transpose, zeros, swapped, NaN, some elements
    student.py      the student's code in a process of its own: requests, the time limit, Ctrl-C; the line
                    that raised
    child.py        that process: runs the student's code, sends back plain data (never a verdict)
    watch.py        in that process: engine calls refused, the backward's locals kept
    report.py       what a check says at a hint level, and as JSON
    runner.py       checking one file: the checker, its report, its exit code
The reference solutions are in the repository's teachers/solutions/, outside this package:
nothing here needs them, and they are never installed.

See docs/exercises.md.
"""

from tensorlab.exercises.catalog import BY_NAME, EXERCISES

__all__ = ["EXERCISES", "BY_NAME"]
