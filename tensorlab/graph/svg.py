"""Draw a captured graph as SVG (built as text, no external program), and an HTML page around it.

Tensors are square boxes, ops rounded yellow boxes; arrows follow the data of the
forward pass (backward walks them in reverse). Each node carries a <title>, which
browsers show on hover. Colours are plain attributes, not CSS, so any SVG viewer or
converter draws them the same.
"""
from xml.sax.saxutils import escape

import numpy as np

from tensorlab.graph.snapshot import node_lines, node_tooltip
from tensorlab.graph.layout import LINE_HEIGHT, PAD_Y, PORT_SPACING, layout

# role: (fill, stroke, stroke width, corner radius)
STYLES = {
    "op": ("#fff4c2", "#b8901a", 1.2, 12),
    "param": ("#dbeafe", "#2f62a8", 1.4, 2),
    "constant": ("#eeeeee", "#8a8a8a", 1.0, 2),
    "intermediate": ("#ffffff", "#6b6b6b", 1.0, 2),
    "output": ("#dcfce7", "#23803d", 2.2, 2),
}
LEGEND = [
    ("op", "op (a Function); the second line shows its settings"),
    ("param", "parameter: a leaf that requires grad; 'grad' is the norm of .grad after backward"),
    ("constant", "input or constant: a leaf without grad"),
    ("intermediate", "intermediate tensor (its 'grad' needs a trace of the backward pass)"),
    ("output", "output (where backward starts)"),
]
EDGE_COLOR = "#6f6f6f"
GRAD_COLOR = "#b4430e"
LABEL_CHAR_WIDTH = 6.0 # px per character of the argument labels (font-size 10)


def to_svg(graph, trace=None):
    """The SVG document for `graph`; with a Trace, intermediate tensors show their gradient norm."""
    norms = graph.grad_norms(trace)
    lines = {n.id: node_lines(n, norms.get(n.id)) for n in graph.nodes}
    incoming = _incoming(graph)
    placed = layout(graph, lines, {dst: _port_spacing(edges) for dst, edges in incoming.items()})
    boxes, width, height = placed.boxes, placed.width, placed.height
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" '
        f'font-size="12">',
        "<title>tensorlab graph</title>",
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        f'orient="auto"><path d="M 0 0 L 10 5 L 0 10 z" fill="{EDGE_COLOR}"/></marker></defs>',
        f'<rect x="0" y="0" width="{width:.0f}" height="{height:.0f}" fill="#ffffff"/>',
        '<g class="edges">',
    ]
    out += _edges(graph, placed, incoming)
    out.append("</g>")
    out.append('<g class="nodes">')
    for node in graph.nodes:
        out += _node(node, boxes[node.id], lines[node.id], norms.get(node.id))
    out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _incoming(graph):
    """{node id: its incoming edges, in argument order}."""
    incoming = {}
    for edge in graph.edges:
        incoming.setdefault(edge.dst, []).append(edge)
    return incoming


def _port_spacing(edges):
    """Room between an op's arrow heads: labels of 3+ inputs all sit right of their arrow, so they need more."""
    if len(edges) < 3:
        return PORT_SPACING
    widest = max(len(e.slot) for e in edges[:-1]) * LABEL_CHAR_WIDTH
    return max(PORT_SPACING, widest + 16)


def _edges(graph, placed, incoming):
    """Arrows from the bottom of each source to the top of its target (an op's inputs land side by side).

    An edge that skips rows runs straight down through its lane in each of them.
    """
    boxes = placed.boxes
    index = {id(edge): i for i, edge in enumerate(graph.edges)}
    out = []
    for dst, edges in incoming.items():
        box = boxes[dst]
        for i, edge in enumerate(edges):
            x2, y2 = box.x + placed.ports[index[id(edge)]], box.top
            path = _route(boxes[edge.src], placed.waypoints.get(index[id(edge)], []), x2, y2)
            title = f"{edge.src} -> {edge.dst}" + (f" (argument {edge.slot})" if edge.slot else "")
            out.append(f'<path class="edge" d="{path}" fill="none" stroke="{EDGE_COLOR}" stroke-width="1.2" '
                       f'marker-end="url(#arrow)"><title>{escape(title)}</title></path>')
            if edge.slot:
                # Two inputs: labels face outwards (a on the left, b on the right); more: all to the right.
                left = len(edges) == 2 and i == 0
                x = x2 - 4 if left else x2 + 4
                out.append(f'<text x="{x:.1f}" y="{y2 - 6:.1f}" font-size="10" fill="#555555" '
                           f'text-anchor="{"end" if left else "start"}">{escape(edge.slot)}</text>')
    return out


def _route(source, waypoints, x2, y2):
    """SVG path data: S-curves between rows, straight lines through the rows a long edge passes."""
    x, y = source.x, source.bottom
    path = [f"M {x:.1f} {y:.1f}"]
    for point in waypoints + [None]:
        nx, ny = (x2, y2 - 1) if point is None else (point.x, point.top)
        bend = max((ny - y) / 2, 12)
        path.append(f"C {x:.1f} {y + bend:.1f} {nx:.1f} {ny - bend:.1f} {nx:.1f} {ny:.1f}")
        if point is not None:
            x, y = point.x, point.bottom
            path.append(f"L {x:.1f} {y:.1f}")
    return " ".join(path)


def _node(node, box, text_lines, norm):
    fill, stroke, stroke_width, radius = STYLES[node.role]
    out = [f'<g class="node {node.kind} {node.role}" id="{node.id}">',
           f"<title>{escape(node_tooltip(node, norm))}</title>",
           f'<rect x="{box.x - box.w / 2:.1f}" y="{box.top:.1f}" width="{box.w:.1f}" height="{box.h:.1f}" '
           f'rx="{radius}" fill="{fill}" stroke="{stroke}" stroke-width="{stroke_width}"/>']
    for i, line in enumerate(text_lines):
        baseline = box.top + PAD_Y + (i + 1) * LINE_HEIGHT - 4
        style = ""
        if i == 0 and (node.is_op or node.label):
            style = ' font-weight="bold"'
        if line.startswith("grad "):
            style = f' fill="{GRAD_COLOR}"'
        elif i > 0 and node.is_op:
            style = ' fill="#6b5a1e" font-size="11"'
        out.append(f'<text x="{box.x:.1f}" y="{baseline:.1f}" text-anchor="middle"{style}>{escape(line)}</text>')
    out.append("</g>")
    return out


def to_html(graph, trace=None, title="tensorlab graph"):
    """A standalone HTML page: a summary, the legend, and the SVG."""
    params = graph.params()
    elements = sum(int(np.prod(p.shape)) for p in params)
    summary = (f"{len(graph.ops())} ops, {len(graph.tensors())} tensors, "
               f"{len(params)} parameters ({elements:,} elements)")
    legend = []
    for role, meaning in LEGEND:
        fill, stroke, _, radius = STYLES[role]
        legend.append(f'<li><span class="swatch" style="background:{fill};border-color:{stroke};'
                      f'border-radius:{min(radius, 7)}px"></span>{escape(meaning)}</li>')
    legend.append('<li><span class="arrow">&#8594;</span>arrows follow the forward pass; '
                  "backward walks them in reverse. Hover a node for details.</li>")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{escape(title)}</title>
<style>
  body {{ font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }}
  h1 {{ font-size: 1.3em; margin: 0 0 0.2em; }}
  .summary {{ color: #555; margin-bottom: 0.8em; }}
  ul.legend {{ list-style: none; padding: 0; margin: 0 0 1em; font-size: 0.9em; }}
  ul.legend li {{ margin: 0.2em 0; display: flex; align-items: center; }}
  .swatch {{ display: inline-block; width: 1.6em; height: 1em; border: 1.5px solid; margin-right: 0.6em; }}
  .arrow {{ display: inline-block; width: 1.6em; margin-right: 0.6em; text-align: center; }}
  .graph {{ overflow: auto; border: 1px solid #ddd; }}
</style>
</head>
<body>
<h1>{escape(title)}</h1>
<div class="summary">{escape(summary)}</div>
<ul class="legend">
{chr(10).join(legend)}
</ul>
<div class="graph">
{to_svg(graph, trace)}</div>
</body>
</html>
"""
