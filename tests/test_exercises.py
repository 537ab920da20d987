"""Tests for tensorlab.exercises: every stub fails, every reference solution passes, slips are named.

See docs/exercises.md for how students and teachers use them.

The command line runs in-process through `main(argv)`; two subprocess runs, in a copy of
tensorlab without solutions/, prove that `python -m tensorlab.exercises` works there. A
planted mistake is a reference solution with one line changed, written to tmp_path; `plant`
fails loudly if that line is no longer there.
"""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tensorlab.exercises import EXERCISES
from tensorlab.exercises.__main__ import main

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "tensorlab" / "exercises"
NAMES = [exercise.name for exercise in EXERCISES]
REQUIRED = ["mul", "matmul", "exp_log", "sum", "softmax", "log_softmax_nll", "rms_norm", "embedding",
            "causal_attention", "adamw"]


def run(capsys, *argv):
    """Exit code and everything printed by `python -m tensorlab.exercises *argv`."""
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def plant(tmp_path, name, old, new):
    """The reference solution of `name` with `old` replaced by `new`, as a file in tmp_path."""
    source = (PACKAGE / "solutions" / f"{name}.py").read_text()
    assert old in source, f"solutions/{name}.py no longer contains {old!r}"
    path = tmp_path / f"my_{name}.py"
    path.write_text(source.replace(old, new))
    return path


def check_planted(capsys, tmp_path, name, old, new):
    code, out = run(capsys, "check", name, plant(tmp_path, name, old, new))
    assert code == 1, out
    return out


# ----- the catalog, stubs and solutions ---------------------------------------------------------------
def test_the_required_exercises_exist_each_with_a_stub_and_a_solution():
    assert set(REQUIRED) <= set(NAMES)
    for name in NAMES:
        assert (PACKAGE / "stubs" / f"{name}.py").is_file()
        assert (PACKAGE / "solutions" / f"{name}.py").is_file()


def test_the_exercises_work_as_a_module_without_the_solutions_folder(tmp_path):
    """A teacher deletes solutions/ from the students' copy: list and check still work."""
    shutil.copytree(ROOT / "tensorlab", tmp_path / "tensorlab",
                    ignore=shutil.ignore_patterns("solutions", "__pycache__"))
    assert not (tmp_path / "tensorlab" / "exercises" / "solutions").exists()
    listed = subprocess.run([sys.executable, "-m", "tensorlab.exercises", "list"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    for name in NAMES:
        assert f"  {name}  " in listed.stdout
    checked = subprocess.run([sys.executable, "-m", "tensorlab.exercises", "check", "mul",
                              "tensorlab/exercises/stubs/mul.py"], cwd=tmp_path, capture_output=True, text=True,
                             timeout=60)
    assert checked.returncode == 1 and "Mul.backward is not written yet" in checked.stdout, checked.stderr


@pytest.mark.parametrize("name", NAMES)
def test_the_stub_fails_and_says_what_to_write(capsys, name):
    code, out = run(capsys, "check", name, PACKAGE / "stubs" / f"{name}.py")
    assert code == 1
    assert "is not written yet: it still raises NotImplementedError" in out  # so the given forward passed
    assert "replace the `raise NotImplementedError(...)` line" in out
    assert out.rstrip().splitlines()[-1].startswith("FAILED")


@pytest.mark.parametrize("name", NAMES)
def test_the_reference_solution_passes(capsys, name):
    code, out = run(capsys, "check", name, PACKAGE / "solutions" / f"{name}.py")
    assert code == 0, out
    assert out.rstrip().splitlines()[-1].startswith("PASSED")


# ----- the slips the diagnosis names ---------------------------------------------------------------------
def test_a_flipped_sign_is_named(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "exp_log", "return gy * self.y", "return -gy * self.y")
    assert "Your gradient is exactly -1 times the right one: check the sign of your derivative." in out
    assert "case 2/2  Log: x (3, 4): ok" in out


def test_a_transposed_matmul_gradient_is_named_by_shape_and_on_a_square_case(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "matmul", "self.a.T @ gy", "gy.T @ self.a")
    # non-square b: the shape gives it away, and the transposed-back gradient would pass
    assert "input 'b' has shape (4, 2), but your gradient for it has shape (2, 4)" in out
    assert "with its last two axes swapped: you computed the transposed gradient" in out
    assert "Changed that way, your gradient passes this case." in out
    # square b: only the values can show it
    assert "Your gradient is the transpose of the right one" in out


def test_a_factor_off_by_the_summed_axis_length_is_named(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "sum", "return np.broadcast_to(gy, self.x_shape).copy()",
                        "return np.broadcast_to(gy, self.x_shape).copy() / self.x_shape[self.axes[0]]")
    assert "Your gradient is 1/4 times the right one: off by the axis length 4 (axis 1 of 'x')" in out
    assert "too small by 4" in out


def test_a_mean_without_its_one_over_n_is_named(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "mean", "np.broadcast_to(gy / n, self.x_shape)",
                        "np.broadcast_to(gy, self.x_shape)")
    assert "off by the axis length 4 (axis 1 of 'x'); it is too large by 4: a division by 4 is missing" in out
    assert "off by 15, the number of elements of 'x' over axes (0, 2)" in out
    assert "off by 60, the number of elements of 'x' in all" in out


def test_a_cross_entropy_without_its_mean_is_off_by_the_row_count(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "log_softmax_nll", "return gy * gx / n, None", "return gy * gx, None")
    assert "Your gradient is 4 times the right one: off by the axis length 4 (axis 0 of 'logits')" in out


def test_a_missing_attention_scale_is_named_as_a_square_root(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "causal_attention", "gq = gs @ self.k * self.scale", "gq = gs @ self.k")
    assert "off by sqrt(5) = 2.236, the square root of the axis length 5 (axis 3 of 'q')" in out
    assert "Your gv is right" in out
    assert "input 'k'" not in out.split("gradcheck's report")[0]  # only q is wrong


def test_a_zero_gradient_is_named(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "softmax",
                        "return self.y * (gy - (gy * self.y).sum(axis=self.axis, keepdims=True))",
                        "return np.zeros_like(gy)")
    assert "Your gradient is all zeros." in out


def test_a_missing_sum_over_a_broadcast_axis_is_named_with_the_fix(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "mul", "sum_to(gy * self.a, self.b.shape)", "gy * self.a")
    assert "case 1/3  Mul: a (3, 4), b (3, 4): ok" in out
    assert "input 'b' has shape (4,), but your gradient for it has shape (3, 4) (the output's shape)" in out
    assert "A missing sum over the broadcast axes: sum over axis 0 to get back shape (4,):  gb = gb.sum(axis=0)" in out
    assert "gb = gb.sum(axis=(0, 2)).reshape((3, 1))" in out  # b (3, 1) against a (2, 1, 4)
    assert out.count("Changed that way, your gradient passes this case.") == 2


def test_an_unsummed_weight_gradient_in_rms_norm_is_a_missing_broadcast_sum(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "rms_norm", "gw = (gy * self.xhat).reshape(-1, gy.shape[-1]).sum(axis=0)",
                        "gw = gy * self.xhat")
    assert "gweight = gweight.sum(axis=(0, 1))" in out


def test_a_backward_that_ignores_gy_is_named(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "exp_log", "return gy * self.y", "return self.y")
    assert "it ignores gy" in out


def test_swapped_gradients_are_named(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "mul",
                        "return sum_to(gy * self.b, self.a.shape), sum_to(gy * self.a, self.b.shape)",
                        "return sum_to(gy * self.a, self.a.shape), sum_to(gy * self.b, self.b.shape)")
    assert "Your gradient for 'a' is the right gradient for 'b': the two are swapped." in out


def test_some_elements_wrong_are_listed_and_repeated_embedding_ids_recognised(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "embedding", "np.add.at(gw, self.ids, gy)", "gw[self.ids] += gy")
    assert "input 'weight' (shape (6, 4)): 8 of 24 elements are wrong." in out
    assert "The wrong elements fill rows [1, 3] of 'weight' entirely" in out
    assert "Wrong elements: (1, 0), (1, 1), (1, 2), (1, 3), (3, 0)" in out
    assert "exactly ids that appear more than once" in out and "np.add.at" in out


def test_a_wrong_one_hot_term_is_pointed_at_the_targets(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "log_softmax_nll", "self.targets] -= 1", "self.targets] += 1")
    assert "Only elements at the targets (row n, column targets[n]) are wrong" in out


def test_a_setting_the_backward_ignores_is_pointed_out(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "softmax", "(gy * self.y).sum(axis=self.axis, keepdims=True)",
                        "(gy * self.y).sum(axis=-1, keepdims=True)")
    assert "case 1/3  Softmax: x (3, 5), axis=-1: ok" in out
    assert "your backward passes with (axis=-1), but not with (axis=0), (axis=1)" in out


def test_the_report_table_is_printed(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "exp_log", "return gy / self.x", "return gy * self.x")
    assert "gradcheck FAILED: the gradient of 1 of 1 inputs is wrong" in out
    assert "analytic (yours)" in out and "numeric (expected)" in out


# ----- files that cannot be checked ---------------------------------------------------------------------
def test_a_wrong_dtype_is_explained(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "exp_log", "return gy / self.x", "return (gy / self.x).astype(np.float32)")
    assert "has dtype float32, but 'x' is float64" in out


def test_a_returned_tensor_is_explained(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "exp_log", "return gy / self.x",
                        "return __import__('tensorlab').tensor(gy / self.x)")
    assert "is a tensorlab Tensor. backward works on plain NumPy arrays" in out


def test_a_missing_gradient_is_explained(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "matmul", "return gy @ self.b.T, self.a.T @ gy", "return gy @ self.b.T")
    assert "returned no gradient for 'b': it returned one array, but forward takes 2 inputs" in out


def test_an_exception_points_at_the_students_line_with_the_shapes(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "matmul", "return gy @ self.b.T, self.a.T @ gy",
                        "return gy @ self.b, self.a.T @ gy")
    assert "MatMul.backward raised ValueError" in out
    assert "at line 12 of my_matmul.py, in backward:" in out
    assert "Shapes here: gy (3, 2); a (3, 4); b (4, 2)." in out


def test_a_gy_changed_in_place_is_caught(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "exp_log", "return gy * self.y", "gy *= self.y\n        return gy")
    assert "Exp.backward changes gy in place" in out


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
@pytest.mark.parametrize("old, new, expected", [
    ("m_hat = m / (1 - b1 ** step)", "m_hat = m", "The bias correction of m is missing"),
    ("param = param - lr * weight_decay * param", "grad = grad + weight_decay * param",
     "You added weight_decay * param to the gradient (Adam with L2 regularisation)"),
    ("param = param - lr * weight_decay * param", "param = param - weight_decay * param",
     "scale it by the learning rate"),
    ("np.sqrt(v_hat) + eps", "np.sqrt(v_hat + eps)", "eps belongs outside the square root"),
    ("m = b1 * m + (1 - b1) * grad", "m = (1 - b1) * m + b1 * grad", "m is off: beta1 and 1 - beta1 are swapped"),
    ("return param, m, v", "return param, v, m", "return them in the order (param, m, v)"),
    ("** step)", "** (step + 1))", "Your bias correction uses step + 1"),    # both corrections
    ("** step)", "** (step - 1))", "which divides by 1 - beta**0 = 0 at the first step"),
])
@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
def test_adamw_slips_are_named(capsys, tmp_path, old, new, expected):
    out = check_planted(capsys, tmp_path, "adamw", old, new)
    assert expected in out
    assert "step 1 of 3:" in out


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # sqrt of the negative v
def test_adamw_says_which_quantity_is_off(capsys, tmp_path):
    out = check_planted(capsys, tmp_path, "adamw", "v = b2 * v + (1 - b2) * grad * grad",
                        "v = b2 * v + (1 - b2) * grad")
    assert "param is wrong" in out and "m is right" in out and "v is wrong" in out
    assert "the running mean of the squared gradient" in out


# ----- the command line ---------------------------------------------------------------------------------
def test_stub_copies_the_stub_and_refuses_to_overwrite(capsys, tmp_path):
    dest = tmp_path / "mine.py"
    code, out = run(capsys, "stub", "softmax", dest)
    assert code == 0 and dest.read_text() == (PACKAGE / "stubs" / "softmax.py").read_text()
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
