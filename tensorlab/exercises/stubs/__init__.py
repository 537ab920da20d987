"""The files students edit: one per exercise, each with the forward written and the backward left to do.

They are plain Python files, loaded by path by `python -m tensorlab.exercises check`;
`python -m tensorlab.exercises stub NAME` copies one out for a student to edit.
"""
