"""topo, engine 2/4: the topological order of the backward walk.

Probed on graphs of Nodes whose orders are checked by the order property itself: a node left
out, a node listed twice, a node before one of its parents, recursion too deep for Python.
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


GRAPHS = [
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
        root = GRAPHS[index][1]()
        nodes = {node.name: node for node in reachable(root).values()}
        counts = Counter(order)
        missing = [name for name in nodes if name not in counts]
        if missing:
            consumers = Counter(parent for node in nodes.values() for parent in {id(p) for p in node.parents})
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
        twice = [name for name in nodes if counts[name] > 1]
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
            ]
        if order[-1] != root.name:
            return ["root must come last: every other node is one of its ancestors."]
        return []

    return probe


def _before_its_parent(order, nodes):
    """The first (node, parent) of `order` where the node comes before its parent, or None."""
    position = {name: i for i, name in enumerate(order)}
    for name in order:
        for parent in nodes[name].parents:
            if position[parent.name] > position[name]:
                return name, parent.name
    return None


EXERCISE = Exercise(
    "topo",
    "engine 2/4: the topological order of the backward walk",
    [Probe(title, "topological_order", "function", _topo_probe(index)) for index, (title, _) in enumerate(GRAPHS)],
    against="your order vs the order property on each graph",
    agrees="your order is a topological order",
    unit="probe",
)
