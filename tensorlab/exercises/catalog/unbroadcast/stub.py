"""Exercise `unbroadcast` (engine track 3 of 4): undoing broadcasting in backward.

When x of shape (3,) is added to y of shape (2, 3), NumPy repeats x along a new leading axis.
Every copy of x[j] adds to the output, so x's gradient is the upstream gradient summed over the
copies: over the axes broadcasting added in front, and over the axes where x had size 1 and the
output does not (those stay, with size 1).

Your task: write `unbroadcast(grad, shape)`: `grad` has the broadcast (output) shape; return
it summed back to `shape`. For example (4, 2, 3) -> (2, 1): sum over axis 0 (added in front) and
axis 2 (stretched from size 1), keeping the latter as size 1. Use NumPy only.

Check it:  python -m tensorlab.exercises check unbroadcast THIS_FILE.py
"""
import numpy as np  # noqa: F401 (for your code)


def unbroadcast(grad, shape):
    """Sum `grad` over the axes broadcasting added or stretched, so that it has `shape`."""
    # TODO
    raise NotImplementedError("unbroadcast: sum over the broadcast axes, return an array of `shape`")
