"""A text trace of a backward pass: which Functions ran, in order, and what gradients they made.

    with tensorlab.graph.trace() as t:
        loss.backward()
    print(t)

lists every Function in the order backward ran it (the output's creator first),
the shape and norm of the gradient it received and of each gradient it returned,
and every implicit broadcast reduction, e.g.

    Add: grad of b summed over axes (0, 1), (4, 5, 3) -> (3,)

which says: b of shape (3,) was broadcast to (4, 5, 3) in forward, so its gradient
is the upstream (4, 5, 3) gradient summed over axes 0 and 1. `trace(values=True)`
prints the values of the small gradients (at most 16 elements) under each step. Every gradient also
leaves a heatmap (a few of its rows and columns, see replay.py) for the HTML view's replay. The
trace observes backward through `tensorlab.tensor.backward_observers`; it costs nothing when unused.
"""

import contextlib
from dataclasses import dataclass, field

import numpy as np

from tensorlab import backend
from tensorlab.graph.labels import format_norm, format_shape
from tensorlab.graph.replay import Heatmap
from tensorlab.graph.snapshot import grad_norm, input_names, name_of, name_table
from tensorlab.ops.broadcast import broadcast_axes
from tensorlab.ops.matmul import MatMul
from tensorlab.tensor import backward_observers

# Ops that are not elementwise but still broadcast some arguments over their output
# (a fused Linear adds its bias to every row): {op class name: argument names}.
BROADCAST_ARGUMENTS = {"Linear": ("bias",)}
LINE_WIDTH = 110  # a step longer than this lists its inputs one per line
SMALL = 16  # trace(values=True) prints the gradients with at most this many elements


@dataclass
class InputGrad:
    """The gradient one Function returned for one of its inputs."""

    name: str  # the user's name for the tensor, else the op's argument name (a, b, x, ...)
    argument: str  # the op's argument name
    shape: tuple
    norm: float = None  # None: no gradient for this input (e.g. integer targets)
    is_leaf: bool = False  # the gradient goes into .grad of a leaf
    summed_axes: tuple = ()  # broadcast axes its gradient was summed over (empty: none)
    summed_from: tuple = None  # the shape the gradient had before that sum
    batch: bool = False  # the summed axes are a matmul's batch axes
    values: object = None  # trace(values=True): a NumPy copy of a small gradient
    heatmap: Heatmap = None  # a few of its rows and columns, for the HTML replay


@dataclass
class Step:
    """One Function's backward, as the walk ran it."""

    op: str
    fn: object = field(repr=False)  # the Function itself (released after backward, so tiny)
    output_grads: list = field(default_factory=list)  # [(shape, norm)], one per output
    inputs: list = field(default_factory=list)  # [InputGrad], one per input
    output_values: list = field(default_factory=list)  # trace(values=True): small output gradients, or None
    output_heatmaps: list = field(default_factory=list)  # [Heatmap], one per output, for the HTML replay

    def value_lines(self):
        """`grad in = [...]` and `-> name = [...]` for each gradient that was small enough to keep."""
        lines = [_array_text("grad in = ", v) for v in self.output_values if v is not None]
        lines += [_array_text(f"-> {i.name} = ", i.values) for i in self.inputs if i.values is not None]
        return lines

    def broadcast_lines(self):
        lines = []
        for i in self.inputs:
            if i.summed_axes:
                where = "batch axes" if i.batch else "axes"
                lines.append(
                    f"{self.op}: grad of {i.name} summed over {where} {i.summed_axes}, "
                    f"{format_shape(i.summed_from)} -> {format_shape(i.shape)}"
                )
        return lines


class Trace:
    """The steps of the backward passes run while it was observing (see `trace()`)."""

    def __init__(self, names=None, values=False):
        self.steps = []
        self.values = values
        self._names = name_table(names)
        self._by_fn = {}  # id(fn) -> Step; the Step holds fn, so the id stays unique

    def __call__(self, fn, output_grads, input_grads):
        """The observer that Tensor.backward calls after each Function's backward."""
        step = Step(type(fn).__name__, fn, [(tuple(g.shape), grad_norm(g)) for g in output_grads])
        step.output_heatmaps = [Heatmap.of(g) for g in output_grads]
        if self.values:
            step.output_values = [_small_copy(g) for g in output_grads]
        arguments = input_names(fn, len(fn.inputs))
        out_shape = tuple(output_grads[0].shape) if output_grads else ()
        shapes = [tuple(t.shape) for t in fn.inputs]
        for argument, t, gx in zip(arguments, fn.inputs, input_grads):
            record = InputGrad(name_of(t, self._names) or argument, argument, tuple(t.shape), is_leaf=t.creator is None)
            if gx is not None and t.requires_grad:
                record.norm = grad_norm(gx)
                record.heatmap = Heatmap.of(gx)
                record.values = _small_copy(gx) if self.values else None
                _name_reduction(record, fn, shapes, out_shape)
            step.inputs.append(record)
        self.steps.append(step)
        self._by_fn[id(fn)] = step

    @property
    def ops(self):
        """The op names in the order backward ran them."""
        return [s.op for s in self.steps]

    def broadcast_lines(self):
        return [line for s in self.steps for line in s.broadcast_lines()]

    def output_grad_norm(self, fn, index=0):
        """The norm of the gradient that reached output `index` of Function `fn`, or None if not seen."""
        step = self._by_fn.get(id(fn)) if fn is not None else None
        if step is None or step.fn is not fn:
            return None
        return step.output_grads[index][1]

    def __len__(self):
        return len(self.steps)

    def __str__(self):
        if not self.steps:
            return "backward trace: no Function ran (was backward() called inside the block?)"
        width = max(len(s.op) for s in self.steps)
        digits = len(str(len(self.steps)))
        lines = [f"backward trace: {len(self.steps)} Functions, in the order backward ran them"]
        for n, step in enumerate(self.steps, 1):
            received = ", ".join(f"{format_shape(shape)} {format_norm(norm)}" for shape, norm in step.output_grads)
            sent = [_describe_input(i) for i in step.inputs if i.norm is not None] or ["nothing"]
            head = f"{n:>{digits}}. {step.op:<{width}}  grad in {received}  ->  "
            indent = " " * (digits + 6)
            if len(head) + len(", ".join(sent)) <= LINE_WIDTH:
                lines.append(head + ", ".join(sent))
            else:  # one input per line
                lines.append(head.rstrip(" ->"))
                lines.extend(f"{indent}-> {text}" for text in sent)
            lines.extend(indent + line for line in step.broadcast_lines())
            for line in step.value_lines():
                lines.extend(indent + part for part in line.splitlines())
        return "\n".join(lines)

    def __repr__(self):
        return f"<Trace of {len(self.steps)} backward steps>"

    def _repr_pretty_(self, printer, cycle):
        """A trace left at the end of a notebook cell (IPython, Jupyter) shows what print(trace) shows; repr()
        stays one line, for a debugger's variable pane and a list's repr (a model's trace runs to dozens of lines)."""
        printer.text(repr(self) if cycle else str(self))


def _small_copy(grad):
    """A NumPy copy of a gradient of at most SMALL elements, else None."""
    if grad.size > SMALL:
        return None
    return np.array(backend.to_device(grad, "cpu"), copy=True)


def _array_text(head, values):
    """`head` and a gradient's values to 4 decimals, rows on their own lines, aligned under the first."""
    return head + np.array2string(values, precision=4, separator=", ", prefix=head)


def _describe_input(record):
    leaf = " (leaf)" if record.is_leaf else ""
    return f"{record.name}{leaf} {format_shape(record.shape)} {format_norm(record.norm)}"


def _name_reduction(record, fn, shapes, out_shape):
    """Fill in the broadcast axes the gradient of this input was summed over, if any.

    An op whose output has the broadcast shape of its inputs is elementwise under
    broadcasting (add, mul, where, the weight of a norm, ...): a smaller input was
    repeated along `broadcast_axes`, so its gradient is summed over them. A matmul
    broadcasts only its batch axes (all but the last two); the ops listed in
    BROADCAST_ARGUMENTS broadcast the arguments named there.
    """
    if isinstance(fn, MatMul):
        if len(record.shape) < 2 or len(out_shape) < 2:
            return
        batch = out_shape[:-2]
        axes = broadcast_axes(batch, record.shape[:-2]) if _broadcasts_to(record.shape[:-2], batch) else ()
        if axes:
            record.summed_axes, record.summed_from, record.batch = axes, batch + record.shape[-2:], True
        return
    try:
        elementwise = np.broadcast_shapes(*shapes) == out_shape
    except ValueError:
        elementwise = False
    elementwise = elementwise or record.argument in BROADCAST_ARGUMENTS.get(type(fn).__name__, ())
    if elementwise and record.shape != out_shape and _broadcasts_to(record.shape, out_shape):
        axes = broadcast_axes(out_shape, record.shape)
        if any(out_shape[a] != 1 for a in axes):  # summing size-1 axes is only a reshape
            record.summed_axes, record.summed_from = axes, out_shape


def _broadcasts_to(shape, target):
    try:
        return np.broadcast_shapes(shape, target) == tuple(target)
    except ValueError:
        return False


@contextlib.contextmanager
def trace(names=None, values=False):
    """Record every backward pass run inside the block; yields the Trace. `names` as in capture().

    values=True also keeps and prints every gradient of at most SMALL (16) elements.
    """
    observer = Trace(names, values)
    backward_observers.append(observer)
    try:
        yield observer
    finally:
        backward_observers.remove(observer)
