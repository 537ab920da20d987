"""exp_log: y = exp(x) and y = log(x), elementwise: the chain rule in one line."""

import numpy as np

import tensorlab.functional as F
from tensorlab.exercises.check import Exercise
from tensorlab.exercises.gradient import Case, no_settings
from tensorlab.exercises.inputs import drawn_shape, inputs, normal, positive, spread
from tensorlab.exercises.slips import Slip


def exp(x):
    return F.exp(x), {}


def log(x):
    return F.log(x), {}


EXP = [
    Slip(
        "exp_of_gy",
        "You took exp of gy: the chain rule multiplies, gx = gy * (dy/dx), it does not compose.",
        lambda s: {"x": np.exp(s.gy)},
    ),
    Slip(
        "exp_of_y",
        "You took exp of y, the forward's output: y is exp(x) already, and d exp(x)/dx = exp(x) = y, so gx = gy * y.",
        lambda s: {"x": s.gy * np.exp(s.y)},
    ),
    Slip(
        "exp_times_x",
        "You multiplied by x where the derivative of exp is exp(x) itself: gx = gy * y (d x^2/2 / dx is x, not d exp).",
        lambda s: {"x": s.gy * s.x["x"]},
    ),
]
LOG = [
    Slip(
        "log_times_x",
        "You multiplied by x where the derivative of log divides by it: d log(x)/dx = 1/x.",
        lambda s: {"x": s.gy * s.x["x"]},
    ),
    Slip(
        "log_times_log",
        "You multiplied gy by log(x), the forward's value; the derivative of log(x) is 1/x.",
        lambda s: {"x": s.gy * np.log(s.x["x"])},
    ),
    Slip(
        "log_over_x_squared",
        "You divided by x^2: d log(x)/dx = 1/x (1/x^2 is, up to sign, the derivative of 1/x).",
        lambda s: {"x": s.gy / s.x["x"] ** 2},
    ),
]


EXERCISE = Exercise(
    "exp_log",
    "y = exp(x) and y = log(x), elementwise: the chain rule in one line",
    [
        Case("Exp", ("x",), inputs(normal(3, 4)), exp, slips=EXP),
        Case("Log", ("x",), inputs(positive(3, 4)), log, slips=LOG),
        Case(
            "Log", ("x",), inputs(lambda rng: np.abs(spread(rng, drawn_shape(rng)))), log, draw=no_settings, slips=LOG
        ),
    ],
)
