"""topo, engine 2/4: the topological order of the backward walk.

Probed on graphs of Nodes whose orders are checked by the order property itself: a node left
out, a node listed twice, a node before one of its parents, recursion too deep for Python. Beside
five graphs built to show one slip each, RANDOM graphs drawn afresh on each run catch the orders
that are right on those five and wrong elsewhere; their Nodes' names repeat, as op names do in a
real graph, so an order that tells nodes apart by name leaves some out.
"""

from collections import Counter

from tensorlab.exercises.check import Exercise, Probe
from tensorlab.exercises.watch import engine_use_line


class Node:
    """A graph node for the topo probes: a name and the nodes it was computed from."""

    def __init__(self, name, *parents):
        self.name, self.parents = name, parents

    def __repr__(self):
        return f"Node({self.name!r})"


# A graph is described as data, [(key, (its parents' keys)[, the Node's name]), ...] with every node after its
# parents and the root last, so that the student's process (child.py) and this one build the same Nodes from it
# (`build`). A key tells a node apart; a name (the key where none is given) is what the student's Node shows.
CHAIN = [("a", ()), ("b", ("a",)), ("c", ("b",))]
DIAMOND = [("a", ()), ("b", ("a",)), ("c", ("a",)), ("d", ("b", "c"))]
SHARED = [("a", ()), ("b", ()), ("c", ()), ("x", ("a", "b")), ("y", ("x",)), ("z", ("x", "y")), ("loss", ("z", "c"))]
TWICE = [("a", ()), ("m", ("a", "a")), ("loss", ("m",))]
DEEP = [("n0", ())] + [(f"n{i}", (f"n{i - 1}",)) for i in range(1, 5000)]
RANDOM = 40  # graphs in the random probe: a slip 3 graphs in 10 show (Kahn counting m = a * a once) is missed 1e-6


def _random_graph(rng):
    """6 to 16 nodes, each with 0 to 3 parents drawn (with repeats: m = a * a) mostly from the few made just before
    it, and a loss that uses every node nothing else uses: shared parents, diamonds and paths of unequal length.
    Keys n0, n1, ...; names drawn from four letters."""
    graph = []
    for i in range(int(rng.integers(6, 17))):
        recent = [key for key, *_ in graph[-6:]] if rng.random() < 0.7 else [key for key, *_ in graph]
        count = int(rng.choice([1, 1, 2, 2, 3])) if i >= 2 else 0
        graph.append((f"n{i}", tuple(str(rng.choice(recent)) for _ in range(count)), str(rng.choice(list("abcd")))))
    used = {parent for _, parents, _ in graph for parent in parents}
    return graph + [("loss", tuple(key for key, *_ in graph if key not in used), "loss")]


GRAPHS = [  # (title, rng -> the graphs the probe asks an order of)
    ("a chain a -> b -> c", lambda rng: [CHAIN]),
    ("a diamond: b and c both use a, d uses both", lambda rng: [DIAMOND]),
    ("x used by y and by z = f(x, y), loss = g(z, c)", lambda rng: [SHARED]),
    ("a node used twice by one consumer: m = a * a", lambda rng: [TWICE]),
    ("a chain of 5000 nodes", lambda rng: [DEEP]),
    (
        f"{RANDOM} random graphs of 6 to 16 nodes, drawn afresh on each run",
        lambda rng: [_random_graph(rng) for _ in range(RANDOM)],
    ),
]


def build(graph):
    """key -> Node of a graph described as data (the root last)."""
    nodes = {}
    for key, parents, *name in graph:
        nodes[key] = Node(*name or [key], *(nodes[parent] for parent in parents))
    return nodes


def _named_by_key(graph):
    return [(key, parents) for key, parents, *_ in graph]


def _topo_probe(index):
    def probe(student, results, rng):
        graphs = GRAPHS[index][1](rng)
        answer = student.call("topo", graphs=graphs + [_named_by_key(g) for g in graphs if len(g[0]) > 2])
        used = engine_use_line("topological_order", answer["engine_calls"])
        if used:
            return [used]
        orders, by_key = answer["orders"][: len(graphs)], answer["orders"][len(graphs) :]
        for number, (graph, order) in enumerate(zip(graphs, orders), 1):
            lines = judge(order, graph)
            if lines and by_key and not judge(by_key[number - 1], graph):
                return [f"On random graph {number} of {len(graphs)}, whose Nodes' names repeat:", BY_NAME]
            if lines and len(graphs) > 1:  # which random graph: the student can build it and try
                described = ", ".join(f"{key} = f({', '.join(parents)})" for key, parents, *_ in graph if parents)
                described += "; the nodes' names: " + ", ".join(f"{key} {name!r}" for key, _, name in graph)
                return [f"On random graph {number} of {len(graphs)} ({described}):", *lines]
            if lines:
                return lines
        return []

    return probe


BY_NAME = (
    "Your order is right where every Node has a name of its own, and leaves nodes out or repeats them where two "
    "share one: it tells nodes apart by .name. Names are labels (a real graph has many 'mul' nodes); tell nodes "
    "apart by the objects themselves (a set of id(node))."
)


def judge(order, graph):
    """What is wrong with the student's order (the nodes' keys; None: not a node of the graph) of a graph."""
    if not isinstance(order, (list, tuple)):
        return [f"topological_order returned a {type(order).__name__}; return a list of the nodes."]
    if None in order:
        return ["Your order holds something that is not a node of the graph: return the Node objects themselves."]
    nodes = dict(_named_by_key(graph))  # key -> its parents' keys; every node of a graph is the root's ancestor
    counts = Counter(order)
    missing = [key for key in nodes if key not in counts]
    if missing:
        consumers = Counter(parent for parents in nodes.values() for parent in set(parents))
        shared = max(consumers.values(), default=0) > 1  # a node two consumers use: reached along two paths
        return [
            f"Your order leaves out {missing[:5]}: every node root depends on must be in it (follow "
            f".parents all the way down), or its gradient is never passed on."
            + (
                " If you count each node's consumers first and take a node when its count reaches 0 (Kahn's "
                "algorithm), count each consumer once: a count gathered without a visited set visits a node "
                "reached along two paths twice and counts it twice as a consumer of its parents, whose counts "
                "then never reach 0."
                if shared
                else ""
            )
        ]
    twice = [key for key in nodes if counts[key] > 1]
    if twice:
        return [
            f"{twice[:5]} appear more than once. A node reached along two paths must be visited once (keep a "
            f"set of the nodes already visited): the backward walk would run its _backward twice and count "
            f"its gradient twice."
        ]
    broken = _before_its_parent(order, nodes)
    if broken and not _before_its_parent(order[::-1], nodes):
        return [
            "In your order every node comes before its parents: a right order reversed, root first. The backward "
            "walk reverses the order itself, so return it with every node after its parents (root last)."
        ]
    if broken:
        name, parent = broken
        return [
            f"In your order {name!r} (which uses {parent!r}) comes before {parent!r}. The backward walk goes "
            f"through the order reversed, so it would visit {parent!r} before its consumer {name!r} has added its "
            f"share into {parent!r}'s gradient: put a node in the order only after all of its parents."
            + (BREADTH_FIRST if _breadth_first(order, nodes) else "")
        ]
    if order[-1] != graph[-1][0]:
        return ["root must come last: every other node is one of its ancestors."]
    return []


BREADTH_FIRST = (
    " Your order is a breadth-first walk from the root, reversed: it places a node reached along a short path and a "
    "long one by the short one, before a consumer further down the long one. A breadth-first order is not "
    "topological; a depth-first post-order (a node after all of its parents) or Kahn's algorithm is."
)


def _breadth_first(order, nodes):
    """Whether the order, reversed, is a breadth-first walk from the root (the last of `nodes`: key -> its parents'
    keys), each node's parents taken in order, or in the reverse order."""
    for turn in (1, -1):
        walk = [list(nodes)[-1]]
        for key in walk:  # walk grows as the loop goes: a queue
            walk += [parent for parent in dict.fromkeys(nodes[key][::turn]) if parent not in walk]
        if walk[::-1] == list(order):
            return True
    return False


def _before_its_parent(order, nodes):
    """The first (node, parent) of `order` where the node comes before its parent, or None."""
    position = {key: i for i, key in enumerate(order)}
    for key in order:
        for parent in nodes[key]:
            if position[parent] > position[key]:
                return key, parent
    return None


EXERCISE = Exercise(
    "topo",
    "engine 2/4: the topological order of the backward walk",
    [Probe(title, "topological_order", "function", _topo_probe(index)) for index, (title, _) in enumerate(GRAPHS)],
    against="your order vs the order property on each graph",
    agrees="your order is a topological order",
    unit="probe",
)
