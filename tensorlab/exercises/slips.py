"""The mistakes students make, each written out as the wrong gradient it produces.

A slip is recognised by reproducing it: `grads(s)` computes what a backward with that one
mistake returns (from the reference namespace `s` of stages.reference: the inputs s.x, the
settings, gy, the forward's intermediates s.value and the right gradients s.grad of every
stage), and when the student's gradient for an input equals the slip's (and the slip's is
wrong), the checker says `says`, in the student's words. A slip returns {} where it does not
apply (a shape it cannot have). Where it can, a slip starts from the engine's own gradient of a
stage (attention's gP and gS); where the mistake sits inside a step (RMSNorm's term through the
normaliser, attention's softmax step), that step is written out with the one piece changed, so
these functions are as much a teacher's material as the solutions are (the engine's ops in
tensorlab/ops/ hold the right backwards anyway).

Each gradient case carries its exercise's slips (catalog/NAME/), in the order they are tried; where none fits,
gradient._setting_slips tries one per usual other value of each setting (the op built with correction=1, ...).
"""

from dataclasses import dataclass

import numpy as np


@dataclass
class Slip:
    name: str  # for tests and teachers: 'softmax_diagonal_only'
    says: str  # what the student reads; may use {axis}, {eps} ... from the case's settings
    grads: object  # s -> {input name: the gradient this mistake gives}


def attempt(compute):
    """compute(), or {} when the mistake cannot even be written for these shapes."""

    def grads(s):
        try:
            with np.errstate(all="ignore"):
                return compute(s)
        except (ValueError, IndexError):
            return {}

    return grads


def recognise(slips, s, student, wrong, close):
    """The slips that reproduce the student's gradients for the `wrong` inputs: [(Slip, inputs it explains)], less
    those that explain only some of what another explains (a tie's gy all to a explains ga and gb; all to both, only
    ga: the file has the first)."""
    found = []
    for slip in slips:
        predicted = slip.grads(s)
        explains = [
            name
            for name in wrong
            if name in predicted
            and student.get(name) is not None
            and close(student[name], predicted[name])
            and not close(predicted[name], s.grad[name])
        ]
        if explains:
            found.append((slip, explains))
    return [(slip, explains) for slip, explains in found if not any(set(explains) < set(e) for _, e in found)]
