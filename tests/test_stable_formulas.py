"""Stable formulas (issue 32, item 3): sigmoid, log-sigmoid, softplus, the binary cross entropies and var/std
with correction >= N agree with PyTorch over the whole range, x from -1000 to 1000, in float32 and float64.

Values and gradients are compared element for element with PyTorch's in the same dtype: within a few units
of the dtype's epsilon, relative (the largest difference seen is given with each tolerance, which adds 2 eps
for another machine's last bits: .ci/run runs this under TENSORLAB_ROUNDOFF_CHAOS), and within the smallest
normal number absolute, where a result underflows (PyTorch's float32
sigmoid(-90) is 0, tensorlab's the subnormal 8.2e-40). var and std where n - correction <= 0 give PyTorch's
gradient: the same NaN, infinities and signed zeros, the finite values within 4 eps.
"""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import tensorlab
import tensorlab.functional as F
from tensorlab.ops import elementwise as _ew
from tensorlab.ops.axes import expand_reduced
from tensorlab.ops.losses import BinaryCrossEntropy
from tensorlab.ops.reduce import Var

# the whole range, and the points where a formula breaks: exp overflows (88.7, 709.8), float32's and
# float64's sigmoid rounds to 1 (16.6, 36.7) or underflows (-87.3, -103.3, -708.4, -745.1), 0 and its neighbours
X = np.concatenate(
    [np.linspace(-1000, 1000, 4001), [-745.2, -709, -103.3, -90, -88.7, -20, -17.5, -1e-8, 0, 1e-8, 17.5, 36.7, 88.7]]
)
T = np.resize([0.0, 0.25, 1.0], X.shape)  # targets for the cross entropies
P = torch.sigmoid(torch.from_numpy(X)).numpy()  # probabilities for binary_cross_entropy, 0 and 1 included

# label: (tensorlab's function of the tensors, PyTorch's, the arrays, tolerance in epsilons)
CASES = {
    "sigmoid": (F.sigmoid, torch.sigmoid, [X], 6),  # 2.02 eps seen (float32, x = -10)
    "logsigmoid": (F.logsigmoid, TF.logsigmoid, [X], 5),  # 1.34 eps seen
    "softplus": (F.softplus, TF.softplus, [X], 5),  # 1.34 eps seen
    "binary_cross_entropy_with_logits": (
        lambda x, t: F.binary_cross_entropy_with_logits(x, t, reduction="none"),
        lambda x, t: TF.binary_cross_entropy_with_logits(x, t, reduction="none"),
        [X, T],
        8,  # 2.74 eps seen, in float32's gradient at x = 1.5
    ),
    "binary_cross_entropy": (
        lambda p, t: F.binary_cross_entropy(p, t, reduction="none"),
        lambda p, t: TF.binary_cross_entropy(p, t, reduction="none"),
        [P, T],
        4,  # 1 eps seen
    ),
    "binary_cross_entropy of sigmoid": (  # the composite the issue met, where float32's sigmoid is normal
        lambda x, t: F.binary_cross_entropy(F.sigmoid(x), t, reduction="none"),
        lambda x, t: TF.binary_cross_entropy(torch.sigmoid(x), t, reduction="none"),
        [X[np.abs(X) <= 88], T[np.abs(X) <= 88]],
        7,  # 2.48 eps seen, beside the slack below
    ),
}


def sigmoid_slack(x, t, dtype):
    """What a few ulps of sigmoid's own rounding move the composite by (its condition, not its formula). p = sigmoid(x)
    carries 4 eps p of error on any machine; 1 - p then keeps a relative error of 4 eps p / (1 - p), which the loss
    (through log(1 - p)) and its gradient (through p (1 - p)) inherit: at x = 6.5 in float32, 1.2e-5 of the loss,
    in PyTorch too. Where 1 - p is within 16 eps of the rounding, the composite has no digits left to compare."""
    eps = np.finfo(dtype).eps
    p = 1 / (1 + np.exp(-x))
    with np.errstate(divide="ignore", invalid="ignore"):
        loss = np.abs(t * np.log(p) + (1 - t) * np.log1p(-p))
        relative = 4 * eps * (p / (1 - p) + 1)
        slack = {
            "value": relative * loss,
            "gradient 0": relative * np.abs(p - t),
            "gradient 1": relative,  # -log(p / (1 - p)): the relative error of 1 - p, as an absolute one
        }
    return {what: np.where(1 - p < 16 * eps, np.inf, each) for what, each in slack.items()}


def sigmoid_gradient_slack(x, dtype):
    """sigmoid's backward is y (1 - y) from the y forward kept: y's few ulps (4 eps y on any machine) become the
    gradient's absolute error, all of it relative where 1 - y is small (float32 x = 5: 1e-5 relative)."""
    with np.errstate(over="ignore"):  # exp(1000): sigmoid 0, as it should be
        return {"gradient 0": 4 * np.finfo(dtype).eps / (1 + np.exp(-x))}


SLACK = {"binary_cross_entropy of sigmoid": sigmoid_slack, "sigmoid": sigmoid_gradient_slack}


def close(ours, theirs, dtype, eps_units, slack=0.0):
    """Indices where ours and theirs differ by more than eps_units relative plus `slack`, or the smallest normal
    absolute (NaN against NaN and equal infinities agree)."""
    info = np.finfo(dtype)
    ours, theirs = ours.astype(np.float64), theirs.astype(np.float64)
    same = (ours == theirs) | (np.isnan(ours) & np.isnan(theirs))
    with np.errstate(invalid="ignore"):  # inf - inf: judged by `same`
        within = np.abs(ours - theirs) <= eps_units * info.eps * np.abs(theirs) + slack + info.tiny
    return np.flatnonzero(~(same | within))


def differences(label, dtype):
    ours_call, theirs_call, arrays, eps_units = CASES[label]
    ours_in = [tensorlab.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    theirs_in = [torch.from_numpy(a.astype(dtype)).requires_grad_() for a in arrays]
    ours, theirs = ours_call(*ours_in), theirs_call(*theirs_in)
    ours.backward(np.ones(ours.shape, dtype))
    theirs.backward(torch.ones_like(theirs))
    found = []
    pairs = [("value", ours.numpy(), theirs.detach().numpy())]
    pairs += [(f"gradient {k}", a.grad, t.grad.numpy()) for k, (a, t) in enumerate(zip(ours_in, theirs_in))]
    x = arrays[0]
    slack = SLACK[label](*arrays, dtype) if label in SLACK else {}
    for what, a, t in pairs:
        wrong = close(a, t, dtype, eps_units, slack.get(what, 0.0))
        found += [f"{label} {dtype} {what} at {x[i]}: {a[i]}, PyTorch {t[i]}" for i in wrong]
    return found


@pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("label", CASES)
def test_agrees_with_pytorch_from_minus_1000_to_1000(label, dtype):
    found = differences(label, dtype)
    assert not found, f"{len(found)} differences, e.g.\n" + "\n".join(found[:10])


def test_the_issues_values():
    x = tensorlab.tensor(np.array([-20.0], np.float32), requires_grad=True)
    eps = float(np.finfo(np.float32).eps)  # within 4 eps: the formula's 2, and another machine's last bits
    exact = 1 / (1 + math.exp(20))  # 2.0611536e-09
    assert abs(F.sigmoid(x).item() - exact) <= 4 * eps * exact
    y = F.log(F.sigmoid(x))  # finite: -20, where the tanh form gave sigmoid 0 and log -inf
    assert abs(y.item() + 20) <= 4 * eps * 20
    y.backward()
    assert abs(x.grad[0] - 1.0) <= 4 * eps
    assert abs(F.logsigmoid(tensorlab.tensor(np.array([-1000.0]))).item() + 1000) <= 4e-16 * 1000


def _sigmoid_through_tanh(self, x):  # the old form: 0 for float32 x below about -17
    self.y = 0.5 * (np.tanh(0.5 * x) + 1)
    return self.y


_BCE_BACKWARD = BinaryCrossEntropy.backward


def _target_gradient_through_two_logs(self, gy):  # log(1 - p) - log p: loses the digits near p = 1/2
    gp, _ = _BCE_BACKWARD(self, gy)
    with np.errstate(divide="ignore"):
        return gp, self.loss_grad(gy) * (np.log1p(-self.p) - np.log(self.p))


@pytest.mark.parametrize(
    "label, cls, name, wrong",
    [
        ("sigmoid", _ew.Sigmoid, "forward", _sigmoid_through_tanh),
        ("binary_cross_entropy", BinaryCrossEntropy, "backward", _target_gradient_through_two_logs),
    ],
)
def test_a_formula_that_loses_digits_is_caught(label, cls, name, wrong, monkeypatch):
    monkeypatch.setattr(cls, name, wrong)
    assert differences(label, "float32") or differences(label, "float64")


# ----- var and std where n - correction <= 0 ------------------------------------------------------------------

VAR_CASES = [  # (shape, axis, correction): over all axes and over some, n - correction 0 and below
    (shape, axis, correction)
    for shape, axes in [((1,), [None, 0]), ((2,), [None, 0]), ((2, 3), [1, None]), ((1, 3), [0])]
    for axis in axes
    for correction in (1, 2, 3)
]


def var_gradients(op, shape, axis, correction):
    x = np.arange(1.0, 1.0 + math.prod(shape)).reshape(shape)
    ours_in, theirs_in = tensorlab.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ours = getattr(F, op)(ours_in, axis=axis, correction=correction)
    theirs = getattr(theirs_in, op)(**({} if axis is None else {"dim": axis}), correction=correction)
    ours.backward(np.ones(ours.shape))
    theirs.backward(torch.ones_like(theirs))
    return ours.numpy(), theirs.detach().numpy(), ours_in.grad, theirs_in.grad.numpy()


@pytest.mark.filterwarnings("ignore:.*degrees of freedom is <= 0")
@pytest.mark.parametrize("op", ["var", "std"])
@pytest.mark.parametrize("shape, axis, correction", VAR_CASES)
def test_var_and_std_past_the_degrees_of_freedom_are_pytorchs_to_the_sign_of_zero(op, shape, axis, correction):
    value, their_value, grad, their_grad = var_gradients(op, shape, axis, correction)
    for ours, theirs in ((value, their_value), (grad, their_grad)):  # the same NaN, infinities and signed zeros
        assert close(ours, theirs, np.float64, 4).size == 0, (ours, theirs)
        assert (np.signbit(ours[theirs == 0]) == np.signbit(theirs[theirs == 0])).all(), (ours, theirs)


@pytest.mark.filterwarnings("ignore:.*degrees of freedom is <= 0")
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_a_var_gradient_that_divides_by_max_0_is_caught(monkeypatch):
    """The planted mistake: the old backward, 2 (x - m) / max(n - c, 0): NaN where PyTorch gives -0."""

    def divides_by_max_0(self, gy):
        with np.errstate(divide="ignore", invalid="ignore"):
            return expand_reduced(gy, self.x_shape, self.axes) * (2 * self.centered / max(self.dof, 0))

    monkeypatch.setattr(Var, "backward", divides_by_max_0)
    with pytest.raises(AssertionError):
        test_var_and_std_past_the_degrees_of_freedom_are_pytorchs_to_the_sign_of_zero("var", (1,), 0, 2)


@pytest.mark.parametrize("op", ["var", "std"])
@pytest.mark.parametrize("value, n", [(-1e30, 3), (0.1, 3), (1 / 3, 7), (7e-300, 5)])
def test_var_of_equal_values_is_0_as_pytorchs(op, value, n):
    """Equal float64 values: sum / n may round off their value (-1e30 three times: a variance of 5.9e28); the
    corrected mean gives it back, and with it PyTorch's 0."""
    x = np.full((2, n), value)
    ours = getattr(F, op)(tensorlab.tensor(x), axis=1).numpy()
    theirs = getattr(torch.tensor(x), op)(dim=1).numpy()
    assert (ours == theirs).all() and (theirs == 0).all(), (ours, theirs)
