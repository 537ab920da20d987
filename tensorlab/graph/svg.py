"""Draw a captured graph as SVG, built as text (no external program).

Tensors are square boxes, ops rounded yellow boxes; arrows follow the data of the
forward pass (backward walks them in reverse). Each node carries a <title>, which
browsers show on hover. Colours are plain attributes, not CSS, so any SVG viewer or
converter draws them the same.
"""

from xml.sax.saxutils import escape

from tensorlab.graph.labels import STYLES, format_norm, node_lines, node_tooltip
from tensorlab.graph.layout import LINE_HEIGHT, PAD_Y, PORT_SPACING, layout
from tensorlab.graph.snapshot import tensor_grad_norm

EDGE_COLOR = "#6f6f6f"
FRAME_COLOR, FRAME_FILL, FRAME_PAD = "#6d28d9", "#faf8ff", 14  # pad: room for the frame's name
GRAD_COLOR = "#b4430e"
LABEL_CHAR_WIDTH = 6.0  # px per character of the argument labels (font-size 10)


def to_svg(graph, trace=None, frames=()):
    """The SVG document for `graph`; with a Trace, intermediate tensors show their gradient norm, and so do
    the arrows that stand for tensors between module boxes.

    `frames`: paths of open modules ("blocks.1", "blocks.1.attn") to outline, each around its ops
    and boxes; a click on a frame's name goes back to the view with that module closed.
    """
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
    ]
    out += _frames(graph, boxes, frames, width, height)
    out.append('<g class="edges">')
    out += _edges(graph, placed, incoming, trace)
    out.append("</g>")
    out.append('<g class="nodes">')
    for node in graph.nodes:
        out += _node(node, boxes[node.id], lines[node.id], norms.get(node.id))
    out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _frames(graph, boxes, frames, width, height):
    """A dashed outline, named, around the nodes of each open module; outer modules get the wider margin."""
    out = []
    for i, path in enumerate(frames):
        members = [boxes[n.id] for n in graph.nodes if n.kind != "tensor" and any(p == path for p, _, _ in n.scope)]
        if not members:
            continue
        pad = FRAME_PAD * (len(frames) - i)
        left = max(1.0, min(b.x - b.w / 2 for b in members) - pad)
        top = max(1.0, min(b.top for b in members) - pad)
        right = min(width - 1.0, max(b.x + b.w / 2 for b in members) + pad)
        bottom = min(height - 1.0, max(b.bottom for b in members) + pad)
        back = frames[i - 1] if i > 0 else ""
        out.append(
            f'<g class="frame" data-path="{escape(back)}"><title>{escape(path)}: click to close it</title>'
            f'<rect x="{left:.1f}" y="{top:.1f}" width="{right - left:.1f}" height="{bottom - top:.1f}" '
            f'rx="8" fill="{FRAME_FILL}" stroke="{FRAME_COLOR}" stroke-dasharray="5 3"/>'
            f'<text x="{left + 6:.1f}" y="{top + 10:.1f}" font-size="10" fill="{FRAME_COLOR}">'
            f"{escape(path)} &#x2715;</text></g>"
        )
    return out


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


def _edges(graph, placed, incoming, trace):
    """Arrows from the bottom of each source to the top of its target (an op's inputs land side by side).

    An edge that skips rows runs straight down through its lane in each of them. An arrow that stands
    for a tensor carries its id in data-tensor, for the HTML replay; given a Trace, its title says the norm
    of the tensor's gradient, and an arrow into or out of a module box shows it too (once per tensor and box).
    """
    boxes = placed.boxes
    index = {id(edge): i for i, edge in enumerate(graph.edges)}
    out, labelled = [], set()
    for dst, edges in incoming.items():
        box = boxes[dst]
        for i, edge in enumerate(edges):
            x2, y2 = box.x + placed.ports[index[id(edge)]], box.top
            waypoints = placed.waypoints.get(index[id(edge)], [])
            path = _route(boxes[edge.src], waypoints, x2, y2)
            ends = " -> ".join(node_lines(graph.by_id[end])[0] for end in (edge.src, edge.dst))
            title = ends + (f" (argument {edge.slot})" if edge.slot else "") + (f": {edge.note}" if edge.note else "")
            norm = tensor_grad_norm(edge.tensor, trace) if edge.tensor is not None else None
            title += f", grad {format_norm(norm)}" if norm is not None else ""
            tensor = f' data-tensor="{escape(edge.tensor.id)}"' if edge.tensor is not None else ""
            out.append(
                f'<path class="edge"{tensor} d="{path}" fill="none" stroke="{EDGE_COLOR}" stroke-width="1.2" '
                f'marker-end="url(#arrow)"><title>{escape(title)}</title></path>'
            )
            between_boxes = "module" in (graph.by_id[edge.src].kind, graph.by_id[edge.dst].kind)
            if norm is not None and between_boxes and (edge.src, edge.tensor.id) not in labelled:
                labelled.add((edge.src, edge.tensor.id))
                source, first = boxes[edge.src], waypoints[0] if waypoints else None  # halfway to the next row
                x = (source.x + (first.x if first else x2)) / 2
                y = (source.bottom + (first.top if first else y2)) / 2
                out.append(
                    f'<text class="edge-grad" x="{x + 4:.1f}" y="{y + 3:.1f}" font-size="10" '
                    f'fill="{GRAD_COLOR}">grad {format_norm(norm)}</text>'
                )
            if edge.slot:
                # Two inputs: labels face outwards (a on the left, b on the right); more: all to the right.
                left = len(edges) == 2 and i == 0
                x = x2 - 4 if left else x2 + 4
                out.append(
                    f'<text x="{x:.1f}" y="{y2 - 6:.1f}" font-size="10" fill="#555555" '
                    f'text-anchor="{"end" if left else "start"}">{escape(edge.slot)}</text>'
                )
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
    expand = f' data-path="{escape(node.scope[-1][0])}"' if node.kind == "module" else ""
    out = [
        f'<g class="node {node.kind} {node.role}" id="{node.id}"{expand}>',
        f"<title>{escape(node_tooltip(node, norm))}</title>",
        f'<rect x="{box.x - box.w / 2:.1f}" y="{box.top:.1f}" width="{box.w:.1f}" height="{box.h:.1f}" '
        f'rx="{radius}" fill="{fill}" stroke="{stroke}" stroke-width="{stroke_width}"/>',
    ]
    for i, line in enumerate(text_lines):
        baseline = box.top + PAD_Y + (i + 1) * LINE_HEIGHT - 4
        style = ""
        if i == 0 and (node.kind != "tensor" or node.label):
            style = ' font-weight="bold"'
        if line.startswith("grad "):
            style = f' fill="{GRAD_COLOR}"'
        elif i > 0 and node.kind != "tensor":
            style = ' fill="#6b5a1e" font-size="11"'
        out.append(f'<text x="{box.x:.1f}" y="{baseline:.1f}" text-anchor="middle"{style}>{escape(line)}</text>')
    out.append("</g>")
    return out
