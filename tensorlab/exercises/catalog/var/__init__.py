"""var: y = x.var(axis, keepdims, correction): two paths to each x, and one of them cancels."""

import math

import numpy as np

import tensorlab.functional as F
from tensorlab.exercises.catalog.sum import (
    DRAWN_X,
    REDUCTION_CASES,
    REDUCTION_SHAPE_HINT,
    drawn_axis,
    reduction_error_hint,
)
from tensorlab.exercises.check import Exercise
from tensorlab.exercises.gradient import Case
from tensorlab.exercises.inputs import inputs, normal


def graph(x, axis=None, keepdims=False, correction=1):
    return F.var(x, axis=axis, keepdims=keepdims, correction=correction), {}


COMMON = dict(graph=graph, shape_hint=REDUCTION_SHAPE_HINT, error_hint=reduction_error_hint)
EXERCISE = Exercise(
    "var",
    "y = x.var(axis, keepdims, correction): two paths to each x, and one of them cancels",
    [
        Case("Var", ("x",), inputs(normal(3, 5, 6)), settings=settings, **COMMON)
        for settings in [*REDUCTION_CASES, dict(axis=(0, 2), correction=0), dict(axis=-1, correction=2)]
    ]
    + [Case("Var", ("x",), inputs(normal(3, 1, 5)), settings=dict(axis=(1, 2)), **COMMON)]
    + [Case("Var", ("x",), DRAWN_X, draw=lambda rng, inputs: _with_correction(rng, inputs), **COMMON)],
)


def _with_correction(rng, inputs):
    """A drawn axis, and a correction of 0 or 1 (1 only where more than one element is reduced)."""
    settings = drawn_axis(rng, inputs)
    x, axis = inputs[0], settings["axis"]
    n = x.size if axis is None else math.prod(x.shape[a] for a in np.atleast_1d(axis))
    return settings | dict(correction=int(rng.integers(2)) if n > 1 else 0)
