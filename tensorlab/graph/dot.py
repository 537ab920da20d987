"""Graphviz DOT text for a captured graph, and running `dot` for .png/.pdf when it is installed.

The DOT text needs nothing to produce; `dot -Tpng graph.dot -o graph.png` (or any
Graphviz viewer) turns it into a picture with Graphviz's own layout.
"""

import shutil
import subprocess

from tensorlab.graph.labels import STYLES, node_lines, node_tooltip

GRAPHVIZ_FORMATS = ("png", "pdf")


class GraphvizNotFoundError(RuntimeError):
    """Rendering to .png/.pdf needs Graphviz's `dot` program, and it is not on PATH."""


def to_dot(graph, trace=None):
    """The graph as a DOT digraph: one statement per node, one `a -> b` per edge."""
    norms = graph.grad_norms(trace)
    out = [
        "digraph tensorlab {",
        "  rankdir=TB;",
        '  node [fontname="monospace", fontsize=10, style=filled];',
        '  edge [color="#6f6f6f", fontsize=9, fontcolor="#555555"];',
    ]
    for node in graph.nodes:
        fill, stroke, width, _ = STYLES[node.role]
        shape = 'shape=box, style="rounded,filled"' if node.kind != "tensor" else "shape=box"
        label = "\\n".join(_quote(line) for line in node_lines(node, norms.get(node.id)))
        tooltip = _quote(node_tooltip(node, norms.get(node.id))).replace("\n", "\\n")
        out.append(
            f'  {node.id} [{shape}, label="{label}", tooltip="{tooltip}", '
            f'fillcolor="{fill}", color="{stroke}", penwidth={width}];'
        )
    for edge in graph.edges:
        label = f' [label="{_quote(edge.slot)}"]' if edge.slot else ""
        out.append(f"  {edge.src} -> {edge.dst}{label};")
    out.append("}")
    return "\n".join(out) + "\n"


def _quote(text):
    """Escape text for a double-quoted DOT string."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def run_dot(dot_text, path, extension):
    """Have Graphviz lay out `dot_text` and write `path` as .png or .pdf."""
    program = shutil.which("dot")
    if program is None:
        raise GraphvizNotFoundError(
            f"rendering to .{extension} needs Graphviz's `dot` program, which is not on PATH. "
            f"Install Graphviz (apt install graphviz, brew install graphviz, conda install graphviz), "
            f"or render to .svg or .html instead: those need nothing else"
        )
    result = subprocess.run(
        [program, f"-T{extension}", "-o", path], input=dot_text.encode("utf-8"), capture_output=True
    )
    if result.returncode != 0:
        raise RuntimeError(f"dot failed writing {path}: {result.stderr.decode(errors='replace').strip()}")
