"""mul: y = a * b with broadcasting: sum the gradient over the broadcast axes."""

from tensorlab.exercises.check import Exercise
from tensorlab.exercises.gradient import Case, no_settings
from tensorlab.exercises.inputs import BROADCAST_PAIRS, drawn_pair, inputs, with_zeros


def graph(a, b):
    return a * b, {}


EXERCISE = Exercise(
    "mul",
    "y = a * b with broadcasting: sum the gradient over the broadcast axes",
    [Case("Mul", ("a", "b"), inputs(a, b), graph) for a, b in [*BROADCAST_PAIRS, (with_zeros(3, 4), with_zeros(3, 4))]]
    + [Case("Mul", ("a", "b"), drawn_pair, graph, draw=no_settings)],
)
