"""The reference forward and gradients, stage by stage, from the engine's own autograd.

Each gradient case has a reference graph (in its exercise's folder): its forward written with tensorlab ops, with the
intermediate values a derivation goes through given names (attention: the weights P, the scores
S). Running the engine's backward through that graph with the student's gy gives the right
gradient of every named intermediate as well as of every input: the stages of the backward, in
the order a backward meets them. Nothing here is a hand-written backward; the checker compares
the student's variables with these numbers to say which step first goes wrong.
"""

from types import SimpleNamespace

import numpy as np

from tensorlab.tensor import Tensor, backward_observers


def _tensors(inputs):
    return [
        Tensor(np.array(x, dtype=np.float64) if x.dtype.kind == "f" else x, requires_grad=x.dtype.kind == "f")
        for x in inputs
    ]


def forward(graph, inputs, settings):
    """The graph's output on `inputs`, an array."""
    return graph(*_tensors(inputs), **settings)[0].data


def reference(graph, names, inputs, settings, draw_gy):
    """A namespace of everything a slip or a stage check needs, from one backward of `graph`.

    x[name]: the input arrays; settings; gy, the gradient handed backward (draw_gy(the output's shape));
    value[stage]: the forward's intermediates;
    grad[name]: the right gradient of every input and named stage; stages: the stage names
    in the order backward reaches them.
    """
    tensors = _tensors(inputs)
    output, named = graph(*tensors, **settings)
    gy = np.asarray(draw_gy(output.shape), dtype=np.float64)
    creators = {id(t.creator): (stage, t) for stage, t in named.items() if t.creator is not None}
    grads, reached = {}, []

    def observe(fn, output_grads, input_grads):
        if id(fn) in creators:
            stage, t = creators.pop(id(fn))
            grads[stage] = np.array(output_grads[t.output_index])
            reached.append(stage)

    backward_observers.append(observe)
    try:
        output.backward(gy)
    finally:
        backward_observers.remove(observe)
    for name, t in zip(names, tensors):
        if t.requires_grad:
            grads[name] = np.zeros(t.shape) if t.grad is None else t.grad
    return SimpleNamespace(
        x=dict(zip(names, inputs)),
        settings=settings,
        gy=gy,
        grad=grads,
        stages=reached,
        value={stage: t.data for stage, t in named.items()},
        y=output.data,
    )
