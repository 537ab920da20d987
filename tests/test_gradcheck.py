"""gradcheck itself: it passes correct ops, and its report on a wrong backward says exactly what is wrong."""

import re

import numpy as np
import pytest

import tensorlab
import tensorlab.functional as F
from tensorlab.gradcheck import GradcheckError, gradcheck
from tensorlab.ops.elementwise import Exp, Mul
from tensorlab.ops.softmax import Softmax


class FlippedMul(Mul):
    """A planted bug: the gradient of b has the wrong sign."""

    def backward(self, gy):
        ga, gb = super().backward(gy)
        return ga, -gb


class OneWrongElementExp(Exp):
    """A planted bug in a single element: gx[1, 2] is off by 0.5."""

    def backward(self, gy):
        gx = gy * self.y
        gx[1, 2] += 0.5
        return gx


class ZeroSoftmax(Softmax):
    """A planted bug a plain .sum() check cannot see: d(sum softmax)/dx is exactly 0."""

    def backward(self, gy):
        return gy * 0


def leaf(data, backend, requires_grad=True):
    return tensorlab.tensor(np.asarray(data, dtype=np.float64), requires_grad=requires_grad, device=backend.device)


def test_gradcheck_passes_correct_ops_and_says_so(backend):
    a, b = leaf(np.linspace(-1, 1, 6).reshape(2, 3), backend), leaf([0.5, -2.0, 1.5], backend)
    report = gradcheck(lambda a, b: F.softmax(a * b) @ F.tanh(b), [a, b], names=["a", "b"])
    assert report.passed
    text = str(report)
    assert text.startswith("gradcheck passed")
    assert "input 'a' of shape (2, 3): ok" in text and "input 'b' of shape (3,): ok" in text


def test_report_on_a_flipped_sign_names_the_input_the_index_and_both_values(backend):
    a = leaf([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.5]], backend)
    b = leaf([[0.5, -1.0, 2.0], [1.5, 3.0, -0.25]], backend)
    with pytest.raises(GradcheckError) as failure:
        gradcheck(lambda a, b: FlippedMul()(a, b), [a, b], names=["a", "b"])
    report = failure.value.report
    assert isinstance(failure.value, AssertionError)
    text = str(failure.value)
    assert text.startswith("gradcheck FAILED: the gradient of 1 of 2 inputs is wrong")
    assert "input 'a' of shape (2, 3): ok" in text
    assert "input 'b' of shape (2, 3): 6 of 6 gradient elements are wrong" in text

    # the true gradient of b is u * a (u the random upstream gradient); the planted one is -u * a
    wrong = report.inputs[1]
    assert len(wrong.worst) == 5
    for index, analytic, numeric in wrong.worst:
        assert analytic == pytest.approx(-numeric, rel=1e-6)
        line = next(l for l in text.splitlines() if l.strip().startswith(str(index)))
        assert re.search(
            rf"{re.escape(str(index))}\s+{re.escape(f'{analytic:.8g}')}\s+{re.escape(f'{numeric:.8g}')}", line
        ), line
    assert "analytic (yours)" in text and "numeric (expected)" in text


def test_report_pinpoints_a_single_wrong_element(backend):
    x = leaf(np.linspace(-1, 1, 12).reshape(3, 4), backend)
    report = gradcheck(lambda x: OneWrongElementExp()(x), [x], names=["x"], raise_on_failure=False)
    assert not report.passed
    text = str(report)
    assert "input 'x' of shape (3, 4): 1 of 12 gradient elements are wrong" in text
    index, analytic, numeric = report.inputs[0].worst[0]
    assert index == (1, 2)
    assert analytic - numeric == pytest.approx(0.5, abs=1e-6)
    rows = [l for l in text.splitlines() if re.match(r"\s+\(\d", l)]
    assert len(rows) == 1 and rows[0].strip().startswith("(1, 2)")


def test_a_backward_that_returns_zeros_is_caught_thanks_to_the_random_upstream_gradient(backend):
    x = leaf(np.linspace(-1, 2, 8).reshape(2, 4), backend)
    with pytest.raises(GradcheckError, match="input '0' of shape \\(2, 4\\): 8 of 8 gradient elements are wrong"):
        gradcheck(lambda x: ZeroSoftmax()(x), [x])
    # with a plain .sum() the true gradient is 0 and the bug would pass unseen
    assert gradcheck(lambda x: F.sum(ZeroSoftmax()(x)), [x]).passed


def test_only_inputs_that_require_grad_are_checked_and_integer_inputs_pass_through(backend):
    ids = tensorlab.tensor(np.array([[0, 2], [2, 1]]), device=backend.device)
    weight = leaf(np.arange(6.0).reshape(3, 2) / 6, backend)
    constant = leaf(np.ones((2, 2, 2)), backend, requires_grad=False)
    report = gradcheck(lambda i, w, c: F.embedding(i, w) * c, [ids, weight, constant])
    assert [r.name for r in report.inputs] == ["'1'"]


def test_float32_inputs_are_checked_in_float64(backend):
    x = tensorlab.tensor(np.linspace(-2, 2, 10, dtype=np.float32), requires_grad=True, device=backend.device)
    seen = []

    def fn(x):
        seen.append(x.dtype)
        return F.gelu(x)

    assert gradcheck(fn, [x]).passed
    assert set(seen) == {np.dtype(np.float64)}
    assert x.grad is None  # the caller's tensor is untouched


def test_a_transposed_non_contiguous_input_is_checked_correctly(backend):
    x = tensorlab.tensor(np.arange(12.0).reshape(4, 3).T / 12, requires_grad=True, device=backend.device)
    assert gradcheck(lambda x: x * x, [x]).passed


def test_gradcheck_argument_errors(backend):
    x = leaf([1.0, 2.0], backend, requires_grad=False)
    with pytest.raises(ValueError, match="gradcheck: no input requires grad"):
        gradcheck(lambda x: x * 2.0, [x])
    with pytest.raises(TypeError, match="gradcheck: fn must return a Tensor"):
        gradcheck(lambda x: 3.0, [leaf([1.0], backend)])


# ----- non-finite gradients: NaN fails every comparison, so `error > tolerance` alone would pass it ----------
class NaNSoftmax(Softmax):
    def backward(self, gy):
        return gy * np.nan


class OneInfMatMulGrad:
    """A matmul whose gradient of b holds one inf and whose gradient of a is all NaN."""

    @staticmethod
    def make():
        from tensorlab.ops.matmul import MatMul

        class Broken(MatMul):
            def backward(self, gy):
                ga, gb = super().backward(gy)
                gb = gb.copy()
                gb[1, 0] = np.inf
                return ga * np.nan, gb

        return Broken()


def test_an_all_nan_softmax_backward_fails_and_is_named(backend):
    x = leaf(np.linspace(-1, 1, 8).reshape(2, 4), backend)
    report = gradcheck(lambda x: NaNSoftmax()(x), [x], names=["x"], raise_on_failure=False)
    assert not report.passed and report.inputs[0].wrong.all()
    assert "your gradient for 'x' has NaN at (0, 0), (0, 1), (0, 2), (0, 3), (1, 0) and 3 more" in str(report)


def test_nan_and_inf_in_a_matmul_backward_fail_each_input_by_name(backend):
    a, b = leaf(np.ones((2, 3)) / 3, backend), leaf(np.arange(6.0).reshape(3, 2) / 6, backend)
    report = gradcheck(lambda a, b: OneInfMatMulGrad.make()(a, b), [a, b], names=["a", "b"], raise_on_failure=False)
    text = str(report)
    assert [r.passed for r in report.inputs] == [False, False]
    assert "your gradient for 'a' has NaN at (0, 0)" in text
    assert "your gradient for 'b' has inf at (1, 0)" in text
    assert int(report.inputs[1].wrong.sum()) == 1  # the other five elements of gb are right


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
def test_a_function_that_is_not_finite_fails_on_the_numeric_side(backend):
    x = leaf([1.0, 0.0, 2.0], backend)  # sqrt at 0: the nudge to -1e-6 gives NaN
    report = gradcheck(lambda x: F.sqrt(x), [x], names=["x"], raise_on_failure=False)
    assert not report.passed
    assert "the numeric gradient for 'x' has NaN at (1,)" in str(report)


def test_a_report_left_at_the_end_of_a_notebook_cell_reads_as_its_print():
    """Jupyter shows repr() of a cell's last value: the report, not <GradcheckReport at 0x...>."""
    x = tensorlab.tensor(np.random.default_rng(0).standard_normal((2, 3)), requires_grad=True)
    report = gradcheck(lambda x: F.softmax(x, axis=-1), [x])
    assert repr(report) == str(report) and repr(report).startswith("gradcheck passed\n(float64, central differences")
    assert repr(report.inputs[0]) == str(report.inputs[0]) and "of shape (2, 3): ok" in repr(report.inputs[0])


def test_a_failed_report_left_at_the_end_of_a_cell_shows_its_verdict_and_numbers():
    """IPython shows repr() (through its pretty printer): the verdict, the rule, and the wrong element's numbers."""
    pretty = pytest.importorskip("IPython.lib.pretty").pretty
    x = tensorlab.tensor(np.linspace(-1, 1, 12).reshape(3, 4), requires_grad=True)
    report = gradcheck(lambda x: OneWrongElementExp()(x), [x], names=["x"], raise_on_failure=False)
    shown = pretty(report)
    assert shown == str(report) == repr(report)
    assert shown.startswith("gradcheck FAILED: the gradient of 1 of 1 inputs is wrong\n(float64, central differences")
    assert "input 'x' of shape (3, 4): 1 of 12 gradient elements are wrong" in shown
    assert f"max abs error {report.inputs[0].max_abs_error:.3g}" in shown
    assert re.search(r"^\s+\(1, 2\)\s", shown, re.M)
    assert pretty(report.inputs[0]) == str(report.inputs[0])
