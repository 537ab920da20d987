"""How the ops' formulas (tensorlab/ops/) and their kernels (tensorlab/kernels/) both view an array.

The one module the two share, below both: an op calls its kernel, and a kernel imports nothing from the ops.
"""

import math


def as_rows(a):
    """a (..., C) as the matrix (N, C) of its rows, N the product of the leading axes (NumPy or CuPy). Not
    a.reshape(-1, C): with C = 0 that cannot tell N, where PyTorch computes with an empty last axis."""
    return a.reshape(math.prod(a.shape[:-1]), a.shape[-1])


def halves(a):
    """(..., D) as (..., 2, D/2): always a view (splitting one axis never needs a copy)."""
    return a.reshape(a.shape[:-1] + (2, a.shape[-1] // 2))
