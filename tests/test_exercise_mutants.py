"""Every mutant of every solution caught (issue 31): teachers/mutate.py, a sample of it on every run.

The full run is one command, `python -m teachers.mutate` (every mutant of every exercise, some
minutes); here each run checks a few mutants of each exercise, drawn from a fresh seed (printed:
`python -m teachers.mutate --sample 1 --seed SEED` replays it), so runs over time cover them all.
"""

import os
import secrets
import sys

import numpy as np
import pytest

from teachers import mutate
from tensorlab.exercises import BY_NAME, EXERCISES, check

SOFTMAX_WITHOUT_MAX = """
import numpy as np

from tensorlab.tensor import Function


class Softmax(Function):
    def __init__(self, axis=-1):
        self.axis = axis

    def forward(self, x):
        self.x = x
        e = np.exp(x - x.max(axis=self.axis, keepdims=True))
        self.y = e / e.sum(axis=self.axis, keepdims=True)
        return self.y

    def backward(self, gy):
        e = np.exp(self.x)                   # the softmax again, without subtracting the max
        y = e / e.sum(axis=self.axis, keepdims=True)
        return y * (gy - (gy * y).sum(axis=self.axis, keepdims=True))
"""


def test_every_solution_has_mutants_of_each_kind_it_can():
    counts = {e.name: len(mutate.mutants(e.name)) for e in EXERCISES}
    assert all(n >= 5 for n in counts.values()), counts
    softmax = [what for what, _ in mutate.mutants("softmax")]
    for kind in ("- -> +", ".sum(...) dropped", "sum -> mean", "keepdims= dropped", "axis -> 0", "a term dropped"):
        assert any(kind in what for what in softmax), (kind, softmax)
    rms_norm = [what for what, _ in mutate.mutants("rms_norm")]
    assert any("self.xhat -> self.r" in what for what in rms_norm)  # a saved value swapped for another
    assert any("a transpose removed" in what for what, _ in mutate.mutants("matmul"))
    assert any("= for +=" in what for what, _ in mutate.mutants("value"))
    assert any("np.add.at(a, i, v) -> a[i] = v" in what for what, _ in mutate.mutants("embedding"))


def test_a_sample_of_the_mutants_of_every_exercise_is_rejected_when_it_differs():
    seed = int(os.environ.get("MUTANTS_SEED", secrets.randbelow(1_000_000)))
    lines = []
    counts, slipped = mutate.run([e.name for e in EXERCISES], sample=1, seed=seed, out=lines.append)
    print(f"\nmutants drawn with seed {seed}:", *lines, sep="\n", file=sys.stderr)
    assert sum(c["checked"] for c in counts.values()) == len(EXERCISES)
    assert not slipped, f"seed {seed}: {slipped}"


def test_a_mutant_of_a_mutant_of_every_exercise_is_rejected_when_it_differs():
    """Two changes at once (`--second`): the cases catch what no one change alone makes."""
    seed = int(os.environ.get("MUTANTS_SEED", secrets.randbelow(1_000_000)))
    lines = []
    counts, slipped = mutate.run([e.name for e in EXERCISES], seed=seed, out=lines.append, second=1)
    print(f"\nmutants of two changes drawn with seed {seed}:", *lines, sep="\n", file=sys.stderr)
    assert all(c["checked"] == 1 for c in counts.values())
    assert not slipped, f"seed {seed}: {slipped}"


def judged(name, source):
    """(differs, rejected) of `source` as a file for exercise `name`, against its solution, as mutate.run judges."""
    exercise = BY_NAME[name]
    asked = mutate.requests(exercise, seed=1)
    reference = mutate.solution_answers(name, asked)
    differs, rejected, _ = mutate.judge(exercise, source, asked, reference, seed=1)
    return differs, rejected


def test_the_softmax_recomputed_without_the_max_differs_near_1000_and_is_rejected():
    assert judged("softmax", SOFTMAX_WITHOUT_MAX) == (True, True)


@pytest.mark.parametrize(
    "name, what",
    [
        ("unbroadcast", "line 6: - -> +"),  # every exercise whose requests call a function of the file, not an op
        ("adamw", "line 8: - -> +"),
        ("topo", "line 14: not in -> in"),
        ("value", "line 8: the constant 0.0 -> 1"),
    ],
)
def test_a_mutant_of_each_kind_of_request_differs_from_its_solution(name, what):
    """Planted: the requests of unbroadcast and adamw named handlers the student's process no longer had; the
    solution "raised" on each as every mutant did, so all 28 and 95 mutants counted as equivalent."""
    assert judged(name, dict(mutate.mutants(name))[what]) == (True, True)


def test_a_request_the_solution_cannot_answer_stops_the_tool(monkeypatch):
    """...and the tool now says so in one line, rather than counting every mutant as equivalent."""
    monkeypatch.setattr(mutate, "requests", lambda exercise, seed: [("unbroadcast", dict(grad=np.ones(2), shape=()))])
    with pytest.raises(RuntimeError, match="unbroadcast: the solution cannot answer a 'unbroadcast' request"):
        mutate.run(["unbroadcast"], sample=1, out=lambda line: None)


FOUND_BY_FULL_RUNS = [  # (exercise, the mutant): each passed until a case was added (docs/exercises.md)
    ("ties", "line 11: the constant 1 -> 2"),  # no stretched axis of length 2
    ("mul", "line 18: a term dropped: leading + i -> leading"),  # no size-1 axis in front of a stretched one
    ("mul", "line 18: a term dropped: leading + i -> i"),
    ("mul", "line 18: + -> -"),
    ("function", "line 21: a term dropped: leading + i -> leading"),
    # the size test reads grad.shape[1 + i] or [leading + 1]: no size-1 axis of the gradient's after a stretched one
    ("function", "line 21: the variable leading -> n"),
    ("mul", "line 18: the variable i -> n"),
]


@pytest.mark.parametrize("name", ["unbroadcast", "function", "mul", "ties"])
@pytest.mark.parametrize("size", [0.5, 2, 3, 4])
def test_a_size_test_against_another_length_than_1_is_rejected(name, size):
    """Found by `--second`: ties' `g.shape[i] != 4` for `!= 1` (two changes: 1 -> 2 -> 4) passed, since no case
    stretched an axis to 4. Every hand-made sum to a shape now meets axes stretched to 2, 3 and 4."""
    solution = (mutate.SOLUTIONS / f"{name}.py").read_text()
    assert solution.count("] != 1)") == 1
    assert judged(name, solution.replace("] != 1)", f"] != {size})")) == (size != 0.5, size != 0.5)


@pytest.mark.parametrize("name, what", FOUND_BY_FULL_RUNS)
def test_the_mutants_full_runs_found_passing_differ_and_are_rejected(name, what):
    assert judged(name, dict(mutate.mutants(name))[what]) == (True, True)


def test_a_checker_that_accepts_a_mutant_that_differs_is_reported(monkeypatch):
    """The tool itself: with a checker that passes everything, every mutant that differs is reported."""

    def lenient(exercise, student, **_):
        student.load()
        return True

    monkeypatch.setattr(check, "check", lenient)
    for drawn in (dict(sample=2), dict(second=2)):
        counts, slipped = mutate.run(["exp_log"], seed=0, out=lambda line: None, **drawn)
        assert counts["exp_log"]["checked"] == 2 and counts["exp_log"]["differ"] == len(slipped) > 0
