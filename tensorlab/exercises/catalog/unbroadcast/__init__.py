"""unbroadcast, engine 3/4: undo broadcasting, summing over the broadcast axes.

Probed on pairs of shapes against NumPy's own sums, the typical mistakes named: which axes were
summed (the leading ones only, the size-1 ones only, all, the wrong ones), size-1 axes dropped,
a mean where a sum belongs.
"""

from itertools import combinations, product

import numpy as np

from tensorlab.exercises.check import Exercise, Probe
from tensorlab.exercises.student import StudentError
from tensorlab.exercises.watch import engine_use_line
from tensorlab.ops.broadcast import broadcast_axes
from tensorlab.ops.broadcast import unbroadcast as engine_unbroadcast

SHAPES = [
    ((2, 3), (3,)),
    ((2, 3), (1, 3)),
    ((2, 3), (2, 1)),
    ((4, 2, 3), (2, 1)),
    ((2, 3), (2, 3)),
    ((3,), ()),
    ((5, 1, 3), (1, 1, 3)),
    ((2, 3, 4), (3, 1)),
    ((1, 4, 3), (1, 3)),  # grad's own size-1 axis in front: the stretched one is at leading + i, not i
]


def every_small_pair(most=3, sizes=(0, 1, 2, 3)):
    """Every (grad's shape, shape) that broadcasting relates, grad having up to `most` axes of `sizes` elements:
    each of its axes added in front, kept, or (where it is not 1) stretched from 1, to 0 elements too (a size test
    `> 1` for `!= 1` shows only there)."""
    pairs = []
    for ndim in range(most + 1):
        for grad_shape in product(sizes, repeat=ndim):
            for kept in range(ndim + 1):
                for ones in product((False, True), repeat=kept):
                    shape = tuple(1 if one else n for one, n in zip(ones, grad_shape[ndim - kept :]))
                    pairs.append((grad_shape, shape))
    return list(dict.fromkeys(pairs))


SMALL_PAIRS = every_small_pair()


def _unbroadcast_probe(grad_shape, shape):
    def probe(student, results, rng):
        grad = rng.standard_normal(grad_shape)
        try:
            answer = student.call("function", name="unbroadcast", args=(grad, shape))
        except StudentError as error:  # a reshape that cannot fit: the sums left another number of elements (a fact:
            # the search still looks for the edit that fixes it)
            if "cannot reshape" not in error.lines[0]:
                raise
            raise StudentError(
                *error.lines,
                f"The axes you summed are not those broadcasting added or stretched, "
                f"{broadcast_axes(grad_shape, shape)} here: summed over those, grad {grad_shape} has as many elements "
                f"as {tuple(shape)}. Broadcasting lines the shapes up from the right: it adds the leading "
                f"grad.ndim - len(shape) axes and stretches those where `shape` has 1.",
            ) from None
        used = engine_use_line("unbroadcast", answer["engine_calls"])
        if used:
            return [used]
        got = answer["result"]
        if not isinstance(got, (np.ndarray, list, tuple, float, int)):
            return [f"unbroadcast returned a {type(got).__name__}; return a NumPy array of shape {tuple(shape)}."]
        expected = engine_unbroadcast(grad, shape)
        got_shape = np.shape(got)
        if got_shape == tuple(shape) and np.allclose(got, expected, rtol=1e-12, atol=1e-12):
            return []
        leading, right_axes = len(grad_shape) - len(shape), broadcast_axes(grad_shape, shape)
        head = (
            f"unbroadcast(grad of shape {grad_shape}, {shape}) returned shape {got_shape}"
            + ("" if got_shape != tuple(shape) else " with the wrong values")
            + f"; the right answer sums over axes {right_axes} and has shape {tuple(shape)}."
        )
        return [head] + _unbroadcast_diagnosis(grad, shape, got, right_axes, leading)

    return probe


def _unbroadcast_diagnosis(grad, shape, got, right_axes, leading):
    got = np.asarray(got)
    for axes in _axis_sets(grad.ndim):
        for keepdims in (True, False):
            candidate = grad.sum(axis=axes, keepdims=keepdims)
            mean = grad.mean(axis=axes, keepdims=keepdims) if axes else candidate
            for reshaped in (candidate, _fit(candidate, shape)):
                if reshaped is not None and reshaped.shape == got.shape and np.allclose(reshaped, got):
                    return [_axes_words(axes, right_axes, leading, grad.ndim, shape, got.shape)]
            if (
                axes
                and _fit(mean, shape) is not None
                and _fit(mean, shape).shape == got.shape
                and np.allclose(_fit(mean, shape), got)
            ):
                return ["You took a mean where a sum belongs: every copy of an element adds its whole gradient."]
    return []


def _axes_words(axes, right_axes, leading, ndim, shape, got_shape):
    added, stretched = set(range(leading)), set(right_axes) - set(range(leading))
    if set(axes) == set(right_axes) and got_shape != tuple(shape):
        return (
            f"You summed over the right axes {axes}, but the result must have shape {tuple(shape)}: keep the "
            f"stretched size-1 axes (keepdims=True) and drop the added ones (reshape to `shape`)."
        )
    if set(axes) == added and stretched:
        return (
            f"Summing over the wrong axes: you summed only the axes added in front {tuple(sorted(added))}; the "
            f"axes where `shape` has size 1 and grad does not, {tuple(sorted(stretched))}, were stretched by "
            f"broadcasting too and must be summed (keeping size 1)."
        )
    if set(axes) == stretched and added:
        return (
            f"Summing over the wrong axes: you summed only the stretched size-1 axes {tuple(sorted(stretched))}; "
            f"the axes added in front, {tuple(sorted(added))}, must be summed away as well."
        )
    if len(axes) == ndim > 1:
        return "You summed over every axis: only the broadcast ones are summed; the others keep their length."
    return (
        f"Summing over the wrong axes: you summed over axes {axes}, but broadcasting added or stretched axes "
        f"{right_axes}. Line up the shapes from the right: leading extra axes, then axes where `shape` has 1."
    )


def _axis_sets(ndim):
    return [axes for r in range(ndim + 1) for axes in combinations(range(ndim), r)]


def _fit(array, shape):
    try:
        return array.reshape(shape)
    except ValueError:
        return None


def _every_small_pair(student, results, rng):
    for grad_shape, shape in SMALL_PAIRS:  # the first that fails speaks for them all
        lines = _unbroadcast_probe(grad_shape, shape)(student, results, rng)
        if lines:
            return lines
    return []


EXERCISE = Exercise(
    "unbroadcast",
    "engine 3/4: undo broadcasting, summing over the broadcast axes",
    [Probe(f"grad {g} -> shape {s}", "unbroadcast", "function", _unbroadcast_probe(g, s)) for g, s in SHAPES]
    + [
        Probe(
            f"every pair of shapes up to 3 axes long ({len(SMALL_PAIRS)})", "unbroadcast", "function", _every_small_pair
        )
    ],
    against="your unbroadcast vs NumPy's sums over the broadcast axes",
    agrees="your unbroadcast gives the right sums",
    unit="probe",
)
