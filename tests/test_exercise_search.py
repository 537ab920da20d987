"""The checker's search for a slip nobody wrote down (tensorlab/exercises/search.py, edits.py).

A wrong file that no slip of its exercise explains is edited once in every way edits.py knows;
the edit that makes it pass names the slip: its line in the student's file, its kind, and at
hints=fix the change. The edits are closed under undoing, so the wrong answers teachers/mutate.py
makes from the solutions with them are undone by one of them (tests/test_exercise_mutants.py
counts how many are named).
"""

import ast
from pathlib import Path

import pytest
from exercise_mistakes import MISTAKES

from tensorlab.exercises import BY_NAME, search
from tensorlab.exercises import report as report_module
from tensorlab.exercises.check import check as check_cases
from tensorlab.exercises.edits import edits
from tensorlab.exercises.report import CHANGE, FOUND, Report
from tensorlab.exercises.runner import run
from tensorlab.exercises.student import Student

SOLUTIONS = Path(__file__).resolve().parent.parent / "teachers" / "solutions"
EXP_LOG = ast.unparse(ast.parse((SOLUTIONS / "exp_log.py").read_text()))
DIVIDED = EXP_LOG.replace("return gy * self.y", "return gy / self.y")


def check(tmp_path, source, hints="fix", name="exp_log"):
    """(exit code, Report) of checking `source` as the student's file my_NAME.py."""
    path = tmp_path / f"my_{name}.py"
    path.write_text(source)
    report = Report(BY_NAME[name], path, hints, show=None)
    return run(BY_NAME[name], path, time_limit=10, seed=5, report=report), report


def test_a_slip_no_one_wrote_down_is_named_at_its_line_with_the_change(tmp_path):
    assert DIVIDED != EXP_LOG
    code, report = check(tmp_path, DIVIDED)
    line = DIVIDED.splitlines().index("        return gy / self.y") + 1
    assert code == 1
    assert report.found[0].startswith(f"{FOUND}{line} of my_exp_log.py: an operator")
    assert report.found[1] == f"{CHANGE}/ -> *, in `return gy / self.y`."
    assert f"{FOUND}{line} of my_exp_log.py" in report.diagnosis()  # the gradebook's words


def test_at_hints_name_the_line_and_kind_are_said_and_the_change_is_not(tmp_path):
    _, report = check(tmp_path, DIVIDED, hints="name")
    record = report.record(1)
    assert FOUND in record["diagnosis"] and CHANGE not in record["diagnosis"]
    _, report = check(tmp_path, DIVIDED, hints="none")
    assert FOUND not in report.record(1)["diagnosis"]


def test_a_left_out_term_is_found_from_the_names_the_file_reads(tmp_path):
    dropped = EXP_LOG.replace("return gy * self.y", "return gy")
    _, report = check(tmp_path, dropped)
    assert "a term left out" in report.found[0]
    assert report.found[1] == f"{CHANGE}a term added: gy -> gy * self.y, in `return gy`."


@pytest.mark.parametrize(
    "name, right, wrong, kind",
    [
        # a factor lost whole: no name of the file gives (1 - b1) back; the engine's AdamW holds it
        ("adamw", "(1 - b1) * grad", "grad", "a term left out"),
        # an axis lost whole: the engine's broadcast_axes holds it
        ("unbroadcast", "axis=tuple(range(leading)) + stretched", "axis=0", "an axis"),
    ],
)
def test_a_term_or_an_axis_lost_whole_is_put_back_from_the_engines_formulas(tmp_path, name, right, wrong, kind):
    """The search itself, asked directly: AdamW's lost (1 - b1) is also a slip of its own, named before any search."""
    source = ast.unparse(ast.parse((SOLUTIONS / f"{name}.py").read_text()))
    assert source.count(right) == 1
    path = tmp_path / f"my_{name}.py"
    path.write_text(source.replace(right, wrong))
    lines = search.found(BY_NAME[name], path, path.read_text(), seed=5)
    assert lines and kind in lines[0], lines


def test_a_slip_that_explains_one_case_and_not_another_is_searched(tmp_path):
    """gb summed to a's shape: where a has b's shape plus a front axis, "a missing sum over axis 0" fixes that
    case; in another case a is the smaller one, and only the gradient's wrong shape is said. Not every failed
    case names the slip, so the search runs and finds the one change."""
    source = ast.unparse(ast.parse((SOLUTIONS / "mul.py").read_text()))
    wrong = source.replace("unbroadcast(gy * self.a, self.b.shape)", "unbroadcast(gy * self.a, self.a.shape)")
    assert wrong != source
    _, report = check(tmp_path, wrong, name="mul")
    lines = [" ".join(case.lines) for case in report.cases if not case.passed]
    assert any("A missing sum over the broadcast axes" in text for text in lines)  # one case's own explanation
    assert report.found[1].startswith(f"{CHANGE}self.a -> self.b, in ") and "self.a.shape)" in report.found[1]


def test_an_axis_lost_to_a_variable_nothing_reads_is_put_back(tmp_path):
    """`stretched` is computed and then never read: the axis it held was replaced, and it is tried there."""
    source = ast.unparse(ast.parse((SOLUTIONS / "ties.py").read_text()))
    wrong = source.replace("g.sum(axis=stretched, keepdims=True)", "g.sum(axis=0, keepdims=True)")
    assert wrong != source
    _, report = check(tmp_path, wrong, name="ties")
    assert report.found[1].startswith(f"{CHANGE}axis -> stretched, in "), [case.lines for case in report.cases]


def test_two_slips_are_not_named_as_one(tmp_path):
    both = DIVIDED.replace("return gy / self.x", "return gy * self.x")  # Log's backward wrong too
    assert both != DIVIDED
    code, report = check(tmp_path, both)
    assert code == 1 and report.found == []


def test_an_unfinished_stub_is_not_searched(tmp_path, monkeypatch):
    tried = []
    monkeypatch.setattr(search, "edits", lambda *a, **k: tried.append(a) or [])
    stub = Path(__file__).resolve().parent.parent / "tensorlab" / "exercises" / "catalog" / "exp_log" / "stub.py"
    code, report = check(tmp_path, stub.read_text())
    assert code == 1 and tried == [] and report.found == []


@pytest.mark.parametrize(
    "name, what, says",
    [
        ("topo", "recursive", "keep your own stack"),  # the RecursionError's explanation
        ("mean", "expand_dims even with keepdims", "fails only with keepdims=True"),  # the keepdims note
        ("mean", "no expand_dims", "Why: gy lost the reduced axes"),  # the exercise's reading of what raised
        ("softmax", "y(1 - y)", "You used y(1 - y)"),  # a slip of the case's, reproduced
    ],
)
def test_a_file_whose_slip_is_named_is_not_searched(tmp_path, monkeypatch, name, what, says):
    """The search tries up to 1,000 edits (a recursive topo took 25 s); where the check already names the slip,
    it would say nothing more."""
    (mistake,) = [m for m in MISTAKES if (m.exercise, m.what) == (name, what)]
    source = (SOLUTIONS / f"{name}.py").read_text()
    for old, new in mistake.edits:
        source = source.replace(old, new)
    tried = []
    monkeypatch.setattr(search, "edits", lambda *a, **k: tried.append(a) or [])
    code, report = check(tmp_path, source, name=name)
    assert code == 1 and says in " ".join(report.general + [line for c in report.cases for line in c.lines])
    assert report.names_the_slip() and tried == []


@pytest.mark.parametrize("name", ["softmax", "matmul", "mean", "topo"])
def test_every_one_change_edit_of_a_solution_is_undone_by_one_edit(name):
    """Closed under undoing: for every edit of the solution that is not a term or statement dropped (nothing
    says which term) or one of edits.py's other exceptions, some edit of the edited file gives the solution back, as
    the same program."""
    source = (SOLUTIONS / f"{name}.py").read_text()
    solution = _program(source)
    missed = []
    for line, what, text in edits(source, search.students_part(BY_NAME[name])):
        assert _program(text) != solution, f"line {line}: {what} changes nothing"
        if (
            what.startswith(("a term", "a statement", "a power", "the saved value", ".T -> ", "a chained"))
            or "added" in what
            or "in place" in what
        ):
            continue
        if solution not in {_program(t) for _, _, t in edits(text, search.students_part(BY_NAME[name]))}:
            missed.append(f"line {line}: {what}")
    assert missed == [], missed


def _program(text):
    """The program, whatever the spelling: `not not c` is c, 1.0 is 1, keyword arguments in any order."""
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            node.keywords.sort(key=lambda keyword: keyword.arg or "")
        for field, value in ast.iter_fields(node):
            if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not):
                inner = value.operand
                if isinstance(inner, ast.UnaryOp) and isinstance(inner.op, ast.Not):
                    setattr(node, field, inner.operand)
            if isinstance(value, ast.Constant) and isinstance(value.value, float) and value.value.is_integer():
                setattr(node, field, ast.Constant(int(value.value)))
    return ast.dump(tree)


def test_ctrl_c_during_the_search_keeps_the_verdict_and_says_so(tmp_path, monkeypatch):
    def interrupted(*_, **__):
        raise KeyboardInterrupt

    monkeypatch.setattr(search, "found", interrupted)
    code, report = check(tmp_path, DIVIDED)
    assert code == 130 and report.cases and not all(case.passed for case in report.cases)
    assert "(Ctrl-C: the search for the slip was stopped.)" in report.general


@pytest.mark.parametrize(
    "what, kind",
    [
        ("a transpose added to the left factor of @", "a transpose"),
        ("np.exp added around self.y", "a function applied (or not)"),  # not a saved value: self.y is the code
        (".copy() added to gy", "a copy"),
        (".sum(axis=-1) added to gy.swapaxes(-1, -2)", "a reduction left out"),  # not a transpose
        ("a minus sign added to self.x", "a sign"),
    ],
)
def test_a_slips_kind_is_read_from_the_edit_not_from_the_code_it_quotes(what, kind):
    assert search._kind(what) == kind


def test_every_edit_of_the_engines_kernels_and_optimizers_is_said_as_a_kind_of_slip():
    """A generator of edit descriptions no solution holds: the ~100,000 one-change edits of the engine's kernels and
    optimizers (out=, dtype=, augmented assignments, every call and keyword they use), each said as a kind of slip
    by search._kind, none left to its last row ("a change"), none raising (a student's `np.square(g, out=g)`
    once ended the check with StopIteration)."""
    unnamed = set()
    for folder in ("kernels", "optim"):
        for path in sorted((Path(search.TENSORLAB) / folder).glob("*.py")):
            unnamed.update(what for _, what, _ in edits(path.read_text()) if search._kind(what) == "a change")
    assert unnamed == set()


HYPOT_GRADIENTS = (
    "return unbroadcast(gy * self.a / self.y, self.a.shape), unbroadcast(gy * self.b / self.y, self.b.shape)"
)
HYPOT_SHARED = (  # gb reads `common` after ga's update changed it in place
    "common = gy / self.y\n        {ga}\n        gb = common * self.b\n"
    "        return unbroadcast(ga, self.a.shape), unbroadcast(gb, self.b.shape)"
)


@pytest.mark.parametrize(
    "name, old, new, at, kind",
    [
        (
            "function",
            HYPOT_GRADIENTS,
            HYPOT_SHARED.format(ga="ga = common\n        ga *= self.a"),
            "ga *=",
            "an array changed in place (x *= v)",
        ),
        (
            "function",
            HYPOT_GRADIENTS,
            HYPOT_SHARED.format(ga="ga = np.multiply(common, self.a, out=common)"),
            "ga =",
            "an array overwritten in place (out=)",
        ),
        (
            "causal_attention",
            "gv = p.swapaxes(-1, -2) @ gy",
            "gv = p.T @ gy",
            "gv =",
            "a transpose: .T reverses every axis",
        ),
        (
            "ties",
            "(self.low <= self.x) & (self.x <= self.high)",
            "self.low <= self.x <= self.high",
            "return gy *",
            "a comparison chained",
        ),
        (
            "var",
            "return gy * 2 * self.centered / self.dof",
            "centered = self.centered - self.centered.mean(axis=self.axis)\n"
            "        return gy * 2 * centered / self.dof",
            "centered =",
            "keepdims",  # not the hint that gy lost its axes: the line that raised does not read gy
        ),
        ("softmax", "(gy * self.y).sum(axis=self.axis, keepdims=True)", "np.sum(gy * self.y)", "return", "an axis"),
        (  # np.repeat without its axis flattens: the loop's own variable is the axis it leaves out
            "sum",
            "return np.broadcast_to(gy, self.x_shape).copy()",
            "for axis in self.axes:\n            gy = np.repeat(gy, self.x_shape[axis])\n"
            "        return gy.reshape(self.x_shape)",
            "gy = np.repeat",
            "an axis",
        ),
        (  # xhat = x r holds one r already: r^3 of the derivation, kept beside it, is r twice too many
            "rms_norm",
            "gx = self.r * (g - self.xhat * (g * self.xhat).mean(axis=-1, keepdims=True))",
            "gx = self.r * g - self.xhat * self.r**3 * (g * self.xhat).mean(axis=-1, keepdims=True)",
            "gx =",
            "a power",
        ),
        (
            "exp_log",
            "return gy * self.y",
            "g = gy * self.y\n        g *= self.y\n        return g",
            "g *=",
            "a statement",
        ),
    ],
)
def test_a_slip_numpy_makes_easy_is_named_by_the_edit_that_fixes_it(tmp_path, name, old, new, at, kind):
    """An array changed in place while another name holds it, .T on a batch of matrices, `low <= x <= high` on an
    array, a mean without keepdims (NumPy raises), a sum over every axis where one belongs, an update that does not
    belong, np.repeat without its axis, a power kept: the one edit that fixes it names the slip at its line (the first
    in the backward that starts with `at`)."""
    solution = (SOLUTIONS / f"{name}.py").read_text()
    assert old in solution
    source = solution.replace(old, new)
    code, report = check(tmp_path, source, name=name)
    backward = source.index("def backward")
    number = next(
        i
        for i, t in enumerate(source.splitlines(), 1)
        if t.strip().startswith(at) and i > source[:backward].count("\n")
    )
    assert code == 1 and report.found[0].startswith(f"{FOUND}{number} of my_{name}.py: {kind}"), report.found
    assert "gy lost" not in str([case.lines for case in report.cases])


LOOPED_UNBROADCAST = """    if g.ndim > len(shape):  # one leading axis summed, where a loop sums them all
        g = g.sum(axis=0)
    for i, n in enumerate(shape):
        if n == 1 and g.shape[i] != 1:
            g = g.sum(axis=i, keepdims=True)
    return g
"""


def test_an_if_where_a_loop_belongs_is_named(tmp_path):
    """`if` for `while`: only one of two leading axes is summed, which the shape line describes as a sum over other
    axes; the edit that makes it a loop names it (a stranger's slip, 2026-12-01)."""
    source = (SOLUTIONS / "mul.py").read_text()
    body = source[source.index("    leading = g.ndim") :]
    source = source.replace(body, LOOPED_UNBROADCAST)
    code, report = check(tmp_path, source, name="mul")
    line = source.splitlines().index(
        "    if g.ndim > len(shape):  # one leading axis summed, where a loop sums them all"
    )
    assert code == 1 and report.found[0].startswith(f"{FOUND}{line + 1} of my_mul.py: an `if` where a loop belongs")


JACOBIAN_WITH_DOT = """y, g = np.moveaxis(self.y, self.axis, -1), np.moveaxis(gy, self.axis, -1)
        jacobians = [np.diag(row) - np.dot(row, row) for row in y.reshape(-1, y.shape[-1])]
        gx = np.stack([j.T @ r for j, r in zip(jacobians, g.reshape(-1, g.shape[-1]))])
        return np.moveaxis(gx.reshape(y.shape), -1, self.axis)"""


def test_a_product_for_another_is_named(tmp_path):
    """softmax's Jacobian diag(y) - y y^T built with np.dot(y, y), a number, where np.outer(y, y) belongs (a stranger's
    slip, 2026-12-01): the edit that swaps the product names it."""
    source = (SOLUTIONS / "softmax.py").read_text()
    right = "return self.y * (gy - (gy * self.y).sum(axis=self.axis, keepdims=True))"
    assert source.count(right) == 1
    source = source.replace(right, JACOBIAN_WITH_DOT)
    code, report = check(tmp_path, source, name="softmax")
    line = next(n for n, text in enumerate(source.splitlines(), 1) if "np.dot" in text)
    assert code == 1 and report.found[0].startswith(f"{FOUND}{line} of my_softmax.py: a product"), report.found
    assert "np.dot -> np.outer" in report.found[1]


RECOMPUTED_R = "r = 1 / np.sqrt((self.xhat**2).mean(axis=-1, keepdims=True) + self.eps)"
ARGMAX_LABELS = "labels = self.p.argmax(axis=-1)"


@pytest.mark.parametrize(
    "name, changes, line",
    [  # r from xhat (whose root-mean-square is 1) is about 1, not the r forward used
        (
            "rms_norm",
            [("g = gy * self.weight\n", f"g = gy * self.weight\n        {RECOMPUTED_R}\n"), ("gx = self.r", "gx = r")],
            RECOMPUTED_R,
        ),
        (
            "log_softmax_nll",
            [("gx[np.arange(n), self.targets]", f"{ARGMAX_LABELS}\n        gx[np.arange(n), labels]")],
            ARGMAX_LABELS,
        ),
    ],
)
def test_a_value_worked_out_again_is_named_by_the_one_forward_saved(tmp_path, name, changes, line):
    """RMSNorm's r recomputed from xhat, the one-hot's classes taken from the softmax's argmax: the edit that puts the
    saved value (self.r, self.targets) in its place names the line."""
    source = (SOLUTIONS / f"{name}.py").read_text()
    for right, wrong in changes:
        assert source.count(right) == 1
        source = source.replace(right, wrong)
    number = [text.strip() for text in source.splitlines()].index(line) + 1
    code, report = check(tmp_path, source, name=name)
    assert code == 1 and report.found[0].startswith(f"{FOUND}{number} of my_{name}.py: a value worked out again")


def test_an_exp_that_overflows_is_named_by_the_max_subtracted(tmp_path):
    """A backward that recomputes softmax as exp(x) / sum: NaN at logits near 1,000, and the edit that subtracts the
    row's max names it (a NaN's list of causes is a guess, so the search runs)."""
    solution = (SOLUTIONS / "log_softmax_nll.py").read_text()
    saved, recomputed = "self.p, self.targets = np.exp(log_p), targets", "        gx = self.p.copy()"
    assert saved in solution and recomputed in solution
    source = solution.replace(saved, f"{saved}\n        self.logits = logits")
    source = source.replace(
        recomputed, "        e = np.exp(self.logits)\n        gx = e / e.sum(axis=-1, keepdims=True)"
    )
    code, report = check(tmp_path, source, name="log_softmax_nll")
    number = source.splitlines().index("        e = np.exp(self.logits)") + 1
    assert any("NaN" in line for case in report.cases for line in case.lines)
    assert code == 1 and report.found[0].startswith(f"{FOUND}{number} of my_log_softmax_nll.py: exp of a large value")


def test_a_term_that_does_not_belong_is_dropped_not_cancelled(tmp_path):
    """ga divided by n, the batch size, once too often: the search drops the division where it is, rather than
    multiplying by n again beside it (an edit that cancels the slip and names it 'a term left out')."""
    solution = (SOLUTIONS / "matmul.py").read_text()
    assert "        return gy @ self.b.T, self.a.T @ gy" in solution
    averaged = "        n = gy.shape[0]\n        return gy @ self.b.T / n, self.a.T @ gy"
    _, report = check(
        tmp_path, solution.replace("        return gy @ self.b.T, self.a.T @ gy", averaged), name="matmul"
    )
    assert (
        report.found[1]
        == f"{CHANGE}a term dropped: gy @ self.b.T / n -> gy @ self.b.T, in `{averaged.split(chr(10))[1].strip()}`."
    )


def test_a_case_nothing_explains_is_searched_though_another_names_a_slip(tmp_path):
    """keepdims' condition inverted: the cases with keepdims=False raise (gy lost its axes), one with keepdims=True
    raises with nothing to explain it, the others get an extra axis, which reads as a missing sum. A slip named in
    one case while another is unexplained is not yet the file's: the search runs, and finds the condition."""
    solution = (SOLUTIONS / "mean.py").read_text()
    old = "        if not self.keepdims:\n            gy = np.expand_dims(gy, self.axes)"
    new = "        g = gy\n        if self.keepdims:\n            g = np.expand_dims(g, self.axes)"
    assert old in solution
    copied = "        return np.broadcast_to(gy / n, self.x_shape).copy()"
    assert copied in solution
    source = solution.replace(old, new).replace(copied, "        return np.ones(self.x_shape) * g / n")
    code, report = check(tmp_path, source, name="mean")
    levels = {report_module.specific(case.lines) for case in report.cases if not case.passed}
    assert levels == {0, 2}  # a case raised unexplained, others name a slip (not the file's)
    number = source.splitlines().index("        if self.keepdims:") + 1
    assert code == 1 and report.found[0].startswith(f"{FOUND}{number} of my_mean.py: a condition"), report.found


def test_the_cases_a_file_failed_run_first_and_judge_as_in_their_own_place(tmp_path):
    """The search's quick checks try the cases the file failed first (check's `first`): the same cases, each drawn
    from its own number, so each gives the verdict it gives in the full check."""
    solution = (SOLUTIONS / "sum.py").read_text()
    wrong = solution.replace("        if not self.keepdims:\n", "        if True:\n")  # fails where keepdims=True

    def headers(source, first):
        path = tmp_path / "my_sum.py"
        path.write_text(source)
        lines = []
        with Student(path) as student:
            check_cases(BY_NAME["sum"], student, out=lines.append, seed=11, first=first)
        return [line for line in lines if line.startswith("case ")]

    plain = headers(wrong, ())
    failed = [n for n, line in enumerate(plain, 1) if line.endswith("FAILED")]
    assert len(plain) == 7 and 0 < len(failed) < 7
    first = failed[::-1]
    in_order = [plain[n - 1] for n in first] + [line for n, line in enumerate(plain, 1) if n not in first]
    assert headers(wrong, first) == in_order
    assert headers(solution, first) == [line.replace(": FAILED", ": ok") for line in in_order]


# a stranger's mistakes (2026-11-30: 51 written by someone who had not seen the checker) that its guesses misnamed
@pytest.mark.parametrize(
    "name, right, wrong, change",
    [
        ("ties", "(self.low <= self.x) & (self.x", "(self.low <= self.x) | (self.x", "| -> &"),  # the mask's &
        ("function", "unbroadcast(gy * self.a / self.y", "unbroadcast(gy * 2 * self.a / self.y", ""),  # 2 times
        ("topo", "    return order", "    return order[::-1]", ""),  # a right order reversed
        ("topo", "for p in node.parents if", "for p in node.parents[1:] if", ""),  # nodes left out
        ("exp_log", "return gy / self.x", "return gy / (self.x + 1e-8)", "a term dropped"),  # not finite differences
        (  # 1/sqrt(T) for 1/sqrt(D): a factor and the step it enters at say where, not what
            "causal_attention",
            "gq = gs @ self.k * self.scale",
            "gq = gs @ self.k / np.sqrt(self.q.shape[-2])",
            "the constant 2 -> 1",
        ),
    ],
)
def test_a_slip_only_described_in_numbers_is_searched_and_named_at_its_line(tmp_path, name, right, wrong, change):
    """A constant factor (its cause a guess: the 2 of a square root's derivative read as sqrt of an axis length 4),
    how many elements are wrong, which pair breaks an order or which nodes it leaves out, which step first goes wrong
    describe what is wrong but name no slip: the search runs and names the line."""
    source = (SOLUTIONS / f"{name}.py").read_text()
    assert source.count(right) == 1
    source = source.replace(right, wrong)
    code, report = check(tmp_path, source, name=name)
    line = next(n for n, text in enumerate(source.splitlines(), 1) if wrong.strip() in text)
    assert code == 1 and report.found and report.found[0].startswith(f"{FOUND}{line} of my_{name}.py"), report.found
    assert change in report.found[1]
