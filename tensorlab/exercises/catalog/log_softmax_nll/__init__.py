"""log_softmax_nll: loss = mean over rows of -log softmax(logits)[target]: cross-entropy."""

import numpy as np

import tensorlab.functional as F
from tensorlab.exercises.check import Exercise
from tensorlab.exercises.gradient import Case, no_settings
from tensorlab.exercises.inputs import inputs, near_1000, normal
from tensorlab.exercises.slips import Slip, attempt


def graph(logits, targets):
    log_p = F.log_softmax(logits, axis=-1)
    picked = log_p[np.arange(len(targets.data)), targets.data]
    return -F.mean(picked), {"log_p": log_p}


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
            attempt(lambda s: {"logits": s.gy * (s.value["log_p"] - _one_hot(s)) / len(s.x["targets"])}),
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
            attempt(lambda s: {"logits": s.gy * (np.exp(s.value["log_p"]) + _one_hot(s)) / len(s.x["targets"])}),
        ),
        Slip(
            "nll_divided_by_classes",
            "You divided by the number of classes (the row length) where the loss averages over the rows: the 1/N "
            "of the mean counts rows, N = len(targets).",
            attempt(lambda s: {"logits": s.grad["logits"] * len(s.x["targets"]) / s.value["log_p"].shape[-1]}),
        ),
    ]
    + [
        Slip(
            f"nll_target_neighbour_{shift:+d}",
            f"The 1 is subtracted at the target's {side} neighbour, column targets[n] {shift:+d}, instead of at "
            "column targets[n] itself: index the one-hot with the targets unchanged.",
            attempt(lambda s, shift=shift: _nll_at(s, lambda t, n: (np.arange(n), t + shift))),
        )
        for shift, side in ((1, "right-hand"), (-1, "left-hand"))
    ]
    + [
        Slip(
            "nll_every_row_at_each_target",
            "You subtracted 1 in every row at each target's column (gx[:, targets]): the one-hot has a single 1 per "
            "row n, at column targets[n]: index with the pair (np.arange(N), targets).",
            attempt(lambda s: _nll_at(s, lambda t, n: (slice(None), t))),
        ),
        Slip(
            "nll_one_hot_at_row_index",
            "Your 1 sits at column n of row n (the diagonal), not at the target: row n's 1 belongs at column "
            "targets[n].",
            attempt(lambda s: _nll_at(s, lambda t, n: (np.arange(n), np.arange(n)))),
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


def _nll_hint(inputs, name, report, context):
    """Only the target entries wrong: the one-hot term (softmax minus one-hot) is off."""
    targets = inputs[1]
    at_targets = np.zeros_like(report.wrong)
    at_targets[np.arange(len(targets)), targets] = True
    if report.wrong.any() and not (report.wrong & ~at_targets).any():
        return [
            "Only elements at the targets (row n, column targets[n]) are wrong; the rest of each row is "
            "right. Check the one-hot term there: the gradient of -log softmax(x)[t] is softmax(x) minus "
            "1 at the target, and the mean's gy / N scales the 1 as it scales the rest of the row: "
            "gy * (softmax(x) - onehot) / N."
        ]
    return []


def _drawn_rows(rng):
    """1 to 5 rows of 2 to 7 logits spread by 10 (probabilities down to 1e-9: a p clipped to 1e-7 shows), and targets
    other than each row's largest logit (a target of p = 1 - 1e-9 makes every gradient of its row about 1e-9, below
    the rounding of p - 1)."""
    n, v = int(rng.integers(1, 6)), int(rng.integers(2, 8))
    logits = 10.0 * rng.standard_normal((n, v))
    targets = (logits.argmax(axis=1) + rng.integers(1, v, n)) % v
    return [logits, targets]


EXERCISE = Exercise(
    "log_softmax_nll",
    "loss = mean over rows of -log softmax(logits)[target]: cross-entropy",
    [
        Case(
            "LogSoftmaxNLL",
            ("logits", "targets"),
            inputs(logits, targets),
            graph,
            slips=LOG_SOFTMAX_NLL,
            shape_hint="gx has the logits' shape (N, V); the loss is one number, so gy is a 0-d array.",
            hint=_nll_hint,
        )
        for logits, targets in [
            (normal(4, 5), lambda rng: rng.integers(0, 5, 4)),
            (normal(3, 7), lambda rng: np.array([6, 0, 6])),
            (normal(1, 6), lambda rng: np.array([2])),
            (near_1000(3, 5), lambda rng: np.array([4, 0, 4])),
        ]
    ]
    + [Case("LogSoftmaxNLL", ("logits", "targets"), _drawn_rows, graph, draw=no_settings, slips=LOG_SOFTMAX_NLL)],
)
