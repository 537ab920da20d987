"""Checking a student's backward: run it by hand first, then through gradcheck, then explain.

For every case of an exercise:
1. forward on the case's inputs, compared with the reference forward (the forward is given;
   an edited one is reported before any gradient is judged);
2. backward on a random gy, called directly: an exception, None, a Tensor, a wrong shape or
   dtype, or a gy changed in place is explained here, in the student's terms, before the
   engine would reject it (or, for gy changed in place, silently corrupt other gradients);
3. the same backward with 2 * gy: an answer that does not double ignores gy;
4. tensorlab.gradcheck (float64, central differences, random upstream gradient), and for a
   failed input: the exercise's own slips (slips.py, each reproduced and compared), then the
   general ones `diagnose` recognises, and when none fits, the first stage of the backward that
   goes wrong (the student's variables against the reference's stages, stages.py); then
   gradcheck's own table.
The backward runs watched (watch.py): calling tensorlab's ops or autograd is refused, and its
local variables are kept for the stage comparison. A case has a time limit (run_cases).
"""

import numpy as np

from tensorlab.exercises import diagnose, slips, stages
from tensorlab.exercises.student import NotWritten, StudentError, describe_exception, find, load
from tensorlab.exercises.watch import engine_use_line, run_cases, watch
from tensorlab.gradcheck import gradcheck
from tensorlab.tensor import Tensor

INDENT = "    "
BROADCAST_HINT = (
    "Two arrays whose shapes do not line up: often a sum or mean without keepdims=True, whose result "
    "lost the reduced axis and no longer fits beside the array it came from."
)


def check(exercise, path, out=print, time_limit=None):
    """Check every case of a gradient exercise against the file at `path`; True when all pass."""
    module = load(path, time_limit)
    classes = {case.cls: find(module, case.cls, path) for case in exercise.cases}
    out(f"Checking {path} against {len(exercise.cases)} cases: your backward vs finite differences (float64).")
    not_written, passed_cases = set(), []

    def run(number, case, inputs):
        if case.cls in not_written:
            return [f"({case.cls} is not finished yet, see above)"]
        try:
            lines = _check_case(exercise, case, classes[case.cls], inputs, path)
        except NotWritten as error:
            not_written.add(case.cls)
            lines = error.lines
        except StudentError as error:
            lines = error.lines
        if not lines:
            passed_cases.append(case)
        return lines

    total = len(exercise.cases)
    runs = []
    for number, case in enumerate(exercise.cases, 1):
        inputs = case.make(np.random.default_rng(number))
        runs.append(
            (
                f"case {number}/{total}  {case.describe(inputs)}",
                lambda number=number, case=case, inputs=inputs: run(number, case, inputs),
            )
        )
    failed = run_cases(runs, time_limit, out)
    if failed and not not_written:
        for line in _settings_hint(exercise.cases, passed_cases):
            out(line)
    if failed:
        out(
            f"FAILED: {failed} of {total} cases. Start with the first failed case above, and check again "
            f"after each fix."
        )
    else:
        out(f"PASSED: your backward agrees with finite differences in all {total} cases.")
    return not failed


def _check_case(exercise, case, cls, inputs, path):
    """Lines explaining what is wrong in this case; [] when it passes."""
    y, grads, gy, local_arrays = _forward_and_backward(case, cls, inputs, path, scale=1.0)
    problems, fixes = _grad_problems(exercise, case, inputs, np.shape(y), grads)
    if problems:
        if fixes is not None:
            problems += _try_fixes(cls, case, inputs, fixes)
        return problems

    names = case.names
    tensors = [Tensor(x.copy(), requires_grad=x.dtype.kind == "f") for x in inputs]
    try:
        report = gradcheck(lambda *ts: cls(**case.settings)(*ts), tensors, names=list(names), raise_on_failure=False)
    except Exception as error:  # noqa: BLE001 (the engine's complaint, said to the student)
        return [
            f"Running your op through the engine failed: {type(error).__name__}: {error}",
            "Your backward returned arrays of the right shapes when called directly, so check that it "
            "does the same every time (no state kept between calls).",
        ]
    if report.passed:
        return []

    checked = [name for name, x in zip(names, inputs) if x.dtype.kind == "f"]
    reports = dict(zip(checked, report.inputs))
    context = diagnose.Context(
        {n: x.shape for n, x in zip(names, inputs)}, np.shape(y), reports, report.atol, report.rtol
    )
    ignores_gy = _ignores_gy(case, cls, inputs, path, grads)
    lines = [diagnose.IGNORES_GY] if ignores_gy else []
    wrong = [name for name, r in reports.items() if not r.passed]
    reference = stages.reference(case.graph, names, inputs, case.settings, gy) if case.graph else None
    student = dict(zip(names, _as_tuple(grads)))
    named = {}
    if reference is not None and not ignores_gy:
        for slip, explains in slips.recognise(case.cls, reference, student, wrong, context.close):
            lines.append(f"{' and '.join(repr(n) for n in explains)}: " + slip.says.format(**case.settings))
            named.update(dict.fromkeys(explains, slip.name))
    if exercise.probe and not ignores_gy:
        probed = exercise.probe(lambda g: _student_backward(case, cls, inputs, path, g), inputs)
        lines += probed
        named.update(dict.fromkeys(wrong if probed else [], "probe"))  # the probe's finding is the diagnosis
    said = set()
    for name in wrong:
        fallback = _stage_lines(reference, local_arrays, name, context) if reference is not None else []
        fallback = [line for line in fallback if line not in said]  # a shared stage is named once
        said.update(fallback)
        lines += diagnose.explain(
            name, reports[name], context, detailed=not ignores_gy and name not in named, fallback=fallback
        )
        if exercise.hint:
            lines += exercise.hint(inputs, name, reports[name], context)
    return lines + ["", "gradcheck's report:"] + [INDENT + line for line in str(report).splitlines()]


def _stage_lines(reference, local_arrays, name, ctx):
    """Which stage of the backward first goes wrong: the student's variables against the reference's stages."""
    right = []
    for stage in reference.stages + [name]:
        expected = reference.grad[stage]
        holders = [var for var, value in local_arrays.items() if ctx.close(np.asarray(value), expected)]
        if holders:
            right.append((stage, holders[0]))
            continue
        if not right and not local_arrays:
            return [
                "Put each step of your backward in its own variable (gp, gs, ...): the checker then compares "
                "them one by one with the reference's and says which step first goes wrong."
            ]
        if not right:
            return []  # nothing to localise: the first step is already off
        done = ", ".join(f"g{s} (your `{var}`)" for s, var in right)
        head = f"Step by step against the reference: {done} right; "
        if stage == name:
            return [head + f"the slip is in the last step, from `{right[-1][1]}` to your gradient for '{name}'."]
        candidate = _variable_for(stage, expected.shape, local_arrays)
        if candidate:
            off = ~np.isclose(np.asarray(local_arrays[candidate]), expected, rtol=ctx.rtol, atol=ctx.atol)
            return [
                head + f"the first step that goes wrong is g{stage}, the gradient of {stage} (shape "
                f"{expected.shape}): your `{candidate}` differs from it at {diagnose.listed(np.argwhere(off))}."
            ]
        return [
            head + f"none of your variables matches the next step, g{stage} (the gradient of {stage}, shape "
            f"{expected.shape}): the slip comes after `{right[-1][1]}`."
        ]
    return []


def _variable_for(stage, shape, local_arrays):
    """The student's variable that most likely holds the gradient of `stage`: gS, gs, g_s, dS, ..."""
    wanted = {f"g{stage}".lower(), f"g_{stage}".lower(), f"d{stage}".lower(), f"grad_{stage}".lower()}
    for var, value in local_arrays.items():
        if var.lower() in wanted and np.shape(value) == shape:
            return var
    return None


def _forward_and_backward(case, cls, inputs, path, scale):
    """Run the student's forward (checked against the reference) and backward on scale * gy.

    Returns (y, grads, gy, the backward's local arrays).
    """
    y, op = _student_forward(case, cls, inputs, path)
    gy = np.asarray(scale * np.random.default_rng(1000).standard_normal(np.shape(y)))  # 0-d stays an array
    grads, local_arrays = _student_backward(case, cls, inputs, path, gy, op=op, keep_locals=True)
    return y, grads, gy, local_arrays


def _student_forward(case, cls, inputs, path):
    name = cls.__name__
    op = _student_call(f"{name}({_settings(case.settings)})", path, lambda: cls(**case.settings))
    y = _student_call(f"{name}.forward", path, lambda: op.forward(*[x.copy() for x in inputs]))
    expected = np.asarray(case.reference(*inputs, **case.settings))
    if not hasattr(y, "shape") or np.shape(y) != expected.shape or not np.allclose(y, expected, rtol=1e-9, atol=1e-12):
        if case.forward_is_yours:
            raise StudentError(
                f"{name}.forward does not compute what the exercise asks: its output differs from "
                f"the reference forward{_first_difference(y, expected)}. Fix forward first."
            )
        raise StudentError(
            f"{name}.forward does not compute what the exercise asks: its output differs from the reference "
            f"forward. The forward is given; take it back from a fresh stub "
            f"(python -m tensorlab.exercises stub ...) and change only backward."
        )
    return y, op


def _student_backward(case, cls, inputs, path, gy, op=None, keep_locals=False):
    """The student's backward on gy (a fresh forward first unless `op` is given), watched."""
    if op is None:
        _, op = _student_forward(case, cls, inputs, path)
    name = cls.__name__
    given = gy.copy()
    shapes = "; ".join([f"gy {gy.shape}"] + [f"{n} {x.shape}" for n, x in zip(case.names, inputs)])
    backward = getattr(type(op).backward, "__code__", None)
    try:
        with watch(backward) as watched:
            grads = _student_call(f"{name}.backward", path, lambda: op.backward(given))
    except NotWritten:
        raise
    except StudentError as error:
        hint = [BROADCAST_HINT] if "could not be broadcast" in error.lines[0] else []
        raise StudentError(*error.lines, f"Shapes here: {shapes}.", *hint) from None
    used = engine_use_line(f"{name}.backward", watched.engine_calls)
    if used:
        raise StudentError(used)
    if not np.array_equal(given, gy):
        raise StudentError(
            f"{name}.backward changes gy in place (as `gy *= ...` or `gy[...] = ...` do). The engine may hand "
            f"the same gy array to other ops as well, whose gradients would change with it: compute into a "
            f"new array instead, e.g. `gx = gy * ...`."
        )
    return (grads, watched.locals) if keep_locals else grads


def _first_difference(y, expected):
    if not hasattr(y, "shape") or np.shape(y) != expected.shape:
        return f" (shape {np.shape(y) if hasattr(y, 'shape') else type(y).__name__}, expected {expected.shape})"
    k = np.unravel_index(np.argmax(np.abs(np.nan_to_num(y - expected, nan=np.inf))), expected.shape)
    return f" (at {tuple(int(i) for i in k)}: yours {y[k]:.8g}, expected {expected[k]:.8g})"


def _grad_problems(exercise, case, inputs, output_shape, grads):
    """(lines, fixes) for what backward returned; fixes maps input index -> repair, or None if some slip has none."""
    names, name = case.names, case.cls
    if isinstance(grads, list):
        return [
            f"{name}.backward returned a list; return a tuple instead: `return "
            + ", ".join(f"g{n}" for n in names)
            + "`."
        ], None
    single = not isinstance(grads, tuple)
    grads = (grads,) if single else grads
    if len(grads) > len(inputs):
        return [
            f"{name}.backward returned {len(grads)} gradients, but forward takes {len(inputs)} inputs "
            f"({', '.join(names)}): return one per input, in that order."
        ], None
    grads = grads + (None,) * (len(inputs) - len(grads))
    lines, fixes, fixable = [], {}, True
    for i, (input_name, x, g) in enumerate(zip(names, inputs, grads)):
        if x.dtype.kind != "f":
            continue  # integer ids and targets take no gradient: whatever is returned is ignored
        fix = None
        if g is None:
            problem = [
                f"{name}.backward returned no gradient for '{input_name}'"
                + (
                    f": it returned one array, but forward takes {len(inputs)} inputs. Return one gradient per "
                    f"input, in order: `return {', '.join('g' + n for n in names)}`."
                    if single and len(inputs) > 1
                    else " (None). Return its gradient."
                )
            ]
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
    return [
        "That alone is not enough: after the change some values are still wrong. Fix the shape, then "
        "check again to see what else is off."
    ]


def _ignores_gy(case, cls, inputs, path, grads):
    """True when backward(2 gy) returns the same nonzero gradients as backward(gy)."""
    try:
        _, doubled, _, _ = _forward_and_backward(case, cls, inputs, path, scale=2.0)
    except StudentError:
        return False
    pairs = [
        (g, d)
        for g, d, x in zip(_as_tuple(grads), _as_tuple(doubled), inputs)
        if x.dtype.kind == "f" and isinstance(g, np.ndarray) and isinstance(d, np.ndarray)
    ]
    return (
        bool(pairs)
        and all(g.shape == d.shape and np.allclose(g, d) for g, d in pairs)
        and any(np.abs(g).max(initial=0) > 0 for g, _ in pairs)
    )


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
    """A note when the cases that pass and those that fail differ in one setting (an axis, keepdims)."""
    failed = [case for case in cases if case not in passed]
    if not passed or not failed:
        return []
    for key in sorted({key for case in cases for key in case.settings}):
        good = {repr(c.settings.get(key)) for c in passed}
        bad = {repr(c.settings.get(key)) for c in failed}
        if good & bad:
            continue
        fails = ", ".join(f"{key}={value}" for value in sorted(bad))
        if key == "keepdims" and bad == {"True"}:
            return [
                "Note: your backward fails only with keepdims=True. Then gy already has the reduced axes, as "
                "size 1: put them back (np.expand_dims) only when self.keepdims is False."
            ]
        return [
            f"Note: your backward passes with {', '.join(f'{key}={v}' for v in sorted(good))}, but not with "
            f"{fails}. Does it use self.{key} everywhere, rather than a fixed value?"
        ]
    return []


def _settings(settings):
    return ", ".join(f"{key}={value!r}" for key, value in settings.items())
