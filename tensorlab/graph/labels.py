"""What each node of a captured graph says (text lines, hover text) and its colours.

Shared by the SVG and DOT writers, so both draw the same thing.
"""

import numpy as np

# role: (fill, stroke, stroke width, corner radius)
STYLES = {
    "op": ("#fff4c2", "#b8901a", 1.2, 12),
    "param": ("#dbeafe", "#2f62a8", 1.4, 2),
    "input": ("#eeeeee", "#8a8a8a", 1.0, 2),
    "constant": ("#f6f1e4", "#a08f6a", 1.0, 2),
    "intermediate": ("#ffffff", "#6b6b6b", 1.0, 2),
    "output": ("#dcfce7", "#23803d", 2.2, 2),
    "module": ("#ede9fe", "#6d28d9", 1.8, 6),
}


def format_shape(shape):
    return str(tuple(shape))


def format_norm(norm):
    """How gradient norms print everywhere: 4 significant digits."""
    return f"{norm:.4g}"


def node_lines(node, norm=None):
    """The text lines drawn inside a node (shared by the SVG and DOT writers)."""
    if node.kind in ("op", "module"):
        return [node.label] + ([node.settings] if node.settings else [])
    unnamed = {"param": "param", "output": "output", "intermediate": "", "input": "input", "constant": "constant"}
    title = node.label or node.value or unnamed[node.role]
    if node.label and node.value:
        title = f"{node.label} = {node.value}"
    elif node.label and node.role == "constant":
        title = f"{node.label} (constant)"
    lines = [title] if title else []
    lines.append(f"{format_shape(node.shape)} {node.dtype}")
    if norm is not None:
        lines.append(f"grad {format_norm(norm)}")
    return lines


def node_tooltip(node, norm=None):
    """The longer text shown on hover."""
    if node.is_op:
        text = f"{node.label}({node.settings})" if node.settings else node.label
        return text + (f"\n{node.doc}" if node.doc else "") + f"\ndevice: {node.device}"
    if node.kind == "module":
        return f"{node.label}: {node.settings}\n{node.doc}"
    kind = {
        "param": "leaf, requires grad",
        "input": "input (data passed in), no grad",
        "constant": "constant (made by the code), no grad",
        "intermediate": "intermediate result",
        "output": "output",
    }[node.role]
    size = int(np.prod(node.shape)) if node.shape else 1
    text = (
        f"{node.label or 'tensor'}: {kind}\nshape {format_shape(node.shape)}, {size} elements, "
        f"{node.dtype}, {node.device}"
    )
    if norm is not None:
        text += f"\n|grad| = {format_norm(norm)}"
    elif node.role == "param":
        text += "\ngrad: none yet (run backward)"
    return text
