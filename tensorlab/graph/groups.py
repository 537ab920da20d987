"""Collapse the ops each module made into one box: a view of a big graph that fits on a screen.

An op made inside `record()` remembers the modules whose forward was running when it was made
(`Node.scope`, see scopes.py): for an op in the second block's attention of a language
model, `blocks.1` (level 1, a child of the model) then `blocks.1.attn` (level 2). At
`depth=1` each level-1 module call becomes one box: its ops, the tensors that only flow
between them, and the parameters only they use disappear into it. At `depth=2` the level-1
modules are open and their children are boxes; `expanded` opens chosen modules (by path)
whatever the depth, which is how the HTML view expands a box when it is clicked. Ops made
outside `record()` belong to no module and are always drawn.

In a collapsed view the intermediate tensors become plain arrows (their shape shows on
hover, a named tensor such as q, k or v labels its arrow; each arrow keeps its tensor's node,
so a drawing with a Trace can print the norm of its gradient), so a 4-layer model reads as
embedding, four blocks, norm, head, loss.
"""

import math
from dataclasses import replace

from tensorlab.graph.snapshot import Edge, Node


def box_id(call):
    """The id of the box that stands for module call number `call` (a number unique to that call)."""
    return f"m{call}"


def box_of(op, depth, expanded):
    """(box id, path, class name, level) of the box that `op` collapses into, or None if it stays visible."""
    for level, (path, cls, call) in enumerate(op.scope):
        if level == 0:
            continue  # the outermost module (the model itself) is the whole picture
        if (depth is None or level < depth) or path in expanded:
            continue
        return box_id(call), path, cls, level
    return None


def collapse(graph, depth=None, expanded=()):
    """(nodes, edges) of `graph` with module calls below `depth` (1: children of the model) as boxes."""
    if depth is None and not expanded:
        return list(graph.nodes), list(graph.edges)
    if depth is not None and depth < 1:
        raise ValueError(f"graph view: depth must be 1 or more (1: one box per child of the model), got {depth}")
    expanded = set(expanded)
    owner, boxes = {}, {}  # node id -> id of the node that shows it; box id -> [path, class, members, scope]
    for node in graph.ops():
        box = box_of(node, depth, expanded)
        if box is None:
            owner[node.id] = node.id
        else:
            box, path, cls, level = box
            boxes.setdefault(box, [path, cls, [], node.scope[: level + 1]])[2].append(node.id)
            owner[node.id] = box
    if not boxes:  # no module deep enough to close: the graph as it is, every tensor drawn
        return list(graph.nodes), list(graph.edges)
    producer, consumers = {}, {}
    for edge in graph.edges:
        if graph.by_id[edge.src].kind == "op":
            producer[edge.dst] = edge.src
        else:
            consumers.setdefault(edge.src, []).append(edge)

    hidden, elided = set(), set()
    for node in graph.tensors():
        around = {owner[n] for n in [producer.get(node.id)] + [e.dst for e in consumers.get(node.id, [])] if n}
        if node.role != "output" and len(around) == 1 and next(iter(around)) in boxes:
            hidden.add(node.id)
            boxes[next(iter(around))][2].append(node.id)
        elif node.role == "intermediate":
            elided.add(node.id)

    edges, seen = [], set()

    def add(src, dst, slot="", note="", tensor=None):
        if src != dst and (src, dst, slot) not in seen:
            seen.add((src, dst, slot))
            edges.append(Edge(src, dst, slot, note, tensor))

    for edge in graph.edges:
        src, dst = graph.by_id[edge.src], graph.by_id[edge.dst]
        if src.id in hidden or dst.id in hidden:
            continue
        if src.kind == "op" and dst.id in elided:
            note = f"{tuple(dst.shape)} {dst.dtype}"
            for onward in consumers.get(dst.id, []):
                slot = dst.label or (onward.slot if owner[onward.dst] not in boxes else "")
                add(owner[src.id], owner[onward.dst], slot, note, dst)
        elif src.id not in elided:
            into_box = owner.get(dst.id, dst.id) in boxes
            add(owner.get(src.id, src.id), owner.get(dst.id, dst.id), "" if into_box else edge.slot)

    nodes, placed = [], set()
    calls = {}  # path -> the ids of its boxes, in call order: a module called twice is "(call 1)", "(call 2)"
    for box in sorted(boxes, key=lambda b: int(b[1:])):
        calls.setdefault(boxes[box][0], []).append(box)
    for node in graph.nodes:
        if node.id in hidden or node.id in elided:
            continue
        shown = owner.get(node.id, node.id)
        if shown == node.id:
            nodes.append(replace(node))  # a copy: its depth changes in this view only
        elif shown not in placed:
            placed.add(shown)
            nodes.append(_module_node(graph, shown, *boxes[shown], calls))
    _set_depths(nodes, edges)
    return nodes, edges


def _module_node(graph, node_id, path, cls, members, scope, calls):
    ops = [m for m in members if graph.by_id[m].kind == "op"]
    params = [graph.by_id[m] for m in members if graph.by_id[m].role == "param"]
    elements = sum(math.prod(p.shape) for p in params)
    label = path if len(calls[path]) == 1 else f"{path} (call {calls[path].index(node_id) + 1})"
    doc = f"{len(ops)} ops, {len(params)} parameters ({elements:,} numbers) inside; in the HTML view, click to open it"
    settings = f"{cls}, {len(ops)} op" + ("s" if len(ops) != 1 else "")
    return Node(
        node_id,
        "module",
        "module",
        label=label,
        settings=settings,
        doc=doc,
        members=tuple(members),
        device=graph.by_id[ops[0]].device,
        scope=scope,
    )


def _set_depths(nodes, edges):
    """Each node's row: the longest path from it to a node that feeds nothing (those get 0)."""
    successors = {n.id: [] for n in nodes}
    waiting = {n.id: 0 for n in nodes}  # successors whose depth is not known yet
    for edge in edges:
        successors[edge.src].append(edge.dst)
        waiting[edge.src] += 1
    predecessors = {n.id: [] for n in nodes}
    for edge in edges:
        predecessors[edge.dst].append(edge.src)
    by_id = {n.id: n for n in nodes}
    ready = [n.id for n in nodes if waiting[n.id] == 0]
    done = 0
    while ready:
        node_id = ready.pop()
        done += 1
        by_id[node_id].depth = max((by_id[s].depth + 1 for s in successors[node_id]), default=0)
        for p in predecessors[node_id]:
            waiting[p] -= 1
            if waiting[p] == 0:
                ready.append(p)
    if done != len(nodes):
        raise RuntimeError(
            "graph view: collapsing modules into boxes made a cycle (a module's output fed "
            "back into the same call?); draw this graph at a greater depth"
        )
