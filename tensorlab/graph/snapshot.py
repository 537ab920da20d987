"""A snapshot of the graph behind some tensors: nodes, edges, and what to print on each.

`capture(loss)` walks from `loss` back through `.creator` and `.inputs` and records
one node per Function (an op) and one per tensor (leaves and intermediates), with
each tensor's shape and dtype and each op's name and non-default settings. It keeps
no array alive except the leaves that require grad (so their `.grad` can be read
after backward); ops are held through weak references, which lets a `Trace` of the
backward pass put the gradient norm on every intermediate tensor too.

Nodes get a depth: the length of the longest path from them to an output (the
outputs have depth 0). The layout draws one layer per depth.
"""

import functools
import inspect
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from tensorlab import backend
from tensorlab.tensor import Tensor, topological_order


@dataclass
class Node:
    """One op or one tensor of the graph."""

    id: str  # "f3" for ops, "t7" for tensors, "m5" for modules (call 5); unique in the graph, never shown
    kind: str  # "op", "tensor", or "module" (a collapsed module, see groups.py)
    role: str  # op | param | input | constant | intermediate | output | module (see leaf_role)
    label: str  # op: the Function's class name; tensor: the user's name, or "" if none
    shape: tuple = None  # tensors only
    dtype: str = None  # tensors only
    device: str = "cpu"
    settings: str = ""  # ops: non-default constructor arguments, e.g. "axis=1"
    doc: str = ""  # ops: the first line of the Function's docstring
    value: str = ""  # one-element constants: their value, e.g. "2.0"
    depth: int = 0
    leaf: Tensor = field(default=None, repr=False)  # params: read .grad from it at render time
    creator: object = field(default=None, repr=False)  # intermediates/outputs: weakref to the Function
    output_index: int = 0
    fn: object = field(default=None, repr=False)  # ops: weakref to the Function
    scope: tuple = ()  # ops: the Modules running when it was made, outermost first: (path, class, call)
    members: tuple = ()  # modules: the ids of the nodes collapsed into it

    @property
    def is_op(self):
        return self.kind == "op"


@dataclass
class Edge:
    """Data flowing from `src` to `dst`: tensor -> op (an input) or op -> tensor (an output)."""

    src: str
    dst: str
    slot: str = ""  # tensor -> op: the op's argument name (a, b, logits, ...) when it has several
    note: str = ""  # collapsed views: the shape and dtype of the tensor this arrow stands for
    tensor: Node = field(default=None, repr=False)  # collapsed views: the tensor node this arrow stands for


class Snapshot:
    """The captured graph as data: `nodes` (outputs first) and `edges`; tensorlab.graph.view draws it."""

    def __init__(self, nodes, edges):
        self.nodes = nodes
        self.edges = edges
        self.by_id = {n.id: n for n in nodes}

    def ops(self):
        return [n for n in self.nodes if n.kind == "op"]

    def tensors(self):
        return [n for n in self.nodes if n.kind == "tensor"]

    def modules(self):
        """The collapsed-module boxes (only in a view made by tensorlab.graph.groups.collapse)."""
        return [n for n in self.nodes if n.kind == "module"]

    def params(self):
        return [n for n in self.nodes if n.role == "param"]

    def grad_norms(self, trace=None):
        """{node id: gradient norm}: params whose .grad is set, and, given a Trace, every tensor it saw."""
        norms = {node.id: tensor_grad_norm(node, trace) for node in self.tensors()}
        return {node_id: norm for node_id, norm in norms.items() if norm is not None}

    def __repr__(self):
        boxes = f", {len(self.modules())} module boxes" if self.modules() else ""
        return (
            f"{type(self).__name__}({len(self.ops())} ops, {len(self.tensors())} tensors, "
            f"{len(self.params())} parameters{boxes})"
        )


def capture(outputs, names=None):
    """Snapshot the graph behind `outputs` (a Tensor or a sequence of them); call it before backward().

    `names` labels tensors: a dict {tensor: name} or {id(tensor): name}, a dict
    {name: tensor} such as dict(model.named_parameters()), or (name, tensor) pairs.
    A tensor with a string `.name` attribute is labelled with it too.
    """
    roots = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    table = name_table(names)
    nodes, edges = [], []
    tensor_nodes = {}  # id(tensor) -> Node; `seen` keeps those tensors alive until we are done
    seen = []
    outputs_of = {}  # id(fn) -> the tensor nodes it produced that are used in the graph

    def tensor_node(t, role=None):
        node = tensor_nodes.get(id(t))
        if node is None:
            node = _make_tensor_node(f"t{len(seen)}", t, role, table)
            tensor_nodes[id(t)] = node
            seen.append(t)
            nodes.append(node)
            if t.creator is not None:
                outputs_of.setdefault(id(t.creator), []).append(node)
        return node

    for root in roots:
        tensor_node(root, "output" if root.creator is not None else None)

    order = _functions_in_order([r.creator for r in roots if r.creator is not None])
    for i, fn in enumerate(reversed(order)):  # every consumer before the Function feeding it
        produced = outputs_of.get(id(fn), [])
        op = _make_op_node(f"f{i}", fn, depth=max(n.depth for n in produced) + 1)
        nodes.append(op)
        edges.extend(Edge(op.id, n.id) for n in produced)
        slots = input_names(fn, len(fn.inputs))
        for slot, t in zip(slots, fn.inputs):
            node = tensor_node(t)
            node.depth = max(node.depth, op.depth + 1)
            edges.append(Edge(node.id, op.id, slot if len(fn.inputs) > 1 else ""))
    return Snapshot(nodes, edges)


def _functions_in_order(creators):
    """The Functions behind several outputs, each after those it takes input from."""
    order, placed = [], set()
    for creator in creators:
        try:
            fns = topological_order(creator)
        except RuntimeError:
            raise RuntimeError(
                "capture(): the graph behind this tensor was already released by backward(); call "
                "capture() before backward(), or run backward(retain_graph=True)"
            ) from None
        for fn in fns:
            if fn not in placed:
                placed.add(fn)
                order.append(fn)
    return order


def tensor_grad_norm(node, trace=None):
    """The gradient norm of a tensor node: a parameter's .grad, else what `trace` saw reach it; None if unknown."""
    if node.leaf is not None and node.leaf.grad is not None:
        return grad_norm(node.leaf.grad)
    if trace is not None and node.creator is not None:
        return trace.output_grad_norm(node.creator(), node.output_index)
    return None


def leaf_role(t):
    """A leaf's role: param (requires grad), constant or input (neither takes a gradient).

    A constant is what the code made for itself: a tensor marked `t.constant = True` where it is made
    (the causal mask, the RoPE and sinusoid tables), or a single number (a Python number in an
    expression becomes one). Any other leaf without grad is data passed in: token ids, targets, x.
    """
    if t.requires_grad:
        return "param"
    return "constant" if getattr(t, "constant", False) is True or t.size == 1 else "input"


def _make_tensor_node(node_id, t, role, table):
    if role is None:
        role = "intermediate" if t.creator is not None else leaf_role(t)
    node = Node(
        node_id, "tensor", role, label=name_of(t, table), shape=tuple(t.shape), dtype=str(t.dtype), device=t.device
    )
    if role == "param":
        node.leaf = t
    if role == "constant" and t.size == 1:
        node.value = _short(t.data.reshape(()).item())
    if t.creator is not None:
        node.creator, node.output_index = weakref.ref(t.creator), t.output_index
    return node


def _make_op_node(node_id, fn, depth):
    doc = (type(fn).__doc__ or "").strip().splitlines()
    return Node(
        node_id,
        "op",
        "op",
        label=type(fn).__name__,
        settings=op_settings(fn),
        doc=doc[0] if doc else "",
        depth=depth,
        fn=weakref.ref(fn),
        scope=getattr(fn, "scope", ()),
        device=fn.inputs[0].device if fn.inputs else "cpu",
    )


# ----- names ------------------------------------------------------------------------------------
def name_table(names):
    """{id(tensor): name} from any of the forms `capture` accepts."""
    table = {}
    if names is None:
        return table
    for key, value in names.items() if isinstance(names, Mapping) else names:
        if isinstance(key, str) and not isinstance(value, str):  # {name: tensor}, named_parameters()
            key, value = value, key
        table[key if isinstance(key, int) else id(key)] = str(value)
    return table


def name_of(t, table):
    """The user's name for tensor `t`, or ""."""
    name = table.get(id(t))
    if name is None:
        name = getattr(t, "name", None)
    return name if isinstance(name, str) else ""


@functools.cache
def _forward_parameters(cls):
    params = list(inspect.signature(cls.forward).parameters.values())[1:]  # drop self
    return tuple((p.name, p.kind == p.VAR_POSITIONAL) for p in params)


def input_names(fn, count):
    """The names of fn.forward's arguments (a, b / logits, targets / xs[0], xs[1], ...)."""
    names = []
    for name, variadic in _forward_parameters(type(fn)):
        if variadic:
            names.extend(f"{name}[{i}]" for i in range(count - len(names)))
            break
        names.append(name)
    names.extend(f"input {i}" for i in range(len(names), count))
    return names[:count]


# ----- how things print -------------------------------------------------------------------------
def op_settings(fn):
    """The constructor arguments of `fn` that differ from their defaults, e.g. 'axis=1, keepdims=True'."""
    try:
        params = list(inspect.signature(type(fn).__init__).parameters.values())[1:]
    except (TypeError, ValueError):
        return ""
    shown = []
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name not in fn.__dict__:
            continue
        value = fn.__dict__[p.name]
        if p.default is not p.empty and _same(value, p.default):
            continue
        shown.append(f"{p.name}={_short(value)}")
    return ", ".join(shown)


def _same(value, default):
    try:
        return bool(value == default) and type(value) is type(default)
    except Exception:  # arrays compare elementwise
        return False


def _short(value, limit=24):
    """A compact text for a setting or a scalar: slices as a:b, arrays by shape, long reprs cut."""
    if isinstance(value, slice):
        text = ":".join("" if v is None else str(v) for v in (value.start, value.stop, value.step))
        text = text[:-1] if text.endswith(":") and value.step is None else text
    elif value is Ellipsis:
        text = "..."
    elif isinstance(value, tuple):
        text = "(" + ", ".join(_short(v, limit) for v in value) + ("," if len(value) == 1 else "") + ")"
    elif hasattr(value, "shape") and hasattr(value, "dtype") and getattr(value, "ndim", 0) > 0:
        text = f"<{value.dtype} array {tuple(value.shape)}>"
    elif isinstance(value, float) or (hasattr(value, "dtype") and getattr(value, "ndim", 1) == 0):
        text = f"{float(value):.4g}" if not isinstance(value, (bool, np.bool_)) else str(value)
    else:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def grad_norm(grad):
    """The 2-norm of a gradient array (all elements), as a Python float."""
    return float(backend.array_module(grad).linalg.norm(grad.ravel()))
