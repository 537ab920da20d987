"""The exercises, one folder each: NAME/stub.py is what the student edits, NAME/__init__.py its EXERCISE.

An exercise's folder holds its cases (the inputs they draw, the reference forward in tensorlab
ops with its intermediates named), the typical slips reproduced as the wrong gradients they give,
and its hints: everything check.py needs to judge and explain a file, as data beside the stub.
ORDER is the order of the course.
"""

from importlib import import_module
from pathlib import Path

ORDER = (
    "value topo unbroadcast function mul matmul exp_log ties sum mean var softmax log_softmax_nll rms_norm "
    "embedding causal_attention adamw"
).split()
FOLDER = Path(__file__).resolve().parent
EXERCISES = [import_module(f"{__name__}.{name}").EXERCISE for name in ORDER]
BY_NAME = {exercise.name: exercise for exercise in EXERCISES}


def stub(name):
    """The path of an exercise's stub."""
    return FOLDER / name / "stub.py"
