"""Checking the engine track: a scalar Value, the topological order, unbroadcast.

These exercises build the engine rather than one op's backward, so each is checked by probes:
small programs run on the student's code whose right answers are known without any backward
(finite differences on the same expression evaluated with plain floats; a graph's order
property; NumPy's own sums), each with the typical mistakes of that step named:
- value: the local derivative of each op; a Value used twice, probed op by op (forgetting to
  accumulate, `=` where `+=` belongs, named in the op it slipped in); a node reached along two
  paths (visiting a node before its consumers);
- topo: a node left out, a node listed twice, a node before one of its parents, recursion
  too deep for Python;
- unbroadcast: which axes were summed (the leading ones only, the size-1 ones only, all, the
  wrong ones), size-1 axes dropped, a mean where a sum belongs.
"""

import math
from collections import Counter
from itertools import combinations

import numpy as np

from tensorlab.exercises.check import new_seed
from tensorlab.exercises.student import NotWritten, StudentError, later, run_cases
from tensorlab.exercises.watch import engine_use_line
from tensorlab.ops.broadcast import unbroadcast as engine_unbroadcast


def check(exercise, student, out=print, time_limit=None, seed=None):
    """Run the probes of an engine-track exercise on the student's file (a started student.Student); True when all
    pass.

    `seed` (default: a fresh one, printed) draws the probes' numbers (a Value's inputs, a gradient to unbroadcast).
    """
    seed = new_seed() if seed is None else seed
    student.load(time_limit)
    name, kind = TARGETS[exercise.name]
    student.call("find", name=name, kind=kind)
    probes = PROBES[exercise.name]
    out(
        f"Checking {student.path} with {len(probes)} probes, their numbers drawn with seed {seed} (--seed {seed} draws "
        f"them again)."
    )
    results, not_written = {}, []

    def run(number, title, probe):
        if not_written:
            return ["(not written yet, see above)"]
        try:
            lines = probe(student, results, np.random.default_rng([seed, number]))
        except NotWritten as error:
            not_written.append(True)
            lines = error.lines
        except StudentError as error:
            lines = error.lines
        results[title] = not lines
        return lines

    runs = [
        (f"probe {number}/{len(probes)}  {title}", lambda n=number, title=title, probe=probe: run(n, title, probe))
        for number, (title, probe) in enumerate(probes, 1)
    ]
    failed = run_cases(runs, time_limit, out, student)
    if failed:
        out(
            f"FAILED: {failed} of {len(probes)} probes. Start with the first failed probe above, and check again "
            f"after each fix."
        )
    else:
        out(f"PASSED: all {len(probes)} probes.")
    return not failed


# ----- value: a scalar autograd ------------------------------------------------------------------------------------
class _Float:
    """The same expression on plain floats, for the right value and finite differences."""

    def __init__(self, data):
        self.data = float(data)

    def __add__(self, other):
        return _Float(self.data + getattr(other, "data", other))

    def __mul__(self, other):
        return _Float(self.data * getattr(other, "data", other))

    def tanh(self):
        return _Float(math.tanh(self.data))

    def exp(self):
        return _Float(math.exp(self.data))

    __radd__, __rmul__ = __add__, __mul__


def _chain(a, n=1500):
    for _ in range(n):
        a = a * 1.0 + 0.0
    return a.tanh()


# (title, expression, input values, what a failure means when the probes before it passed)
VALUE_PROBES = [
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
]


def _twice(x):
    return x + x


def _two_paths(x, c):
    return (x + x.tanh()) * c


def _shared(a, b):
    x = a * b
    y = x.tanh()
    return (x * y + y.exp()) * x


def _value_probe(index):
    title, expression, start, meaning = VALUE_PROBES[index]

    def probe(student, results, rng):
        values = [v + rng.uniform(-0.1, 0.1) for v in start]  # near the chosen values, fresh on each run
        answer = student.call("value", index=index, values=values)
        expected = expression(*[_Float(v) for v in values]).data
        if not math.isclose(answer["data"], expected, rel_tol=1e-9, abs_tol=1e-12):
            return [
                f"{title} gives data {answer['shown']}, expected {expected:.8g}: the forward value "
                f"is wrong (check the arithmetic each op puts in its output Value)."
            ]
        later(answer)
        grads = answer["grads"]
        wrong, too_large = [], []
        for i, grad in enumerate(grads):
            numeric = _numeric(expression, values, i)
            if not math.isclose(grad, numeric, rel_tol=1e-5, abs_tol=1e-7):
                wrong.append(f"{'abc'[i]}.grad is {grad:.8g}, expected {numeric:.8g}")
                too_large.append(abs(grad) > abs(numeric) * 1.01)
        if not wrong and meaning.startswith("the _backward"):
            wrong = _chain_rule(student, index, expression, values)
        if not wrong:
            return []
        # a missing accumulation loses contributions; a node visited twice adds one too many
        cause = "order" if meaning.startswith("accumulate") and all(too_large) else meaning
        return ["; ".join(wrong) + "."] + _value_diagnosis(cause, grads, results)

    return probe


def _chain_rule(student, index, expression, values, upstream=1.7):
    """[what is wrong] when the op's _backward, run alone with out.grad = upstream, does not scale by it.

    backward() starts from grad 1, where a _backward that forgets to multiply by out.grad is still right.
    """
    answer = student.call("value", index=index, values=values, upstream=upstream)
    later(answer)
    return [
        f"with out.grad = {upstream} and its _backward run alone, {'abc'[i]}.grad is {grad:.8g}, expected "
        f"{upstream * _numeric(expression, values, i):.8g}"
        for i, grad in enumerate(answer["grads"])
        if not math.isclose(grad, upstream * _numeric(expression, values, i), rel_tol=1e-5, abs_tol=1e-7)
    ]


def _value_diagnosis(meaning, grads, results):
    locals_right = all(results.get(title, False) for title, *_ in VALUE_PROBES[:5])
    ops_alone_right = all(results.get(title, False) for title, *_ in VALUE_PROBES[:4])
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
    accumulates = all(results.get(title, True) for title, *_, m in VALUE_PROBES if m.startswith("accumulate"))
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
    return [probe for probe in VALUE_PROBES if probe[-1].startswith(meaning) and results.get(probe[0]) is False]


def _numeric(expression, values, i, eps=1e-6):
    def at(shift):
        shifted = [v + shift if j == i else v for j, v in enumerate(values)]
        return expression(*[_Float(v) for v in shifted]).data

    return (at(eps) - at(-eps)) / (2 * eps)


# ----- topo: the order of the backward walk ------------------------------------------------------------------------
class Node:
    """A graph node for the topo probes: a name and the nodes it was computed from."""

    def __init__(self, name, *parents):
        self.name, self.parents = name, parents

    def __repr__(self):
        return f"Node({self.name!r})"


def _diamond():
    a = Node("a")
    return Node("d", Node("b", a), Node("c", a))


def _shared_graph():
    a, b, c = Node("a"), Node("b"), Node("c")
    x = Node("x", a, b)
    y = Node("y", x)
    z = Node("z", x, y)
    return Node("loss", z, c)


def _deep(n=5000):
    node = Node("n0")
    for i in range(1, n):
        node = Node(f"n{i}", node)
    return node


TOPO_GRAPHS = [
    ("a chain a -> b -> c", lambda: Node("c", Node("b", Node("a")))),
    ("a diamond: b and c both use a, d uses both", _diamond),
    ("x used by y and by z = f(x, y), loss = g(z, c)", _shared_graph),
    ("a node used twice by one consumer: m = a * a", lambda: Node("loss", Node("m", *[Node("a")] * 2))),
    ("a chain of 5000 nodes", _deep),
]


def reachable(root):
    seen, stack = {}, [root]
    while stack:
        node = stack.pop()
        if id(node) not in seen:
            seen[id(node)] = node
            stack.extend(node.parents)
    return seen


def _topo_probe(index):
    def probe(student, results, rng):
        answer = student.call("topo", index=index)
        used = engine_use_line("topological_order", answer["engine_calls"])
        if used:
            return [used]
        order = answer["order"]  # the nodes' names (None: not a node of the graph)
        if not isinstance(order, (list, tuple)):
            return [f"topological_order returned a {type(order).__name__}; return a list of the nodes."]
        if None in order:
            return ["Your order holds something that is not a node of the graph: return the Node objects themselves."]
        root = TOPO_GRAPHS[index][1]()
        nodes = {node.name: node for node in reachable(root).values()}
        counts = Counter(order)
        missing = [name for name in nodes if name not in counts]
        if missing:
            return [
                f"Your order leaves out {missing[:5]}: every node root depends on must be in it (follow "
                f".parents all the way down), or its gradient is never passed on."
            ]
        twice = [name for name in nodes if counts[name] > 1]
        if twice:
            return [
                f"{twice[:5]} appear more than once. A node reached along two paths must be visited once (keep a "
                f"set of the nodes already visited): the backward walk would run its _backward twice and count "
                f"its gradient twice."
            ]
        position = {name: i for i, name in enumerate(order)}
        for name in order:
            for parent in nodes[name].parents:
                if position[parent.name] > position[name]:
                    return [
                        f"In your order {name!r} (which uses {parent.name!r}) comes before {parent.name!r}. "
                        f"The backward walk goes through the order reversed, so it would visit {parent.name!r} "
                        f"before its consumer {name!r} has added its share into {parent.name!r}'s gradient: "
                        f"put a node in the order only after all of its parents."
                    ]
        if order[-1] != root.name:
            return ["root must come last: every other node is one of its ancestors."]
        return []

    return probe


# ----- unbroadcast -------------------------------------------------------------------------------------------------
UNBROADCAST_SHAPES = [
    ((2, 3), (3,)),
    ((2, 3), (1, 3)),
    ((2, 3), (2, 1)),
    ((4, 2, 3), (2, 1)),
    ((2, 3), (2, 3)),
    ((3,), ()),
    ((5, 1, 3), (1, 1, 3)),
    ((2, 3, 4), (3, 1)),
]


def _unbroadcast_probe(grad_shape, shape):
    def probe(student, results, rng):
        grad = rng.standard_normal(grad_shape)
        answer = student.call("unbroadcast", grad=grad, shape=shape)
        used = engine_use_line("unbroadcast", answer["engine_calls"])
        if used:
            return [used]
        got = answer["got"]
        if not isinstance(got, (np.ndarray, list, tuple, float, int)):
            return [f"unbroadcast returned a {type(got).__name__}; return a NumPy array of shape {tuple(shape)}."]
        expected = engine_unbroadcast(grad, shape)
        got_shape = np.shape(got)
        if got_shape == tuple(shape) and np.allclose(got, expected, rtol=1e-12, atol=1e-12):
            return []
        leading = len(grad_shape) - len(shape)
        right_axes = tuple(range(leading)) + tuple(
            leading + i for i, n in enumerate(shape) if n == 1 and grad_shape[leading + i] != 1
        )
        head = (
            f"unbroadcast(grad of shape {grad_shape}, {shape}) returned shape {got_shape}"
            + ("" if got_shape != tuple(shape) else " with the wrong values")
            + f"; the right answer sums over axes {right_axes} and has shape {tuple(shape)}."
        )
        return [head] + _unbroadcast_diagnosis(grad, shape, got, right_axes, leading)

    return probe


def _unbroadcast_diagnosis(grad, shape, got, right_axes, leading):
    got = np.asarray(got)
    for axes in _axis_sets(grad.ndim):
        for keepdims in (True, False):
            candidate = grad.sum(axis=axes, keepdims=keepdims)
            mean = grad.mean(axis=axes, keepdims=keepdims) if axes else candidate
            for reshaped in (candidate, _fit(candidate, shape)):
                if reshaped is not None and reshaped.shape == got.shape and np.allclose(reshaped, got):
                    return [_axes_words(axes, right_axes, leading, grad.ndim, shape, got.shape)]
            if (
                axes
                and _fit(mean, shape) is not None
                and _fit(mean, shape).shape == got.shape
                and np.allclose(_fit(mean, shape), got)
            ):
                return ["You took a mean where a sum belongs: every copy of an element adds its whole gradient."]
    return []


def _axes_words(axes, right_axes, leading, ndim, shape, got_shape):
    added, stretched = set(range(leading)), set(right_axes) - set(range(leading))
    if set(axes) == set(right_axes) and got_shape != tuple(shape):
        return (
            f"You summed over the right axes {axes}, but the result must have shape {tuple(shape)}: keep the "
            f"stretched size-1 axes (keepdims=True) and drop the added ones (reshape to `shape`)."
        )
    if set(axes) == added and stretched:
        return (
            f"Summing over the wrong axes: you summed only the axes added in front {tuple(sorted(added))}; the "
            f"axes where `shape` has size 1 and grad does not, {tuple(sorted(stretched))}, were stretched by "
            f"broadcasting too and must be summed (keeping size 1)."
        )
    if set(axes) == stretched and added:
        return (
            f"Summing over the wrong axes: you summed only the stretched size-1 axes {tuple(sorted(stretched))}; "
            f"the axes added in front, {tuple(sorted(added))}, must be summed away as well."
        )
    if len(axes) == ndim > 1:
        return "You summed over every axis: only the broadcast ones are summed; the others keep their length."
    return (
        f"Summing over the wrong axes: you summed over axes {axes}, but broadcasting added or stretched axes "
        f"{right_axes}. Line up the shapes from the right: leading extra axes, then axes where `shape` has 1."
    )


def _axis_sets(ndim):
    return [axes for r in range(ndim + 1) for axes in combinations(range(ndim), r)]


def _fit(array, shape):
    try:
        return array.reshape(shape)
    except ValueError:
        return None


TARGETS = {
    "value": ("Value", "class"),
    "topo": ("topological_order", "function"),
    "unbroadcast": ("unbroadcast", "function"),
}
PROBES = {
    "value": [(title, _value_probe(index)) for index, (title, *_) in enumerate(VALUE_PROBES)],
    "topo": [(title, _topo_probe(index)) for index, (title, _) in enumerate(TOPO_GRAPHS)],
    "unbroadcast": [(f"grad {g} -> shape {s}", _unbroadcast_probe(g, s)) for g, s in UNBROADCAST_SHAPES],
}
