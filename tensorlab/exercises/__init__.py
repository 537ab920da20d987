"""Gradient-check exercises: write a backward, and get told in plain words what is wrong with it.

    python -m tensorlab.exercises list                    the exercises
    python -m tensorlab.exercises stub NAME [DEST]        copy an exercise's stub out to edit
    python -m tensorlab.exercises check NAME FILE         check your file; exit code 0 pass, 1 fail, 2 usage

Layout:
    catalog.py      the exercises: title, cases (class, settings, inputs), reference forward
    check.py        a gradient exercise: run the student's forward and backward, then gradcheck
    diagnose.py     a wrong gradient -> hints (sign, factor, transpose, zeros, broadcast sum, ...)
    adamw_check.py  the AdamW exercise: compare with tensorlab.optim.AdamW and name the slip
    student.py      loading the student's file; pointing at the line that raised
    stubs/          what students edit (forward given, backward to write)
    solutions/      reference solutions; nothing imports them, so a teacher can delete the folder

See docs/exercises.md.
"""
from tensorlab.exercises.catalog import BY_NAME, EXERCISES

__all__ = ["EXERCISES", "BY_NAME"]
