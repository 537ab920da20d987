"""Answers of every type and shape: seeded student files whose backward returns the right gradients twisted.

    python -m tests.junk_answers --scenarios 200 [--seed 0]     (from the repository root)

Each scenario takes a gradient exercise's solution (drawn), keeps its backward as `_right` and writes a new backward
that calls it, binds the names a student gives the steps (gs, gp, gx, g, ...) to values drawn from JUNK, and returns
the right gradients twisted by one to three drawn TWISTS: the type changed (a list, a tuple of lists, a string,
None, a NumPy scalar, a masked array, a matrix, an object array, an array subclass of the file's own), the dtype
(float32, int, bool, complex), the shape (transposed, flattened, an axis added, empty), the values (NaN, inf, 1e308
times ten, one element nudged), or the container (a list, one gradient too many or too few, nested, a dict, a
generator). The check runs as `check` runs it (tensorlab.exercises.runner).

The property: the check ends with exit code 0 or 1, never 3 (the checker's own failure: no verdict), and a twisted
answer whose gradients are not the right ones, as float arrays of the right shapes, fails. tests/test_junk_answers.py
runs 20 scenarios.
"""

import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tensorlab.exercises.catalog import EXERCISES  # noqa: E402
from tensorlab.exercises.gradient import Case  # noqa: E402
from tensorlab.exercises.report import Report  # noqa: E402
from tensorlab.exercises.runner import run  # noqa: E402
from tests.tools import run_each, scenarios_main  # noqa: E402

GRADIENT_EXERCISES = [e for e in EXERCISES if isinstance(e.cases[0], Case)]
BACKWARD = "    def backward(self, gy):\n"
NAMES = ["g", "gs", "gp", "gx", "gq", "gk", "gv", "ga", "gb", "gw", "gxhat", "grad"]
# name -> (code of the twist, applied to `g`, one right gradient; whether the result is still right)
TWISTS = {
    "list": ("g.tolist()", False),
    "str": ("str(g)", False),
    "none": ("None", False),
    "scalar": ("np.float64(g.sum())", False),
    "masked": ("np.ma.masked_array(g, mask=np.zeros(g.shape, bool))", None),  # an ndarray subclass: its values
    "matrix": ("np.asmatrix(g.reshape(g.shape[0], -1)) if g.ndim else g", None),
    "object": ("g.astype(object)", False),
    "subclass": ("g.view(Evil)", None),
    "float32": ("g.astype(np.float32)", False),
    "int": ("g.astype(np.int64)", False),
    "bool": ("g.astype(bool)", False),
    "complex": ("g.astype(complex)", False),
    "transposed": ("g.T", None),
    "flat": ("g.reshape(-1)", None),
    "axis added": ("g[None]", False),
    "empty": ("g[..., :0]", False),
    "nan": ("g * np.nan", False),
    "inf": ("g + np.inf", False),
    "overflow": ("np.full_like(g, 1e308) * 10", False),
    "nudged": ("g + (np.arange(g.size).reshape(g.shape) == 0) * 1e-3", False),
    "copy": ("g.copy()", True),
}
CONTAINERS = {  # applied to `grads`, a tuple of the twisted gradients
    "tuple": "tuple(grads)",
    "list": "list(grads)",
    "one too many": "tuple(grads) + (grads[0],)",
    "one too few": "tuple(grads[:-1])",
    "nested": "(tuple(grads),)",
    "dict": "dict(enumerate(grads))",
    "generator": "(x for x in grads)",
    "first alone": "grads[0]",
}
JUNK = [
    "np.zeros((2, 3))",
    "np.array(['a', 'b'])",
    "np.array([object()])",
    "np.ones(3, complex)",
    "np.ones((), bool)",
    "[1, 2, 3]",
    "'gs'",
    "None",
    "np.full((3, 3), np.nan)",
    "np.full((2, 2, 2), 1e308) * 10",
    "np.ma.masked_array([1.0, 2.0], mask=[True, False])",
    "np.asmatrix(np.eye(2))",
    "gy.view(Evil)",
    "gy.astype(object)",
    "gy.astype(np.float16)",
    "gy[..., :0]",
]
EVIL = """
class Evil(np.ndarray):  # an array that says it equals anything, and lies about its shape
    def __eq__(self, other):
        return True

    __ne__ = lambda self, other: False  # noqa: E731
"""


def scenario(n, folder):
    """Check one drawn file in `folder`; (what was drawn, [problems])."""
    rng = random.Random(n)
    folder.mkdir(parents=True)
    exercise = rng.choice(GRADIENT_EXERCISES)
    source = (ROOT / "teachers" / "solutions" / f"{exercise.name}.py").read_text()
    if "import numpy as np" not in source:
        source = "import numpy as np\n" + source
    twists = [rng.choice(sorted(TWISTS)) for _ in range(rng.randint(1, 3))]
    container = rng.choice(sorted(CONTAINERS))
    junk = {rng.choice(NAMES): rng.choice(JUNK) for _ in range(rng.randint(0, 3))}
    lines = [BACKWARD, "        grads = self._right(gy)\n"]
    lines += [f"        {name} = {value}\n" for name, value in junk.items()]
    lines += ["        grads = grads if isinstance(grads, tuple) else (grads,)\n", "        twisted = []\n"]
    lines += ["        for g in grads:\n", "            if g is None:  # the integer ids' gradient: nothing to twist\n"]
    lines += ["                twisted.append(g)\n", "                continue\n"]
    for twist in twists:
        lines += [f"            g = {TWISTS[twist][0]}\n"]
    lines += ["            twisted.append(g)\n", "        grads = twisted\n"]
    lines += [f"        return {CONTAINERS[container]}\n\n"]
    body = "".join(lines) + BACKWARD.replace("backward", "_right")
    source = source.replace(BACKWARD, body, 1) + EVIL
    path = folder / f"{exercise.name}.py"
    path.write_text(source)
    what = f"scenario {n}: {exercise.name}, twists {twists}, returned as {container}, junk {junk}"
    report = Report(exercise, path, show=None)
    code = run(exercise, path, 5, rng.randrange(1_000_000), report, echo=lambda text: None)
    right = all(TWISTS[t][1] is True for t in twists) and container == "tuple"
    problems = []
    if code not in (0, 1):
        problems.append(f"exit {code}: {report.diagnosis()[:600]}")
    elif code == 0 and any(TWISTS[t][1] is False for t in twists):
        problems.append("a twisted answer passed")
    elif code == 1 and right:
        problems.append(f"the right answer failed: {report.diagnosis()[:300]}")
    return what, problems


def run_scenarios(count, seed=0, report=print):
    """Run `count` scenarios from `seed`; [(what, problems)] of those that broke the property."""
    with tempfile.TemporaryDirectory(prefix="junk-answers-") as tmp:
        return run_each(lambda n: scenario(n, Path(tmp) / str(n)), count, seed, report)


if __name__ == "__main__":
    sys.exit(scenarios_main(__doc__, run_scenarios))
