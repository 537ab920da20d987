"""mean: y = x.mean(axis, keepdims): like sum, with one factor."""

import math

import numpy as np

import tensorlab.functional as F
from tensorlab.exercises.catalog.sum import reduction


def graph(x, axis=None, keepdims=False):
    return F.mean(x, axis=axis, keepdims=keepdims), {}


def _mean_hint(inputs, name, report, context):
    """A constant factor off in mean's gradient: name the n the student divided by, against the n averaged."""
    a, right = report.analytic, report.numeric
    norm = float((right * right).sum())
    if norm == 0 or not np.all(np.isfinite(a)):
        return []
    c = float((a * right).sum()) / norm
    if abs(c) < 1e-12 or not context.close(a, c * right) or abs(c - 1) < 1e-6:
        return []
    n = round(math.prod(context.shapes["x"]) / math.prod(context.output_shape))
    if math.isclose(c, n * n, rel_tol=1e-6):
        return [f"You multiplied by n where the mean divides by it: each of the {n} averaged elements gets gy / n."]
    used = n / c
    if abs(used - round(used)) > 1e-6 * used:
        return []
    return [
        f"Your gradient divides by {round(used)}, but this mean averaged {n} elements (the lengths of the averaged "
        f"axes multiplied: n = the product of x.shape[a] for a in self.axes)."
    ]


EXERCISE = reduction("mean", "Mean", graph, "like sum, with one factor", hint=_mean_hint)
