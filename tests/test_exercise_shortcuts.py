"""The shortcuts a student could take to a passing check, each planted and refused (issue 22).

Each planted file is first shown to compute the right gradient (so that the refusal is the
checker seeing the shortcut, not a wrong answer), then checked: the check fails and its
diagnosis names the shortcut. The check draws fresh inputs from a seed on every run; these
tests let it draw, and each failure message prints the seed that replays it.
"""

import importlib.util
import io
import pickle
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tensorlab.exercises import BY_NAME, watch
from tensorlab.exercises.__main__ import main
from tensorlab.exercises.runner import check_file
from tensorlab.exercises.student import StudentError

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "teachers" / "solutions"
SOFTMAX_FORWARD = """
class Softmax(Function):
    def __init__(self, axis=-1):
        self.axis = axis

    def forward(self, x):
        e = np.exp(x - x.max(axis=self.axis, keepdims=True))
        self.y = e / e.sum(axis=self.axis, keepdims=True)
        return self.y
"""


def write(tmp_path, name, source):
    path = tmp_path / f"my_{name}.py"
    path.write_text(textwrap.dedent(source))
    return path


def checked(name, path, seed=None):
    """(passed, everything the check printed) for the file at `path`, its inputs drawn from `seed` (None: fresh)."""
    printed = io.StringIO()
    exercise = BY_NAME[name]
    passed = check_file(exercise, path, out=lambda line: print(line, file=printed), seed=seed)
    return passed, printed.getvalue()


def softmax_gradient_of(path):
    """The gradient the Softmax of the file at `path` returns on one input, and the right one."""
    spec = importlib.util.spec_from_file_location("planted", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rng = np.random.default_rng(0)
    x, gy = rng.standard_normal((3, 5)), rng.standard_normal((3, 5))
    op = module.Softmax(axis=-1)
    y = op.forward(x)
    return op.backward(gy), y * (gy - (gy * y).sum(axis=-1, keepdims=True))


# ----- another library's autograd ----------------------------------------------------------------------------------
def test_another_librarys_autograd_cannot_be_imported_where_the_students_code_runs(tmp_path):
    """torch's softmax backward is right, and out of reach: only NumPy and tensorlab are importable there."""
    path = write(
        tmp_path,
        "softmax",
        "import numpy as np\nimport torch\n\nfrom tensorlab.tensor import Function\n"
        + SOFTMAX_FORWARD
        + """
    def backward(self, gy):
        y = torch.from_numpy(self.y)
        return torch._softmax_backward_data(torch.from_numpy(gy), y, self.axis, y.dtype).numpy()
""",
    )
    mine, right = softmax_gradient_of(path)
    assert np.allclose(mine, right, rtol=1e-14, atol=1e-15)  # the shortcut is right here, where torch is installed
    with pytest.raises(StudentError) as raised:
        checked("softmax", path)
    assert "raised ModuleNotFoundError: No module named 'torch'" in raised.value.lines[0], raised.value.lines


def test_numpys_c_functions_are_not_taken_for_an_autograd():
    def backward():
        return np.zeros(3).sum() + np.exp(np.ones(2)).sum() + len([1])

    with watch.watch(backward.__code__) as watched:
        backward()
    assert watched.engine_calls == []


def test_a_students_file_inside_the_package_folder_is_still_the_students():
    """A stub edited where it lies (tensorlab/exercises/catalog/...) is named for a file under the engine's folder:
    its functions are still the student's, counted as such (finite differences: a forward run again and again), and
    none of its calls is taken for the engine's."""
    source = "def forward(x):\n    return x * 2\n\ndef backward():\n    return [forward(i) for i in range(5)]\n"
    where = watch.TENSORLAB / "exercises" / "catalog" / "mul" / "stub.py"  # compiled under that name, not written
    functions = {}
    exec(compile(source, str(where), "exec"), functions)
    with watch.watch(functions["backward"].__code__) as watched:
        functions["backward"]()
    assert watched.calls(functions["forward"]) == 5 and watched.engine_calls == []


# ----- the engine's own code, copied into the student's file ------------------------------------------------------
def test_the_engines_softmax_backward_copied_at_run_time_is_the_students_own_code(tmp_path):
    """inspect.getsource of the engine's op, compiled again, is retyping it done by a program: the honour system.

    The watch refuses calls into the engine's files; code in the student's own file, however it got there, is
    theirs (docs/exercises.md says so). What it must still do is compute the right numbers.
    """
    path = write(
        tmp_path,
        "softmax",
        """
import inspect
import textwrap

import numpy as np

from tensorlab.ops import softmax as engine_softmax
from tensorlab.tensor import Function

_copied = {}
_source = textwrap.dedent(inspect.getsource(engine_softmax.Softmax.backward))
exec(compile(_source, __file__, "exec"), _copied)
"""
        + SOFTMAX_FORWARD
        + """
    backward = _copied["backward"]
""",
    )
    passed, out = checked("softmax", path)
    assert passed, out


# ----- finite differences -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("eps", [1e-4, 1e-5, 1e-6, 1e-7])
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_finite_differences_in_numpy_are_refused_and_named(tmp_path, eps):
    """Central differences of log, vectorised: right to ~1e-10, which the old tolerance (1e-5 + 1e-3 |numeric|) took."""
    source = (SOLUTIONS / "exp_log.py").read_text()
    answer = "return gy / self.x"
    assert answer in source
    path = tmp_path / "my_exp_log.py"
    path.write_text(
        source.replace(answer, f"h = {eps!r}\n        return gy * (np.log(self.x + h) - np.log(self.x - h)) / (2 * h)")
    )
    passed, out = checked("exp_log", path)
    assert not passed
    log_case = out.split("case 2/3  Log: x (3, 4): FAILED")[1]
    assert "elements are wrong." in log_case.splitlines()[1], out  # most: a few may land within 1e-12 by chance
    assert "This looks like finite differences (the op run again at nudged inputs)" in log_case, out


def test_finite_differences_through_forward_are_refused_even_where_they_are_exact(tmp_path):
    """mul is linear in each input, so its central differences are exact up to rounding: the calls give them away."""
    source = (SOLUTIONS / "mul.py").read_text()
    answer = "return unbroadcast(gy * self.b, self.a.shape), unbroadcast(gy * self.a, self.b.shape)"
    assert answer in source
    loop = """a, b = self.a, self.b
        grads = []
        for which, x in enumerate((a, b)):
            g = np.zeros(x.shape)
            for i in np.ndindex(x.shape):
                h = np.zeros(x.shape)
                h[i] = 0.5
                up = (a + h, b) if which == 0 else (a, b + h)
                down = (a - h, b) if which == 0 else (a, b - h)
                g[i] = ((Mul().forward(*up) - Mul().forward(*down)) * gy).sum()
            grads.append(g)
        return tuple(grads)"""
    path = tmp_path / "my_mul.py"
    path.write_text("import numpy as np\n" + source.replace(answer, loop))
    passed, out = checked("mul", path)
    assert not passed
    # twice per element of a (3, 4) and of b (3, 4)
    assert "Mul.backward runs forward 48 times: evaluating the op again at nudged inputs is finite differences" in out


# ----- a table of gradients from an earlier run ---------------------------------------------------------------------
TABLE_FILE = """
import pickle
from pathlib import Path

import numpy as np

from tensorlab.tensor import Function

TABLE = Path({table!r})
RECORD = {record!r}
_calls = []


class Exp(Function):
    def forward(self, x):
        self.y = np.exp(x)
        return self.y

    def backward(self, gy):
        _calls.append(None)
        if RECORD:  # the first run: someone else's right answers, in the order the checker asks for them
            answers = pickle.loads(TABLE.read_bytes()) if TABLE.exists() else []
            TABLE.write_bytes(pickle.dumps(answers + [gy * self.y]))
            return gy * self.y
        return pickle.loads(TABLE.read_bytes())[len(_calls) - 1]


class Log(Exp):
    def forward(self, x):
        self.x = x
        return np.log(x)

    def backward(self, gy):
        _calls.append(None)
        if RECORD:
            answers = pickle.loads(TABLE.read_bytes()) if TABLE.exists() else []
            TABLE.write_bytes(pickle.dumps(answers + [gy / self.x]))
            return gy / self.x
        return pickle.loads(TABLE.read_bytes())[len(_calls) - 1]
"""


def test_gradients_saved_from_an_earlier_run_fail_on_fresh_inputs(tmp_path):
    table = tmp_path / "answers.pickle"
    recorder = tmp_path / "record.py"
    recorder.write_text(TABLE_FILE.format(table=str(table), record=True))
    replayer = tmp_path / "replay.py"
    replayer.write_text(TABLE_FILE.format(table=str(table), record=False))
    passed, out = checked("exp_log", recorder, seed=1234)
    assert passed, out
    assert len(pickle.loads(table.read_bytes())) == 104  # each case (the drawn one 50 times): two calls, one watched
    passed, out = checked("exp_log", replayer, seed=1234)
    assert passed, out  # the same seed draws the same inputs: the table is complete and in order
    passed, out = checked("exp_log", replayer)
    assert not passed, out  # a fresh seed: the saved answers belong to other inputs
    assert "case 1/3  Exp: x (3, 4): FAILED" in out


# ----- the seed -----------------------------------------------------------------------------------------------------
def test_each_run_prints_its_seed_and_the_seed_replays_it(tmp_path, capsys):
    path = tmp_path / "my_exp_log.py"
    path.write_text((SOLUTIONS / "exp_log.py").read_text().replace("return gy / self.x", "return gy * self.x"))
    first, second, other = (checked("exp_log", path, seed=s)[1] for s in (31, 31, 32))
    assert "drawn with seed 31 (--seed 31 draws them again)" in first
    assert first == second
    assert first.replace("seed 31", "seed 32") != other  # other inputs, other numbers in the table
    seeds = set()
    for _ in range(3):
        code = main(["check", "exp_log", str(path)])
        seeds.add(capsys.readouterr().out.split("drawn with seed ")[1].split()[0])
        assert code == 1
    assert len(seeds) > 1  # a fresh seed per run (three equal draws of six digits: one in 10^12)


@pytest.mark.parametrize("name", ["adamw", "unbroadcast", "value"])
def test_the_optimizer_and_engine_checks_draw_from_a_seed_too(tmp_path, name):
    path = SOLUTIONS / f"{name}.py"
    passed, out = checked(name, path, seed=77)
    assert passed, out
    assert "drawn with seed 77 (--seed 77 draws them again)" in out


def test_the_seed_is_in_the_first_line_that_names_one():
    """The gradebook (report.py) reads the seed from the first line of the check that says `seed N`."""
    passed, out = checked("softmax", SOLUTIONS / "softmax.py", seed=424242)
    assert passed
    assert [line for line in out.splitlines() if "seed" in line][0].startswith("Checking ")
    assert "seed 424242 " in out


def test_a_backward_that_calls_the_engines_kernels_is_refused(tmp_path):
    """tensorlab/kernels/ is the engine too: every folder of the package is watched but those that hold no answer."""
    source = (SOLUTIONS / "rms_norm.py").read_text()
    answer = "        g = gy * self.weight\n"
    assert answer in source
    start = source.index(answer)
    end = source.index("        return gx, gw\n") + len("        return gx, gw\n")
    path = tmp_path / "my_rms_norm.py"
    path.write_text(
        "from tensorlab.kernels import norm\n"
        + source[:start]
        + "        return norm.rms_norm_backward(gy, self.xhat, self.r, self.weight)\n"
        + source[end:]
    )
    passed, out = checked("rms_norm", path)
    assert not passed
    assert "RMSNorm.backward calls tensorlab itself (tensorlab/kernels/norm.py: rms_norm_backward)" in out, out
