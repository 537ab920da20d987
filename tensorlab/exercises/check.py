"""Checking a student's backward: run it by hand first, then through gradcheck, then explain.

For every case of an exercise:
1. forward on the case's inputs, compared with the reference forward (the forward is given;
   an edited one is reported before any gradient is judged);
2. backward on a random gy, called directly: an exception, None, a Tensor, a wrong shape or
   dtype, or a gy changed in place is explained here, in the student's terms, before the
   engine would reject it (or, for gy changed in place, silently corrupt other gradients);
3. the same backward with 2 * gy: an answer that does not double ignores gy;
4. tensorlab.gradcheck (float64, central differences, random upstream gradient), and for a
   failed input the slips `diagnose` recognises, then gradcheck's own table.
"""
import numpy as np

from tensorlab.exercises import diagnose
from tensorlab.exercises.student import NotWritten, StudentError, describe_exception, find, load
from tensorlab.gradcheck import gradcheck
from tensorlab.tensor import Tensor

INDENT = "    "


def check(exercise, path, out=print):
    """Check every case of a gradient exercise against the file at `path`; True when all pass."""
    module = load(path)
    classes = {case.cls: find(module, case.cls, path) for case in exercise.cases}
    out(f"Checking {path} against {len(exercise.cases)} cases: your backward vs finite differences (float64).")
    not_written, failed, passed_cases = set(), 0, []
    for number, case in enumerate(exercise.cases, 1):
        inputs = case.make(np.random.default_rng(number))
        header = f"case {number}/{len(exercise.cases)}  {case.describe(inputs)}"
        if case.cls in not_written:
            out(f"{header}: FAILED ({case.cls}.backward is not written yet, see above)")
            failed += 1
            continue
        try:
            lines = _check_case(exercise, case, classes[case.cls], inputs, path)
        except NotWritten as error:
            not_written.add(case.cls)
            lines = error.lines
        except StudentError as error:
            lines = error.lines
        out(f"{header}: {'FAILED' if lines else 'ok'}")
        for line in lines:
            for part in line.splitlines() or [""]:
                out(INDENT + part if part else "")
        failed += bool(lines)
        if not lines:
            passed_cases.append(case)
    total = len(exercise.cases)
    if failed and not not_written:
        for line in _settings_hint(exercise.cases, passed_cases):
            out(line)
    if failed:
        out(f"FAILED: {failed} of {total} cases. Start with the first failed case above, and check again "
            f"after each fix.")
    else:
        out(f"PASSED: your backward agrees with finite differences in all {total} cases.")
    return not failed


def _check_case(exercise, case, cls, inputs, path):
    """Lines explaining what is wrong in this case; [] when it passes."""
    y, grads = _forward_and_backward(case, cls, inputs, path, scale=1.0)
    problems, fixes = _grad_problems(exercise, case, inputs, np.shape(y), grads)
    if problems:
        if fixes is not None:
            problems += _try_fixes(cls, case, inputs, fixes)
        return problems

    names = case.names
    tensors = [Tensor(x.copy(), requires_grad=x.dtype.kind == "f") for x in inputs]
    try:
        report = gradcheck(lambda *ts: cls(**case.settings)(*ts), tensors, names=list(names),
                           raise_on_failure=False)
    except Exception as error:  # noqa: BLE001 (the engine's complaint, said to the student)
        return [f"Running your op through the engine failed: {type(error).__name__}: {error}",
                "Your backward returned arrays of the right shapes when called directly, so check that it "
                "does the same every time (no state kept between calls)."]
    if report.passed:
        return []

    checked = [name for name, x in zip(names, inputs) if x.dtype.kind == "f"]
    reports = dict(zip(checked, report.inputs))
    context = diagnose.Context({n: x.shape for n, x in zip(names, inputs)}, np.shape(y), reports,
                               report.atol, report.rtol)
    ignores_gy = _ignores_gy(case, cls, inputs, path, grads)
    lines = [diagnose.IGNORES_GY] if ignores_gy else []
    for name, input_report in reports.items():
        if input_report.passed:
            continue
        lines += diagnose.explain(name, input_report, context, detailed=not ignores_gy)
        if exercise.hint:
            lines += exercise.hint(inputs, name, input_report, context)
    return lines + ["", "gradcheck's report:"] + [INDENT + line for line in str(report).splitlines()]


def _forward_and_backward(case, cls, inputs, path, scale):
    """Run the student's forward (checked against the reference) and backward on scale * gy."""
    name = cls.__name__
    op = _student_call(f"{name}({_settings(case.settings)})", path, lambda: cls(**case.settings))
    y = _student_call(f"{name}.forward", path, lambda: op.forward(*[x.copy() for x in inputs]))
    expected = np.asarray(case.reference(*inputs, **case.settings))
    if not hasattr(y, "shape") or np.shape(y) != expected.shape or not np.allclose(y, expected, rtol=1e-9,
                                                                                    atol=1e-12):
        raise StudentError(
            f"{name}.forward does not compute what the exercise asks: its output differs from the reference "
            f"forward. The forward is given; take it back from a fresh stub "
            f"(python -m tensorlab.exercises stub ...) and change only backward.")
    gy = np.asarray(scale * np.random.default_rng(1000).standard_normal(np.shape(y)))  # 0-d stays an array
    given = gy.copy()
    shapes = "; ".join([f"gy {gy.shape}"] + [f"{n} {x.shape}" for n, x in zip(case.names, inputs)])
    try:
        grads = _student_call(f"{name}.backward", path, lambda: op.backward(given))
    except NotWritten:
        raise
    except StudentError as error:
        raise StudentError(*error.lines, f"Shapes here: {shapes}.") from None
    if not np.array_equal(given, gy):
        raise StudentError(
            f"{name}.backward changes gy in place (as `gy *= ...` or `gy[...] = ...` do). The engine may hand "
            f"the same gy array to other ops as well, whose gradients would change with it: compute into a "
            f"new array instead, e.g. `gx = gy * ...`.")
    return y, grads


def _grad_problems(exercise, case, inputs, output_shape, grads):
    """(lines, fixes) for what backward returned; fixes maps input index -> repair, or None if some slip has none."""
    names, name = case.names, case.cls
    if isinstance(grads, list):
        return [f"{name}.backward returned a list; return a tuple instead: `return " +
                ", ".join(f"g{n}" for n in names) + "`."], None
    single = not isinstance(grads, tuple)
    grads = (grads,) if single else grads
    if len(grads) > len(inputs):
        return [f"{name}.backward returned {len(grads)} gradients, but forward takes {len(inputs)} inputs "
                f"({', '.join(names)}): return one per input, in that order."], None
    grads = grads + (None,) * (len(inputs) - len(grads))
    lines, fixes, fixable = [], {}, True
    for i, (input_name, x, g) in enumerate(zip(names, inputs, grads)):
        if x.dtype.kind != "f":
            continue  # integer ids and targets take no gradient: whatever is returned is ignored
        fix = None
        if g is None:
            problem = [f"{name}.backward returned no gradient for '{input_name}'" + (
                f": it returned one array, but forward takes {len(inputs)} inputs. Return one gradient per "
                f"input, in order: `return {', '.join('g' + n for n in names)}`."
                if single and len(inputs) > 1 else " (None). Return its gradient.")]
        else:
            problem = diagnose.type_problem(input_name, g, x.shape)
            if problem is None and tuple(g.shape) != x.shape:
                problem, fix = diagnose.shape_problem(input_name, g, x.shape, output_shape, exercise.shape_hint)
            elif problem is None and g.dtype != x.dtype:
                problem = diagnose.dtype_problem(input_name, g, x.dtype)
        if problem:
            lines += problem
            fixes[i] = fix
            fixable = fixable and fix is not None
    return lines, (fixes if fixable else None)


def _try_fixes(cls, case, inputs, fixes):
    """Run gradcheck with the repairs applied, and say whether they are all that is missing."""
    class Fixed(cls):
        def backward(self, *gys):
            grads = super().backward(*gys)
            grads = list(grads) if isinstance(grads, tuple) else [grads]
            for i, fix in fixes.items():
                grads[i] = fix(grads[i])
            return tuple(grads)

    tensors = [Tensor(x.copy(), requires_grad=x.dtype.kind == "f") for x in inputs]
    try:
        report = gradcheck(lambda *ts: Fixed(**case.settings)(*ts), tensors, raise_on_failure=False)
    except Exception:  # noqa: BLE001 (the repair is only a suggestion)
        return []
    if report.passed:
        return ["Changed that way, your gradient passes this case."]
    return ["That alone is not enough: after the change some values are still wrong. Fix the shape, then "
            "check again to see what else is off."]


def _ignores_gy(case, cls, inputs, path, grads):
    """True when backward(2 gy) returns the same nonzero gradients as backward(gy)."""
    try:
        _, doubled = _forward_and_backward(case, cls, inputs, path, scale=2.0)
    except StudentError:
        return False
    pairs = [(g, d) for g, d, x in zip(_as_tuple(grads), _as_tuple(doubled), inputs)
             if x.dtype.kind == "f" and isinstance(g, np.ndarray) and isinstance(d, np.ndarray)]
    return bool(pairs) and all(g.shape == d.shape and np.allclose(g, d) for g, d in pairs) and \
        any(np.abs(g).max(initial=0) > 0 for g, _ in pairs)


def _as_tuple(grads):
    return grads if isinstance(grads, tuple) else (grads,)


def _student_call(what, path, call):
    """call(), with anything it raises turned into a StudentError that points at the student's line."""
    try:
        return call()
    except NotImplementedError as error:
        raise NotWritten(*describe_exception(error, path, what)) from None
    except Exception as error:  # noqa: BLE001 (whatever the student's code raises is reported)
        raise StudentError(*describe_exception(error, path, what)) from None


def _settings_hint(cases, passed):
    """A note when the cases that pass and those that fail differ in their settings (an axis, keepdims)."""
    failed = [case for case in cases if case not in passed]
    if not passed or not any(case.settings for case in cases) or \
            {_settings(c.settings) for c in passed} & {_settings(c.settings) for c in failed}:
        return []
    good = ", ".join(f"({_settings(c.settings) or 'the defaults'})" for c in passed)
    bad = ", ".join(f"({_settings(c.settings) or 'the defaults'})" for c in failed)
    return [f"Note: your backward passes with {good}, but not with {bad}. Does it use the settings it was "
            f"given (self.axis, self.keepdims, ...) everywhere, rather than a fixed value?"]


def _settings(settings):
    return ", ".join(f"{key}={value!r}" for key, value in settings.items())
