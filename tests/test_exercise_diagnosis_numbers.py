"""The diagnosis of a wrong gradient holds for any numbers: a generator of reference and student gradients.

A check's reference gradient can be as small as 1e-186 (attention's gq where the weights are saturated: the scores
near 1,000 of its third case) or as large as float64 allows, and a student's gradient anything at all. The diagnosis
(tensorlab/exercises/diagnose.py) does arithmetic on both, and an exception there is the checker's own failure: the
file gets no verdict ("NOT CHECKED"). Each draw here makes one to three inputs' reference gradients at a magnitude
drawn log-uniformly from the whole float64 range (with zeros, and sizes down to one element), and a student's
gradient for each that is some typical slip of it (a constant factor, its negative, its transpose, another input's,
zeros, a near miss, a NaN or inf, or unrelated numbers at another magnitude), and explains every wrong input as a
check does. Found this way: `_factor` divided by the sum of squares of a reference whose elements were nonzero but
whose squares underflowed to 0 (ZeroDivisionError, on seed 407035 of tests/test_exercises.py's attention plant).
"""

import math

import numpy as np
import pytest

from tensorlab.exercises import diagnose
from tensorlab.exercises.gradient import MATCH, RTOL
from tensorlab.gradcheck import InputReport

DRAWS = 4000


def _magnitudes(rng, shape):
    """Numbers of either sign within 10^3 of one magnitude drawn log-uniformly from float64's whole range."""
    exponent = rng.uniform(-320, 305) + rng.uniform(-3, 3, shape)
    return rng.choice([-1.0, 1.0], shape) * 10.0 ** np.clip(exponent, -323, 307)


def _reference(rng):
    shape = tuple(int(n) for n in rng.integers(1, 5, rng.integers(1, 4)))
    return np.where(rng.random(shape) < 0.3, 0.0, _magnitudes(rng, shape))


def _students(rng, n, others):
    """A wrong gradient for reference n: a slip a check meets, drawn."""
    kind = rng.integers(9)
    if kind == 0:
        return n * rng.choice([2.0, 0.5, 3.0, 1 / 3, 4.0, math.sqrt(3), rng.uniform(-10, 10)])
    if kind == 1:
        return -n
    if kind == 2:
        square = n.ndim >= 2 and n.shape[-1] == n.shape[-2]  # a wrong shape is said before any diagnosis
        return np.swapaxes(n, -1, -2) if square else n[..., ::-1].copy()
    if kind == 3 and others:
        other = others[rng.integers(len(others))]
        return np.resize(other, n.shape)
    if kind == 4:
        return np.zeros_like(n)
    if kind == 5:
        return n * (1 + rng.uniform(-1e-7, 1e-7, n.shape))
    if kind == 6:
        a = n.copy()
        a.flat[rng.integers(a.size)] = rng.choice([np.nan, np.inf, -np.inf])
        return a
    return _magnitudes(rng, n.shape)  # unrelated numbers, at another magnitude


@pytest.mark.parametrize("block", range(4))
def test_every_wrong_gradient_is_explained_whatever_its_numbers(block):
    rng = np.random.default_rng([20261130, block])
    for draw in range(DRAWS // 4):
        names = ["x", "w", "b"][: rng.integers(1, 4)]
        references = {name: _reference(rng) for name in names}
        scale = max(float(np.abs(n).max(initial=0.0)) for n in references.values()) or 1.0  # as gradient._compare
        students = {
            name: _students(rng, n, [m for o, m in references.items() if o != name]) for name, n in references.items()
        }
        with np.errstate(all="ignore"):
            reports = {
                name: InputReport(repr(name), students[name], references[name], RTOL * scale, RTOL) for name in names
            }
            context = diagnose.Context(
                {name: n.shape for name, n in references.items()},
                references[names[0]].shape,
                reports,
                atol=MATCH * scale,
                rtol=MATCH,
                scale=scale,
            )
            for name, report in reports.items():
                if report.passed:
                    continue
                try:
                    lines = diagnose.explain(name, report, context)
                    lines.append(diagnose.band(report.wrong))
                except Exception as error:  # noqa: BLE001 (the failure is what this test reports)
                    raise AssertionError(
                        f"draw {draw} of block {block}: explaining {name!r} raised {type(error).__name__}: {error}; "
                        f"reference {references[name]!r}, student's {students[name]!r}"
                    ) from error
                assert lines and all(isinstance(line, str) for line in lines), lines
