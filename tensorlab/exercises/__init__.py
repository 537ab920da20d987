"""Exercises: build the engine, then write backwards, and get told in plain words what is wrong.

    python -m tensorlab.exercises list                    the exercises, in order
    python -m tensorlab.exercises stub NAME [DEST]        copy an exercise's stub out to edit
    python -m tensorlab.exercises check NAME FILE         check your file; exit code 0 pass, 1 fail, 2 usage
    python -m tensorlab.exercises assignment DIR          a students' folder: every stub and a README
                                                          (--wheel: and the engine's wheel to install)
    python -m tensorlab.exercises grade SUBMISSIONS_DIR   every student's files checked into a gradebook
check and grade take --hints none|name|fix (how much a diagnosis says); check --json prints one JSON object.

Layout:
    catalog.py      the exercises: title, cases (class, settings, inputs, reference forward, stages graph)
    check.py        a gradient exercise: the student's forward and backward on fresh inputs, against the
                    analytic gradient at 1e-12, then explain
    stages.py       each exercise's reference forward in tensorlab ops, its intermediates named
    slips.py        the typical mistakes of each exercise, each reproduced and named in the student's words
    diagnose.py     the general slips: shape, sign, factor, transpose, zeros, swapped, NaN, some elements
    engine_check.py the engine track (value, topo, unbroadcast): probes with known answers
    adamw_check.py  the AdamW exercise: compare with tensorlab.optim.AdamW and name the slip
    student.py      the student's code in a process of its own: requests, the time limit, Ctrl-C; the line
                    that raised
    child.py        that process: runs the student's code, sends back plain data (never a verdict)
    watch.py        in that process: engine calls refused, the backward's locals kept
    assignment.py   writing the students' folder, and building the engine's wheel for it
    report.py       what a check says at a hint level, and as JSON
    grade.py        checking a file; grading a folder of submissions into a gradebook, tampering detected
    stubs/          what students edit
The reference solutions are in the repository's teachers/solutions/, outside this package:
nothing here needs them, and they are never installed.

See docs/exercises.md.
"""

from tensorlab.exercises.catalog import BY_NAME, EXERCISES

__all__ = ["EXERCISES", "BY_NAME"]
