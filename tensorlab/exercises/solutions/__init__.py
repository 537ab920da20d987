"""Reference solutions, one per exercise, for teachers.

Nothing in tensorlab imports this folder: delete it from the copy you hand to students
and every exercise still works (see docs/exercises.md).
"""
