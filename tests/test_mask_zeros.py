"""Masks give exact zeros (issue 32, item 2): a gradient that is 0 by the op's definition is selected with
`where`, never made by multiplying the upstream gradient by 0, so an inf or NaN upstream cannot leak into it.

Each op sends an upstream gradient of inf, of NaN and of a mix of both with finite values through its
backward, in float64 and float32, and its gradients must equal PyTorch's element for element (NaN where
PyTorch has NaN, the same infinities, the same zeros). The one documented difference: the max and min
reductions, where torch.amax multiplies too and gives NaN to the elements that are not the extreme;
tensorlab gives them 0 (docs/differences-from-pytorch.md).
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import tensorlab
import tensorlab.functional as F
from tensorlab.backend import to_device
from tensorlab.ops import elementwise as _ew
from tensorlab.ops.cross_entropy import CrossEntropy

X = np.array([[-1.0, 0.0, 1.0, 2.0], [2.0, 2.0, -3.0, 0.5]])
OTHER = np.array([[0.0, 0.0, 2.0, 2.0], [1.0, 2.0, -3.0, 3.0]])  # ties and losers both ways against X
MASK = np.array([[True, False, True, False], [False, False, True, True]])
TARGETS = np.array([2, -100])  # row 1 ignored

# label: (tensorlab's op, PyTorch's, the arrays both get: floating ones require a gradient)
CASES = {
    "relu": (F.relu, torch.relu, [X]),
    "clamp": (lambda x: F.clamp(x, -0.5, 1.0), lambda x: torch.clamp(x, -0.5, 1.0), [X]),
    "masked_fill": (lambda x: F.masked_fill(x, MASK, 0.0), lambda x: x.masked_fill(torch.from_numpy(MASK), 0.0), [X]),
    "masked_fill-wider-mask": (
        lambda x: F.masked_fill(x, MASK, 0.0),
        lambda x: x.masked_fill(torch.from_numpy(MASK), 0.0),
        [X[0]],
    ),
    "maximum": (F.maximum, torch.maximum, [X, OTHER]),
    "minimum": (F.minimum, torch.minimum, [X, OTHER]),
    "maximum-broadcast": (F.maximum, torch.maximum, [X, OTHER[0]]),
    "where": (lambda a, b: F.where(MASK, a, b), lambda a, b: torch.where(torch.from_numpy(MASK), a, b), [X, OTHER]),
    "cross_entropy-none": (
        lambda x, t: F.cross_entropy(x, t, reduction="none"),
        lambda x, t: TF.cross_entropy(x, t, reduction="none"),
        [X, TARGETS],
    ),
    "cross_entropy-mean": (F.cross_entropy, TF.cross_entropy, [X, TARGETS]),
    "cross_entropy-sum-smoothed": (
        lambda x, t: F.cross_entropy(x, t, reduction="sum", label_smoothing=0.1),
        lambda x, t: TF.cross_entropy(x, t, reduction="sum", label_smoothing=0.1),
        [X, TARGETS],
    ),
    "nll_loss-none": (
        lambda x, t: F.nll_loss(x, t, reduction="none"),
        lambda x, t: TF.nll_loss(x, t, reduction="none"),
        [X, TARGETS],
    ),
    "nll_loss-sum": (
        lambda x, t: F.nll_loss(x, t, reduction="sum"),
        lambda x, t: TF.nll_loss(x, t, reduction="sum"),
        [X, TARGETS],
    ),
    "max": (lambda x: F.max(x, axis=1), lambda x: x.amax(1), [X]),
    "min": (lambda x: F.min(x, axis=0), lambda x: x.amin(0), [X]),
    "max-all": (F.max, torch.amax, [X]),
}
REDUCTIONS = {"max", "min", "max-all"}  # torch.amax's NaN is a documented difference


def upstreams(shape):
    """Gradients from above: all inf, all NaN, and inf, NaN, -inf and finite values mixed."""
    mixed = np.resize(np.array([np.inf, 1.0, np.nan, -np.inf, 0.5]), shape)
    return {"inf": np.full(shape, np.inf), "nan": np.full(shape, np.nan), "mixed": mixed}


def gradients(label, dtype, upstream_kind):
    """(tensorlab's gradients, PyTorch's) of every floating input, for one upstream gradient."""
    ours_call, theirs_call, arrays = CASES[label]
    ours_in = [
        tensorlab.tensor(a.astype(dtype) if a.dtype.kind == "f" else a, requires_grad=a.dtype.kind == "f")
        for a in arrays
    ]
    theirs_in = [torch.from_numpy(a.astype(dtype) if a.dtype.kind == "f" else a) for a in arrays]
    for t in theirs_in:
        t.requires_grad_(t.is_floating_point())
    ours, theirs = ours_call(*ours_in), theirs_call(*theirs_in)
    upstream = upstreams(ours.shape)[upstream_kind].astype(dtype)
    ours.backward(upstream)
    theirs.backward(torch.from_numpy(upstream))
    floating = [(a, t) for a, t in zip(ours_in, theirs_in) if t.requires_grad]
    return [to_device(a.grad, "cpu") for a, _ in floating], [t.grad.numpy() for _, t in floating]


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # inf - inf where PyTorch has NaN
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("upstream_kind", ["inf", "nan", "mixed"])
@pytest.mark.parametrize("label", CASES)
def test_non_finite_upstream_gives_pytorchs_gradient_and_exact_zeros(label, upstream_kind, dtype):
    ours, theirs = gradients(label, dtype, upstream_kind)
    for k, (g, t) in enumerate(zip(ours, theirs)):
        if label in REDUCTIONS:  # PyTorch: NaN where the element is not the extreme; tensorlab: 0 (documented)
            losers = ~picked_by_value(label, dtype)
            assert (g[losers] == 0).all(), f"{label}, upstream {upstream_kind}: {g}"
            t = np.where(losers, 0, t)
        np.testing.assert_array_equal(g, t, err_msg=f"{label}, upstream {upstream_kind}, input {k}")


def picked_by_value(label, dtype):
    """Where x is the extreme of its reduction: the elements a max/min reduction passes the gradient to."""
    x = X.astype(dtype)
    axis = {"max": 1, "min": 0, "max-all": None}[label]
    extreme = (x.max if label != "min" else x.min)(axis=axis, keepdims=True)
    return x == extreme


def test_the_reductions_differ_from_pytorch_only_where_it_gives_nan():
    """The documented difference is real: torch.amax gives NaN to the losers, tensorlab 0."""
    ours, theirs = gradients("max", "float64", "inf")
    losers = ~picked_by_value("max", "float64")
    assert np.isnan(theirs[0][losers]).all() and (ours[0][losers] == 0).all()


def _relu_multiplies(self, gy):  # relu's backward as it was: gy * (x > 0), NaN for an inf gy at x <= 0
    return gy * self.passes


def _maximum_multiplies(self, gy):  # maximum's as it was: the share times gy, and gy - ga for b (inf - inf)
    a_wins = self.a > self.b if self.pick == "maximum" else self.a < self.b
    ga = gy * (a_wins.astype(gy.dtype) + (self.a == self.b).astype(gy.dtype) / 2)
    return ga, gy - ga


def _ignored_rows_multiplied(self, gy):  # cross_entropy's (reduction 'none') as it was: w * valid, inf * 0 = NaN
    w = gy.reshape(-1, 1) * self.valid[:, None]
    gx = self.p * w
    gx[self.rows, self.t] -= (1 - self.smoothing) * w[:, 0]
    return gx.reshape(self.logits_shape), None


@pytest.mark.parametrize(
    "label, cls, wrong",
    [
        ("relu", _ew.Relu, _relu_multiplies),
        ("maximum", _ew.Maximum, _maximum_multiplies),
        ("cross_entropy-none", CrossEntropy, _ignored_rows_multiplied),
    ],
)
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # the plants' inf * 0
def test_a_mask_by_multiplying_is_caught(label, cls, wrong, monkeypatch):
    monkeypatch.setattr(cls, "backward", wrong)
    with pytest.raises(AssertionError):
        test_non_finite_upstream_gives_pytorchs_gradient_and_exact_zeros(label, "inf", "float64")
