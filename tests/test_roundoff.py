"""Round-off chaos (tensorlab/roundoff.py): it moves results by the promised 1-2 ulp, only where it says, is off at
no cost unless asked for, and leaves gradcheck's float64 references inside their tolerances.

.ci/run runs the whole suite under TENSORLAB_ROUNDOFF_CHAOS with two seeds: a test that holds only with this
machine's last bits fails there, not on a user's machine.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorlab as tl
from tensorlab import functional as F
from tensorlab import roundoff
from tensorlab.tensor import Function

ROOT = Path(__file__).resolve().parent.parent
UNSIGNED = {np.float32: np.int32, np.float64: np.int64}


def any_floats(rng, dtype, n):
    """Every kind of float: random bit patterns (all exponents, subnormals, infinities, NaNs), zeros, the extremes."""
    bits = rng.integers(np.iinfo(UNSIGNED[dtype]).min, np.iinfo(UNSIGNED[dtype]).max, n, dtype=UNSIGNED[dtype])
    info = np.finfo(dtype)
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, info.max, -info.max, info.tiny, -info.tiny, info.smallest_subnormal]
    return np.concatenate([bits.view(dtype), np.array(edges, dtype)])


@pytest.fixture
def chaos():
    """install(seed) for one test; afterwards the ops are as the environment set them (CI runs under chaos too)."""
    yield lambda seed: roundoff.install(Function, seed)
    roundoff.uninstall()
    roundoff.install_from_environment(Function)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("seed", [0, 1, 2**40 + 7])
def test_each_normal_number_moves_by_one_or_two_ulp_and_the_rest_stays(dtype, seed):
    x = any_floats(np.random.default_rng(seed), dtype, 20_000)
    with np.errstate(invalid="ignore", over="ignore"):
        y = roundoff.perturb(x, seed)
        movable = np.isfinite(x) & (np.abs(x) >= np.finfo(dtype).tiny) & (np.abs(x) < np.finfo(dtype).max / 4)
        movable &= x.view(UNSIGNED[dtype]) % 2 ** (np.finfo(dtype).nmant // 3) != 0  # zeros there: nothing rounded
    steps = y.view(UNSIGNED[dtype]).astype(np.int64) - x.view(UNSIGNED[dtype]).astype(np.int64)
    assert set(np.unique(steps[movable])) == {-2, -1, 1, 2}  # ulps of the magnitude, the sign kept
    assert np.all(np.sign(y[movable]) == np.sign(x[movable]))
    assert np.array_equal(x[~movable].view(UNSIGNED[dtype]), y[~movable].view(UNSIGNED[dtype]))  # NaNs too
    assert movable.sum() > 0.4 * x.size  # the random bit patterns are mostly normal numbers
    exact = np.array([4.0, 0.75, -2.5, 1e6, 3 * 2.0**-20], dtype)  # what sums of small numbers give: no rounding
    assert np.array_equal(roundoff.perturb(exact, seed), exact)


def test_the_move_is_a_function_of_the_bits_and_the_seed():
    """A kernel, not noise: the same value moves the same way wherever it stands; another seed, another kernel."""
    x = np.random.default_rng(3).standard_normal(10_000).astype(np.float32)
    assert np.array_equal(roundoff.perturb(x, 5), roundoff.perturb(x, 5))
    assert np.array_equal(roundoff.perturb(x[::-1].copy(), 5), roundoff.perturb(x, 5)[::-1])
    assert np.array_equal(roundoff.perturb(x.reshape(100, 100).T, 5), roundoff.perturb(x, 5).reshape(100, 100).T)
    assert 0.6 < np.mean(roundoff.perturb(x, 5) != roundoff.perturb(x, 6)) < 0.9  # 3/4 expected


def ulps(actual, expected):
    return actual.view(UNSIGNED[actual.dtype.type]).astype(np.int64) - expected.view(
        UNSIGNED[expected.dtype.type]
    ).astype(np.int64)


def test_installed_it_moves_every_op_result_forward_and_backward(chaos):
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((5, 7)).astype(np.float32) + 3 for _ in range(2))
    chaos(11)
    x = tl.tensor(a, requires_grad=True)
    y = F.exp(x)
    assert set(np.unique(ulps(y.numpy(), np.exp(a)))) == {-2, -1, 1, 2}
    product = F.matmul(x, tl.tensor(b.T.copy()))
    assert np.all(np.abs(ulps(product.numpy(), a @ b.T)) <= 2) and np.any(product.numpy() != a @ b.T)
    assert np.array_equal(F.reshape(x, (35,)).numpy(), a.reshape(35))  # a view rounds nothing: left alone
    assert np.array_equal((x * 3 - x / 7).numpy(), a * 3 - a / 7)  # IEEE fixes + - * / on every machine
    F.log(x).sum().backward()  # log's backward: gy / x, itself moved
    assert np.any(x.grad != 1 / a) and np.all(np.abs(x.grad - 1 / a) <= 6 * np.spacing(1 / a))
    integers = F.argmax(x, axis=1)
    assert np.array_equal(integers.numpy(), a.argmax(axis=1))


def test_every_exact_op_named_is_an_op():
    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield f"{sub.__module__}.{sub.__qualname__}"
            yield from subclasses(sub)

    ops = set(subclasses(Function))
    assert {name if name in ops else name.rsplit(".", 1)[0] for name in roundoff.EXACT} <= ops
    assert all(name in ops or name.endswith((".forward", ".backward")) for name in roundoff.EXACT)


def test_a_function_of_the_users_own_is_left_alone(chaos):
    """A student's op is checked against plain NumPy in the same process: moving only one side is no machine."""
    chaos(4)

    class Cube(Function):
        def forward(self, x):
            return x**3

    a = np.random.default_rng(1).uniform(1, 2, 50)
    assert np.array_equal(Cube()(tl.tensor(a)).numpy(), a**3)


def test_uninstalled_every_op_is_its_own_forward_and_backward_again(chaos):
    from tensorlab.ops import elementwise

    roundoff.uninstall()  # the suite may run under chaos itself
    originals = (elementwise.Exp.__dict__["forward"], elementwise.Exp.__dict__["backward"])
    chaos(1)
    assert elementwise.Exp.__dict__["forward"] is not originals[0]
    roundoff.uninstall()
    assert (elementwise.Exp.__dict__["forward"], elementwise.Exp.__dict__["backward"]) == originals
    a = np.linspace(0.1, 3, 40, dtype=np.float32)
    assert np.array_equal(F.exp(tl.tensor(a)).numpy(), np.exp(a))


CHECK_OFF = """
import numpy as np, tensorlab as tl
from tensorlab import functional as F, roundoff
from tensorlab.ops import elementwise, matmul
from tensorlab.tensor import Function
assert roundoff._installed == {}
assert not hasattr(elementwise.Exp.forward, "__wrapped__") and not hasattr(matmul.MatMul.backward, "__wrapped__")
a = np.linspace(0.1, 3, 40, dtype=np.float32)
assert np.array_equal(F.exp(tl.tensor(a)).numpy(), np.exp(a))
print("off")
"""


def test_off_by_default_nothing_is_installed():
    """Imported without the variable, the engine is untouched: no wrapper, the ops' own methods, NumPy's bits."""
    env = {k: v for k, v in os.environ.items() if k != roundoff.ENVIRONMENT_VARIABLE}
    done = subprocess.run([sys.executable, "-c", CHECK_OFF], env=env, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == "off\n", done.stderr[-2000:]


@pytest.mark.parametrize("value, works", [("7", True), ("seven", False)])
def test_the_variable_installs_it_at_import_or_says_what_it_wants(value, works):
    code = "import tensorlab, tensorlab.roundoff as r; print(r._seed, len(r._installed) > 20)"
    env = dict(os.environ, **{roundoff.ENVIRONMENT_VARIABLE: value})
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True)
    if works:
        assert done.returncode == 0 and done.stdout == "7 True\n", done.stderr[-2000:]
    else:
        assert done.returncode != 0 and "TENSORLAB_ROUNDOFF_CHAOS must be an integer seed, got 'seven'" in done.stderr


def float64_cases():
    rng = np.random.default_rng(2)
    logits, targets = rng.standard_normal((4, 6)), rng.integers(0, 6, 4)
    w = rng.standard_normal(6)
    return {
        "matmul": (F.matmul, [rng.standard_normal((3, 4)), rng.standard_normal((4, 5))]),
        "softmax": (lambda x: F.softmax(x, axis=-1), [logits]),
        "cross_entropy": (lambda x: F.cross_entropy(x, tl.tensor(targets)), [logits]),
        "rms_norm": (lambda x, w: F.rms_norm(x, w), [logits, w]),
        "gelu": (F.gelu, [logits]),
        "tanh_exp": (lambda x: F.tanh(F.exp(x)).sum(axis=0), [logits]),
    }


@pytest.mark.parametrize("name", list(float64_cases()))
def test_gradcheck_in_float64_holds_under_chaos_and_fails_when_the_moves_are_not_round_off(name, chaos, monkeypatch):
    fn, arrays = float64_cases()[name]
    inputs = lambda: [tl.tensor(a.copy(), requires_grad=True) for a in arrays]  # noqa: E731
    for seed in (1, 2):
        chaos(seed)
        tl.gradcheck(fn, inputs())
    true_perturb = roundoff.perturb  # planted: moves of 2^30 ulp (about 2e-7 relative) are no round-off
    monkeypatch.setattr(roundoff, "perturb", lambda y, seed: y + (true_perturb(y, seed) - y) * 2.0**30)
    with pytest.raises(tl.GradcheckError):
        tl.gradcheck(fn, inputs())
