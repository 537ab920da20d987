"""softmax: y = softmax(x) along an axis: every output depends on every input of its row."""

import tensorlab.functional as F
from tensorlab.exercises.check import Exercise
from tensorlab.exercises.gradient import Case
from tensorlab.exercises.inputs import drawn_shape, inputs, near_1000, normal
from tensorlab.exercises.slips import Slip, attempt


def graph(x, axis=-1):
    return F.softmax(x, axis=axis), {}


def _axis_of(s):
    return s.settings.get("axis", -1)


def _softmax_with(term_sign=-1.0, diagonal_only=False, keepdims=True, axis=None):
    """y (gy + term_sign * rowsum(gy y)) with the row sum along `axis` (None: the right one), or y (1 - y) gy."""

    def compute(s):
        y, gy = s.y, s.gy
        if diagonal_only:
            return {"x": gy * y * (1 - y)}
        own = _axis_of(s) % y.ndim
        if axis is not None and (axis >= y.ndim or axis == own):
            return {}
        rowsum = (gy * y).sum(axis=own if axis is None else axis, keepdims=keepdims)
        return {"x": y * (gy + term_sign * rowsum)}

    return attempt(compute)


SOFTMAX = [
    Slip(
        "softmax_diagonal_only",
        "You used y(1 - y), the derivative of each output with respect to its own input "
        "only (the Jacobian's diagonal, as for a sigmoid). In softmax every output of a row depends on every input "
        "of the row: the off-diagonal terms dy_i/dx_j = -y_i y_j add up to a row-sum term.",
        _softmax_with(diagonal_only=True),
    ),
    Slip(
        "softmax_rowsum_dropped",
        "The row-sum term is missing: your gradient is y * gy, the diagonal part alone. "
        "Every other output of the row also moves with x_j: subtract the sum over the row of gy * y "
        "(along self.axis, keepdims=True), then multiply by y.",
        _softmax_with(term_sign=0.0),
    ),
    Slip(
        "softmax_rowsum_sign",
        "The row-sum term has the wrong sign: it is subtracted, y * (gy - sum(gy * y)), "
        "because dy_i/dx_j = -y_i y_j for i != j.",
        _softmax_with(term_sign=+1.0),
    ),
    Slip(
        "softmax_no_keepdims",
        "Your row sum lost its axis (no keepdims=True), and NumPy broadcast it along the "
        "wrong axis: each row got another row's sum. Keep the summed axis: .sum(axis=self.axis, keepdims=True).",
        _softmax_with(keepdims=False),
    ),
    Slip(
        "softmax_rowsum_without_y",
        "Your row-sum term sums gy alone: it is the sum over the row of gy * y, each "
        "gy_i weighted by its own y_i (from dy_i/dx_j = -y_i y_j).",
        attempt(lambda s: {"x": s.y * (s.gy - s.gy.sum(axis=_axis_of(s), keepdims=True))}),
    ),
    Slip(
        "softmax_not_times_y",
        "The factor y in front is missing: your gradient is gy - sum(gy * y), but dy_i/dx_j = y_i (delta_ij - y_j) "
        "carries y, so gx = y * (gy - sum(gy * y)).",
        attempt(lambda s: {"x": s.gy - (s.gy * s.y).sum(axis=_axis_of(s), keepdims=True)}),
    ),
    Slip(
        "softmax_diagonal_without_y",
        "The diagonal of your Jacobian is 1 where it is y_i: dy_i/dx_j = y_i (delta_ij - y_j), so the y multiplies "
        "gy too, not only the row-sum term: gx = y * (gy - sum(gy * y)), not gy - y * sum(gy * y).",
        attempt(lambda s: {"x": s.gy - s.y * (s.gy * s.y).sum(axis=_axis_of(s), keepdims=True)}),
    ),
    Slip(
        "softmax_mean_for_sum",
        "Your row term takes a mean over the row where the sum belongs: the term is sum_i gy_i y_i, every output's "
        "share added, not averaged.",
        attempt(lambda s: {"x": s.y * (s.gy - (s.gy * s.y).mean(axis=_axis_of(s), keepdims=True))}),
    ),
] + [
    Slip(
        f"softmax_sum_along_{a}",
        f"Your row sum runs along axis {a}, but this softmax was taken along axis "
        "{axis}: sum along self.axis, the axis the forward normalised.",
        _softmax_with(axis=a),
    )
    for a in range(3)
]


def _any_axis(rng, x):
    """One of x's axes, negative half the time."""
    return int(rng.integers(x.ndim)) - x.ndim * int(rng.integers(2))


DRAWN_X = inputs(lambda rng: rng.standard_normal(drawn_shape(rng, shortest=1)))  # the given forward: no empty axis


EXERCISE = Exercise(
    "softmax",
    "y = softmax(x) along an axis: every output depends on every input of its row",
    [
        Case("Softmax", ("x",), inputs(make), graph, dict(axis=axis), slips=SOFTMAX)
        for make, axis in [
            (normal(3, 5), -1),
            (normal(4, 3), 0),
            (normal(2, 3, 4), 1),
            (normal(4, 4), -1),
            (near_1000(3, 4), -1),
        ]
    ]
    + [Case("Softmax", ("x",), DRAWN_X, graph, draw=lambda rng, x: dict(axis=_any_axis(rng, x[0])), slips=SOFTMAX)],
)
