"""Graph: a captured snapshot with ways to draw it (SVG, HTML, DOT, and files of those), at any depth.

snapshot.py holds the data, groups.py collapses modules into boxes, svg.py, html.py and
dot.py render; this class only ties them together, so none of them imports another's caller.
"""

from tensorlab.graph import dot, groups, html, svg
from tensorlab.graph.snapshot import Snapshot
from tensorlab.graph.snapshot import capture as capture_snapshot


class Graph(Snapshot):
    """The captured graph: `nodes` (outputs first), `edges`, and ways to draw them."""

    def collapsed(self, depth=None, expanded=()):
        """A view with each module call below `depth` as one box (1: one per child of the model); see groups.py."""
        return Graph(*groups.collapse(self, depth, expanded))

    def module_paths(self):
        """The name paths of the modules that made ops in this graph, in the order they ran."""
        paths = {}
        for op in reversed(self.ops()):
            for path, _, _ in op.scope[1:]:
                paths.setdefault(path, None)
        return list(paths)

    def to_svg(self, trace=None, depth=None):
        """The graph as a self-contained SVG document (a string), all ops shown or collapsed to `depth`."""
        return svg.to_svg(self.collapsed(depth), trace)

    def to_html(self, trace=None, title="tensorlab graph", depth=None):
        """An HTML page with a legend; a graph made by modules opens at `depth` (1) and a click opens a box."""
        return html.to_html(self, trace, title, depth)

    def to_dot(self, trace=None, depth=None):
        """Graphviz DOT text."""
        return dot.to_dot(self.collapsed(depth), trace)

    def render(self, path, trace=None, depth=None):
        """Write the graph to `path`; the extension picks the format: .svg, .html, .dot/.gv, .png, .pdf.

        `depth` draws module calls below it as boxes (.html: the depth the page opens at).
        """
        path = str(path)
        extension = path.rsplit(".", 1)[-1].lower() if "." in path else ""
        writers = {"svg": self.to_svg, "dot": self.to_dot, "gv": self.to_dot}
        if extension in writers:
            text = writers[extension](trace=trace, depth=depth)
        elif extension in ("html", "htm"):
            text = self.to_html(trace=trace, depth=depth)
        elif extension in dot.GRAPHVIZ_FORMATS:
            dot.run_dot(self.to_dot(trace, depth), path, extension)
            return path
        else:
            raise ValueError(
                f"render(): cannot tell the format of {path!r}; use a path ending in "
                f".svg, .html or .dot (or .png/.pdf with Graphviz installed)"
            )
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def _repr_svg_(self):
        """Jupyter shows the graph inline."""
        return self.to_svg()


def capture(outputs, names=None):
    """Snapshot the graph behind `outputs` (a Tensor or a sequence of them); call it before backward().

    `names` labels tensors: a dict {tensor: name} or {id(tensor): name}, a dict
    {name: tensor} such as dict(model.named_parameters()), or (name, tensor) pairs.
    A tensor with a string `.name` attribute is labelled with it too.
    """
    snapshot = capture_snapshot(outputs, names)
    return Graph(snapshot.nodes, snapshot.edges)
