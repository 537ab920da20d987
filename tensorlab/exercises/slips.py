"""The mistakes students make, each written out as the wrong gradient it produces.

A slip is recognised by reproducing it: `grads(s)` computes what a backward with that one
mistake returns (from the reference namespace `s` of stages.reference: the inputs s.x, the
settings, gy, the forward's intermediates s.value and the right gradients s.grad of every
stage), and when the student's gradient for an input equals the slip's (and the slip's is
wrong), the checker says `says`, in the student's words. A slip returns {} where it does not
apply (a shape it cannot have). Where it can, a slip starts from the engine's own gradient of a
stage (attention's gP and gS); where the mistake sits inside a step (RMSNorm's term through the
normaliser, attention's softmax step), that step is written out with the one piece changed, so
these functions are as much a teacher's material as the solutions are (the engine's ops in
tensorlab/ops/ hold the right backwards anyway).

SLIPS maps a class name (the exercise's class in the student's file) to its slips, in the
order they are tried.
"""

from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from tensorlab.ops.broadcast import unbroadcast


@dataclass
class Slip:
    name: str  # for tests and teachers: 'softmax_diagonal_only'
    says: str  # what the student reads; may use {axis}, {eps} ... from the case's settings
    grads: object  # s -> {input name: the gradient this mistake gives}


def _axis_of(s):
    return s.settings.get("axis", -1)


def _try(compute):
    """compute(), or {} when the mistake cannot even be written for these shapes."""

    def grads(s):
        try:
            with np.errstate(all="ignore"):
                return compute(s)
        except (ValueError, IndexError):
            return {}

    return grads


# ----- matmul: which factor is transposed, and on which side ----------------------------------------------------
MATMUL = [
    Slip(
        "b_not_transposed",
        "In ga you multiply gy by b where its transpose belongs: y = a b, so ga = gy b^T "
        "(the square shape hid the slip; with b of shape (k, m), gy b would not even fit).",
        _try(lambda s: {"a": s.gy @ s.x["b"]}),
    ),
    Slip(
        "a_not_transposed",
        "In gb you multiply a by gy where a's transpose belongs: gb = a^T gy (the square shape hid the slip).",
        _try(lambda s: {"b": s.x["a"] @ s.gy}),
    ),
    Slip(
        "ga_factors_swapped",
        "In ga the factors are in the wrong order: b^T gy instead of gy b^T. Matrix products "
        "do not commute; gy stays on the side of a's output rows, the left.",
        _try(lambda s: {"a": s.x["b"].T @ s.gy}),
    ),
    Slip(
        "gb_factors_swapped",
        "In gb the factors are in the wrong order: gy a^T instead of a^T gy. gy stays on the "
        "right, where b's output columns are.",
        _try(lambda s: {"b": s.gy @ s.x["a"].T}),
    ),
]

# ----- exp and log: the local derivative -----------------------------------------------------------------------
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


# ----- softmax: the diagonal, the row-sum term, its sign, its axis ----------------------------------------------
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

    return _try(compute)


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
        _try(lambda s: {"x": s.y * (s.gy - s.gy.sum(axis=_axis_of(s), keepdims=True))}),
    ),
    Slip(
        "softmax_not_times_y",
        "The factor y in front is missing: your gradient is gy - sum(gy * y), but dy_i/dx_j = y_i (delta_ij - y_j) "
        "carries y, so gx = y * (gy - sum(gy * y)).",
        _try(lambda s: {"x": s.gy - (s.gy * s.y).sum(axis=_axis_of(s), keepdims=True)}),
    ),
    Slip(
        "softmax_mean_for_sum",
        "Your row term takes a mean over the row where the sum belongs: the term is sum_i gy_i y_i, every output's "
        "share added, not averaged.",
        _try(lambda s: {"x": s.y * (s.gy - (s.gy * s.y).mean(axis=_axis_of(s), keepdims=True))}),
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


# ----- cross-entropy: the one-hot term ----------------------------------------------------------------------------
def _one_hot(s):
    t = s.x["targets"]
    hot = np.zeros(s.value["log_p"].shape)
    hot[np.arange(len(t)), t] = 1
    return hot


def _nll(with_p):
    def compute(s):
        p, t = np.exp(s.value["log_p"]), s.x["targets"]
        return {"logits": s.gy * with_p(p, t) / len(t)}

    return compute


LOG_SOFTMAX_NLL = (
    [
        Slip(
            "nll_minus_one_everywhere",
            "You subtracted 1 from every element: the 1 belongs only at each row's target. "
            "The gradient is softmax minus the one-hot of the targets: p[n, targets[n]] - 1, and p elsewhere.",
            _nll(lambda p, t: p - 1),
        ),
        Slip(
            "nll_log_probabilities",
            "You used the log-probabilities where the probabilities belong: the gradient "
            "is softmax(logits) minus the one-hot, and softmax is exp of log_softmax.",
            _try(lambda s: {"logits": s.gy * (s.value["log_p"] - _one_hot(s)) / len(s.x["targets"])}),
        ),
        Slip(
            "nll_one_hot_omitted",
            "The one-hot term is missing: your gradient is the softmax p alone. The loss "
            "picks -log p[n, targets[n]], so subtract 1 at column targets[n] of each row n.",
            _nll(lambda p, t: p),
        ),
        Slip(
            "nll_one_hot_added",
            "You added 1 at each row's target where it is subtracted: the gradient is p - 1 at column targets[n] "
            "(softmax minus the one-hot), not p + 1.",
            _try(lambda s: {"logits": s.gy * (np.exp(s.value["log_p"]) + _one_hot(s)) / len(s.x["targets"])}),
        ),
        Slip(
            "nll_divided_by_classes",
            "You divided by the number of classes (the row length) where the loss averages over the rows: the 1/N "
            "of the mean counts rows, N = len(targets).",
            _try(lambda s: {"logits": s.grad["logits"] * len(s.x["targets"]) / s.value["log_p"].shape[-1]}),
        ),
    ]
    + [
        Slip(
            f"nll_target_neighbour_{shift:+d}",
            f"The 1 is subtracted at the target's {side} neighbour, column targets[n] {shift:+d}, instead of at "
            "column targets[n] itself: index the one-hot with the targets unchanged.",
            _try(lambda s, shift=shift: _nll_at(s, lambda t, n: (np.arange(n), t + shift))),
        )
        for shift, side in ((1, "right-hand"), (-1, "left-hand"))
    ]
    + [
        Slip(
            "nll_every_row_at_each_target",
            "You subtracted 1 in every row at each target's column (gx[:, targets]): the one-hot has a single 1 per "
            "row n, at column targets[n]: index with the pair (np.arange(N), targets).",
            _try(lambda s: _nll_at(s, lambda t, n: (slice(None), t))),
        ),
        Slip(
            "nll_one_hot_at_row_index",
            "Your 1 sits at column n of row n (the diagonal), not at the target: row n's 1 belongs at column "
            "targets[n].",
            _try(lambda s: _nll_at(s, lambda t, n: (np.arange(n), np.arange(n)))),
        ),
    ]
)


def _nll_at(s, where):
    """The cross-entropy gradient with the one-hot's 1 put where `where(targets, N)` indexes (a buffered -=)."""
    t = s.x["targets"]
    if where(t, len(t))[1] is not t and np.array_equal(np.asarray(where(t, len(t))[1]) % s.value["log_p"].shape[-1], t):
        return {}  # the same columns as the targets: not this slip
    g = np.exp(s.value["log_p"])
    g[where(t, len(t))] -= 1
    return {"logits": s.gy * g / len(t)}


# ----- RMSNorm: the normaliser depends on x; eps inside the square root -------------------------------------------
def _rms(r_of=None, extra_term=True, sign=-1.0, reduce=np.mean, xhat_of=None):
    """gx for y = x r w, r = 1/sqrt(mean(x^2) + eps), with one piece changed.

    r_of(mean of squares, eps) replaces the normaliser (eps dropped, eps outside the square root)
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
        "rms_eps_dropped",
        "Your gradient is right for eps = 0: eps is missing from the normaliser you used in "
        "backward. Use self.r (it has eps inside the square root), or recompute it with sqrt(mean(x^2) + eps).",
        _rms(lambda ms, eps: 1 / np.sqrt(ms)),
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
        _try(lambda s: _rms(lambda ms, eps: 1 / np.sqrt((s.x["x"] ** 2).mean() + eps))(s)),
    ),
    Slip(
        "rms_term_mean_along_axis_0",
        "The term through the normaliser takes its mean along axis 0, across rows: each row's normaliser depends "
        "on that row alone, so the mean over the last axis belongs there: mean(g * xhat, axis=-1, keepdims=True).",
        _try(lambda s: _rms(reduce=lambda a, axis, keepdims: a.mean(axis=0, keepdims=True))(s)),
    ),
    Slip(
        "rms_x_for_xhat",
        "The term through the normaliser uses x where xhat = x * r belongs: r (g - xhat mean(g xhat)); with x "
        "the r^2 of dr/dx = -r^3 x / C is missing.",
        _try(lambda s: _rms(xhat_of=lambda x, r: x)(s)),
    ),
    Slip(
        "rms_outer_r_missing",
        "The factor r in front is missing: gx = r (g - xhat mean(g xhat)); every path from x to y goes through "
        "the division by the root mean square.",
        _try(lambda s: {"x": _rms()(s)["x"] / _r_of(s)}),
    ),
    Slip(
        "rms_weight_left_out",
        "The weight is missing from gx: y = xhat * weight, so the gradient reaching xhat "
        "is g = gy * weight, and everything after uses g, not gy.",
        _try(lambda s: _rms()(_with_weight_one(s))),
    ),
    Slip(
        "rms_weight_grad_without_xhat",
        "gweight is missing the factor xhat: y = xhat * weight, so gweight = sum "
        "over rows of gy * xhat, not of gy alone.",
        _try(lambda s: {"weight": s.gy.reshape(-1, s.gy.shape[-1]).sum(axis=0)}),
    ),
    Slip(
        "rms_weight_grad_uses_x",
        "gweight uses x where the normalised xhat = x * r belongs: y = xhat * weight, "
        "so gweight = sum over rows of gy * xhat.",
        _try(lambda s: {"weight": (s.gy * s.x["x"]).reshape(-1, s.gy.shape[-1]).sum(axis=0)}),
    ),
]


# ----- embedding: repeats add up ---------------------------------------------------------------------------------
def _overwritten(s):
    ids, gy = s.x["ids"], s.gy
    gw = np.zeros(s.x["weight"].shape)
    gw[ids.reshape(-1)] = gy.reshape(-1, gy.shape[-1])
    return {"weight": gw}


EMBEDDING = [
    Slip(
        "embedding_overwritten",
        "Repeated ids overwrite each other: `gw[ids] = gy` (and `gw[ids] += gy`, which "
        "NumPy buffers) keeps only the last of the repeats. Every use of a row adds to its gradient: "
        "np.add.at(gw, ids, gy).",
        _overwritten,
    ),
]


# ----- attention: the scale, the transposes, the softmax step ----------------------------------------------------
def _attention(gq=None, gk=None, gv=None, g_s=None, g_p=None):
    """The attention gradients with pieces replaced.

    The pieces: gq(gS, k, scale), gk(gS, q, scale), gv(P, gy), g_s(P, gP), g_p(gy, v).
    """

    def compute(s):
        q, k = s.x["q"], s.x["k"]
        P, gP = s.value["P"], s.grad["P"] if g_p is None else g_p(s.gy, s.x["v"])
        scale = 1 / np.sqrt(q.shape[-1])
        if g_s is None and g_p is None:
            gS = s.grad["S"]
        else:  # the softmax step, as the engine's softmax backward does it, unless g_s replaces it
            gS = np.where(P > 0, (g_s or _softmax_step)(P, gP), 0.0)
        out = {}
        if gq or g_s or g_p:
            out["q"] = gq(gS, k, scale) if gq else gS @ k * scale
        if gk or g_s or g_p:
            out["k"] = gk(gS, q, scale) if gk else gS.swapaxes(-1, -2) @ q * scale
        if gv:
            out["v"] = gv(P, s.gy)
        return out

    return _try(compute)


def _softmax_step(P, gP):
    return P * (gP - (gP * P).sum(axis=-1, keepdims=True))


def _attention_masked(k):
    """Every gradient with P recomputed under np.tril(..., k): k=1 lets each query see the next key."""

    def compute(s):
        q, key = s.x["q"], s.x["k"]
        T, D = q.shape[-2:]
        scores = np.where(np.tril(np.ones((T, T), dtype=bool), k), q @ key.swapaxes(-1, -2) / np.sqrt(D), -np.inf)
        e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        P = e / e.sum(axis=-1, keepdims=True)
        gS = _softmax_step(P, s.grad["P"])
        return {
            "q": gS @ key / np.sqrt(D),
            "k": gS.swapaxes(-1, -2) @ q / np.sqrt(D),
            "v": P.swapaxes(-1, -2) @ s.gy,
        }

    return _try(compute)


CAUSAL_ATTENTION = [
    Slip(
        "attention_scale_inverted",
        "You multiplied by sqrt(D) where the forward divides by it: the scores are "
        "q k^T / sqrt(D), so gq and gk each get the factor 1/sqrt(D) (not sqrt(D)).",
        _attention(gq=lambda gS, k, c: gS @ k / c, gk=lambda gS, q, c: gS.swapaxes(-1, -2) @ q / c),
    ),
    Slip(
        "attention_scale_missing",
        "The 1/sqrt(D) scale of the scores is missing from your gq and gk: S = q k^T / sqrt(D), so both carry it.",
        _attention(gq=lambda gS, k, c: gS @ k, gk=lambda gS, q, c: gS.swapaxes(-1, -2) @ q),
    ),
    Slip(
        "attention_gk_not_transposed",
        "In gk, gS is not transposed: S = q k^T, so gk = gS^T q / sqrt(D). gS q "
        "mixes up which position is the query (rows of S) and which the key (columns).",
        _attention(gk=lambda gS, q, c: gS @ q * c),
    ),
    Slip(
        "attention_gq_transposed",
        "In gq, gS is transposed: gq = gS k / sqrt(D) (rows of S are queries).",
        _attention(gq=lambda gS, k, c: gS.swapaxes(-1, -2) @ k * c),
    ),
    Slip(
        "attention_gq_k_transposed",
        "In gq, k is transposed: S = q k^T, so gq = gS k / sqrt(D) (k as it is; the square shape hid the slip).",
        _attention(gq=lambda gS, k, c: gS @ k.swapaxes(-1, -2) * c),
    ),
    Slip(
        "attention_gp_v_not_transposed",
        "In gP, v is not transposed: y = P v, so gP = gy v^T (the square shape hid the slip).",
        _attention(g_p=lambda gy, v: gy @ v),
    ),
    Slip(
        "attention_gv_not_transposed",
        "In gv, P is not transposed: y = P v, so gv = P^T gy.",
        _attention(gv=lambda P, gy: P @ gy),
    ),
    Slip(
        "attention_softmax_diagonal_only",
        "In the softmax step you used P(1 - P), the Jacobian's diagonal only. "
        "Every weight of a row depends on every score of the row: gS = P * (gP - rowsum(gP * P)).",
        _attention(g_s=lambda P, gP: P * (1 - P) * gP),
    ),
    Slip(
        "attention_softmax_rowsum_dropped",
        "In the softmax step the row-sum term is missing: gS = P * gP alone. "
        "Subtract the sum over each row of gP * P before multiplying by P.",
        _attention(g_s=lambda P, gP: P * gP),
    ),
    Slip(
        "attention_softmax_rowsum_sign",
        "In the softmax step the row-sum term has the wrong sign: it is subtracted, gS = P * (gP - rowsum(gP * P)).",
        _attention(g_s=lambda P, gP: P * (gP + (gP * P).sum(axis=-1, keepdims=True))),
    ),
    Slip(
        "attention_softmax_rowsum_over_queries",
        "In the softmax step your sum runs along axis -2, over the queries (a column of P): each row of P is "
        "one query's softmax, so the sum of gP * P runs along the last axis, over the keys.",
        _attention(g_s=lambda P, gP: P * (gP - (gP * P).sum(axis=-2, keepdims=True))),
    ),
    Slip(
        "attention_softmax_no_keepdims",
        "In the softmax step your row sum lost its axis (no keepdims=True) and NumPy broadcast it along the "
        "wrong one: row i got the sum of another row. Keep it: (gP * P).sum(axis=-1, keepdims=True).",
        _attention(g_s=lambda P, gP: P * (gP - (gP * P).sum(axis=-1)[..., None, :])),
    ),
    Slip(
        "attention_mask_off_by_one",
        "Your mask is off by one: the weights you recomputed let each query see the next position too "
        "(np.tril(..., k=1)). The causal mask keeps key j for query i when j <= i: np.tril(np.ones((T, T))), "
        "or use the P that forward saved.",
        _attention_masked(1),
    ),
]


# ----- the new Function: sqrt's chain rule -------------------------------------------------------------------------
def _hypot(local):
    """ga, gb for y = sqrt(a^2 + b^2) with the local derivative dy/da = local(a, y), summed to each input's shape."""

    def compute(s):
        a, b, y = s.x["a"], s.x["b"], s.y
        return {"a": unbroadcast(s.gy * local(a, y), a.shape), "b": unbroadcast(s.gy * local(b, y), b.shape)}

    return _try(compute)


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


# ----- ties: maximum and clamp, at a tie and at the limits ---------------------------------------------------------
def _maximum(share_a):
    """ga, gb for z = max(a, b) when a gets `share_a(a, b)` of gy (b the rest), summed to each input's shape."""

    def compute(s):
        a, b = s.x["a"], s.x["b"]
        share = share_a(a, b) + np.zeros(np.broadcast_shapes(a.shape, b.shape))
        return {"a": unbroadcast(s.gy * share, a.shape), "b": unbroadcast(s.gy * (1 - share), b.shape)}

    return _try(compute)


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
        _try(
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
]

SLIPS = {
    "Maximum": MAXIMUM,
    "Clamp": CLAMP,
    "Hypot": HYPOT,
    "MatMul": MATMUL,
    "Exp": EXP,
    "Log": LOG,
    "Softmax": SOFTMAX,
    "LogSoftmaxNLL": LOG_SOFTMAX_NLL,
    "RMSNorm": RMS_NORM,
    "Embedding": EMBEDDING,
    "CausalAttention": CAUSAL_ATTENTION,
}


def recognise(cls_name, s, student, wrong, close):
    """The slips that reproduce the student's gradients for the `wrong` inputs: [(Slip, inputs it explains)]."""
    found = []
    for slip in SLIPS.get(cls_name, []):
        predicted = slip.grads(s)
        explains = [
            name
            for name in wrong
            if name in predicted
            and student.get(name) is not None
            and close(student[name], predicted[name])
            and not close(predicted[name], s.grad[name])
        ]
        if explains:
            found.append((slip, explains))
    return found
