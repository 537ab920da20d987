"""The exercises: what each asks for, the forward it is checked against, and its test cases.

A gradient exercise is checked in several cases. Each case names the class to take from the
student's file, the settings its constructor gets, how to make its inputs (float64 arrays,
or integer arrays for ids and targets, which take no gradient) and a reference forward,
so an edited forward is caught before its gradient is judged. Shapes are chosen so that a
mistake shows: axis lengths differ from each other (a factor names one axis), non-square
matrices (a transposed gradient has the wrong shape) beside square ones (where it does not),
broadcasts along leading and size-1 axes, and embedding ids that repeat.
"""

import math
from dataclasses import dataclass, field

import numpy as np

from tensorlab.exercises import stages


@dataclass
class Case:
    """One setting in which an exercise is checked."""

    cls: str  # the class in the student's file
    names: tuple  # one name per forward argument, as the student's docstring calls them
    make: object  # rng -> list of input arrays, one per forward argument
    reference: object  # (*inputs, **settings) -> the forward's output
    settings: dict = field(default_factory=dict)  # keyword arguments for the class's constructor
    graph: object = None  # (*tensors, **settings) -> (output, {stage: intermediate}) in tensorlab ops
    forward_is_yours: bool = False  # the student writes forward too (the engine track's new Function)

    def describe(self, inputs):
        """'MatMul: a (3, 4), b (4, 2)' plus the settings, for the checker's case lines."""
        shapes = ", ".join(f"{name} {tuple(x.shape)}" for name, x in zip(self.names, inputs))
        settings = "".join(f", {key}={value!r}" for key, value in self.settings.items())
        return f"{self.cls}: {shapes}{settings}"


@dataclass
class Exercise:
    """One exercise: its name on the command line, a one-line title, and how it is checked."""

    name: str
    title: str
    cases: list = field(default_factory=list)
    kind: str = "gradient"  # "gradient": a backward checked against the analytic gradient; "adamw": a step;
    #                           "engine": the engine track's probes (engine_check.py)
    shape_hint: str = ""  # said when a gradient has a wrong shape that no automatic fix explains
    hint: object = None  # (inputs, name, InputReport, diagnose.Context) -> extra hints for a wrong input
    probe: object = None  # (backward(gy) -> grads, inputs) -> lines: the student's backward on chosen gy
    error_hint: object = None  # (error lines, case) -> lines: said when the student's backward raises


def _normal(*shape):
    return lambda rng: rng.standard_normal(shape)


def _positive(*shape):
    return lambda rng: rng.uniform(0.5, 2.0, shape)


def _with_zeros(*shape):
    """Normal values with exact zeros at a few places: a backward that divides by an input gives NaN there."""

    def make(rng):
        x = rng.standard_normal(shape)
        x.reshape(-1)[:: max(1, x.size // 3)] = 0.0
        return x

    return make


def _scores_up_to_1000(*shape):
    """q, k, v whose largest score a query sees, q k^T / sqrt(D), is exactly 1,000 (on every draw): exp overflows
    there unless the row's max goes first."""

    def make(rng):
        q, k, v = (rng.standard_normal(shape) for _ in range(3))
        rows, columns = np.tril_indices(shape[-2])
        seen = (q @ k.swapaxes(-1, -2))[..., rows, columns] / np.sqrt(shape[-1])
        largest = seen.flat[np.abs(seen).argmax()]
        scale = np.sqrt(1000.0 / abs(largest))
        return [q * scale, k * scale * np.sign(largest), v]

    return make


def _near_1000(*shape):
    """Logits near 1,000 (spread by a few units, so the softmax is not one-hot): exp overflows unless the max goes
    first, in forward and in a backward that computes the softmax again."""
    return lambda rng: 1000.0 + 3.0 * rng.standard_normal(shape)


def _whole(largest, *shape):
    """Whole numbers from -largest to largest as floats: ties, and values at clamp's limits, are common."""
    return lambda rng: rng.integers(-largest, largest + 1, shape).astype(np.float64)


def _clamp(x, low, high):
    return np.minimum(np.maximum(x, low), high)


def _inputs(*makers):
    return lambda rng: [make(rng) for make in makers]


# ----- reference forwards (plain NumPy) -----------------------------------------------------------
def _softmax(x, axis=-1):
    # Deliberately not the engine's exp_and_max: the checker must not trust the code students are learning from.
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _var(x, axis=None, keepdims=False, correction=1):
    return np.var(x, axis=axis, keepdims=keepdims, ddof=correction)


def _log_softmax_nll(logits, targets):
    log_p = np.log(_softmax(logits, axis=-1))
    return -log_p[np.arange(len(targets)), targets].mean()


def _rms_norm(x, weight, eps=1e-5):
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * weight


def _causal_attention(q, k, v):
    T, D = q.shape[-2:]
    s = q @ k.swapaxes(-1, -2) / np.sqrt(D)
    s = np.where(np.tril(np.ones((T, T), dtype=bool)), s, -np.inf)
    return _softmax(s, axis=-1) @ v


# ----- exercise-specific hints ----------------------------------------------------------------------
def _embedding_hint(inputs, name, report, context):
    """Rows no id looks up must get 0 (repeats overwritten are a slip, slips.EMBEDDING)."""
    ids = inputs[0]
    wrong_rows = set(np.flatnonzero(report.wrong.any(axis=1)).tolist())
    counts = np.bincount(ids.reshape(-1), minlength=report.wrong.shape[0])
    unused = set(np.flatnonzero(counts == 0).tolist())
    hints = []
    if wrong_rows & unused:
        hints.append(
            f"Rows {sorted(wrong_rows & unused)} are never looked up (no id equals them), so their "
            f"gradient must be 0: start from np.zeros(...) of the table's shape."
        )
    return hints


def _nll_hint(inputs, name, report, context):
    """Only the target entries wrong: the one-hot term (softmax minus one-hot) is off."""
    targets = inputs[1]
    at_targets = np.zeros_like(report.wrong)
    at_targets[np.arange(len(targets)), targets] = True
    if report.wrong.any() and not (report.wrong & ~at_targets).any():
        return [
            "Only elements at the targets (row n, column targets[n]) are wrong; the rest of each row is "
            "right. Check the one-hot term there: the gradient of -log softmax(x)[t] is softmax(x) minus "
            "1 at the target."
        ]
    return []


def _attention_hint(inputs, name, report, context):
    """gv right, gq or gk wrong: the slip is past gP (softmax step or the scores' products)."""
    if name == "v" or not context.reports["v"].passed:
        return []
    if name == "q" or context.reports["q"].passed:  # say it once, at the first wrong input
        return [
            "Your gv is right, so y = P v is undone correctly; the slip comes after: in the softmax step "
            "(from gP to gS) or in S = q k^T / sqrt(D) (from gS to gq and gk)."
        ]
    return []


def _causality_probe(backward, inputs):
    """Changing gy at the first query only must not change later keys' and values' gradients: the mask in backward.

    Query 0 sees key 0 only, so gk[j] and gv[j] for j > 0 cannot depend on gy[0]. Two gy that differ
    at position 0 only are compared, so a term that does not depend on gy at all cannot look like a leak.
    """
    q = inputs[0]
    rng = np.random.default_rng(7)
    gy = rng.standard_normal(q.shape)
    changed = gy.copy()
    changed[..., 0, :] += rng.standard_normal(q.shape[-1])
    try:
        before, after = backward(gy), backward(changed)
    except Exception:  # noqa: BLE001 (the case itself reports what the backward raises)
        return []
    leaks = []
    for name, g, h in (("gk", before[1], after[1]), ("gv", before[2], after[2])):
        if np.shape(g) == q.shape and np.shape(h) == q.shape:
            moved = np.abs(np.asarray(h) - np.asarray(g))[..., 1:, :] > 1e-12
            where = sorted({int(i) + 1 for i in np.argwhere(moved)[:, -2]})
            if where:
                leaks.append(f"your {name} at positions {where}")
    if not leaks:
        return []
    return [
        f"Gradient leaks to future positions: changing gy at position 0 (the first query) changes "
        f"{' and '.join(leaks)}. Query 0 sees only key 0 (the causal mask hides the later ones), so nothing "
        f"of its gradient may reach a later key or value: apply the mask in backward too (the P forward "
        f"saved is 0 there; a softmax recomputed without the mask is not)."
    ]


# ----- the catalog -------------------------------------------------------------------------------
# input makers for binary ops: equal shapes, a row broadcast over rows, both sides broadcast
_BROADCAST_PAIRS = [
    (_normal(3, 4), _normal(3, 4)),
    (_normal(3, 4), _normal(4)),
    (_normal(2, 1, 4), _normal(3, 1)),
]
_REDUCTION_CASES = [
    dict(axis=1),
    dict(axis=(0, 2)),
    dict(axis=None),
    dict(axis=-1, keepdims=True),
    dict(axis=1, keepdims=True),
]
_REDUCTION_SHAPE_HINT = (
    "The gradient of a reduction has the input's shape: put the reduced axes back as "
    "size 1 with np.expand_dims(gy, self.axes) (unless keepdims kept them), then copy "
    "along them with np.broadcast_to(..., self.x_shape).copy()."
)


def _reduction_error_hint(lines, case):
    """A reduction's backward that raised: gy without its reduced axes, or self.axis where self.axes belongs."""
    if "could not be broadcast" in lines[0] and not case.settings.get("keepdims"):
        return [
            "gy lost the reduced axes (keepdims=False), so it no longer lines up with x: put them back as size 1 "
            "first, np.expand_dims(gy, self.axes), then copy along them."
        ]
    if "NoneType" in lines[0] and case.settings.get("axis", 0) is None:
        return [
            "self.axis is None here (every axis reduced), which np.expand_dims cannot take: use self.axes, the "
            "axes forward worked out (all of them for axis=None)."
        ]
    return []


def _mean_hint(inputs, name, report, context):
    """A constant factor off in mean's gradient: name the n the student divided by, against the n averaged."""
    a, right = report.analytic, report.numeric
    norm = float((right * right).sum())
    if norm == 0 or not np.all(np.isfinite(a)):
        return []
    c = float((a * right).sum()) / norm
    if abs(c) < 1e-12 or not context.close(a, c * right) or abs(c - 1) < 1e-6:
        return []
    n = round(math.prod(context.shapes["x"]) / math.prod(context.output_shape))
    if math.isclose(c, n * n, rel_tol=1e-6):
        return [f"You multiplied by n where the mean divides by it: each of the {n} averaged elements gets gy / n."]
    used = n / c
    if abs(used - round(used)) > 1e-6 * used:
        return []
    return [
        f"Your gradient divides by {round(used)}, but this mean averaged {n} elements (the lengths of the averaged "
        f"axes multiplied: n = the product of x.shape[a] for a in self.axes)."
    ]


def _var_hint(inputs, name, report, context):
    """A constant factor off in var's gradient that is n / (n - correction): the divisor is n, not n - correction."""
    a, right = report.analytic, report.numeric
    norm = float((right * right).sum())
    if norm == 0 or not np.all(np.isfinite(a)):
        return []
    c = float((a * right).sum()) / norm
    n = round(math.prod(context.shapes["x"]) / math.prod(context.output_shape))
    dof = n - context.settings.get("correction", 1)
    if dof == n or not context.close(a, c * right) or not math.isclose(c * n, dof, rel_tol=1e-9):
        return []
    return [
        f"Your gradient divides by n = {n}, the number of elements reduced; var divides by n - correction = {dof}, "
        f"in the backward as in the forward."
    ]


def _reduction(name, op, forward, graph, lesson, hint=None):
    """The exercise for a reduction: every axis/keepdims setting on a (3, 4, 5) input, plus a size-1 axis."""
    cases = [
        Case(op, ("x",), _inputs(_normal(3, 4, 5)), forward, settings, graph=graph) for settings in _REDUCTION_CASES
    ]
    cases.append(Case(op, ("x",), _inputs(_normal(3, 1, 5)), forward, dict(axis=1), graph=graph))
    return Exercise(
        name,
        f"y = x.{name}(axis, keepdims): {lesson}",
        cases,
        shape_hint=_REDUCTION_SHAPE_HINT,
        hint=hint,
        error_hint=_reduction_error_hint,
    )


def _rows_of_scale(*scales, width):
    """Standard-normal rows times `scales`: rows of tiny variance make eps in RMSNorm count."""
    return lambda rng: rng.standard_normal((len(scales), width)) * np.array(scales)[:, None]


def _weight(width):
    return lambda rng: 1 + 0.5 * rng.standard_normal(width)


EXERCISES = [
    Exercise("value", "engine 1/4: a scalar Value with + * tanh exp and backward (micrograd)", kind="engine"),
    Exercise("topo", "engine 2/4: the topological order of the backward walk", kind="engine"),
    Exercise("unbroadcast", "engine 3/4: undo broadcasting, summing over the broadcast axes", kind="engine"),
    Exercise(
        "function",
        "engine 4/4: a new Function end to end, y = sqrt(a^2 + b^2) with broadcasting",
        [
            Case("Hypot", ("a", "b"), _inputs(a, b), np.hypot, graph=stages.hypot, forward_is_yours=True)
            for a, b in _BROADCAST_PAIRS
        ],
    ),
    Exercise(
        "mul",
        "y = a * b with broadcasting: sum the gradient over the broadcast axes",
        [Case("Mul", ("a", "b"), _inputs(a, b), np.multiply, graph=stages.mul) for a, b in _BROADCAST_PAIRS]
        + [Case("Mul", ("a", "b"), _inputs(_with_zeros(3, 4), _with_zeros(3, 4)), np.multiply, graph=stages.mul)],
    ),
    Exercise(
        "matmul",
        "y = a @ b for matrices: which factor is transposed, and where",
        [
            Case("MatMul", ("a", "b"), _inputs(_normal(3, 4), _normal(4, 2)), np.matmul, graph=stages.matmul),
            Case("MatMul", ("a", "b"), _inputs(_normal(4, 4), _normal(4, 4)), np.matmul, graph=stages.matmul),
            Case("MatMul", ("a", "b"), _inputs(_normal(1, 5), _normal(5, 3)), np.matmul, graph=stages.matmul),
        ],
    ),
    Exercise(
        "exp_log",
        "y = exp(x) and y = log(x), elementwise: the chain rule in one line",
        [
            Case("Exp", ("x",), _inputs(_normal(3, 4)), np.exp, graph=stages.exp),
            Case("Log", ("x",), _inputs(_positive(3, 4)), np.log, graph=stages.log),
        ],
    ),
    Exercise(
        "ties",
        "z = maximum(a, b) and y = clamp(x, low, high): the gradient at ties and limits, as PyTorch",
        [
            Case("Maximum", ("a", "b"), _inputs(_whole(1, 3, 4), _whole(1, 3, 4)), np.maximum, graph=stages.maximum),
            Case("Maximum", ("a", "b"), _inputs(_whole(1, 2, 3, 4), _whole(1, 4)), np.maximum, graph=stages.maximum),
            Case("Clamp", ("x",), _inputs(_whole(2, 4, 5)), _clamp, dict(low=-1.0, high=1.0), graph=stages.clamp),
            # size-1 axes stretched on both sides (and one added in front): the sums a broadcast asks for, at ties
            Case("Maximum", ("a", "b"), _inputs(_whole(1, 3, 1), _whole(1, 2, 1, 4)), np.maximum, graph=stages.maximum),
        ],
    ),
    _reduction("sum", "Sum", np.sum, stages.sum_, "copy the gradient back along the summed axes"),
    _reduction("mean", "Mean", np.mean, stages.mean, "like sum, with one factor", hint=_mean_hint),
    Exercise(
        "var",
        "y = x.var(axis, keepdims, correction): two paths to each x, and one of them cancels",
        [
            Case("Var", ("x",), _inputs(_normal(3, 5, 6)), _var, settings, graph=stages.var)
            for settings in [*_REDUCTION_CASES, dict(axis=(0, 2), correction=0), dict(axis=-1, correction=2)]
        ]
        + [Case("Var", ("x",), _inputs(_normal(3, 1, 5)), _var, dict(axis=(1, 2)), graph=stages.var)],
        shape_hint=_REDUCTION_SHAPE_HINT,
        hint=_var_hint,
        error_hint=_reduction_error_hint,
    ),
    Exercise(
        "softmax",
        "y = softmax(x) along an axis: every output depends on every input of its row",
        [
            Case("Softmax", ("x",), _inputs(_normal(3, 5)), _softmax, dict(axis=-1), graph=stages.softmax),
            Case("Softmax", ("x",), _inputs(_normal(4, 3)), _softmax, dict(axis=0), graph=stages.softmax),
            Case("Softmax", ("x",), _inputs(_normal(2, 3, 4)), _softmax, dict(axis=1), graph=stages.softmax),
            Case("Softmax", ("x",), _inputs(_normal(4, 4)), _softmax, dict(axis=-1), graph=stages.softmax),
            Case("Softmax", ("x",), _inputs(_near_1000(3, 4)), _softmax, dict(axis=-1), graph=stages.softmax),
        ],
    ),
    Exercise(
        "log_softmax_nll",
        "loss = mean over rows of -log softmax(logits)[target]: cross-entropy",
        [
            Case(
                "LogSoftmaxNLL",
                ("logits", "targets"),
                _inputs(_normal(4, 5), lambda rng: rng.integers(0, 5, 4)),
                _log_softmax_nll,
                graph=stages.log_softmax_nll,
            ),
            Case(
                "LogSoftmaxNLL",
                ("logits", "targets"),
                _inputs(_normal(3, 7), lambda rng: np.array([6, 0, 6])),
                _log_softmax_nll,
                graph=stages.log_softmax_nll,
            ),
            Case(
                "LogSoftmaxNLL",
                ("logits", "targets"),
                _inputs(_normal(1, 6), lambda rng: np.array([2])),
                _log_softmax_nll,
                graph=stages.log_softmax_nll,
            ),
            Case(
                "LogSoftmaxNLL",
                ("logits", "targets"),
                _inputs(_near_1000(3, 5), lambda rng: np.array([4, 0, 4])),
                _log_softmax_nll,
                graph=stages.log_softmax_nll,
            ),
        ],
        shape_hint="gx has the logits' shape (N, V); the loss is one number, so gy is a 0-d array.",
        hint=_nll_hint,
    ),
    Exercise(
        "rms_norm",
        "y = x / sqrt(mean(x^2) + eps) * weight over the last axis",
        [
            Case(
                "RMSNorm", ("x", "weight"), _inputs(x, _weight(width)), _rms_norm, dict(eps=eps), graph=stages.rms_norm
            )
            for x, width, eps in [
                (_normal(3, 5), 5, 1e-5),
                (_normal(2, 3, 4), 4, 1e-5),
                (_rows_of_scale(1.0, 1e-3, 3e-3, width=6), 6, 1e-5),  # tiny variance: where eps sits shows
                (_normal(2, 4), 4, 0.5),
            ]
        ],
    ),
    Exercise(
        "embedding",
        "y = weight[ids]: repeated ids add up in the table's gradient",
        [
            Case(
                "Embedding",
                ("ids", "weight"),
                _inputs(lambda rng: np.array([4, 0, 2]), _normal(5, 3)),
                lambda ids, weight: weight[ids],
                graph=stages.embedding,
            ),
            Case(
                "Embedding",
                ("ids", "weight"),
                _inputs(lambda rng: np.array([[1, 3, 1], [0, 3, 1]]), _normal(6, 4)),
                lambda ids, weight: weight[ids],
                graph=stages.embedding,
            ),
        ],
        shape_hint="The table's gradient has the table's shape (V, C), whatever the shape of ids: start from "
        "np.zeros(self.weight_shape) and add each gy[n] into row ids[n].",
        hint=_embedding_hint,
    ),
    Exercise(
        "causal_attention",
        "y = softmax(q k^T / sqrt(D) + causal mask) v: matmul and softmax together",
        [
            Case(
                "CausalAttention",
                ("q", "k", "v"),
                _inputs(*[_normal(1, 2, 3, 5)] * 3),
                _causal_attention,
                graph=stages.causal_attention,
            ),
            Case(
                "CausalAttention",
                ("q", "k", "v"),
                _inputs(*[_normal(1, 3, 4, 4)] * 3),
                _causal_attention,
                graph=stages.causal_attention,
            ),
            Case(  # a score of 1,000: exp overflows in float64 unless the row's max is subtracted first
                "CausalAttention",
                ("q", "k", "v"),
                _scores_up_to_1000(1, 2, 4, 4),
                _causal_attention,
                graph=stages.causal_attention,
            ),
        ],
        hint=_attention_hint,
        probe=_causality_probe,
    ),
    Exercise("adamw", "one AdamW step in NumPy: moments, bias correction, decoupled weight decay", kind="adamw"),
]

BY_NAME = {exercise.name: exercise for exercise in EXERCISES}
