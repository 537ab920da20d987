"""Tests for tensorlab.exercises: every stub fails, every reference solution passes, slips are named.

See docs/exercises.md for how students and teachers use them.

The command line runs in-process through `main(argv)`; subprocess runs prove that
`python -m tensorlab.exercises` works from a copy of the package alone (no teachers/), that a
hung case is stopped and that Ctrl-C prints one line. A planted mistake is a reference solution
(teachers/solutions/, in the checkout only) with lines changed as a student would write them,
written to tmp_path; `plant` fails loudly if a line is no longer there.
"""

import itertools
import shutil
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from teachers import classroom
from tensorlab.exercises import BY_NAME, EXERCISES, diagnose, search
from tensorlab.exercises.__main__ import main
from tensorlab.exercises.gradient import Case

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "tensorlab" / "exercises"
SOLUTIONS = ROOT / "teachers" / "solutions"  # in the checkout only: not part of the installed package
NAMES = [exercise.name for exercise in EXERCISES]
REQUIRED = [
    "value",
    "topo",
    "unbroadcast",
    "function",
    "mul",
    "matmul",
    "exp_log",
    "sum",
    "softmax",
    "log_softmax_nll",
    "rms_norm",
    "embedding",
    "causal_attention",
    "adamw",
]


def run(capsys, *argv):
    """Exit code and everything printed by `python -m tensorlab.exercises *argv` (assignment: teachers.classroom)."""
    code = (classroom.main if argv[:1] == ("assignment",) else main)([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def plant(tmp_path, name, old, new, *more):
    """The reference solution of `name` with `old` replaced by `new` (and each further pair), in tmp_path."""
    source = (SOLUTIONS / f"{name}.py").read_text()
    for before, after in [(old, new)] + list(zip(more[::2], more[1::2])):
        assert before in source, f"teachers/solutions/{name}.py no longer contains {before!r}"
        source = source.replace(before, after)
    path = tmp_path / f"my_{name}.py"
    path.write_text(source)
    return path


def check_planted(capsys, tmp_path, name, old, new, *more):
    code, out = run(capsys, "check", name, plant(tmp_path, name, old, new, *more))
    assert code == 1, out
    return out


# ----- the catalog, stubs and solutions ---------------------------------------------------------------
def test_the_required_exercises_exist_each_with_a_stub_and_a_solution():
    assert set(REQUIRED) <= set(NAMES)
    for name in NAMES:
        assert (PACKAGE / "catalog" / name / "stub.py").is_file()
        assert (SOLUTIONS / f"{name}.py").is_file()
    assert not (PACKAGE / "solutions").exists()


def test_every_exercise_is_one_folder_of_a_stub_and_its_data_and_every_folder_is_in_the_course():
    """One exercise, one folder: a folder left out of ORDER, or an exercise named apart from its folder, fails."""
    folders = {p.name for p in (PACKAGE / "catalog").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == set(NAMES) and len(NAMES) == len(set(NAMES))
    for name in NAMES:
        files = {p.name for p in (PACKAGE / "catalog" / name).iterdir() if p.suffix == ".py"}
        assert files == {"stub.py", "__init__.py"}, (name, files)
        assert BY_NAME[name].cases and all(case.prepare and case.target for case in BY_NAME[name].cases), name


def test_the_exercises_work_from_the_package_alone(tmp_path):
    """An installed tensorlab has no teachers/ folder: list and check still work."""
    shutil.copytree(
        ROOT / "tensorlab", tmp_path / "tensorlab", ignore=shutil.ignore_patterns("solutions", "__pycache__")
    )
    assert not (tmp_path / "tensorlab" / "exercises" / "solutions").exists()
    listed = subprocess.run(
        [sys.executable, "-m", "tensorlab.exercises", "list"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert listed.returncode == 0, listed.stderr
    for name in NAMES:
        assert f"  {name}  " in listed.stdout
    checked = subprocess.run(
        [sys.executable, "-m", "tensorlab.exercises", "check", "mul", "tensorlab/exercises/catalog/mul/stub.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert checked.returncode == 1 and "Mul.backward is not written yet" in checked.stdout, checked.stderr


@pytest.mark.parametrize("name", NAMES)
def test_the_stub_fails_and_says_what_to_write(capsys, name):
    code, out = run(capsys, "check", name, PACKAGE / "catalog" / name / "stub.py")
    assert code == 1
    assert "is not written yet: it still raises NotImplementedError" in out  # so the given forward passed
    assert "replace the `raise NotImplementedError(...)` line" in out
    assert out.rstrip().splitlines()[-1].startswith("FAILED")


@pytest.mark.parametrize("name", NAMES)
def test_the_reference_solution_passes(capsys, name):
    code, out = run(capsys, "check", name, SOLUTIONS / f"{name}.py")
    assert code == 0, out
    assert out.rstrip().splitlines()[-1].startswith("PASSED")


# ----- the slips the diagnosis names ---------------------------------------------------------------------
def test_a_gradient_with_its_axes_in_another_order_is_put_back_by_the_fix_it_names():
    """Every order of 2 to 4 axes of distinct lengths: the shape line names the order, and its fix gives the gradient
    back exactly (a softmax over axis 0 worked out after np.moveaxis and never moved back, a stranger's slip)."""
    rng = np.random.default_rng(0)
    for ndim in (2, 3, 4):
        shape = tuple(int(n) for n in rng.choice(np.arange(2, 9), ndim, replace=False))
        g = rng.standard_normal(shape)
        for order in itertools.permutations(range(ndim)):
            if order == tuple(range(ndim)):
                continue
            lines, fix = diagnose.shape_problem("x", g.transpose(order), shape, shape)
            assert f"its axes in the order {order}" in lines[1] or order[-2:] == (ndim - 1, ndim - 2), lines
            assert "np.moveaxis" in lines[1] and np.array_equal(fix(g.transpose(order)), g)


def test_a_flipped_sign_is_named(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "exp_log", "return gy * self.y", "return -gy * self.y")
    assert "Your gradient is exactly -1 times the right one: check the sign of your derivative." in out
    assert "case 2/3  Log: x (3, 4): ok" in out


def test_a_transposed_matmul_gradient_is_named_by_shape_and_on_a_square_case(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "matmul", "self.a.T @ gy", "gy.T @ self.a")
    # non-square b: the shape gives it away, and the transposed-back gradient would pass
    assert "input 'b' has shape (4, 2), but your gradient for it has shape (2, 4)" in out
    assert "with its last two axes swapped: your gradient is transposed" in out
    assert "Changed that way, your gradient passes this case." in out
    # square b: only the values can show it
    assert "Your gradient is the transpose of the right one" in out


def test_a_factor_off_by_the_summed_axis_length_is_named(capsys, tmp_path):
    out = check_planted(
        capsys,
        tmp_path,
        "sum",
        "return np.broadcast_to(gy, self.x_shape).copy()",
        "return np.broadcast_to(gy, self.x_shape).copy() / self.x_shape[self.axes[0]]",
    )
    assert "Your gradient is 1/4 times the right one: off by the axis length 4 (axis 1 of 'x')" in out
    assert "too small by 4" in out


def test_a_mean_without_its_one_over_n_is_named(capsys, tmp_path):
    out = check_planted(
        capsys, tmp_path, "mean", "np.broadcast_to(gy / n, self.x_shape)", "np.broadcast_to(gy, self.x_shape)"
    )
    assert "off by the axis length 4 (axis 1 of 'x'); it is too large by 4: a division by 4 is missing" in out
    assert "off by 15, the number of elements of 'x' over axes (0, 2)" in out
    assert "off by 60, the number of elements of 'x' in all" in out


def test_a_cross_entropy_without_its_mean_is_off_by_the_row_count(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "log_softmax_nll", "return gy * gx / n, None", "return gy * gx, None")
    assert "Your gradient is 4 times the right one: off by the axis length 4 (axis 0 of 'logits')" in out


def test_a_missing_attention_scale_is_named(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "causal_attention", "gq = gs @ self.k * self.scale", "gq = gs @ self.k")
    assert "'q': The 1/sqrt(D) scale of the scores is missing" in out
    assert "Your gv is right" in out
    assert "input 'k'" not in out.split("Compared with the analytic gradient")[0]  # only q is wrong


def test_a_zero_gradient_is_named(capsys, tmp_path):
    out = check_planted(
        capsys,
        tmp_path,
        "softmax",
        "return self.y * (gy - (gy * self.y).sum(axis=self.axis, keepdims=True))",
        "return np.zeros_like(gy)",
    )
    assert "Your gradient is all zeros." in out


def test_a_sum_along_a_fixed_axis_is_named_only_where_the_input_was_broadcast():
    """mul's a (2, 2, 1, 4) stretched along axis 2: a gradient summed over axis 0 instead is named; a reduction's input
    (3, 4, 5) was never broadcast to its output (3, 1, 5), so a (3, 4, 1, 5) gradient gets the exercise's own hint."""
    lines, _ = diagnose.shape_problem("a", np.zeros((1, 2, 3, 4)), (2, 2, 1, 4), (2, 2, 3, 4))
    assert "Your gradient for 'a' is summed over axis 0, where 'a' has full length" in lines[1]
    assert "and not over axis 2, along which it was stretched" in lines[1]
    lines, _ = diagnose.shape_problem("x", np.zeros((3, 4, 1, 5)), (3, 4, 5), (3, 1, 5), "the reduction's hint")
    assert lines[1:] == ["the reduction's hint"]


def test_a_missing_sum_over_a_broadcast_axis_is_named_with_the_fix(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "mul", "unbroadcast(gy * self.a, self.b.shape)", "gy * self.a")
    assert "case 1/7  Mul: a (3, 4), b (3, 4): ok" in out
    assert "input 'b' has shape (4,), but your gradient for it has shape (3, 4) (the output's shape)" in out
    assert "A missing sum over the broadcast axes: sum over axis 0 to get back shape (4,):  gb = gb.sum(axis=0)" in out
    assert "gb = gb.sum(axis=(0, 1, 3)).reshape((3, 1))" in out  # b (3, 1) against a (2, 2, 1, 4)
    chosen = out.split("drawn afresh on each run")[0]
    assert chosen.count("Changed that way, your gradient passes this case.") == 3  # the three where b is broadcast


def test_an_unsummed_weight_gradient_in_rms_norm_is_a_missing_broadcast_sum(capsys, tmp_path):
    out = check_planted(
        capsys,
        tmp_path,
        "rms_norm",
        "gw = (gy * self.xhat).sum(axis=tuple(range(gy.ndim - 1)))",
        "gw = gy * self.xhat",
    )
    assert "gweight = gweight.sum(axis=(0, 1))" in out


def test_a_backward_that_ignores_gy_is_named(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "exp_log", "return gy * self.y", "return self.y")
    assert "it ignores gy" in out


def test_swapped_gradients_are_named(capsys, tmp_path):
    out = check_planted(
        capsys,
        tmp_path,
        "mul",
        "return unbroadcast(gy * self.b, self.a.shape), unbroadcast(gy * self.a, self.b.shape)",
        "return unbroadcast(gy * self.a, self.a.shape), unbroadcast(gy * self.b, self.b.shape)",
    )
    assert "Your gradient for 'a' is the right gradient for 'b': the two are swapped." in out


def test_some_elements_wrong_are_listed_and_repeated_embedding_ids_recognised(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "embedding", "np.add.at(gw, self.ids, gy)", "gw[self.ids] += gy")
    assert "input 'weight' (shape (6, 4)): 8 of 24 elements are wrong." in out
    assert "'weight': Repeated ids overwrite each other" in out and "np.add.at" in out


def test_a_wrong_one_hot_term_is_pointed_at_the_targets(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "log_softmax_nll", "self.targets] -= 1", "self.targets] += 1")
    assert "Only elements at the targets (row n, column targets[n]) are wrong" in out


def test_a_setting_the_backward_ignores_is_named_by_the_slip_it_gives(capsys, tmp_path):
    """No note guesses from which settings fail (it misled where a file failed with high=1.0 for a wrong mask)."""
    out = check_planted(
        capsys,
        tmp_path,
        "softmax",
        "(gy * self.y).sum(axis=self.axis, keepdims=True)",
        "(gy * self.y).sum(axis=-1, keepdims=True)",
    )
    assert "case 1/6  Softmax: x (3, 5), axis=-1: ok" in out
    assert "'x': Your row sum runs along axis 1, but this softmax was taken along axis 0: sum along self.axis" in out
    assert "Note:" not in out


def test_the_report_table_is_printed(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "exp_log", "return gy / self.x", "return gy * self.x")
    assert "Compared with the analytic gradient:" in out
    assert "an element is wrong when |yours - reference| > 1e-12 * (|reference| + " in out
    assert "input 'x' of shape (3, 4): 12 of 12 elements are wrong; max abs difference" in out
    assert "yours" in out and "reference" in out


# ----- one planted mistake per slip, written as a student would, and the words that name it -------------------
SOFTMAX_RETURN = "return self.y * (gy - (gy * self.y).sum(axis=self.axis, keepdims=True))"
RMS_GX = "gx = self.r * (g - self.xhat * (g * self.xhat).mean(axis=-1, keepdims=True))"
RECOMPUTED_R = (
    "x = self.xhat / self.r\n        ms = (x * x).mean(axis=-1, keepdims=True)\n        r = {r}\n"
    "        xhat = x * r\n        gx = r * (g - xhat * (g * xhat).mean(axis=-1, keepdims=True))"
)
ATTENTION_GS = "gs = p * (gp - (gp * p).sum(axis=-1, keepdims=True))"

SLIPS = [
    # softmax
    ("softmax", [SOFTMAX_RETURN, "return gy * self.y * (1 - self.y)"], "You used y(1 - y)"),
    ("softmax", [SOFTMAX_RETURN, "return self.y * gy"], "The row-sum term is missing"),
    ("softmax", [SOFTMAX_RETURN, SOFTMAX_RETURN.replace("(gy - ", "(gy + ")], "The row-sum term has the wrong sign"),
    (
        "softmax",
        [SOFTMAX_RETURN, SOFTMAX_RETURN.replace(", keepdims=True", "")],
        "Your row sum lost its axis (no keepdims=True)",
    ),
    (
        "softmax",
        [SOFTMAX_RETURN, SOFTMAX_RETURN.replace("axis=self.axis", "axis=-1")],
        "Your row sum runs along axis 1, but this softmax was taken along axis 0",
    ),
    (
        "softmax",
        [SOFTMAX_RETURN, "return self.y * (gy - gy.sum(axis=self.axis, keepdims=True))"],
        "Your row-sum term sums gy alone",
    ),
    # cross-entropy
    ("log_softmax_nll", ["gx = self.p.copy()", "gx = np.log(self.p)"], "You used the log-probabilities"),
    ("log_softmax_nll", ["gx[np.arange(n), self.targets] -= 1", "gx -= 1"], "You subtracted 1 from every element"),
    ("log_softmax_nll", ["gx[np.arange(n), self.targets] -= 1", "pass"], "The one-hot term is missing"),
    # RMSNorm
    ("rms_norm", [RMS_GX, "gx = self.r * g"], "You treated the normaliser r = 1/sqrt(mean(x^2) + eps) as a constant"),
    (
        "rms_norm",
        [RMS_GX, RMS_GX.replace("(g - ", "(g + ")],
        "The term that comes through the normaliser has the wrong sign",
    ),
    ("rms_norm", [RMS_GX, RMS_GX.replace(".mean(", ".sum(")], "is C times too large"),
    ("rms_norm", [RMS_GX, RECOMPUTED_R.format(r="1 / np.sqrt(ms)")], "your gradient is the right one for eps=0.0"),
    (
        "rms_norm",
        [RMS_GX, RECOMPUTED_R.format(r="1 / (np.sqrt(ms) + self.eps)")],
        "Your normaliser has eps outside the square root",
    ),
    ("rms_norm", ["g = gy * self.weight", "g = gy"], "The weight is missing from gx"),
    ("rms_norm", ["(gy * self.xhat).sum", "gy.sum"], "gweight is missing the factor xhat"),
    (
        "rms_norm",
        ["(gy * self.xhat).sum", "(gy * self.xhat / self.r).sum"],
        "gweight uses x where the normalised xhat = x * r belongs",
    ),
    # gweight summed over the wrong axes: a gradient of the wrong shape, the slip named beside the shape
    ("rms_norm", ["sum(axis=tuple(range(gy.ndim - 1)))", "sum()"], "gweight is summed over every axis"),
    ("rms_norm", ["sum(axis=tuple(range(gy.ndim - 1)))", "sum(axis=-1)"], "gweight is summed along the channels"),
    # matmul: operand order and transposes, hidden by the square case
    ("matmul", ["return gy @ self.b.T,", "return gy @ self.b,"], "In ga you multiply gy by b where its transpose"),
    ("matmul", ["return gy @ self.b.T,", "return self.b.T @ gy,"], "In ga the factors are in the wrong order"),
    ("matmul", ["self.a.T @ gy", "self.a @ gy"], "In gb you multiply a by gy where a's transpose belongs"),
    ("matmul", ["self.a.T @ gy", "gy @ self.a.T"], "In gb the factors are in the wrong order"),
    # the chain rule's local derivative
    ("exp_log", ["return gy / self.x", "return gy * self.x"], "You multiplied by x where the derivative of log"),
    ("exp_log", ["return gy / self.x", "return gy / self.x ** 2"], "You divided by x^2"),
    ("exp_log", ["return gy / self.x", "return gy * np.log(self.x)"], "You multiplied gy by log(x)"),
    ("exp_log", ["return gy * self.y", "return np.exp(gy)"], "You took exp of gy"),
    ("function", ["gy * self.a / self.y, self.a.shape", "gy * self.a * self.y, self.a.shape"], "You multiplied by y"),
    ("causal_attention", ["gq = gs @ self.k", "gq = gs.swapaxes(-1, -2) @ self.k"], "In gq, gS is transposed"),
    # embedding
    ("embedding", ["np.add.at(gw, self.ids, gy)", "gw[self.ids] = gy"], "Repeated ids overwrite each other"),
    # attention: the scale, the transposes, the softmax step
    (
        "causal_attention",
        ["gs @ self.k * self.scale", "gs @ self.k / self.scale", "@ self.q * self.scale", "@ self.q / self.scale"],
        "You multiplied by sqrt(D) where the forward divides by it",
    ),
    ("causal_attention", ["gs.swapaxes(-1, -2) @ self.q", "gs @ self.q"], "In gk, gS is not transposed"),
    ("causal_attention", ["gv = p.swapaxes(-1, -2) @ gy", "gv = p @ gy"], "In gv, P is not transposed"),
    (
        "causal_attention",
        ["gs @ self.k * self.scale", "gs @ self.k.swapaxes(-1, -2) * self.scale"],
        "In gq, k is transposed",
    ),
    ("causal_attention", ["gp = gy @ self.v.swapaxes(-1, -2)", "gp = gy @ self.v"], "In gP, v is not transposed"),
    ("causal_attention", [ATTENTION_GS, "gs = p * (1 - p) * gp"], "In the softmax step you used P(1 - P)"),
    ("causal_attention", [ATTENTION_GS, "gs = p * gp"], "In the softmax step the row-sum term is missing"),
    (
        "causal_attention",
        [ATTENTION_GS, ATTENTION_GS.replace("(gp - ", "(gp + ")],
        "In the softmax step the row-sum term has the wrong sign",
    ),
    (
        "causal_attention",
        [
            "p = self.p\n",
            "s = self.q @ self.k.swapaxes(-1, -2) * self.scale\n"
            "        e = np.exp(s - s.max(axis=-1, keepdims=True))\n"
            "        p = e / e.sum(axis=-1, keepdims=True)\n",
        ],
        "Gradient leaks to future positions: changing gy at position 0 (the first query) changes your gk at "
        "positions [1, 2] and your gv at positions [1, 2]",
    ),
]


@pytest.mark.parametrize("name, edits, expected", SLIPS, ids=[f"{n}-{e[:30]}" for n, _, e in SLIPS])
def test_each_slip_is_named_in_the_students_words(capsys, tmp_path, name, edits, expected):
    out = check_planted(capsys, tmp_path, name, *edits)
    assert expected in out, out
    # a named slip in the chosen cases, not the generic advice (a drawn shape can make a slip another, or none)
    assert diagnose.FALLBACK not in out.split("drawn afresh on each run")[0]


UNMASKED_SOFTMAX = SLIPS[-1][1]  # attention's backward recomputing P without the causal mask


@pytest.mark.parametrize("seed", [22, 28])
def test_a_leak_past_the_mask_is_named_where_the_scores_are_near_1000_too(capsys, tmp_path, seed):
    """Each seed here failed `test_each_slip_is_named_in_the_students_words` (one draw in ten did): at scores near
    1,000 the gradients of q and k are tiny, and the case said they ignored gy (seed 22), or the first query's row was
    one-hot, so changing its gy moved nothing later (seed 28); the leak then went unnamed."""
    code, out = run(
        capsys, "check", "causal_attention", plant(tmp_path, "causal_attention", *UNMASKED_SOFTMAX), "--seed", seed
    )
    chosen = out.split("drawn afresh on each run")[0]
    assert code == 1 and chosen.count("Gradient leaks to future positions") == 3, out
    assert "stays the same when gy is doubled" not in chosen and diagnose.FALLBACK not in chosen


def test_the_leak_probe_finds_nothing_to_leak_to_at_one_position():
    from tensorlab.exercises.catalog.causal_attention import _causality_probe

    one = np.ones((1, 1, 1, 4))
    assert _causality_probe(lambda gy: (gy, gy, gy), [one, one, one]) == []


def test_a_gradient_tiny_everywhere_still_doubles_with_gy(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "exp_log", "return gy * self.y", "return gy * self.y * 1e-10")
    assert "input 'x'" in out and "stays the same when gy is doubled" not in out


def test_every_slip_message_reads_with_the_settings_of_its_cases():
    cases = [case for exercise in EXERCISES for case in exercise.cases]
    assert sum(len(getattr(case, "slips", [])) for case in cases) > 100
    for case in [case for case in cases if getattr(case, "slips", [])]:
        drawn = case.draw and case.draw(np.random.default_rng(0), case.make(np.random.default_rng(0)))
        settings = drawn or case.settings
        for slip in case.slips:
            assert "{" not in slip.says.format(**settings), slip.name


def test_rms_norm_eps_slips_are_seen_and_named_even_on_unit_rows(capsys, tmp_path):
    """eps inside vs outside the square root changes a unit row's gradient by ~1e-5 of its size: under finite
    differences' tolerance (1e-3) that passed; against the analytic gradient (1e-12) it fails, and is named."""
    out = check_planted(capsys, tmp_path, "rms_norm", RMS_GX, RECOMPUTED_R.format(r="1 / (np.sqrt(ms) + self.eps)"))
    case_1 = out.split("case 1/5  RMSNorm: x (3, 5), weight (5,), eps=1e-05: FAILED")[1].split("case 2/5")[0]
    assert "Your normaliser has eps outside the square root" in case_1, out
    assert "finite differences" not in case_1, out
    assert "case 3/5  RMSNorm: x (3, 6), weight (6,), eps=1e-05: FAILED" in out
    assert "case 4/5  RMSNorm: x (2, 4), weight (4,), eps=0.5: FAILED" in out


def test_a_row_sum_without_keepdims_that_cannot_broadcast_is_explained(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "softmax", SOFTMAX_RETURN, SOFTMAX_RETURN.replace(", keepdims=True", ""))
    assert (
        "case 1/6  Softmax: x (3, 5), axis=-1: FAILED\n    Softmax.backward raised ValueError: operands could "
        "not be broadcast together" in out
    )
    assert (
        "Shapes here: gy (3, 5); x (3, 5).\n    Two arrays whose shapes do not line up: often a sum or mean "
        "without keepdims=True" in out
    )


def test_a_forgotten_keepdims_is_named_as_keepdims_not_as_the_axis(capsys, tmp_path):
    out = check_planted(
        capsys,
        tmp_path,
        "sum",
        "if not self.keepdims:\n            gy = np.expand_dims",
        "if True:\n            gy = np.expand_dims",
    )
    assert "your backward fails only with keepdims=True" in out
    assert "Does it use self.axis" not in out


@pytest.mark.parametrize("name", ["sum", "mean", "var"])
def test_reduced_axes_put_back_at_the_end_are_named_as_misplaced_not_as_lost(capsys, tmp_path, name):
    """gy.reshape(gy.shape + (1,) * k) puts the size-1 axes after the kept ones: every case that raises says so, none
    that gy lost them (a stranger's slip, 2026-12-01)."""
    out = check_planted(
        capsys, tmp_path, name, "np.expand_dims(gy, self.axes)", "gy.reshape(gy.shape + (1,) * len(self.axes))"
    )
    raised = out.count("could not be broadcast")
    assert raised and out.count("but not where they were reduced") == raised and "gy lost" not in out, out


def test_a_slip_that_explains_part_of_what_another_explains_is_not_said(capsys, tmp_path):
    """A tie's gy all to a: ga is also what "all of gy to both" gives, but gb is not; only the slip that explains both
    is said (a stranger read the two as contradicting each other, 2026-12-01)."""
    out = check_planted(
        capsys,
        tmp_path,
        "ties",
        "share_a = (self.a > self.b) + 0.5 * (self.a == self.b)",
        "share_a = (self.a >= self.b) + 0.0",
    )
    assert "you give all of gy to a:" in out and "counting it twice" not in out, out


def test_an_inverted_scale_is_not_explained_as_a_missing_mean(capsys, tmp_path):
    out = check_planted(
        capsys, tmp_path, "causal_attention", "gq = gs @ self.k * self.scale", "gq = gs @ self.k / self.scale"
    )
    assert "You multiplied by sqrt(D) where the forward divides by it" in out
    assert "like the 1/n of a mean" not in out


def test_when_no_slip_fits_the_first_wrong_stage_and_its_elements_are_named(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "causal_attention", ATTENTION_GS, ATTENTION_GS + " + 0.1 * p * p")
    assert diagnose.FALLBACK in out
    assert (
        "Step by step against the reference: gP (your `gp`) right; the first step that goes wrong is gS, the "
        "gradient of S (shape (1, 2, 3, 3)): your `gs` differs from it at (0, 0, 0, 0), (0, 0, 1, 0), (0, 0, 1, 1)"
    ) in out
    assert out.count("the first step that goes wrong is gS, the gradient of S (shape (1, 2, 3, 3))") == 1
    assert "Gradient leaks" not in out  # the extra term is causal: it only looks like a leak to a naive probe


def test_a_slip_in_the_last_step_is_localised_there(capsys, tmp_path):
    out = check_planted(
        capsys,
        tmp_path,
        "causal_attention",
        "gq = gs @ self.k * self.scale",
        "gq = gs @ self.k * self.scale + 0.01 * self.q",
    )
    assert (
        "Step by step against the reference: gP (your `gp`), gS (your `gs`) right; the slip is in the last step, "
        "from `gs` to your gradient for 'q'."
    ) in out


def test_a_slip_after_a_right_step_without_a_variable_for_the_next_says_after_which(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "rms_norm", RMS_GX, RMS_GX.replace("(g - ", "(g - 0.5 * "))
    assert (
        "Step by step against the reference: gxhat (your `g`) right; none of your variables matches the next "
        "step, gr (the gradient of r, shape (3, 1)): the slip comes after `g`."
    ) in out


def test_a_nan_gradient_never_passes_and_is_named(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "softmax", SOFTMAX_RETURN, "return gy * np.nan")
    assert "Your gradient for 'x' has NaN at (0, 0), (0, 1), (0, 2), (0, 3), (0, 4) and 10 more" in out
    assert "PASSED" not in out


# ----- answers out of reach ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "new, called",
    [
        ("return (__import__('tensorlab').tensor(gy) / self.x).data", "tensorlab/functional.py: div"),
        (
            "t = __import__('tensorlab').tensor(self.x, requires_grad=True)\n        t.log().backward(gy)\n"
            "        return t.grad",
            "tensorlab/functional.py: log",
        ),
        (
            "from tensorlab.ops.elementwise import Log\n        return Log.backward(self, gy)",
            "tensorlab/ops/elementwise.py: Log.backward",
        ),
    ],
)
def test_a_backward_that_calls_the_engine_is_refused(capsys, tmp_path, new, called):
    out = check_planted(capsys, tmp_path, "exp_log", "return gy / self.x", new)
    assert f"Log.backward calls tensorlab itself ({called}): that is the engine's answer, not yours." in out
    assert "case 2/3  Log: x (3, 4): FAILED" in out


def test_a_backward_that_switches_the_watch_off_is_refused(capsys, tmp_path):
    out = check_planted(
        capsys,
        tmp_path,
        "exp_log",
        "return gy / self.x",
        "__import__('sys').setprofile(None)\n        return gy / self.x",
    )
    assert ("Log.backward calls tensorlab itself (sys.setprofile: the checker's watch switched off)") in out


def test_a_backward_that_uses_torch_autograd_is_refused(capsys, tmp_path):
    """torch is installed here, and cannot be imported where the student's code runs."""
    path = plant(
        tmp_path,
        "exp_log",
        "return gy / self.x",
        "import torch\n        t = torch.tensor(self.x, requires_grad=True)\n"
        "        torch.log(t).backward(torch.tensor(gy))\n        return t.grad.numpy()",
    )
    code, out = run(capsys, "check", "exp_log", path)
    assert code == 1
    assert "Log.backward raised ModuleNotFoundError: No module named 'torch'" in out


def test_the_solutions_are_not_in_the_built_wheel(tmp_path):
    """Built from a copy of the checkout (teachers/ included), so that the build leaves the checkout alone."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for folder in ("tensorlab", "teachers"):
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", str(source), "-w", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    [wheel] = tmp_path.glob("tensorlab-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "tensorlab/exercises/catalog/softmax/stub.py" in names and "tensorlab/exercises/check.py" in names
    assert not [n for n in names if "solutions" in n or n.startswith("teachers")], names


def test_assignment_writes_stubs_and_a_readme_without_solutions(capsys, tmp_path):
    folder = tmp_path / "course"
    code, out = run(capsys, "assignment", folder)
    assert code == 0, out
    files = sorted(p.name for p in folder.iterdir())
    assert files == sorted([f"{n}.py" for n in NAMES] + ["README.md", "GUIDE.md"])
    readme = (folder / "README.md").read_text()
    assert "Hand in each file under the name it has here (`matmul.py`, not `my_matmul.py`)" in readme
    guide = (folder / "GUIDE.md").read_text()  # the guide to the messages, without the teachers' part
    assert "*is not written yet*" in guide and "## For teachers" not in guide and "GUIDE.md" in readme
    for name in NAMES:
        assert f"`python -m tensorlab.exercises check {name} {name}.py`" in readme
        assert (folder / f"{name}.py").read_text() == (PACKAGE / "catalog" / name / "stub.py").read_text()
        assert "NotImplementedError" in (folder / f"{name}.py").read_text()
    code, out = run(capsys, "assignment", folder)
    assert code == 2 and "not an empty folder" in out
    # the README's command, run in the students' folder, checks the stub there
    command = next(line for line in readme.splitlines() if "| `value.py` |" in line).split("`")[-2]
    done = subprocess.run(
        command.replace("python", sys.executable, 1).split(), cwd=folder, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1 and "Value.__add__ is not written yet" in done.stdout, done.stdout + done.stderr


# ----- a time limit, and Ctrl-C -----------------------------------------------------------------------------------
def test_a_backward_that_never_returns_is_stopped_with_one_line(tmp_path):
    """In a subprocess, so that a broken time limit fails this test instead of hanging the suite."""
    path = plant(tmp_path, "exp_log", "return gy * self.y", "while True:\n            pass")
    done = subprocess.run(
        [sys.executable, "-m", "tensorlab.exercises", "check", "exp_log", str(path), "--time-limit", "0.5"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 1 and done.stderr == "", done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[-1] == (
        "case 1/3  Exp: x (3, 4): STOPPED: it did not finish within 0.5 s (a loop that never "
        "ends?). Fix it, or give it longer with --time-limit SECONDS."
    )
    assert not any(line.startswith("case 2/2") for line in lines)


def test_a_top_level_that_never_ends_is_stopped_too(tmp_path):
    path = tmp_path / "my_topo.py"
    path.write_text("while True:\n    pass\n")
    done = subprocess.run(
        [sys.executable, "-m", "tensorlab.exercises", "check", "topo", str(path), "--time-limit", "0.3"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 1
    assert "my_topo.py (before any check) did not finish within 0.3 s: code at its top level never ends." in done.stdout


def test_ctrl_c_prints_one_line(tmp_path):
    started = "the planted backward is running"
    loop = f"print({started!r})\n        while True:\n            pass"
    path = plant(tmp_path, "exp_log", "return gy * self.y", loop)
    process = subprocess.Popen(
        [sys.executable, "-u", "-m", "tensorlab.exercises", "check", "exp_log", str(path), "--time-limit", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        # Ctrl-C as a terminal sends it, even when this suite runs with SIGINT ignored (`nohup`, `cmd &` in a script):
        # a process started with it ignored keeps ignoring it, as a background job should
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    first = process.stdout.readline()
    assert first.startswith("Exercise 'exp_log'"), first
    assert process.stdout.readline().startswith("Checking ")
    # Ctrl-C once case 1 is surely running, whatever the machine's load (a fixed sleep could still fall before it)
    assert process.stdout.readline().strip() == started
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 130, (out, err)
    assert err == ""
    assert out.strip().splitlines() == [
        "case 1/3  Exp: x (3, 4): interrupted (Ctrl-C); the cases after it were not checked."
    ]


# ----- the engine track: each typical mistake planted and named ----------------------------------------------------
VALUE_BACKWARD = """        order, visited, stack = [], set(), [(self, False)]
        while stack:                         # iterative depth-first search: parents before children
            node, parents_done = stack.pop()
            if parents_done:
                order.append(node)
            elif id(node) not in visited:
                visited.add(id(node))
                stack.append((node, True))
                stack.extend((p, False) for p in node.parents if id(p) not in visited)
        self.grad = 1.0
        for node in reversed(order):         # each node after every node that uses it
            node._backward()
"""
NAIVE_WALK = """        self.grad = 1.0
        stack = [self]
        while stack:                         # no order: a node's _backward may run before its consumers'
            node = stack.pop()
            node._backward()
            stack.extend(node.parents)
"""
TOPO_BODY = """    order, visited, stack = [], set(), [(root, False)]
    while stack:
        node, parents_done = stack.pop()
        if parents_done:                     # all its parents are in `order` already
            order.append(node)
        elif id(node) not in visited:
            visited.add(id(node))
            stack.append((node, True))
            stack.extend((p, False) for p in node.parents if id(p) not in visited)
    return order
"""
REVERSED_PREORDER = """    order, seen, stack = [], set(), [root]
    while stack:
        node = stack.pop()
        if id(node) not in seen:
            seen.add(id(node))
            order.append(node)
            stack.extend(node.parents)
    return order[::-1]
"""
RECURSIVE = """    order, seen = [], set()

    def visit(node):
        if id(node) not in seen:
            seen.add(id(node))
            for parent in node.parents:
                visit(parent)
            order.append(node)
    visit(root)
    return order
"""
BREADTH_FIRST = """    order, seen, queue = [root], {id(root)}, [root]
    while queue:
        node = queue.pop(0)
        for p in node.parents:
            if id(p) not in seen:
                seen.add(id(p))
                order.append(p)
                queue.append(p)
    return order[::-1]
"""
KAHN_COUNTED_ONCE = """    consumers, seen, stack = {}, set(), [root]
    while stack:                             # each consumer counted once per parent it uses (a set) ...
        node = stack.pop()
        if id(node) not in seen:
            seen.add(id(node))
            for p in set(node.parents):
                consumers[id(p)] = consumers.get(id(p), 0) + 1
                stack.append(p)
    walk, ready = [], [root]
    while ready:                             # ... but subtracted once per use: m = a * a frees a too early
        node = ready.pop(0)
        walk.append(node)
        for p in node.parents:
            consumers[id(p)] -= 1
            if consumers[id(p)] == 0:
                ready.append(p)
    return walk[::-1]
"""
UNBROADCAST_RETURN = "return grad.sum(axis=tuple(range(leading)) + stretched, keepdims=True).reshape(shape)"

ENGINE_SLIPS = [
    (
        "value",
        ["self.grad += ", "self.grad = ", "other.grad += ", "other.grad = "],
        "probe 6/17  a + a (a Value added to itself): FAILED",
        "Forgetting to accumulate in __add__'s _backward: a Value used more than once",
    ),
    (  # each op's slip alone, everything else right (micrograd's best-known bug: (a + a).backward() gives 1)
        "value",
        [
            "            self.grad += out.grad\n            other.grad += out.grad",
            "            self.grad = out.grad\n            other.grad = out.grad",
        ],
        "probe 6/17  a + a (a Value added to itself): FAILED",
        "Forgetting to accumulate in __add__'s _backward",
    ),
    (
        "value",
        [
            "self.grad += other.data * out.grad",
            "self.grad = other.data * out.grad",
            "other.grad += self.data * out.grad",
            "other.grad = self.data * out.grad",
        ],
        "probe 7/17  a * a (a Value times itself): FAILED",
        "Forgetting to accumulate in __mul__'s _backward",
    ),
    (  # one line alone: `self` set, `other` still added (a + a passes: the other line adds to what self set)
        "value",
        ["            self.grad += out.grad\n", "            self.grad = out.grad\n"],
        "probe 10/17  (a + b) * a (a left of + and used again): FAILED",
        "Forgetting to accumulate in __add__'s _backward",
    ),
    (
        "value",
        ["            other.grad += out.grad\n", "            other.grad = out.grad\n"],
        "probe 6/17  a + a (a Value added to itself): FAILED",
        "Forgetting to accumulate in __add__'s _backward",
    ),
    (
        "value",
        ["self.grad += other.data * out.grad", "self.grad = other.data * out.grad"],
        "probe 11/17  (a * b) + a (a left of * and used again): FAILED",
        "Forgetting to accumulate in __mul__'s _backward",
    ),
    (
        "value",
        ["other.grad += self.data * out.grad", "other.grad = self.data * out.grad"],
        "probe 7/17  a * a (a Value times itself): FAILED",
        "Forgetting to accumulate in __mul__'s _backward",
    ),
    (
        "value",
        ["self.grad += (1 - t * t) * out.grad", "self.grad = (1 - t * t) * out.grad"],
        "probe 8/17  a.tanh() + a (a used by tanh and by +): FAILED",
        "Forgetting to accumulate in tanh's _backward",
    ),
    (
        "value",
        ["self.grad += out.data * out.grad", "self.grad = out.data * out.grad"],
        "probe 9/17  a.exp() + a (a used by exp and by +): FAILED",
        "Forgetting to accumulate in exp's _backward",
    ),
    (
        "value",
        [VALUE_BACKWARD, NAIVE_WALK],
        "probe 12/17  x = a * b; x + x (a computed Value used twice): FAILED",
        "Visiting a node before its consumers",
    ),
    (
        "value",
        ["(1 - t * t) * out.grad", "(1 - t) * out.grad"],
        "probe 3/17  a.tanh(): FAILED",
        "The local derivative in the _backward of tanh is wrong",
    ),
    (  # exact at out.grad = 1, where backward starts: only the _backward run alone with 1.7 shows it
        "value",
        ["(1 - t * t) * out.grad", "(1 - t * t)"],
        "with out.grad = 1.7 and its _backward run alone, a.grad is",
        "(or its result is not multiplied by out.grad, the gradient arriving from the output: the chain rule)",
    ),
    (  # right to 1e-10 only: judged against central differences to 1e-5, it passed every probe. Which probes it
        # fails depends on the draw (seed 904072's a.tanh() was right to 1e-12, and CI failed on a pinned probe 3)
        "value",
        ["(1 - t * t) * out.grad", "(math.tanh(self.data + 1e-6) - math.tanh(self.data - 1e-6)) / 2e-6 * out.grad"],
        "of 17 probes. Start with the first failed probe",
        "a _backward works its local derivative out by finite differences",
    ),
    ("topo", ["elif id(node) not in visited:", "elif True:"], "probe 2/6  a diamond", "['a'] appear more than once"),
    (  # tanh from exp: right for |a| < 355, an OverflowError beyond; the drawn probe goes to |a| = 1000
        "value",
        ["t = math.tanh(self.data)", "t = (math.exp(2 * self.data) - 1) / (math.exp(2 * self.data) + 1)"],
        "probe 17/17  a.tanh() * b.tanh() far from 0",
        "raised OverflowError: math range error",
    ),
    (  # nodes told apart by name: right on every graph whose names are unique, as the fixed graphs' are
        "topo",
        ["visited.add(id(node))", "visited.add(node.name)", "id(node) not in", "node.name not in"]
        + ["id(p) not in", "p.name not in"],
        "probe 6/6  40 random graphs",
        "it tells nodes apart by .name",
    ),
    (
        "topo",
        [TOPO_BODY, REVERSED_PREORDER],
        "probe 2/6  a diamond",
        "In your order 'b' (which uses 'a') comes before 'a'. The backward walk goes through the order reversed, so it "
        "would visit 'a' before its consumer 'b'",
    ),
    (
        "topo",
        [TOPO_BODY, BREADTH_FIRST],
        "probe 3/6  x used by y and by z = f(x, y), loss = g(z, c): FAILED",
        "Your order is a breadth-first walk from the root, reversed",
    ),
    (
        "topo",
        [TOPO_BODY, RECURSIVE],
        "probe 5/6  a chain of 5000 nodes: FAILED",
        "topological_order raised RecursionError",
    ),
    (
        "unbroadcast",
        [UNBROADCAST_RETURN, "return grad.sum(axis=tuple(range(leading)))"],
        "probe 3/10  grad (2, 3) -> shape (2, 1): FAILED",
        "you summed only the axes added in front ()",
    ),
    (
        "unbroadcast",
        [UNBROADCAST_RETURN, "return grad.sum(axis=tuple(range(len(shape), grad.ndim)))"],
        "probe 1/10  grad (2, 3) -> shape (3,): FAILED",
        "Summing over the wrong axes: you summed over axes (1,), but broadcasting added or stretched axes (0,)",
    ),
    (
        "unbroadcast",
        [UNBROADCAST_RETURN, "return grad.sum(axis=tuple(range(leading)) + stretched)"],
        "probe 2/10  grad (2, 3) -> shape (1, 3): FAILED",
        "You summed over the right axes (0,), but the result must "
        "have shape (1, 3): keep the stretched size-1 axes (keepdims=True)",
    ),
    (  # a stranger's (two of 102 mistakes): the shapes lined up from the left, and the reshape raises
        "unbroadcast",
        [UNBROADCAST_RETURN, "return grad.sum(axis=tuple(range(len(shape), grad.ndim))).reshape(shape)"],
        "probe 1/10  grad (2, 3) -> shape (3,): FAILED",
        "The axes you summed are not those broadcasting added or stretched, (0,) here",
    ),
    (
        "unbroadcast",
        [UNBROADCAST_RETURN, "return grad.sum()"],
        "probe 1/10  grad (2, 3) -> shape (3,): FAILED",
        "You summed over every axis",
    ),
    (
        "unbroadcast",
        [UNBROADCAST_RETURN, "return grad.mean(axis=tuple(range(leading)) + stretched, keepdims=True).reshape(shape)"],
        "probe 1/10",
        "You took a mean where a sum belongs",
    ),
    (
        "function",
        [
            "return unbroadcast(gy * self.a / self.y, self.a.shape), unbroadcast(gy * self.b / self.y, self.b.shape)",
            "return gy * self.a / self.y, gy * self.b / self.y",
        ],
        "case 1/6  Hypot: a (3, 4), b (3, 4): ok",
        "A missing sum over the broadcast axes: sum over axis 0 to get back shape (4,)",
    ),
    (
        "function",
        ["gy * self.a / self.y, self.a.shape", "gy * self.a, self.a.shape"],
        "case 1/6",
        "'a': You left out the division by y",
    ),
    (
        "function",
        ["np.sqrt(a * a + b * b)", "np.sqrt(a * a + b)"],
        "case 1/6",
        "Hypot.forward does not compute what the exercise asks: its output differs from the reference forward (at",
    ),
]


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # sqrt(a * a + b) of a negative b
@pytest.mark.parametrize(
    "name, edits, where, expected", ENGINE_SLIPS, ids=[f"{n}-{e[:30]}" for n, _, _, e in ENGINE_SLIPS]
)
def test_each_engine_track_mistake_is_named(capsys, tmp_path, name, edits, where, expected):
    out = check_planted(capsys, tmp_path, name, *edits)
    assert where in out, out
    assert expected in out, out


ONE_OP_SLIPS = [s for s in ENGINE_SLIPS if s[3].startswith("Forgetting to accumulate in ") and s[3][-9:] == "_backward"]


def test_a_wrong_order_the_fixed_graphs_miss_fails_on_the_random_ones(capsys, tmp_path):
    """Kahn's algorithm counting a consumer once per parent but subtracting once per use orders every fixed graph
    right; the random graphs (a stranger's file passed all five fixed probes, 2026-12-01) break it, and the line
    gives the graph."""
    out = check_planted(capsys, tmp_path, "topo", TOPO_BODY, KAHN_COUNTED_ONCE)
    assert out.count(": FAILED") == 1 and "probe 6/6  40 random graphs" in out and "On random graph " in out, out
    assert "; the nodes' names: n0 '" in out, out  # the keys the lines name, matched to the names a Node shows


@pytest.mark.parametrize("name, edits, where, expected", ONE_OP_SLIPS, ids=[str(e) for _, e, _, _ in ONE_OP_SLIPS])
def test_an_accumulation_slip_in_one_op_is_named_in_that_op_only(capsys, tmp_path, name, edits, where, expected):
    """Whatever probe catches it, no line blames another op, or every op."""
    out = check_planted(capsys, tmp_path, name, *edits)
    op = expected.removeprefix("Forgetting to accumulate in ")
    named = [line for line in out.splitlines() if "Forgetting to accumulate" in line]
    assert named and all(f"accumulate in {op}" in line and " and in " not in line for line in named), out
    assert "every _backward" not in out


def test_the_engine_track_comes_first():
    assert NAMES[:4] == ["value", "topo", "unbroadcast", "function"]


def test_an_unbroadcast_that_calls_the_engines_is_refused(capsys, tmp_path):
    out = check_planted(
        capsys,
        tmp_path,
        "unbroadcast",
        UNBROADCAST_RETURN,
        "from tensorlab.ops.broadcast import unbroadcast as u\n    return u(grad, shape)",
    )
    assert "unbroadcast calls tensorlab itself (tensorlab/ops/broadcast.py: unbroadcast)" in out


# ----- files that cannot be checked ---------------------------------------------------------------------
def test_a_wrong_dtype_is_explained(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "exp_log", "return gy / self.x", "return (gy / self.x).astype(np.float32)")
    assert "has dtype float32, but 'x' is float64" in out


def test_a_returned_tensor_is_explained(capsys, tmp_path):
    out = check_planted(
        capsys, tmp_path, "exp_log", "return gy / self.x", "return __import__('tensorlab').tensor(gy / self.x)"
    )
    assert "is a tensorlab Tensor. backward works on plain NumPy arrays" in out


def test_a_gradient_of_strings_or_a_list_is_explained_and_no_slip_is_looked_for_in_it(capsys, tmp_path):
    """An array of strings comes back from the student's process as an object named by its type: said so, with
    no crash and no slip of the wrong shape (gweight summed to a scalar) looked for in it."""
    for wrong in ["np.array(['a'])", "[1.0]"]:
        out = check_planted(capsys, tmp_path, "rms_norm", "return gx, gw", f"return gx, {wrong}")
        assert ", not a NumPy array of numbers: return a float array of shape (5,)." in out, out
        assert "Traceback" not in out and "summed" not in out, out


def test_a_missing_gradient_is_explained(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "matmul", "return gy @ self.b.T, self.a.T @ gy", "return gy @ self.b.T")
    assert "returned no gradient for 'b': it returned one array, but forward takes 2 inputs" in out


def test_an_exception_points_at_the_students_line_with_the_shapes(capsys, tmp_path):
    out = check_planted(
        capsys, tmp_path, "matmul", "return gy @ self.b.T, self.a.T @ gy", "return gy @ self.b, self.a.T @ gy"
    )
    assert "MatMul.backward raised ValueError" in out
    assert "at line 12 of my_matmul.py, in backward:" in out
    assert "Shapes here: gy (3, 2); a (3, 4); b (4, 2)." in out


@pytest.mark.parametrize(
    "name, right, wrong, changed",
    [
        ("exp_log", "return gy * self.y", "gy *= self.y\n        return gy", "Exp.backward changes gy in place"),
        # a stranger's: the saved output aliased, then written (it read as an edited forward)
        ("exp_log", "return gy * self.y", "gx = self.y\n        gx *= gy\n        return gx", "forward's output"),
        ("exp_log", "return gy / self.x", "self.x **= -1\n        return gy * self.x", "Log.backward changes 'x' in"),
        # what forward saved, written: right once, wrong on a second backward (retain_graph=True); a stranger's
        ("log_softmax_nll", "gx = self.p.copy()", "gx = self.p", "LogSoftmaxNLL.backward changes self.p in place"),
    ],
)
def test_an_array_backward_was_handed_changed_in_place_is_caught(capsys, tmp_path, name, right, wrong, changed):
    out = check_planted(capsys, tmp_path, name, right, wrong)
    assert changed in out and "in place" in out and "does not compute what the exercise asks" not in out


def test_a_syntax_error_names_the_line(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "exp_log", "return gy / self.x", "return gy / self.x +")
    assert "my_exp_log.py, line 24: Python cannot read this file: invalid syntax." in out
    assert "FAILED: the file could not be checked." in out


def test_an_edited_forward_is_caught_before_the_gradient(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "mul", "return a * b", "return a * b + 1")
    assert "Mul.forward does not compute what the exercise asks" in out


def test_a_renamed_class_is_explained(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "matmul", "class MatMul(Function)", "class Matmul(Function)")
    assert "has no class named 'MatMul' (it defines Matmul)" in out


# ----- the AdamW exercise -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "old, new, expected",
    [
        ("m_hat = m / (1 - b1 ** step)", "m_hat = m", "The bias correction of m is missing"),
        (
            "param = param - lr * weight_decay * param",
            "grad = grad + weight_decay * param",
            "You added weight_decay * param to the gradient (Adam with L2 regularisation)",
        ),
        (
            "param = param - lr * weight_decay * param",
            "param = param - weight_decay * param",
            "scale it by the learning rate",
        ),
        ("np.sqrt(v_hat) + eps", "np.sqrt(v_hat + eps)", "eps belongs outside the square root"),
        ("m = b1 * m + (1 - b1) * grad", "m = (1 - b1) * m + b1 * grad", "m is off: beta1 and 1 - beta1 are swapped"),
        ("return param, m, v", "return param, v, m", "return them in the order (param, m, v)"),
        ("** step)", "** (step + 1))", "Your bias correction uses step + 1"),  # both corrections
        ("** step)", "** (step - 1))", "which divides by 1 - beta**0 = 0 at the first step"),
        # terms dropped (teachers/mutate.py's mutants, unnamed until these slips)
        ("m = b1 * m + (1 - b1) * grad", "m = b1 * m", "m is off: the gradient never enters it"),
        ("v = b2 * v + (1 - b2) * grad * grad", "v = b2 * v + grad * grad", "grad^2 is added without its weight"),
        ("np.sqrt(v_hat) + eps", "np.sqrt(v_hat)", "eps is missing from the denominator"),
        ("v / (1 - b2 ** step)", "v / b2 ** step", "The bias correction of v divides by beta2**step"),
        ("lr * m_hat / (np.sqrt(v_hat) + eps)", "lr * m_hat", "Your update is lr * m_hat alone"),
        ("param - lr * m_hat", "lr * m_hat", "Your new param is the Adam update alone"),
    ],
)
@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
def test_adamw_slips_are_named(capsys, tmp_path, old, new, expected):
    out = check_planted(capsys, tmp_path, "adamw", old, new)
    assert expected in out
    assert "step 1 of 3:" in out


@pytest.mark.parametrize(
    "edits, expected, step",
    [
        (
            [
                "param = param - lr * weight_decay * param                # decay the weight, not through the gradient",
                "",
                "return param, m, v",
                "param = param - lr * weight_decay * param\n    return param, m, v",
            ],
            "You apply the weight decay after the Adam update",
            1,
        ),
        (
            [
                "m = b1 * m + (1 - b1) * grad",
                "m = (1 - b1) * grad",
                "v = b2 * v + (1 - b2) * grad * grad",
                "v = (1 - b2) * grad * grad",
            ],
            "You ignore the m and v passed in",
            2,
        ),
        (
            ["m_hat = m / (1 - b1 ** step)", "m_hat = m", "v_hat = v / (1 - b2 ** step)", "v_hat = v"],
            "You skipped the bias correction",
            1,
        ),
        (["v_hat = v / (1 - b2 ** step)", "v_hat = v"], "The bias correction of v is missing", 1),
        (["m / (1 - b1 ** step)", "m / (1 - b1)"], "The bias correction of m uses 1 - beta1 where", 2),  # same at 1
    ],
)
def test_adamw_state_decay_order_and_bias_corrections_are_named(capsys, tmp_path, edits, expected, step):
    out = check_planted(capsys, tmp_path, "adamw", *edits)
    assert expected in out
    assert f"step {step} of 3:" in out


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # sqrt of the negative v
def test_adamw_says_which_quantity_is_off(capsys, tmp_path):
    out = check_planted(
        capsys, tmp_path, "adamw", "v = b2 * v + (1 - b2) * grad * grad", "v = b2 * v + (1 - b2) * grad"
    )
    assert "param is wrong" in out and "m is right" in out and "v is wrong" in out
    assert "the running mean of the squared gradient" in out


PERTURBED_BACKWARD = """

def _perturbed(backward):
    def perturbed(self, gy):
        grads = backward(self, gy)
        single = not isinstance(grads, tuple)
        grads = (grads,) if single else grads
        floats = [g for g in grads if isinstance(g, np.ndarray) and g.dtype.kind == "f"]
        scale = max(float(np.abs(g).max(initial=0.0)) for g in floats) or 1.0
        floats[0].reshape(-1)[0] += 1e-10 * scale  # one element, off by 1e-10 of the case's largest gradient
        return grads[0] if single else grads

    return perturbed


for _cls in [c for c in list(globals().values()) if isinstance(c, type) and issubclass(c, Function)]:
    if _cls is not Function:
        _cls.backward = _perturbed(_cls.backward)
"""


@pytest.mark.parametrize("name", [e.name for e in EXERCISES if isinstance(e.cases[0], Case)])
def test_a_gradient_off_by_more_than_rounding_fails_every_case(capsys, tmp_path, monkeypatch, name):
    """Every gradient exercise, every case: one element off by 1e-10 of the case's largest gradient fails (a derived
    formula agrees to 1e-15; the verdict's rule is 1e-12 of that scale). The verdict is the cases', so the search for
    the edit that undoes a slip (search.py: about 3 s a file here, 46 s of the suite) is left out."""
    monkeypatch.setattr(search, "found", lambda *args, **kwargs: [])
    path = tmp_path / f"my_{name}.py"
    path.write_text((SOLUTIONS / f"{name}.py").read_text() + PERTURBED_BACKWARD)
    code, out = run(capsys, "check", name, path)
    assert code == 1 and out.count(": FAILED") == len(BY_NAME[name].cases), out


@pytest.mark.parametrize(
    "name, right, wrong",
    [  # a stranger's files, right on every chosen case (2026-12-01)
        (  # any negative axis taken as the last
            "softmax",
            "(gy * self.y).sum(axis=self.axis, keepdims=True)",
            "(gy * self.y).sum(axis=self.axis if self.axis >= 0 else -1, keepdims=True)",
        ),
        ("ties", "(self.low <= self.x) & (self.x <= self.high)", "np.abs(self.x) <= self.high"),  # symmetric limits
        ("exp_log", "return gy / self.x", "return gy / (self.x + 1e-12)"),  # a safe division, off at x = 1e-6
    ],
)
def test_a_slip_no_chosen_case_shows_fails_on_the_drawn_ones(capsys, tmp_path, name, right, wrong):
    """Shapes, settings and magnitudes drawn afresh on each run (50 draws in one case) catch what a list of chosen cases
    leaves out, and say the draw that fails."""
    out = check_planted(capsys, tmp_path, name, right, wrong)
    assert out.count(": FAILED") == 1 and "drawn afresh on each run: FAILED\n    With " in out, out


def test_a_forward_of_ones_own_off_by_more_than_rounding_is_refused(capsys, tmp_path):
    """The engine track's own forward (hypot) off by 1e-10 of its size: refused as the wrong forward in every case
    (it was judged to 1e-9 relative), whose gradients are the right ones for it."""
    out = check_planted(
        capsys, tmp_path, "function", "self.y = np.sqrt(a * a + b * b)", "self.y = np.sqrt(a * a + b * b) * (1 + 1e-10)"
    )
    assert out.count("Hypot.forward does not compute what the exercise asks") == len(BY_NAME["function"].cases), out


@pytest.mark.parametrize("quantity", range(3))
def test_an_adamw_result_off_by_more_than_rounding_fails_every_case(capsys, tmp_path, quantity):
    """One element of param, m or v off by 1e-10 of the largest: every case fails, the smallest eps's too (eps added
    to param, not to the denominator, passed a case judged to 1e-7 relative: a stranger's class, 2026-12-01)."""
    perturbed = (
        "\n\n_right = adamw_step\n\n\ndef adamw_step(*args, **settings):\n"
        "    out = list(_right(*args, **settings))\n"
        f"    q = out[{quantity}]\n"
        f"    out[{quantity}] = q + 1e-10 * np.abs(q).max() * (np.arange(q.size) == q.size // 2).reshape(q.shape)\n"
        "    return tuple(out)\n"
    )
    path = plant(tmp_path, "adamw", "return param, m, v\n", "return param, m, v\n" + perturbed)
    code, out = run(capsys, "check", "adamw", path)
    assert code == 1 and out.count(": FAILED") == len(BY_NAME["adamw"].cases), out


# ----- the command line ---------------------------------------------------------------------------------
def test_stub_copies_the_stub_and_refuses_to_overwrite(capsys, tmp_path):
    dest = tmp_path / "mine.py"
    code, out = run(capsys, "stub", "softmax", dest)
    assert code == 0 and dest.read_text() == (PACKAGE / "catalog" / "softmax" / "stub.py").read_text()
    assert f"python -m tensorlab.exercises check softmax {dest}" in out
    code, out = run(capsys, "stub", "softmax", dest)
    assert code == 2 and "not overwriting" in out
    code, _ = run(capsys, "stub", "softmax", tmp_path)  # a folder: NAME.py inside it
    assert code == 0 and (tmp_path / "softmax.py").is_file()


def test_usage_errors_exit_2(capsys, tmp_path):
    code, out = run(capsys, "check", "matmull", tmp_path / "x.py")
    assert code == 2 and "Did you mean 'matmul'?" in out
    code, out = run(capsys, "check", "matmul", tmp_path / "missing.py")
    assert code == 2 and "no such file" in out
    code, _ = run(capsys, "frobnicate")
    assert code == 2
    code, _ = run(capsys)
    assert code == 2


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the planted 0 / 0
def test_a_mul_backward_that_divides_by_an_input_fails_where_it_is_zero(capsys, tmp_path):
    """ga = gy * y / a is right wherever a is not 0, so it passed every case until one held zeros."""
    out = check_planted(
        capsys,
        tmp_path,
        "mul",
        "unbroadcast(gy * self.b, self.a.shape), unbroadcast(gy * self.a, self.b.shape)",
        "unbroadcast(gy * (self.a * self.b) / self.a, self.a.shape), "
        "unbroadcast(gy * (self.a * self.b) / self.b, self.b.shape)",
    )
    assert "case 6/7  Mul: a (3, 4), b (3, 4): FAILED" in out and "NaN" in out, out


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the planted overflow
def test_an_attention_backward_that_recomputes_softmax_without_the_max_fails_on_large_scores(capsys, tmp_path):
    out = check_planted(
        capsys,
        tmp_path,
        "causal_attention",
        "        p = self.p\n",
        "        s = self.q @ self.k.swapaxes(-1, -2) * self.scale\n"
        "        s = np.where(np.tril(np.ones(s.shape[-2:], dtype=bool)), s, -np.inf)\n"
        "        p = np.exp(s) / np.exp(s).sum(axis=-1, keepdims=True)  # no max subtracted: overflows\n",
    )
    assert "case 1/4  CausalAttention" in out and "case 3/4  CausalAttention: q (1, 2, 4, 4)" in out, out
    assert "case 3/4  CausalAttention: q (1, 2, 4, 4), k (1, 2, 4, 4), v (1, 2, 4, 4): FAILED" in out, out


def test_an_adamw_step_that_calls_tensorlab_optim_is_refused(capsys, tmp_path):
    """The checker compares with tensorlab.optim.AdamW: an answer that runs it is the engine's, not the student's."""
    path = tmp_path / "my_adamw.py"
    path.write_text(
        "from tensorlab.optim import AdamW\n"
        "from tensorlab.tensor import Tensor\n\n\n"
        "def adamw_step(param, grad, m, v, step, lr, betas, eps, weight_decay):\n"
        "    p = Tensor(param.copy(), requires_grad=True)\n"
        "    optimizer = AdamW([p], lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)\n"
        "    optimizer.state[p] = {'step': step - 1, 'exp_avg': m.copy(), 'exp_avg_sq': v.copy()}\n"
        "    p.grad = grad.copy()\n"
        "    optimizer.step()\n"
        "    state = optimizer.state[p]\n"
        "    return p.data, state['exp_avg'], state['exp_avg_sq']\n"
    )
    code, out = run(capsys, "check", "adamw", path)
    assert code == 1 and "adamw_step calls tensorlab itself (tensorlab/optim/" in out, out


def test_var_divided_by_n_is_named_as_correction_0_and_its_2_missing_as_a_factor(capsys, tmp_path):
    line = "return gy * 2 * self.centered / self.dof"
    out = check_planted(capsys, tmp_path, "var", line, "return gy * 2 * self.centered / (self.dof + self.correction)")
    assert "'x': your gradient is the right one for correction=0, but this case has correction=1" in out
    assert "case 6/9  Var: x (3, 5, 6), axis=(0, 2), correction=0: ok" in out  # n - 0 = n: this case cannot tell
    out = check_planted(capsys, tmp_path, "var", line, "return gy * self.centered / self.dof")
    assert "Your gradient is 1/2 times the right one: off by 2, the constant of the power rule: the 2 of d(x^2)" in out


def test_a_mask_that_drops_the_diagonal_is_localised_to_gs_and_named(capsys, tmp_path):
    """Only some elements of gq are wrong, and the student's gs exists: the step-by-step comparison still runs."""
    out = check_planted(
        capsys,
        tmp_path,
        "causal_attention",
        ATTENTION_GS,
        ATTENTION_GS + "\n        gs = np.where(np.tril(np.ones(gs.shape[-2:], dtype=bool), -1), gs, 0.0)",
    )
    assert "input 'q' (shape (1, 2, 3, 5)): 20 of 30 elements are wrong." in out  # rows 1 and 2: not all
    assert (
        "Step by step against the reference: gP (your `gp`) right; the first step that goes wrong is gS, the "
        "gradient of S (shape (1, 2, 3, 3)): your `gs` differs from it at (0, 0, 1, 1), (0, 0, 2, 2), (0, 1, 1, 1), "
        "(0, 1, 2, 2): exactly on the diagonal, where the key is the query's own position."
    ) in out


@pytest.mark.parametrize("shift, side", [(1, "right-hand"), (-1, "left-hand")])
def test_a_one_hot_at_the_targets_neighbour_is_named(capsys, tmp_path, shift, side):
    out = check_planted(
        capsys, tmp_path, "log_softmax_nll", "self.targets] -= 1", f"self.targets {'+' if shift > 0 else '-'} 1] -= 1"
    )
    assert f"The 1 is subtracted at the target's {side} neighbour, column targets[n] {shift:+d}" in out


def test_a_mean_that_divides_by_the_wrong_count_is_told_the_count(capsys, tmp_path):
    out = check_planted(
        capsys, tmp_path, "mean", "n = math.prod(self.x_shape[a] for a in self.axes)", "n = self.x_shape[-1]"
    )
    assert "case 1/7  Mean: x (3, 4, 5), axis=1: FAILED" in out
    assert "Your gradient divides by 5, but this mean averaged 4 elements" in out
    assert "Your gradient divides by 5, but this mean averaged 60 elements" in out  # axis=None


def test_a_tie_given_to_one_operand_and_clamp_limits_left_out_are_caught(capsys, tmp_path):
    """The inputs are whole numbers from -1 to 1 (maximum) and -2 to 2 (clamp at +-1): a draw without a tie in
    both maximum cases, or without a value at a limit, has odds under 1e-4."""
    ties = "share_a = (self.a > self.b) + 0.5 * (self.a == self.b)"
    out = check_planted(capsys, tmp_path, "ties", ties, "share_a = 1.0 * (self.a >= self.b)")
    assert "'a' and 'b': At a tie (a == b) you give all of gy to a: a tie splits it, gy / 2 to each" in out
    assert "case 3/6  Clamp: x (4, 5), low=-1.0, high=1.0: ok" in out
    limits = "(self.low <= self.x) & (self.x <= self.high)"
    out = check_planted(capsys, tmp_path, "ties", limits, "(self.low < self.x) & (self.x < self.high)")
    assert "case 3/6  Clamp: x (4, 5), low=-1.0, high=1.0: FAILED" in out
    assert "'x': At x equal to a limit (low or high) your gradient is 0; the limits count as inside" in out


def test_a_clamp_mask_from_np_clip_fails_where_the_drawn_limits_cross(capsys, tmp_path):
    """np.clip(x, low, high) == x is the limits-included mask while low <= high; the drawn cases cross them one time
    in three (PyTorch: y = high, gy passes nowhere), in 50 draws."""
    limits = "(self.low <= self.x) & (self.x <= self.high)"
    out = check_planted(capsys, tmp_path, "ties", limits, "np.clip(self.x, self.low, self.high) == self.x")
    assert "case 6/6  Clamp: 50 shapes and settings drawn afresh on each run: FAILED" in out
    assert "With low above high, y = high everywhere and no gy passes" in out


def test_a_mean_whose_count_comes_from_the_sizes_fails_on_an_empty_axis(capsys, tmp_path):
    """x.size // y.size is the count averaged until an axis that is kept has length 0 (drawn shapes have some)."""
    count = "n = math.prod(self.x_shape[a] for a in self.axes)"
    out = check_planted(capsys, tmp_path, "mean", count, "n = math.prod(self.x_shape) // gy.size")
    assert "case 7/7  Mean: 50 shapes and settings drawn afresh on each run: FAILED" in out
    assert "Mean.backward raised ZeroDivisionError: integer division or modulo by zero" in out


def test_one_gradient_that_ignores_gy_is_named_among_right_ones(capsys, tmp_path):
    """Planted: gb without gy while ga has it; backward(2 gy) doubles ga, so the whole backward does not ignore gy."""
    out = check_planted(
        capsys, tmp_path, "mul", "unbroadcast(gy * self.a, self.b.shape)", "unbroadcast(self.a, self.b.shape)"
    )
    assert "Your gradient for 'b' stays the same when gy is doubled: it ignores gy" in out
    assert "for 'a'" not in out


def test_a_gradient_of_one_element_is_not_some_constant_times_the_right_one():
    """Any two numbers are some constant times each other: a factor of 6.255 once named a missing gy."""
    reports = {"b": None}
    context = diagnose.Context({"a": (1, 2), "b": (1, 1)}, (1, 2), reports, atol=1e-8, rtol=1e-8)
    assert diagnose._factor(np.array([[6.255]]), np.array([[1.0]]), context) is None
    assert diagnose._factor(np.array([[6.255, 12.51]]), np.array([[1.0, 2.0]]), context) == pytest.approx(6.255)


@pytest.mark.parametrize("name", ["function", "mul"])
def test_an_unbroadcast_that_sums_one_leading_axis_fails(capsys, tmp_path, name):
    """A stranger's, which passed every case while no input lay two axes short of the output."""
    code, out = run(capsys, "check", name, plant(tmp_path, name, "range(leading)", "range(min(leading, 1))"))
    assert code == 1 and "(2, 2, 1, 4)" in out, out


def test_a_forward_that_returns_none_is_not_blamed_on_backward(monkeypatch):
    """The in-place check compares what forward returned only when it is an array: comparing None raised TypeError
    inside the checker, which reached the answer as 'Your code raised TypeError'."""
    from tensorlab.exercises import child

    source = (SOLUTIONS / "function.py").read_text().replace("        return self.y\n", "        return None\n", 1)
    found = {}
    exec(compile(source, "function.py", "exec"), found)
    monkeypatch.setattr(child, "_target", lambda name: found[name])
    a = np.ones((3, 4))
    answer = child._op("Hypot", {}, [a, 2 * a], np.ones((3, 4)))
    assert "later_error" not in answer and answer["changed"] == [] and answer["y"] is None


def test_any_two_adamw_slips_at_once_are_named_by_slips_that_reproduce_the_numbers():
    """A generator over every pair of AdamW's known slips, on both cases' settings at step 2: the step made with
    the two slips at once is diagnosed, and the slips named reproduce its numbers (one of them alone, or the two
    together): never "None of the usual slips fits" for two slips the checker knows one by one."""
    from tensorlab.exercises.catalog import adamw

    rng = np.random.default_rng(7)
    for settings in adamw.CASES:
        state = (
            rng.standard_normal(adamw.SHAPE),
            0.1 * rng.standard_normal(adamw.SHAPE),
            0.01 * rng.random(adamw.SHAPE),
        )
        grad = rng.standard_normal(adamw.SHAPE)
        right = adamw._adamw(*state, grad, 2, **settings)
        for pair in itertools.combinations(adamw.SLIPS, 2):
            with np.errstate(all="ignore"):
                result = adamw._adamw(*state, grad, 2, slips=pair, **settings)
                if all(adamw._close(r, e) for r, e in zip(result, right)):
                    continue  # the two slips cancel here
                lines = adamw._diagnose(2, state, grad, settings, result, right)
                named = tuple(slip for slip, says in adamw.SLIPS.items() if says in lines)
                tried = [(slip,) for slip in named] + [named]
                assert any(
                    adamw._matches(adamw._adamw(*state, grad, 2, slips=s, **settings), result, right) for s in tried
                ), (pair, lines)


def test_adamws_closeness_is_numpys_allclose_on_drawn_arrays_with_inf_and_nan():
    """adamw._close, written out for speed (its slips try thousands of pairs), judges as np.allclose(equal_nan=True)
    with atol = RTOL * the largest finite |b|: drawn 2 x 2 arrays of ordinary, huge, tiny and non-finite numbers, one
    element moved by about the tolerance or to another such number. Planted: without `& finite`, 1,995 of 20,000
    disagree (a finite number next to inf counts as near)."""
    from tensorlab.exercises.catalog.adamw import RTOL, _close

    rng = np.random.default_rng(0)
    special = [0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-300, 1e300]
    for _ in range(5000):
        b = rng.choice(special + list(rng.standard_normal(4)), size=(2, 2))
        a, k = b.copy(), rng.integers(4)
        a.flat[k] = rng.choice(special + [b.flat[k] * (1 + rng.choice([1e-13, 1e-11, -1e-12])), b.flat[k] + 1e-12])
        with np.errstate(all="ignore"):
            atol = RTOL * np.abs(b[np.isfinite(b)]).max(initial=0.0)
            assert _close(a, b) == np.allclose(a, b, rtol=RTOL, atol=atol, equal_nan=True), (a, b)
