"""Reference solution for exercise `topo`: a topological order, iteratively."""


def topological_order(root):
    """Every node reachable from `root` through .parents, each after all of its parents; root last."""
    order, visited, stack = [], set(), [(root, False)]
    while stack:
        node, parents_done = stack.pop()
        if parents_done:                     # all its parents are in `order` already
            order.append(node)
        elif id(node) not in visited:
            visited.add(id(node))
            stack.append((node, True))
            stack.extend((p, False) for p in node.parents if id(p) not in visited)
    return order
