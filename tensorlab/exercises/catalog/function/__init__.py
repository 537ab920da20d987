"""function, engine 4/4: a new Function end to end, y = sqrt(a^2 + b^2) with broadcasting."""

import tensorlab.functional as F
from tensorlab.exercises.check import Exercise
from tensorlab.exercises.gradient import Case, no_settings
from tensorlab.exercises.inputs import BROADCAST_PAIRS, drawn_pair, inputs, spread
from tensorlab.exercises.slips import Slip, attempt
from tensorlab.ops.broadcast import unbroadcast


def graph(a, b):
    return F.sqrt(a * a + b * b), {}


def _hypot(local):
    """ga, gb for y = sqrt(a^2 + b^2) with the local derivative dy/da = local(a, y), summed to each input's shape."""

    def compute(s):
        a, b, y = s.x["a"], s.x["b"], s.y
        return {"a": unbroadcast(s.gy * local(a, y), a.shape), "b": unbroadcast(s.gy * local(b, y), b.shape)}

    return attempt(compute)


HYPOT = [
    Slip(
        "hypot_no_division",
        "You left out the division by y: y = sqrt(u) with u = a^2 + b^2, and "
        "d sqrt(u)/du = 1 / (2 sqrt(u)), so dy/da = a / y.",
        _hypot(lambda a, y: a),
    ),
    Slip(
        "hypot_times_y",
        "You multiplied by y where the chain rule through sqrt divides by it: dy/da = a / y.",
        _hypot(lambda a, y: a * y),
    ),
    Slip(
        "hypot_over_y_squared",
        "You divided by y^2 where the chain rule through sqrt divides by y once: dy/da = a / y.",
        _hypot(lambda a, y: a / y**2),
    ),
]


def _spread_pair(rng):
    """a and b of drawn shapes broadcasting relates, of magnitudes from 1e-14 to 1e2: y + 1e-15 in a division shows
    at the smallest."""
    return drawn_pair(rng, spread)


EXERCISE = Exercise(
    "function",
    "engine 4/4: a new Function end to end, y = sqrt(a^2 + b^2) with broadcasting",
    [Case("Hypot", ("a", "b"), inputs(a, b), graph, forward_is_yours=True, slips=HYPOT) for a, b in BROADCAST_PAIRS]
    + [Case("Hypot", ("a", "b"), _spread_pair, graph, forward_is_yours=True, draw=no_settings, slips=HYPOT)],
)
