"""Exercise `topo` (engine track 2 of 4): the order of the backward walk.

backward visits the graph from the loss down. A node's gradient is complete only once every
node that uses it has added its share, so each node must come after all of its consumers in
the walk; equivalently, in a topological order (the walk reversed) every node comes after all
of its `parents` (the nodes it was computed from). A node reachable along two paths appears once.

Your task: write `topological_order(root)`: a list of every node `root` depends on, root
included, each after all of its parents. A node has `.parents` (a tuple of nodes) and `.name` (a
label, which two nodes may share).
Graphs can be deep (thousands of nodes in a chain): Python's recursion stops at about 1000
calls, so keep your own stack.

Check it:  python -m tensorlab.exercises check topo THIS_FILE.py
"""


def topological_order(root):
    """Every node reachable from `root` through .parents, each after all of its parents; root last."""
    # TODO
    raise NotImplementedError("topological_order: return the list of nodes, parents first")
