"""A backward that does not read a setting its op was built with (var's correction, softmax's axis, RMSNorm's eps,
clamp's limits) is named by that setting, for every case of the catalog and every usual stand-in value.

The generator: for each gradient case and each of its settings (those it gives, and its graph's defaults), the
gradient an op built with another usual value gives (the engine's autograd through the case's graph, the same inputs
and gy) is handed in as the student's; where it differs from the right one, a slip of gradient._setting_slips must
name a setting and a value that give it. The checker's words for it are in tests/exercise_mistakes.py (var's
correction fixed at 1, var divided by n, RMSNorm's eps dropped).
"""

import ast

import numpy as np

from tensorlab.exercises import slips, stages
from tensorlab.exercises.catalog import EXERCISES
from tensorlab.exercises.gradient import MATCH, Case, _setting_slips, defaults

# what a student writes in place of a setting, by the setting's type: the usual axes and corrections, no eps or the
# usual ones, the unit limits (the spec, written here again so that the product's list cannot shrink unseen)
STAND_INS = {int: (-1, 0, 1, 2), float: (0.0, 1e-5, 1e-6, 1e-8, -1.0, 1.0)}

CASES = [
    (f"{exercise.name} case {number}", case)
    for exercise in EXERCISES
    for number, case in enumerate(exercise.cases, 1)
    if isinstance(case, Case) and any(type(v) in STAND_INS for v in {**defaults(case.graph), **case.settings}.values())
]


def _built_with(case, inputs, settings, gy):
    """The reference namespace of the case's graph built with `settings`, or None if its output has another shape."""

    def same_gy(shape):
        if tuple(shape) != gy.shape:
            raise ValueError("another output shape")
        return gy

    try:
        with np.errstate(all="ignore"):
            return stages.reference(case.graph, case.names, inputs, settings, same_gy)
    except ValueError:
        return None


def test_a_backward_built_for_another_setting_is_named_by_it():
    planted = {}  # setting -> how many stand-ins changed a gradient
    for title, case in CASES:
        rng = np.random.default_rng(0)
        inputs = case.make(rng)
        reference = stages.reference(case.graph, case.names, inputs, case.settings, rng.standard_normal)
        floats = [name for name, x in zip(case.names, inputs) if x.dtype.kind == "f"]
        scale = max(float(np.abs(reference.grad[name]).max()) for name in floats)

        def close(a, b, scale=scale):
            return np.allclose(a, b, rtol=MATCH, atol=MATCH * scale)

        settings = {**defaults(case.graph), **case.settings}  # var's correction=1 where a case gives none
        for key, value in settings.items():
            for other in STAND_INS.get(type(value), ()):
                student = _built_with(case, inputs, {**settings, key: other}, reference.gy)
                if student is None or not all(np.isfinite(student.grad[n]).all() for n in floats):
                    continue  # another output shape (a reduction's axis), or NaN (eps -1: the NaN diagnosis's)
                wrong = [n for n in floats if not close(student.grad[n], reference.grad[n])]
                if not wrong:
                    continue  # the same gradient (eps 1e-8 for 1e-6, axis -1 for 2)
                planted[key] = planted.get(key, 0) + 1
                found = slips.recognise(_setting_slips(case), reference, student.grad, wrong, close)
                assert found, f"{title}: {key}={other!r} in place of {value!r} is not named"
                slip, explains = found[0]
                found_key, found_value = slip.name.split("=")
                named = _built_with(case, inputs, {**settings, found_key: ast.literal_eval(found_value)}, reference.gy)
                assert f"but this case has {found_key}={settings[found_key]!r}:" in slip.says, title
                assert explains == wrong, title
                assert all(close(named.grad[n], student.grad[n]) for n in wrong), (title, key, other, found_key)
    assert set(planted) == {"axis", "correction", "eps", "low", "high"}, planted
