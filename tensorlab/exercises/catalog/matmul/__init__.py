"""matmul: y = a @ b for matrices: which factor is transposed, and where."""

from tensorlab.exercises.check import Exercise
from tensorlab.exercises.gradient import Case
from tensorlab.exercises.inputs import inputs, normal
from tensorlab.exercises.slips import Slip, attempt


def graph(a, b):
    return a @ b, {}


MATMUL = [
    Slip(
        "b_not_transposed",
        "In ga you multiply gy by b where its transpose belongs: y = a b, so ga = gy b^T "
        "(the square shape hid the slip; with b of shape (k, m), gy b would not even fit).",
        attempt(lambda s: {"a": s.gy @ s.x["b"]}),
    ),
    Slip(
        "a_not_transposed",
        "In gb you multiply a by gy where a's transpose belongs: gb = a^T gy (the square shape hid the slip).",
        attempt(lambda s: {"b": s.x["a"] @ s.gy}),
    ),
    Slip(
        "ga_factors_swapped",
        "In ga the factors are in the wrong order: b^T gy instead of gy b^T. Matrix products "
        "do not commute; gy stays on the side of a's output rows, the left.",
        attempt(lambda s: {"a": s.x["b"].T @ s.gy}),
    ),
    Slip(
        "gb_factors_swapped",
        "In gb the factors are in the wrong order: gy a^T instead of a^T gy. gy stays on the "
        "right, where b's output columns are.",
        attempt(lambda s: {"b": s.gy @ s.x["a"].T}),
    ),
]


EXERCISE = Exercise(
    "matmul",
    "y = a @ b for matrices: which factor is transposed, and where",
    [
        Case("MatMul", ("a", "b"), inputs(normal(*a), normal(*b)), graph, slips=MATMUL)
        for a, b in [((3, 4), (4, 2)), ((4, 4), (4, 4)), ((1, 5), (5, 3))]
    ],
)
