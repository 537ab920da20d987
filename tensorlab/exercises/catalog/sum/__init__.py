"""sum: y = x.sum(axis, keepdims): copy the gradient back along the summed axes.

The reductions' shared cases (every axis/keepdims setting on a (3, 4, 5) input, plus a size-1 axis) and
hints live here; mean and var use them.
"""

import ast
import re
from itertools import permutations

import tensorlab.functional as F
from tensorlab.exercises.check import Exercise
from tensorlab.exercises.gradient import Case
from tensorlab.exercises.inputs import drawn_shape, inputs, normal


def graph(x, axis=None, keepdims=False):
    return F.sum(x, axis=axis, keepdims=keepdims), {}


REDUCTION_CASES = [
    dict(axis=1),
    dict(axis=(0, 2)),
    dict(axis=None),
    dict(axis=-1, keepdims=True),
    dict(axis=1, keepdims=True),
]
REDUCTION_SHAPE_HINT = (
    "The gradient of a reduction has the input's shape: put the reduced axes back as "
    "size 1 with np.expand_dims(gy, self.axes) (unless keepdims kept them), then copy "
    "along them with np.broadcast_to(..., self.x_shape).copy()."
)


def reduction_error_hint(lines, case):
    """A reduction's backward that raised: gy without its reduced axes (not said of a line that reads only what
    forward saved: gy is not in it), or self.axis where self.axes belongs."""
    code = lines[2].strip() if len(lines) > 2 and lines[1].lstrip().startswith("at line ") else ""
    misplaced = _ones_misplaced(lines[0]) if "could not be broadcast" in lines[0] else None
    if misplaced:
        return [
            f"gy has its reduced axes back as size 1, but not where they were reduced: {misplaced}. Adding them at "
            f"the end (a reshape, [..., None]) puts them there; np.expand_dims(gy, self.axes) puts each where it was."
        ]
    if "could not be broadcast" in lines[0] and not case.settings.get("keepdims") and _may_read_gy(code):
        return [
            "gy lost the reduced axes (keepdims=False), so it no longer lines up with x: put them back as size 1 "
            "first, np.expand_dims(gy, self.axes), then copy along them. If your code does, look at the condition "
            "it does it under: it must run when keepdims is False."
        ]
    if "NoneType" in lines[0] and case.settings.get("axis", 0) is None:
        return [
            "self.axis is None here (every axis reduced), which np.expand_dims cannot take: use self.axes, the "
            "axes forward worked out (all of them for axis=None)."
        ]
    return []


def _ones_misplaced(error):
    """'(3, 6, 1) against (3, 5, 6)' when NumPy's broadcast error names two shapes with as many axes, one of them
    the other's lengths in order with size-1 axes put in elsewhere; else None."""
    shapes = [tuple(int(n) for n in s.split(",") if n) for s in re.findall(r"\(([\d,]+)\)", error)]
    for a, b in permutations(shapes, 2):
        kept, lengths = [n for n in a if n != 1], iter(b)
        if len(a) == len(b) and len(kept) < len(a) and all(n in lengths for n in kept):  # kept: in order, in b
            return f"{a} against {b}"
    return None


def _may_read_gy(code):
    """Whether the line of code may read gy: it reads a name other than self and NumPy's (or cannot be parsed)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return True
    read = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    return bool(read - {"self", "np", "math"}) or not code


def reduction(name, op, graph, lesson, hint=None):
    """The exercise for a reduction: every axis/keepdims setting on a (3, 4, 5) input, plus a size-1 axis."""
    common = dict(graph=graph, shape_hint=REDUCTION_SHAPE_HINT, hint=hint, error_hint=reduction_error_hint)
    cases = [Case(op, ("x",), inputs(normal(3, 4, 5)), settings=settings, **common) for settings in REDUCTION_CASES]
    cases.append(Case(op, ("x",), inputs(normal(3, 1, 5)), settings=dict(axis=1), **common))
    cases.append(Case(op, ("x",), DRAWN_X, draw=drawn_axis, **common))
    return Exercise(name, f"y = x.{name}(axis, keepdims): {lesson}", cases)


DRAWN_X = inputs(lambda rng: rng.standard_normal(drawn_shape(rng)))  # 1 to 4 axes, 0 to 5 long, on each run


def drawn_axis(rng, inputs):
    """{axis}: None, one axis or several of the input's, each negative half the time (keepdims is the chosen cases':
    a drawn True would hide which cases fail exactly with it)."""
    ndim, kind = inputs[0].ndim, int(rng.integers(3))
    if kind == 0:
        return dict(axis=None)
    axes = [int(a) - ndim * int(rng.integers(2)) for a in rng.permutation(ndim)[: 1 if kind == 1 else None]]
    return dict(axis=axes[0] if kind == 1 else tuple(axes[: int(rng.integers(1, ndim + 1))]))


EXERCISE = reduction("sum", "Sum", graph, "copy the gradient back along the summed axes")
