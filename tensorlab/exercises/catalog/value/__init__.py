"""value, engine 1/4: a scalar Value with + * tanh exp and backward (micrograd).

Probed with small programs: the same expression on float64 Tensors gives the data, and the engine's
autograd through it the exact gradients, which a student's are judged against as a gradient case
judges (to 1e-12 of their scale: a derivative taken by finite differences inside a _backward,
right to 1e-9, fails). The typical mistakes are named: the
local derivative of each op; a Value used twice, probed op by op (forgetting to accumulate, `=`
where `+=` belongs, named in the op it slipped in); a node reached along two paths (visiting a
node before its consumers).
"""

import numpy as np

from tensorlab.exercises.check import Exercise, Probe
from tensorlab.exercises.diagnose import APPROXIMATE
from tensorlab.exercises.gradient import RTOL
from tensorlab.exercises.student import later
from tensorlab.tensor import Tensor

FINITE_DIFFERENCES = (
    "Your gradients are close to the right ones, but only to about {off:.0e} of their size, where a derivative "
    "written down agrees to 1e-15: a _backward works its local derivative out by finite differences (the op run "
    "again at nudged inputs), or in float32. Write the derivative itself (1 - t * t for tanh, out.data for exp)."
)


def _chain(a, n=1500):
    for _ in range(n):
        a = a * 1.0 + 0.0
    return a.tanh()


# (title, expression, input values, what a failure means when the probes before it passed)
PROBES = [
    ("a + b", lambda a, b: a + b, (2.0, -3.0), "the _backward of __add__"),
    ("a * b", lambda a, b: a * b, (2.0, -3.0), "the _backward of __mul__"),
    ("a.tanh()", lambda a: a.tanh(), (0.7,), "the _backward of tanh"),
    ("a.exp()", lambda a: a.exp(), (0.5,), "the _backward of exp"),
    ("2 * a + 1 (constants)", lambda a: 2 * a + 1, (0.3,), "mixing Values with numbers"),
    # Each op's accumulation on its own: a slip (`=` for `+=`) in one _backward shows only where that op gives
    # a Value its second contribution, so every op gets a probe that uses its input twice. A binary op's slip
    # in the line for `self` alone survives a + a (the `other` line runs last and adds to what `self` set):
    # it needs `self` to hold another consumer's gradient first, as in (a + b) * a.
    ("a + a (a Value added to itself)", lambda a: a + a, (0.7,), "accumulate:__add__"),
    ("a * a (a Value times itself)", lambda a: a * a, (0.7,), "accumulate:__mul__"),
    ("a.tanh() + a (a used by tanh and by +)", lambda a: a.tanh() + a, (0.7,), "accumulate:tanh"),
    ("a.exp() + a (a used by exp and by +)", lambda a: a.exp() + a, (0.7,), "accumulate:exp"),
    ("(a + b) * a (a left of + and used again)", lambda a, b: (a + b) * a, (0.7, -0.4), "accumulate:__add__"),
    ("(a * b) + a (a left of * and used again)", lambda a, b: (a * b) + a, (0.7, -0.4), "accumulate:__mul__"),
    ("x = a * b; x + x (a computed Value used twice)", lambda a, b: _twice(a * b), (0.8, -1.2), "accumulate:__add__"),
    ("a * a + a (a used three times)", lambda a: a * a + a, (1.5,), "accumulate"),
    (
        "x = a * b; (x + x.tanh()) * c (x reached along two paths)",
        lambda a, b, c: _two_paths(a * b, c),
        (0.8, -1.2, 0.5),
        "order",
    ),
    ("a shared node: x = a * b; y = x.tanh(); (x * y + y.exp()) * x", lambda a, b: _shared(a, b), (0.6, 0.9), "order"),
    ("a chain of 3000 ops", _chain, (0.4,), "deep"),
    # drawn: tanh through exp(2a) overflows from a = 355 (through exp(-2a) from a = -355), far from every value above
    ("a.tanh() * b.tanh() far from 0 (a from 400 to 1000, b from -1000 to -400)", lambda a, b: a.tanh() * b.tanh(),
     lambda rng: [rng.uniform(400, 1000), rng.uniform(-1000, -400)], "the _backward of tanh"),
]  # fmt: skip


def probe_values(index, rng):
    """The probe's input values, fresh on each run: near its chosen ones, or drawn by it."""
    start = PROBES[index][2]
    return start(rng) if callable(start) else [v + rng.uniform(-0.1, 0.1) for v in start]


def _twice(x):
    return x + x


def _two_paths(x, c):
    return (x + x.tanh()) * c


def _shared(a, b):
    x = a * b
    y = x.tanh()
    return (x * y + y.exp()) * x


def _value_probe(index):
    title, expression, _, meaning = PROBES[index]

    def probe(student, results, rng):
        values = probe_values(index, rng)
        answer = student.call("value", index=index, values=values)
        expected, right = _reference(expression, values)
        if not _close(answer["data"], expected, [expected]):
            return [
                f"{title} gives data {answer['shown']}, expected {expected:.8g}: the forward value "
                f"is wrong (check the arithmetic each op puts in its output Value)."
            ]
        later(answer)
        grads = answer["grads"]
        wrong, too_large = [], []
        for i, (grad, r) in enumerate(zip(grads, right)):
            if not _close(grad, r, right):
                wrong.append(f"{'abc'[i]}.grad is {_shown(grad, r)}")
                too_large.append(abs(grad) > abs(r) * 1.01)
        if wrong and all(_close(grad, r, right, APPROXIMATE) for grad, r in zip(grads, right)):
            off = max(abs(grad - r) for grad, r in zip(grads, right)) / max(map(abs, right))
            return ["; ".join(wrong) + ".", FINITE_DIFFERENCES.format(off=off)]
        if not wrong and meaning.startswith("the _backward"):
            wrong = _chain_rule(student, index, right, values)
        if not wrong:
            return []
        # a missing accumulation loses contributions; a node visited twice adds one too many
        cause = "order" if meaning.startswith("accumulate") and all(too_large) else meaning
        return ["; ".join(wrong) + "."] + _value_diagnosis(cause, grads, results)

    return probe


def _chain_rule(student, index, right, values, upstream=1.7):
    """[what is wrong] when the op's _backward, run alone with out.grad = upstream, does not scale by it.

    backward() starts from grad 1, where a _backward that forgets to multiply by out.grad is still right.
    """
    answer = student.call("value", index=index, values=values, upstream=upstream)
    later(answer)
    scaled = [upstream * r for r in right]
    return [
        f"with out.grad = {upstream} and its _backward run alone, {'abc'[i]}.grad is {_shown(grad, r)}"
        for i, (grad, r) in enumerate(zip(answer["grads"], scaled))
        if not _close(grad, r, scaled)
    ]


def _value_diagnosis(meaning, grads, results):
    locals_right = all(results.get(title, False) for title, *_ in PROBES[:5])
    ops_alone_right = all(results.get(title, False) for title, *_ in PROBES[:4])
    if all(grad == 0 for grad in grads) and ops_alone_right:
        return [
            "No gradient reached the inputs, though each op alone works: backward ran a Value's _backward before "
            "its consumers had given it any gradient, visiting a node before its consumers. Build a topological "
            "order of the whole graph, then call _backward in that order reversed, from the root."
        ]
    if all(grad == 0 for grad in grads):
        return [
            "No gradient reached the inputs: does backward set its own grad to 1 and call the _backward of every "
            "Value it depends on, and does each op set out._backward?"
        ]
    if meaning.startswith("accumulate") and locals_right:
        _, _, op = meaning.partition(":")
        # a probe that uses several ops names the ones whose own probes failed
        ops = [op] if op else list(dict.fromkeys(m.partition(":")[2] for t, *_, m in _failed(results, "accumulate:")))
        where = " and ".join(f"in {o}'s _backward" for o in ops) if ops else "in every _backward"
        return [
            f"Forgetting to accumulate {where}: a Value used more than once gets a gradient from each use, and "
            f"they add up. There, write `self.grad += ...` (and `other.grad += ...`), not `self.grad = ...`."
        ]
    # every accumulation probe run so far passed (this one, and those after it, have not been judged yet)
    accumulates = all(results.get(title, True) for title, *_, m in PROBES if m.startswith("accumulate"))
    if meaning in ("order", "deep") and locals_right and accumulates:
        return [
            "Visiting a node before its consumers: a shared Value's _backward ran before every Value that uses "
            "it had added into its grad (or ran twice). Build a topological order of the whole graph first, "
            "each Value once, then call _backward in that order reversed."
        ]
    if meaning.startswith("the _backward"):
        return [
            f"The local derivative in {meaning} is wrong (or its result is not multiplied by out.grad, the "
            f"gradient arriving from the output: the chain rule)."
        ]
    return []


def _failed(results, meaning):
    """The value probes run so far that failed and whose meaning starts with `meaning`."""
    return [probe for probe in PROBES if probe[-1].startswith(meaning) and results.get(probe[0]) is False]


def _reference(expression, values):
    """(data, [the gradient of each input]) of the expression on float64 Tensors, through the engine's autograd."""
    inputs = [Tensor(np.float64(v), requires_grad=True) for v in values]
    out = expression(*inputs)
    out.backward()
    return float(out.data), [float(x.grad) for x in inputs]


def _close(grad, r, right, rtol=RTOL):
    """grad is r to rtol of (|r| + the probe's largest |gradient|): the gradient cases' rule."""
    return isinstance(grad, (int, float)) and abs(grad - r) <= rtol * (abs(r) + max(map(abs, right)))


def _shown(grad, r):
    """'0.68271361, expected 0.70118', every digit where the two agree to eight."""
    digits = ".17g" if f"{grad:.8g}" == f"{r:.8g}" else ".8g"
    return f"{grad:{digits}}, expected {r:{digits}}"


EXERCISE = Exercise(
    "value",
    "engine 1/4: a scalar Value with + * tanh exp and backward (micrograd)",
    [Probe(title, "Value", "class", _value_probe(index)) for index, (title, *_) in enumerate(PROBES)],
    against="your Value's data and gradients vs the same expression through tensorlab's autograd (float64)",
    agrees="your Value gives the right data and gradients",
    unit="probe",
)
