"""ties: z = maximum(a, b) and y = clamp(x, low, high): the gradient at ties and limits, as PyTorch."""

import numpy as np

import tensorlab.functional as F
from tensorlab.exercises.check import Exercise
from tensorlab.exercises.gradient import Case, no_settings
from tensorlab.exercises.inputs import drawn_pair, drawn_shape, inputs
from tensorlab.exercises.slips import Slip, attempt
from tensorlab.ops.broadcast import unbroadcast


def maximum(a, b):
    return F.maximum(a, b), {}


def clamp(x, low, high):
    return F.clamp(x, low, high), {}


def _whole(largest, *shape):
    """Whole numbers from -largest to largest as floats: ties, and values at clamp's limits, are common."""
    return lambda rng: rng.integers(-largest, largest + 1, shape).astype(np.float64)


def _near_ties(rng):
    """a and b of drawn shapes broadcasting relates: whole numbers from -2 to 2 (ties everywhere), b's 1e-9 off a
    whole number in places (a tie found with np.isclose shows)."""
    return drawn_pair(rng, lambda rng, shape: _whole(2, *shape)(rng) + rng.choice([0.0, 0.0, 1e-9, -1e-9], shape))


def _limits(rng, inputs):
    """Whole numbers from -3 to 3 (not -1 and 1 only: a mask |x| <= high shows), high below or at low one time in
    three: then y = high everywhere and gy passes nowhere but where x = low = high, as in PyTorch."""
    low = float(rng.integers(-3, 3))
    return dict(low=low, high=low + float(rng.integers(-2, 4)))


def _maximum(share_a):
    """ga, gb for z = max(a, b) when a gets `share_a(a, b)` of gy (b the rest), summed to each input's shape."""

    def compute(s):
        a, b = s.x["a"], s.x["b"]
        share = share_a(a, b) + np.zeros(np.broadcast_shapes(a.shape, b.shape))
        return {"a": unbroadcast(s.gy * share, a.shape), "b": unbroadcast(s.gy * (1 - share), b.shape)}

    return attempt(compute)


MAXIMUM = [
    Slip(
        "tie_to_a",
        "At a tie (a == b) you give all of gy to a: a tie splits it, gy / 2 to each, as PyTorch does.",
        _maximum(lambda a, b: (a >= b) * 1.0),
    ),
    Slip(
        "tie_to_b",
        "At a tie (a == b) you give all of gy to b: a tie splits it, gy / 2 to each, as PyTorch does.",
        _maximum(lambda a, b: (a > b) * 1.0),
    ),
    Slip(
        "tie_to_both",
        "At a tie (a == b) you give all of gy to both a and b, counting it twice: a tie splits it, gy / 2 to each.",
        attempt(
            lambda s: {
                "a": unbroadcast(s.gy * (s.x["a"] >= s.x["b"]), s.x["a"].shape),
                "b": unbroadcast(s.gy * (s.x["b"] >= s.x["a"]), s.x["b"].shape),
            }
        ),
    ),
]
CLAMP = [
    Slip(
        "clamp_limits_excluded",
        "At x equal to a limit (low or high) your gradient is 0; the limits count as inside, gy passes there "
        "(low <= x <= high), as PyTorch does.",
        lambda s: {"x": s.gy * ((s.settings["low"] < s.x["x"]) & (s.x["x"] < s.settings["high"]))},
    ),
    Slip(
        "clamp_limits_crossed",
        "With low above high, y = high everywhere and no gy passes (low <= x <= high holds nowhere), as in "
        "PyTorch; yours passes gy where x = high: a mask of where the clamped x equals x (np.clip gives high "
        "there too) is right only while low <= high.",
        lambda s: {"x": s.gy * (np.clip(s.x["x"], s.settings["low"], s.settings["high"]) == s.x["x"])},
    ),
]


EXERCISE = Exercise(
    "ties",
    "z = maximum(a, b) and y = clamp(x, low, high): the gradient at ties and limits, as PyTorch",
    [
        Case("Maximum", ("a", "b"), inputs(_whole(1, 3, 4), _whole(1, 3, 4)), maximum, slips=MAXIMUM),
        Case("Maximum", ("a", "b"), inputs(_whole(1, 2, 3, 4), _whole(1, 4)), maximum, slips=MAXIMUM),
        Case("Clamp", ("x",), inputs(_whole(2, 4, 5)), clamp, dict(low=-1.0, high=1.0), slips=CLAMP),
        # size-1 axes stretched on both sides (and one added in front): the sums a broadcast asks for, at ties; to 2,
        # 3 and 4, so that a size test against another length for 1 shows
        Case("Maximum", ("a", "b"), inputs(_whole(1, 1, 3, 1), _whole(1, 2, 4, 1, 2)), maximum, slips=MAXIMUM),
        Case("Maximum", ("a", "b"), _near_ties, maximum, draw=no_settings, slips=MAXIMUM),
        Case("Clamp", ("x",), lambda rng: [_whole(3, *drawn_shape(rng))(rng)], clamp, draw=_limits, slips=CLAMP),
    ],
)
