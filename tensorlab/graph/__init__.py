"""See the graph: draw the ops and tensors behind a result, and trace a backward pass.

backward() releases the graph as it goes (each Function drops its inputs), so take a
snapshot first, then run backward, then draw: the parameters' gradient norms appear.

    import tensorlab.graph as tg

    logits = model(x)
    loss = F.cross_entropy(logits, y)
    g = tg.capture(loss, names=dict(model.named_parameters()))   # before backward
    with tg.trace() as t:                                         # optional: watch backward
        loss.backward()
    print(t)                             # the Functions in the order backward ran them, and
                                         # every implicit broadcast reduction
    g.render("graph.html")               # SVG + legend; 'grad' norms on the parameters
    g.render("graph.svg", trace=t)       # ... and on every intermediate tensor too
    g.render("graph.dot")                # Graphviz text; .png/.pdf need Graphviz's `dot`

`render(loss, "graph.svg")` captures and draws in one call (before backward, or
after backward(retain_graph=True)). In Jupyter a Graph shows itself inline.

Names: `names` accepts {tensor: name}, {id(tensor): name}, {name: tensor} (such as
dict(model.named_parameters())) or (name, tensor) pairs; a tensor with a string
`.name` attribute is labelled with it. Unnamed tensors show their role and shape.
"""
from tensorlab.graph.snapshot import Edge, Graph, Node, capture
from tensorlab.graph.dot import GraphvizNotFoundError
from tensorlab.graph.tracer import Trace, trace

__all__ = ["capture", "render", "trace", "Graph", "Node", "Edge", "Trace", "GraphvizNotFoundError"]


def render(outputs, path, names=None, trace=None):
    """Capture the graph behind `outputs` (or take a Graph) and write it to `path` (.svg .html .dot .png .pdf)."""
    graph = outputs if isinstance(outputs, Graph) else capture(outputs, names=names)
    return graph.render(path, trace=trace)
