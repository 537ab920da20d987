"""embedding: y = weight[ids]: repeated ids add up in the table's gradient."""

import numpy as np

import tensorlab.functional as F
from tensorlab.exercises.check import Exercise
from tensorlab.exercises.gradient import Case, no_settings
from tensorlab.exercises.inputs import drawn_shape, inputs, normal
from tensorlab.exercises.slips import Slip


def graph(ids, weight):
    return F.embedding(ids, weight), {}


def _overwritten(s):
    ids, gy = s.x["ids"], s.gy
    gw = np.zeros(s.x["weight"].shape)
    gw[ids.reshape(-1)] = gy.reshape(-1, gy.shape[-1])
    return {"weight": gw}


EMBEDDING = [
    Slip(
        "embedding_overwritten",
        "Repeated ids overwrite each other: `gw[ids] = gy` (and `gw[ids] += gy`, which "
        "NumPy buffers) keeps only the last of the repeats. Every use of a row adds to its gradient: "
        "np.add.at(gw, ids, gy).",
        _overwritten,
    ),
]


def _embedding_hint(inputs, name, report, context):
    """Rows no id looks up must get 0; rows of repeated ids, the sum of their uses (repeats overwritten are a slip,
    EMBEDDING)."""
    ids = inputs[0]
    wrong_rows = set(np.flatnonzero(report.wrong.any(axis=1)).tolist())
    counts = np.bincount(ids.reshape(-1), minlength=report.wrong.shape[0])
    unused = set(np.flatnonzero(counts == 0).tolist())
    hints = []
    if wrong_rows & unused:
        hints.append(
            f"Rows {sorted(wrong_rows & unused)} are never looked up (no id equals them), so their "
            f"gradient must be 0: start from np.zeros(...) of the table's shape."
        )
    repeated = set(np.flatnonzero(counts > 1).tolist())
    if wrong_rows and wrong_rows <= repeated:
        hints.append(
            f"Only rows of ids that repeat are wrong ({sorted(wrong_rows)}): each use of a row adds its own "
            f"gy[n] to the row's gradient, so a repeated id's row is the sum of its positions' gradients, not one "
            f"of them, nor one times the count."
        )
    return hints


def _drawn_lookup(rng):
    """ids of 0 to 3 axes (one id alone, too), repeats likely, into a table of 2 to 5 rows."""
    table = rng.standard_normal((int(rng.integers(2, 6)), int(rng.integers(1, 5))))
    return [rng.integers(0, len(table), drawn_shape(rng, (0, 3))), table]


EXERCISE = Exercise(
    "embedding",
    "y = weight[ids]: repeated ids add up in the table's gradient",
    [
        Case(
            "Embedding",
            ("ids", "weight"),
            inputs(lambda rng, ids=ids: np.array(ids), normal(*table)),
            graph,
            slips=EMBEDDING,
            shape_hint="The table's gradient has the table's shape (V, C), whatever the shape of ids: start from "
            "np.zeros(self.weight_shape) and add each gy[n] into row ids[n] (np.bincount gives only as many rows as "
            "the largest id needs, unless given minlength).",
            hint=_embedding_hint,
        )
        for ids, table in [([4, 0, 2], (5, 3)), ([[1, 3, 1], [0, 3, 1]], (6, 4))]
    ]
    + [
        Case(
            "Embedding",
            ("ids", "weight"),
            _drawn_lookup,
            graph,
            draw=no_settings,
            slips=EMBEDDING,
            hint=_embedding_hint,
        )
    ],
)
