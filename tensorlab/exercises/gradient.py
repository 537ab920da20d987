"""A gradient case: a student's backward against the analytic gradient, and what is wrong explained.

Every case's random values and the gy it hands backward are fresh on each run, beside
the edge cases the catalog builds in (zeros, scores near 1,000, repeated ids, size-1 axes), so
gradients saved from an earlier run do not fit. For every case:
1. forward on the case's inputs, compared with the reference graph's (the case's forward in
   tensorlab ops, its intermediates named: stages.py; the forward is given, and an edited one
   is reported before any gradient is judged);
2. backward on gy, called directly and watched (watch.py): an exception, None, a Tensor, a
   wrong shape or dtype, gy (or forward's output or inputs) changed in place, a call into the
   engine or another autograd, or forward run again and again (finite differences) is
   explained here, in the student's terms;
3. the gradients compared, element by element, with the analytic reference in float64 (the
   engine's autograd through that graph): an element is right
   when |yours - reference| <= RTOL * (|reference| + the largest |reference| of the case).
   A derived formula agrees to about 1e-15; central differences in float64 reach 1e-11 to
   1e-9 on these ops, so they fail, and an answer that is right only to that accuracy is named
   as finite differences (diagnose.py);
4. for a wrong input: the case's own slips (slips.py, each reproduced and compared), a setting
   the backward ignores (the right gradient for another correction, axis or eps), the
   general ones `diagnose` recognises, and the stage comparison (the student's variables
   against the reference's stages: which step first goes wrong); then the comparison's table;
5. the same backward with 2 * gy, for a wrong answer: a gradient that does not double ignores gy;
6. for a right answer, the op run once through the engine (Function.__call__, Tensor.backward),
   which must give the same gradients.
The backward's local variables are kept for the stage comparison. A case has a time limit (run_cases).
"""

import inspect
from dataclasses import dataclass, field, replace

import numpy as np

from tensorlab.exercises import diagnose, slips, stages
from tensorlab.exercises.child import WHY
from tensorlab.exercises.student import NotWritten, StudentError, later
from tensorlab.exercises.watch import engine_use_line
from tensorlab.gradcheck import InputReport

INDENT = "    "
RTOL = 1e-12  # see 3. above: ~1e-15 reached by formulas, 1e-11 at best by central differences
DRAWS = 50  # cases of a drawn case per run: a slip one draw in ten shows is missed once in 200 runs
MATCH = 1e-8  # a slip's or a stage's numbers match the student's within this (relative to the case's scale)
BROADCAST_HINT = (
    "Two arrays whose shapes do not line up: often a sum or mean without keepdims=True, whose result "
    "lost the reduced axis and no longer fits beside the array it came from."
)


@dataclass(eq=False)  # a case is itself alone (check.prepared keeps its numbers by case)
class Case:
    """One setting in which a gradient exercise is checked, and what the exercise knows of its slips."""

    cls: str  # the class in the student's file
    names: tuple  # one name per forward argument, as the student's docstring calls them
    make: object  # rng -> list of input arrays, one per forward argument
    graph: object  # (*tensors, **settings) -> (output, {stage: intermediate}) in tensorlab ops: the reference
    settings: dict = field(default_factory=dict)  # keyword arguments for the class's constructor
    forward_is_yours: bool = False  # the student writes forward too (the engine track's new Function)
    slips: list = field(default_factory=list)  # slips.Slip: the typical mistakes, each reproduced
    shape_hint: str = ""  # said when a gradient has a wrong shape that no automatic fix explains
    hint: object = None  # (inputs, name, InputReport, diagnose.Context) -> extra hints for a wrong input
    probe: object = None  # (backward(gy) -> grads, inputs) -> lines: the student's backward on chosen gy
    error_hint: object = None  # (error lines, case) -> lines: said when the student's backward raises
    draw: object = None  # (rng, inputs) -> settings drawn afresh on each run, beside inputs of shapes `make` draws
    kind = "class"

    @property
    def target(self):
        return self.cls

    def prepare(self, rng):
        """(header, run): the inputs and gy drawn now; run(student, results) -> lines. A drawn case (`draw`) is DRAWS
        cases, each of shapes and settings drawn now, and says the first that fails."""
        if not self.draw:
            return self._prepared(self, rng)
        runs = [self._prepared(replace(self, draw=None), rng) for _ in range(DRAWS)]

        def run(student, results):
            for header, work in runs:
                lines = work(student, results)
                if lines:
                    return [f"With {header}:", *lines]
            return []

        return f"{self.cls}: {DRAWS} shapes and settings drawn afresh on each run", run

    def _prepared(self, case, rng):
        inputs = case.make(rng)
        case = replace(case, settings=self.draw(rng, inputs)) if self.draw else case
        reference = stages.reference(case.graph, case.names, inputs, case.settings, rng.standard_normal)
        shapes = ", ".join(f"{name} {tuple(x.shape)}" for name, x in zip(case.names, inputs))
        settings = "".join(f", {key}={value!r}" for key, value in case.settings.items())
        return f"{case.cls}: {shapes}{settings}", lambda student, results: _check_case(case, student, inputs, reference)


def no_settings(rng, inputs):
    """The `draw` of a drawn case whose op takes no settings: only its inputs are drawn."""
    return {}


def _check_case(case, student, inputs, reference):
    """Lines explaining what is wrong in this case; [] when it passes."""
    names, gy = case.names, reference.gy
    try:
        y, grads, local_arrays = _student_op(case, student, inputs, gy, reference.y)
    except NotWritten:
        raise
    except StudentError as error:
        hint = case.error_hint(error.lines, case) if case.error_hint else []
        if hint:  # the exercise's own reading of the error replaces the general one, and names the slip
            lines = [line for line in error.lines if line != BROADCAST_HINT]
            raise StudentError(*lines, WHY + hint[0], *hint[1:]) from None
        raise
    problems, fixes = _grad_problems(case, inputs, np.shape(y), grads)
    if problems:
        if fixes is not None and not student.quick:
            problems += _try_fixes(case, inputs, grads, fixes, reference)
        return problems + ([] if student.quick else _slips_of_shape(case, grads, reference))

    reports, scale = _compare(case, inputs, _as_tuple(grads), reference)
    if all(r.passed for r in reports.values()):
        return _through_engine(case, student, inputs, gy, reference)
    if student.quick:
        return ["wrong"]

    context = diagnose.Context(
        {n: x.shape for n, x in zip(names, inputs)},
        np.shape(y),
        reports,
        atol=MATCH * scale,
        rtol=MATCH,
        scale=scale,
        settings=case.settings,
    )
    wrong = [name for name, r in reports.items() if not r.passed]
    ignored = _ignoring_gy(case, student, inputs, gy, grads, reference.y, wrong)
    lines = [diagnose.ignores_gy(ignored)] if ignored else []
    yours = dict(zip(names, _as_tuple(grads)))
    named = dict.fromkeys(ignored, "ignores gy")
    found = slips.recognise(case.slips, reference, yours, [n for n in wrong if n not in ignored], context.close)
    unnamed = [n for n in wrong if n not in ignored and not any(n in explains for _, explains in found)]
    if unnamed:  # a setting the backward does not read, where no slip of the exercise fits
        found += slips.recognise(_setting_slips(case), reference, yours, unnamed, context.close)[:1]
    for slip, explains in found:
        lines.append(_slip_line(case, slip, explains))
        named.update(dict.fromkeys(explains, slip.name))
    if case.probe and not ignored and not set(wrong) <= set(named):  # a probe explains what no slip has
        probed = case.probe(lambda g: _student_op(case, student, inputs, g, reference.y)[1], inputs)
        lines += probed
        named.update(dict.fromkeys(wrong if probed else [], "probe"))  # the probe's finding is the diagnosis
    said = set()
    for name in wrong:
        steps, advice = _stage_lines(reference, local_arrays, name, context)
        steps = [line for line in steps if line not in said]  # a shared stage is named once
        said.update(steps)
        hints = case.hint(inputs, name, reports[name], context) if case.hint else []
        lines += diagnose.explain(
            name, reports[name], context, detailed=name not in named, steps=steps, advice=advice, hints=hints
        )
    return lines + ["", "Compared with the analytic gradient:"] + [INDENT + line for line in _table(reports, scale)]


def _compare(case, inputs, grads, reference):
    """({name: InputReport}, scale) for the inputs that take a gradient: the student's gradient against the reference.

    scale is the largest |reference| element of the case, so that a gradient that is zero up to
    rounding (attention's gq where the weights are saturated) is not judged by its own rounding.
    """
    checked = [(name, g) for name, x, g in zip(case.names, inputs, grads) if x.dtype.kind == "f"]
    scale = _scale(reference, [name for name, _ in checked])
    reports = {
        name: InputReport(repr(name), np.asarray(g, dtype=np.float64), reference.grad[name], RTOL * scale, RTOL)
        for name, g in checked
    }
    return reports, scale


def _table(reports, scale):
    """The comparison's lines: the rule, then each input's verdict and its worst elements."""
    lines = [
        f"(float64; an element is wrong when |yours - reference| > {RTOL:g} * (|reference| + {scale:.3g}), "
        f"{scale:.3g} being the largest reference gradient in this case)"
    ]
    for report in reports.values():
        shape = tuple(report.analytic.shape)
        if report.passed:
            lines.append(f"input {report.name} of shape {shape}: ok (max abs difference {report.max_abs_error:.1e})")
            continue
        lines.append(
            f"input {report.name} of shape {shape}: {int(report.wrong.sum())} of {report.wrong.size} elements "
            f"are wrong; max abs difference {report.max_abs_error:.3g}"
        )
        lines.append(f"    {'element':<16}{'yours':>20}{'reference':>22}{'difference':>14}")
        for index, a, r in report.worst:
            lines.append(f"    {str(index):<16}{a:>20.8g}{r:>22.8g}{a - r:>14.3g}")
    return lines


def _through_engine(case, student, inputs, gy, reference):
    """[] when the op, run through the engine once, gives the right gradients too; else lines saying why not."""
    try:
        grads = student.call("op", cls=case.cls, settings=case.settings, inputs=inputs, gy=gy, engine=True)["grads"]
    except StudentError as error:  # the engine's complaint, said to the student
        return [
            f"Running your op through the engine failed: {error.lines[0]}",
            "Your backward returned arrays of the right shapes when called directly, so check that it "
            "does the same every time (no state kept between calls).",
        ]
    reports, _ = _compare(case, inputs, grads, reference)
    wrong = [name for name, r in reports.items() if not r.passed]
    if not wrong:
        return []
    return [
        f"Called directly your backward is right, but run through the engine (a second forward and backward) "
        f"it gives other gradients for {', '.join(repr(n) for n in wrong)}: it keeps or changes state between "
        f"calls (a global, a class attribute, something forward saved and backward edits in place)."
    ]


def _stage_lines(reference, local_arrays, name, ctx):
    """(steps, advice): which stage of the backward first goes wrong, from the student's variables.

    steps: where the student's variables stop matching the reference's stages, when some
    variable holds a stage (said whenever it can be, beside any other diagnosis); advice: how
    to get that comparison (said only when nothing else names the slip).
    """
    right = []
    for stage in reference.stages + [name]:
        expected = reference.grad[stage]
        holders = [var for var, value in local_arrays.items() if ctx.close(np.asarray(value), expected)]
        if holders:
            right.append((stage, holders[0]))
            continue
        candidate = _variable_for(stage, expected.shape, local_arrays) if stage != name else None
        if not right and not candidate:
            if local_arrays or not reference.stages:
                return [], []  # nothing to localise: the first step is already off
            return [], [
                "Put each step of your backward in its own variable (gp, gs, ...): the checker then compares "
                "them one by one with the reference's and says which step first goes wrong."
            ]
        done = ", ".join(f"g{s} (your `{var}`)" for s, var in right)
        head = "Step by step against the reference: " + (f"{done} right; " if right else "")
        if stage == name:
            return [head + f"the slip is in the last step, from `{right[-1][1]}` to your gradient for '{name}'."], []
        if candidate:
            off = np.abs(np.asarray(local_arrays[candidate]) - expected) > ctx.atol + ctx.rtol * np.abs(expected)
            off |= ~np.isfinite(np.asarray(local_arrays[candidate], dtype=np.float64))
            return [
                head + f"the first step that goes wrong is g{stage}, the gradient of {stage} (shape "
                f"{expected.shape}): your `{candidate}` differs from it at {diagnose.listed(np.argwhere(off))}"
                f"{diagnose.band(off)}."
            ], []
        return [
            head + f"none of your variables matches the next step, g{stage} (the gradient of {stage}, shape "
            f"{expected.shape}): the slip comes after `{right[-1][1]}`."
        ], []
    return [], []


def _variable_for(stage, shape, local_arrays):
    """The student's variable that most likely holds the gradient of `stage`: gS, gs, g_s, dS, ..."""
    wanted = {f"g{stage}".lower(), f"g_{stage}".lower(), f"d{stage}".lower(), f"grad_{stage}".lower()}
    for var, value in local_arrays.items():
        if var.lower() in wanted and np.shape(value) == shape:
            return var
    return None


def _student_op(case, student, inputs, gy, expected):
    """The student's forward (checked against the reference) and backward on gy, run in the student's process.

    Returns (y, grads, the backward's local arrays).
    """
    name = case.cls
    answer = student.call("op", cls=name, settings=case.settings, inputs=inputs, gy=gy)
    y = answer["y"]
    # rounding grows with what the forward works on: the inputs' size, not only the output's (a loss near 0)
    scale = max(float(np.abs(a[np.isfinite(a)]).max(initial=0.0)) for a in [expected, *inputs] if a.dtype.kind == "f")
    close = hasattr(y, "shape") and np.shape(y) == expected.shape and np.allclose(y, expected, RTOL, RTOL * scale, True)
    if not close:  # NaN where the reference has NaN (a mean over an empty axis), as NumPy and PyTorch give
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
    shapes = "; ".join([f"gy {gy.shape}"] + [f"{n} {x.shape}" for n, x in zip(case.names, inputs)])
    try:
        later(answer)
    except NotWritten:
        raise
    except StudentError as error:
        hint = [BROADCAST_HINT] if "could not be broadcast" in error.lines[0] else []
        raise StudentError(*error.lines, f"Shapes here: {shapes}.", *hint) from None
    used = engine_use_line(f"{name}.backward", answer["engine_calls"])
    if used:
        raise StudentError(used)
    forwards = answer["forwards"]
    if forwards > 1:
        raise StudentError(
            f"{name}.backward runs forward {forwards} times: evaluating the op again at nudged inputs is finite "
            f"differences, an estimate of the gradient, not its formula. Derive the gradient and write it with "
            f"NumPy on gy and what forward saved."
        )
    changed = [["gy", "forward's output", *map(repr, case.names)][i] for i in answer["changed"]]
    if changed or answer["rewritten"]:
        raise StudentError(
            f"{name}.backward changes {' and '.join(changed + answer['rewritten'])} in place (as `gy *= ...`, "
            f"`g[...] = ...`, or `g = self.y` then `g *= gy`, where both names hold one array, do). The engine hands "
            f"those arrays to other ops as well, and a second backward of the same forward (retain_graph=True) reads "
            f"what forward saved again: their results would change with them. Compute into a new array instead, e.g. "
            f"`gx = gy * ...` or `g = self.p.copy()`."
        )
    return y, answer["grads"], answer["locals"]


def _first_difference(y, expected):
    if not hasattr(y, "shape") or np.shape(y) != expected.shape:
        return f" (shape {np.shape(y) if hasattr(y, 'shape') else type(y).__name__}, expected {expected.shape})"
    k = np.unravel_index(np.argmax(np.abs(np.nan_to_num(y - expected, nan=np.inf))), expected.shape)
    return f" (at {tuple(int(i) for i in k)}: yours {y[k]:.8g}, expected {expected[k]:.8g})"


def _grad_problems(case, inputs, output_shape, grads):
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
    shapes = [tuple(np.shape(g)) if hasattr(g, "shape") else None for g in grads]
    wanted = [x.shape for x in inputs]
    if len(inputs) > 1 and shapes != wanted and shapes == wanted[::-1]:
        return [
            f"{name}.backward returns its gradients in the wrong order: yours have the shapes of "
            f"({', '.join(names[::-1])}). Return one gradient per input in the order of forward's arguments: "
            f"`return {', '.join('g' + n for n in names)}`."
        ], None
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
                problem, fix = diagnose.shape_problem(input_name, g, x.shape, output_shape, case.shape_hint)
            elif problem is None and g.dtype != x.dtype:
                problem = diagnose.dtype_problem(input_name, g, x.dtype)
        if problem:
            lines += problem
            fixes[i] = fix
            fixable = fixable and fix is not None
    return lines, (fixes if fixable else None)


def _try_fixes(case, inputs, grads, fixes, reference):
    """Say whether the repairs of the shapes (sum over the broadcast axes, undo a transpose) are all that is missing."""
    fixed = list(_as_tuple(grads)) + [None] * (len(inputs) - len(_as_tuple(grads)))
    try:
        for i, fix in fixes.items():
            fixed[i] = fix(np.asarray(fixed[i]))
        right = all(
            np.shape(g) == x.shape and r.passed
            for g, x, r in zip(
                [g for g, x in zip(fixed, inputs) if x.dtype.kind == "f"],
                [x for x in inputs if x.dtype.kind == "f"],
                _compare(case, inputs, fixed, reference)[0].values(),
            )
        )
    except Exception:  # noqa: BLE001 (the repair is only a suggestion)
        return []
    if right:
        return ["Changed that way, your gradient passes this case."]
    return [
        "That alone is not enough: after the change some values are still wrong. Fix the shape, then "
        "check again to see what else is off."
    ]


def _scale(reference, names):
    """The largest |reference gradient| element of the inputs `names`, or 1 when all are 0."""
    return max(float(np.abs(reference.grad[name]).max(initial=0.0)) for name in names) or 1.0


def _slips_of_shape(case, grads, reference):
    """Lines naming the case's slips that reproduce a gradient of the wrong shape, values and shape alike (gweight
    summed over every axis, a scalar): the shape alone says what is wrong, the slip says which sum it was."""
    yours = {n: g for n, g in zip(case.names, _as_tuple(grads)) if n in reference.grad and isinstance(g, np.ndarray)}
    wrong = [n for n, g in yours.items() if g.shape != reference.grad[n].shape]
    scale = _scale(reference, [n for n, x in zip(case.names, reference.x.values()) if x.dtype.kind == "f"])
    close = diagnose.Context({}, (), {}, atol=MATCH * scale, rtol=MATCH).close
    found = slips.recognise(case.slips, reference, yours, wrong, close)
    return [_slip_line(case, slip, explains) for slip, explains in found]


def _slip_line(case, slip, explains):
    return f"{' and '.join(repr(n) for n in explains)}: " + slip.says.format(**case.settings)


def _setting_slips(case):
    """A slip for each usual other value of each setting (correction=1 for 0, the last axis for the first, eps=0):
    the gradient of the op built with that value, through the case's graph, so that a backward that does not read
    what the op was built with is named. The settings are the case's and its graph's keyword defaults (var's
    correction=1 where a case gives none); a value that changes the output's shape (keepdims) gives no gradient."""
    settings = {**defaults(case.graph), **case.settings}
    return [
        slips.Slip(
            f"{key}={other!r}",
            f"your gradient is the right one for {key}={other!r}, but this case has {key}={value!r}: your backward "
            f"uses {key}={other!r} whatever the op was built with. Use the {key} __init__ saved (or what forward "
            f"worked out from it).",
            _built_with(case, {**settings, key: other}),
        )
        for key, value in settings.items()
        for other in _other_values(value)
    ]


def _built_with(case, settings):
    """s -> the gradients of the case's graph built with `settings`, for the same inputs and gy (a slip's grads)."""

    def compute(s):
        def same_gy(shape):
            if tuple(shape) != s.gy.shape:
                raise ValueError("another output shape")
            return s.gy

        return stages.reference(case.graph, case.names, list(s.x.values()), settings, same_gy).grad

    return slips.attempt(compute)


def defaults(graph):
    """{keyword: default} of a reference graph's settings."""
    parameters = inspect.signature(graph).parameters.values()
    return {p.name: p.default for p in parameters if p.default is not inspect.Parameter.empty}


def _other_values(value):
    """The values a backward that ignores a setting commonly has instead: the usual axes and corrections, no eps or
    the usual ones, the unit limits."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return []  # keepdims changes the output's shape; a tuple of axes or None has no usual stand-in
    usual = (-1, 0, 1, 2) if isinstance(value, int) else (0.0, 1e-5, 1e-6, 1e-8, -1.0, 1.0)
    return [v for v in usual if v != value]


def _ignoring_gy(case, student, inputs, gy, grads, expected, wrong):
    """The `wrong` inputs whose gradient is the same nonzero array for backward(2 gy) as for backward(gy), relative to
    its own size: a gradient that is tiny everywhere (attention's gq where the weights are saturated) still doubles."""
    try:
        _, doubled, _ = _student_op(case, student, inputs, 2 * gy, expected)
    except StudentError:
        return []
    same = {
        name
        for name, g, d in zip(case.names, _as_tuple(grads), _as_tuple(doubled))
        if isinstance(g, np.ndarray)
        and isinstance(d, np.ndarray)
        and g.shape == d.shape
        and np.allclose(g, d, rtol=1e-6, atol=0)
        and np.abs(g).max(initial=0) > 0
    }
    return [name for name in wrong if name in same]


def _as_tuple(grads):
    return grads if isinstance(grads, tuple) else (grads,)
