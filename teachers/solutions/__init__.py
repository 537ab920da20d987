"""Reference solutions, one per exercise, for teachers.

They live outside the tensorlab package, so `pip install` never copies them anywhere and
`python -m teachers.classroom assignment DIR` writes a students' folder without them
(see docs/exercises.md). Check one as a student would:

    python -m tensorlab.exercises check softmax teachers/solutions/softmax.py
"""
