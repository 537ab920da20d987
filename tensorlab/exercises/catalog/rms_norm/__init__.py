"""rms_norm: y = x / sqrt(mean(x^2) + eps) * weight over the last axis."""

from types import SimpleNamespace

import numpy as np

import tensorlab.functional as F
from tensorlab.exercises.check import Exercise
from tensorlab.exercises.gradient import Case
from tensorlab.exercises.inputs import drawn_shape, inputs, normal, spread
from tensorlab.exercises.slips import Slip, attempt


def graph(x, weight, eps=1e-5):
    r = 1 / F.sqrt(F.mean(x * x, axis=-1, keepdims=True) + eps)
    xhat = x * r
    return xhat * weight, {"xhat": xhat, "r": r}


def _rms(r_of=None, extra_term=True, sign=-1.0, reduce=np.mean, xhat_of=None):
    """gx for y = x r w, r = 1/sqrt(mean(x^2) + eps), with one piece changed.

    r_of(mean of squares, eps) replaces the normaliser (eps outside the square root)
    inside the usual r (g - xhat mean(g xhat)); the other arguments drop, flip or resize the
    term that comes through dr/dx.
    """

    def compute(s):
        x, w, eps = s.x["x"], s.x["weight"], s.settings.get("eps", 1e-5)
        ms = (x * x).mean(axis=-1, keepdims=True)
        r = (r_of or _r_inside)(ms, eps)
        g, xhat = s.gy * w, (xhat_of or np.multiply)(x, r)
        if not extra_term:
            return {"x": r * g}
        return {"x": r * (g + sign * xhat * reduce(g * xhat, axis=-1, keepdims=True))}

    return compute


def _r_of(s):
    x, eps = s.x["x"], s.settings.get("eps", 1e-5)
    return _r_inside((x * x).mean(axis=-1, keepdims=True), eps)


def _xhat(s):
    return s.x["x"] * _r_of(s)


def _with_weight_one(s):
    """The namespace with weight 1: what a backward that forgot the weight computes."""
    return SimpleNamespace(**{**vars(s), "x": {**s.x, "weight": np.ones_like(s.x["weight"])}})


def _r_inside(ms, eps):
    return 1 / np.sqrt(ms + eps)


RMS_NORM = [
    Slip(
        "rms_normaliser_constant",
        "You treated the normaliser r = 1/sqrt(mean(x^2) + eps) as a constant, but it "
        "depends on x: every x_j of a row changes r. Add the term that comes through r, "
        "using dr/dx_j = -r^3 x_j / C.",
        _rms(extra_term=False),
    ),
    Slip(
        "rms_term_sign",
        "The term that comes through the normaliser has the wrong sign: r falls as x_j grows "
        "(dr/dx_j = -r^3 x_j / C), so that term is subtracted.",
        _rms(sign=+1.0),
    ),
    Slip(
        "rms_sum_for_mean",
        "The term through the normaliser is C times too large: it needs the mean over the row "
        "(the 1/C of mean(x^2)), and you summed.",
        _rms(reduce=np.sum),
    ),
    Slip(
        "rms_eps_outside_sqrt",
        "Your normaliser has eps outside the square root, 1/(sqrt(mean(x^2)) + eps); the "
        "forward has it inside, 1/sqrt(mean(x^2) + eps). Use self.r, or recompute it the forward's way.",
        _rms(lambda ms, eps: 1 / (np.sqrt(ms) + eps)),
    ),
    Slip(
        "rms_mean_over_everything",
        "Your normaliser takes the mean of x^2 over the whole array; RMSNorm normalises each row on its own: "
        "the mean over the last axis, mean(x * x, axis=-1, keepdims=True).",
        attempt(lambda s: _rms(lambda ms, eps: 1 / np.sqrt((s.x["x"] ** 2).mean() + eps))(s)),
    ),
    Slip(
        "rms_term_mean_along_axis_0",
        "The term through the normaliser takes its mean along axis 0, across rows: each row's normaliser depends "
        "on that row alone, so the mean over the last axis belongs there: mean(g * xhat, axis=-1, keepdims=True).",
        attempt(lambda s: _rms(reduce=lambda a, axis, keepdims: a.mean(axis=0, keepdims=True))(s)),
    ),
    Slip(
        "rms_x_for_xhat",
        "The term through the normaliser uses x where xhat = x * r belongs: r (g - xhat mean(g xhat)); with x "
        "the r^2 of dr/dx = -r^3 x / C is missing.",
        attempt(lambda s: _rms(xhat_of=lambda x, r: x)(s)),
    ),
    Slip(
        "rms_outer_r_missing",
        "The factor r in front is missing: gx = r (g - xhat mean(g xhat)); every path from x to y goes through "
        "the division by the root mean square.",
        attempt(lambda s: {"x": _rms()(s)["x"] / _r_of(s)}),
    ),
    Slip(
        "rms_weight_left_out",
        "The weight is missing from gx: y = xhat * weight, so the gradient reaching xhat "
        "is g = gy * weight, and everything after uses g, not gy.",
        attempt(lambda s: _rms()(_with_weight_one(s))),
    ),
    Slip(
        "rms_weight_grad_without_xhat",
        "gweight is missing the factor xhat: y = xhat * weight, so gweight = sum "
        "over rows of gy * xhat, not of gy alone.",
        attempt(lambda s: {"weight": _over_rows(s.gy)}),
    ),
    Slip(
        "rms_weight_grad_uses_x",
        "gweight uses x where the normalised xhat = x * r belongs: y = xhat * weight, "
        "so gweight = sum over rows of gy * xhat.",
        attempt(lambda s: {"weight": _over_rows(s.gy * s.x["x"])}),
    ),
    Slip(
        "rms_weight_grad_over_every_axis",
        "gweight is summed over every axis, the channels too: weight holds one number per channel, so gweight "
        "= gy * xhat summed over the rows (every axis but the last), one sum per channel.",
        attempt(lambda s: {"weight": (s.gy * _xhat(s)).sum()}),
    ),
    Slip(
        "rms_weight_grad_over_channels",
        "gweight is summed along the channels (the last axis) where the rows belong: weight holds one number "
        "per channel, so gweight = gy * xhat summed over every axis but the last.",
        attempt(lambda s: {"weight": (s.gy * _xhat(s)).sum(axis=-1)}),
    ),
]


def _over_rows(a):
    """a summed over every axis but the last: one number per channel."""
    return a.sum(axis=tuple(range(a.ndim - 1)))


def _rows_of_scale(*scales, width):
    """Standard-normal rows times `scales`: rows of tiny variance make eps in RMSNorm count."""
    return lambda rng: rng.standard_normal((len(scales), width)) * np.array(scales)[:, None]


def _weight(width):
    return lambda rng: 1 + 0.5 * rng.standard_normal(width)


def _eps(rng):
    return float(rng.choice([1e-5, 1e-3, 0.5]))


def _drawn_rows(rng):
    """x of 1 to 3 axes (a single row too), of magnitudes from 1e-14 to 1e2, and the weight."""
    x = spread(rng, drawn_shape(rng, (1, 3)))
    return [x, _weight(x.shape[-1])(rng)]


EXERCISE = Exercise(
    "rms_norm",
    "y = x / sqrt(mean(x^2) + eps) * weight over the last axis",
    [
        Case("RMSNorm", ("x", "weight"), inputs(x, _weight(width)), graph, dict(eps=eps), slips=RMS_NORM)
        for x, width, eps in [
            (normal(3, 5), 5, 1e-5),
            (normal(2, 3, 4), 4, 1e-5),
            (_rows_of_scale(1.0, 1e-3, 3e-3, width=6), 6, 1e-5),  # tiny variance: where eps sits shows
            (normal(2, 4), 4, 0.5),
        ]
    ]
    + [Case("RMSNorm", ("x", "weight"), _drawn_rows, graph, draw=lambda rng, _: dict(eps=_eps(rng)), slips=RMS_NORM)],
)
