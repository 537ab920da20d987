"""Check a backward against finite differences, and say in plain words what is wrong.

For a function f and inputs x, gradcheck
1. copies every input to float64 (float32 rounding would drown the comparison),
2. draws a random upstream gradient u of f's output shape and forms the scalar
   L = sum(f(x) * u)  (with a plain sum, softmax's true gradient is exactly zero,
   so a backward that returns zeros would pass),
3. takes the analytic gradient dL/dx from backward(),
4. estimates every element of it numerically with central differences
       dL/dx_i ~ (L(x + eps e_i) - L(x - eps e_i)) / (2 eps),
5. compares them element by element: |analytic - numeric| <= atol + rtol * |numeric|.
   A NaN or inf on either side is wrong whatever the tolerance (NaN fails every comparison,
   so "not greater than the tolerance" would pass it): the report names those elements first.
"""

import numpy as np

from tensorlab import backend
from tensorlab.tensor import Tensor, no_grad

WORST_SHOWN = 5


class GradcheckError(AssertionError):
    """Raised when an analytic gradient disagrees with the finite-difference one."""

    def __init__(self, report):
        super().__init__(str(report))
        self.report = report


class InputReport:
    """How one input's analytic gradient compares with the numeric one."""

    def __init__(self, name, analytic, numeric, atol, rtol):
        self.name, self.analytic, self.numeric = name, analytic, numeric
        self.nonfinite = ~np.isfinite(analytic) | ~np.isfinite(numeric)
        with np.errstate(invalid="ignore", over="ignore"):
            error = np.where(self.nonfinite, np.inf, np.abs(analytic - numeric))
        self.abs_error = error
        self.rel_error = error / np.maximum(np.abs(np.nan_to_num(numeric)), 1e-12)
        self.wrong = self.nonfinite | (error > atol + rtol * np.abs(np.nan_to_num(numeric)))
        self.max_abs_error = float(error[~self.nonfinite].max(initial=0.0))
        # relative error only where the absolute one is above noise, so near-zero values don't dominate
        self.max_rel_error = float(self.rel_error[~self.nonfinite & (error > atol)].max(initial=0.0))
        # the wrong elements only: non-finite ones first, then furthest beyond the tolerance
        beyond = np.where(self.nonfinite, np.inf, error - rtol * np.abs(np.nan_to_num(numeric)))
        order = [k for k in np.argsort(-beyond, axis=None, kind="stable") if self.wrong.flat[k]]
        self.worst = [
            (
                tuple(int(i) for i in np.unravel_index(k, analytic.shape)),
                float(analytic.flat[k]),
                float(numeric.flat[k]),
            )
            for k in order[:WORST_SHOWN]
        ]

    def nonfinite_lines(self):
        """'your gradient for 'x' has NaN at (0, 3), (1, 2)': one line per side that is not finite."""
        lines = []
        for side, values in (("your gradient", self.analytic), ("the numeric gradient", self.numeric)):
            found = [
                f"{what} at {_listed(np.argwhere(test(values)))}"
                for what, test in (("NaN", np.isnan), ("inf", np.isinf))
                if test(values).any()
            ]
            if found:
                why = (
                    ""
                    if side == "your gradient"
                    else " (the function itself is not finite near these inputs: gradcheck cannot judge them)"
                )
                lines.append(f"{side} for {self.name} has {' and '.join(found)}{why}")
        return lines

    @property
    def passed(self):
        return not self.wrong.any()

    def __str__(self):
        shape = tuple(self.analytic.shape)
        if self.passed:
            return f"input {self.name} of shape {shape}: ok (max abs error {self.max_abs_error:.1e})"
        errors = (
            ""
            if self.nonfinite.all()
            else f"; max abs error {self.max_abs_error:.3g}, max rel error {self.max_rel_error:.3g}"
            + (" (of the finite ones)" if self.nonfinite.any() else "")
        )
        lines = [
            f"input {self.name} of shape {shape}: {int(self.wrong.sum())} of {self.wrong.size} "
            f"gradient elements are wrong{errors}"
        ]
        lines += ["    " + line for line in self.nonfinite_lines()]
        lines.append(f"    {'element':<16}{'analytic (yours)':>20}{'numeric (expected)':>22}{'difference':>14}")
        for index, a, n in self.worst:
            lines.append(f"    {str(index):<16}{a:>20.8g}{n:>22.8g}{a - n:>14.3g}")
        return "\n".join(lines)

    __repr__ = __str__  # a report left at the end of a notebook cell reads as print(report) does


class GradcheckReport:
    """The result of `gradcheck`: one InputReport per checked input."""

    def __init__(self, inputs, eps, atol, rtol):
        self.inputs, self.eps, self.atol, self.rtol = inputs, eps, atol, rtol

    @property
    def passed(self):
        return all(r.passed for r in self.inputs)

    def __str__(self):
        failed = sum(not r.passed for r in self.inputs)
        verdict = (
            "gradcheck passed"
            if not failed
            else f"gradcheck FAILED: the gradient of {failed} of {len(self.inputs)} inputs is wrong"
        )
        rule = (
            f"(float64, central differences with eps={self.eps:g}; an element is wrong when "
            f"|analytic - numeric| > {self.atol:g} + {self.rtol:g} * |numeric|)"
        )
        return "\n".join([verdict, rule] + [str(r) for r in self.inputs])

    __repr__ = __str__  # `tl.gradcheck(...)` at the end of a notebook cell shows the report, not an address


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, names=None, seed=0, raise_on_failure=True):
    """Compare fn's backward with central finite differences for every floating input that requires grad.

    `fn(*inputs)` must return a Tensor and be deterministic. Returns a GradcheckReport;
    raises GradcheckError (an AssertionError) describing the worst elements when an input fails.
    """
    tensors = [_float64_copy(x) for x in inputs]
    checked = [i for i, t in enumerate(tensors) if t.requires_grad]
    if not checked:
        raise ValueError("gradcheck: no input requires grad; create the inputs to check with requires_grad=True")
    names = names or [str(i) for i in range(len(tensors))]
    output = fn(*tensors)
    if not isinstance(output, Tensor) or not output.requires_grad:
        raise TypeError("gradcheck: fn must return a Tensor computed from the inputs that require grad")
    xp = backend.array_module(output.data)
    upstream = xp.asarray(np.random.default_rng(seed).standard_normal(output.shape))

    def loss():
        with no_grad():
            return float((fn(*tensors).data * upstream).sum())

    output.backward(upstream.copy())  # a copy: a faulty backward that edits gy in place must not change `upstream`
    reports = []
    for i in checked:
        t = tensors[i]
        analytic = np.zeros(t.shape) if t.grad is None else backend.to_device(t.grad, "cpu")
        numeric = _central_differences(loss, t.data, eps)
        reports.append(InputReport(repr(names[i]), analytic, numeric, atol, rtol))
    report = GradcheckReport(reports, eps, atol, rtol)
    if raise_on_failure and not report.passed:
        raise GradcheckError(report)
    return report


def _listed(indices, shown=WORST_SHOWN):
    """'(0, 3), (1, 2) and 4 more' for an array of indices as np.argwhere gives them."""
    text = ", ".join(str(tuple(int(i) for i in index)) for index in indices[:shown])
    return text + (f" and {len(indices) - shown} more" if len(indices) > shown else "")


def _float64_copy(x):
    """A float64 leaf copy of a floating input (keeping requires_grad); other inputs unchanged."""
    if not isinstance(x, Tensor):
        return x
    if x.dtype.kind != "f":
        return Tensor(x.data)
    # C order: _central_differences nudges elements through a reshape(-1) view, which would be a
    # copy (and the nudges lost) for the F-ordered copy that astype makes of a transposed array
    return Tensor(x.data.astype(np.float64, order="C"), requires_grad=x.requires_grad)


def _central_differences(loss, data, eps):
    """dL/dx for every element of `data`, nudging it in place by +-eps."""
    numeric = np.zeros(data.shape)
    flat = data.reshape(-1)  # a view: writing into it changes `data`
    for k in range(flat.size):
        original = float(flat[k])
        flat[k] = original + eps
        plus = loss()
        flat[k] = original - eps
        minus = loss()
        flat[k] = original
        numeric.flat[k] = (plus - minus) / (2 * eps)
    return numeric
