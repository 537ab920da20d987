"""var: y = x.var(axis, keepdims, correction): two paths to each x, and one of them cancels."""

import math

import numpy as np

import tensorlab.functional as F
from tensorlab.exercises.catalog.sum import REDUCTION_CASES, REDUCTION_SHAPE_HINT, reduction_error_hint
from tensorlab.exercises.check import Exercise
from tensorlab.exercises.gradient import Case
from tensorlab.exercises.inputs import inputs, normal


def graph(x, axis=None, keepdims=False, correction=1):
    return F.var(x, axis=axis, keepdims=keepdims, correction=correction), {}


def _var_hint(inputs, name, report, context):
    """A constant factor off in var's gradient that is n / (n - correction): the divisor is n, not n - correction."""
    a, right = report.analytic, report.numeric
    norm = float((right * right).sum())
    if norm == 0 or not np.all(np.isfinite(a)):
        return []
    c = float((a * right).sum()) / norm
    n = round(math.prod(context.shapes["x"]) / math.prod(context.output_shape))
    dof = n - context.settings.get("correction", 1)
    if dof == n or not context.close(a, c * right) or not math.isclose(c * n, dof, rel_tol=1e-9):
        return []
    return [
        f"Your gradient divides by n = {n}, the number of elements reduced; var divides by n - correction = {dof}, "
        f"in the backward as in the forward."
    ]


COMMON = dict(graph=graph, shape_hint=REDUCTION_SHAPE_HINT, hint=_var_hint, error_hint=reduction_error_hint)
EXERCISE = Exercise(
    "var",
    "y = x.var(axis, keepdims, correction): two paths to each x, and one of them cancels",
    [
        Case("Var", ("x",), inputs(normal(3, 5, 6)), settings=settings, **COMMON)
        for settings in [*REDUCTION_CASES, dict(axis=(0, 2), correction=0), dict(axis=-1, correction=2)]
    ]
    + [Case("Var", ("x",), inputs(normal(3, 1, 5)), settings=dict(axis=(1, 2)), **COMMON)],
)
