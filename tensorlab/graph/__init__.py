"""See the graph: draw the ops and tensors behind a result, and trace a backward pass.

backward() releases the graph as it goes (each Function drops its inputs), so take a
snapshot first, then run backward, then draw: the parameters' gradient norms appear.

    import tensorlab.graph as tg

    with tg.record():                    # optional: ops remember their modules
        logits = model(x)
    loss = F.cross_entropy(logits, y)
    g = tg.capture(loss, names=dict(model.named_parameters()))   # before backward
    with tg.trace() as t:                                         # optional: watch backward
        loss.backward()
    print(t)                             # the Functions in the order backward ran them, and
                                         # every implicit broadcast reduction
                                         # (trace(values=True): small gradients' values too)
    g.render("graph.html")               # SVG + legend; 'grad' norms on the parameters
    g.render("graph.html", trace=t)      # ... and a replay of backward: step, back, play
    g.render("graph.svg", trace=t)       # 'grad' norms on every intermediate tensor too
    g.render("graph.dot")                # Graphviz text; .png/.pdf need Graphviz's `dot`
    g.render("graph.svg", depth=1)       # each module the model calls as one box

Ops made inside `tg.record()` remember the name paths of the Modules running ("blocks.1.attn"):
the HTML page of a model opens with one box per block and a click on a box opens it, and
`depth=` draws an SVG or DOT with the modules below that depth collapsed (groups.py).

`render(loss, "graph.svg")` captures and draws in one call (before backward, or
after backward(retain_graph=True)). In Jupyter a Graph shows itself inline.

Names: `names` accepts {tensor: name}, {id(tensor): name}, {name: tensor} (such as
dict(model.named_parameters())) or (name, tensor) pairs; a tensor with a string
`.name` attribute is labelled with it. Unnamed tensors show their role and shape.
"""

from tensorlab.graph.dot import GraphvizNotFoundError
from tensorlab.graph.scopes import record
from tensorlab.graph.snapshot import Edge, Node
from tensorlab.graph.tracer import Trace, trace
from tensorlab.graph.view import Graph, capture

__all__ = ["capture", "record", "render", "trace", "Graph", "Node", "Edge", "Trace", "GraphvizNotFoundError"]


def render(outputs, path, names=None, trace=None, depth=None):
    """Capture the graph behind `outputs` (or take a Graph) and write it to `path` (.svg .html .dot .png .pdf)."""
    graph = outputs if isinstance(outputs, Graph) else capture(outputs, names=names)
    return graph.render(path, trace=trace, depth=depth)
