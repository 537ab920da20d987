"""The fast versions of the ops' formulas, for the CPU: one file per op family, beside tensorlab/ops/.

Every op file states its formula as a student would write it: forward and backward in plain NumPy,
with the derivation in a comment (tensorlab/ops/norm.py's rms_norm_forward, for one). One rule, `choose`
below, decides which runs: on a NumPy array the op calls the kernel of the same name from here, which
takes every input its formula takes and computes the same formula faster:

- in blocks: an op that makes many passes over a large array makes all of them over one block of
  rows that fits in the CPU cache (plan.cache_blocks) before it moves to the next, instead of streaming
  the whole array from memory once per pass;
- on every core: the blocks are spread over tensorlab.threads' pool;
- into buffers allocated once (`out=`), in place where it can;
- in fewer passes: one einsum for a product and its sum, one exp shared by two formulas.

A student who reads the op file learns the math; one who wants the speed opens the kernel.
tests/test_kernels.py checks each kernel against its formula on inputs cut into several blocks,
bitwise where the kernel does the same arithmetic and at a stated tolerance where it reorders it, and
fails when a kernel (a public function of a module here other than plan) has no row there. Every block
size, part count and threshold lives in plan.py. The kernels import nothing from tensorlab/ops/: what
both need is in tensorlab/layout.py, below both.

On a GPU (a CuPy array) the op runs the formula itself: there every pass is one launch over the
whole array, which is what the formula does; a loop over blocks would only add launches.

Results never depend on the thread count: the blocks are cut by the data alone, and each block is
computed by the same code on whichever thread takes it (tensorlab/threads.py).
"""

import numpy as np

from tensorlab import backend
from tensorlab.layout import as_rows


def choose(kernel, formula, array):
    """The one rule: `kernel` for a NumPy array (the CPU), `formula` for a CuPy array (a GPU)."""
    return formula if backend.is_cupy_array(array) else kernel


def with_contiguous_rows(a):
    """a, or a C-order copy where its last axis is strided (an F-order array, a transposed view): products of such
    blocks, made by OpenBLAS 0.3.31 on several threads at once, crashed the process or came out wrong in one run of
    attention's backward in 300 (tests/fuzz_kernels.py; NumPy's issue 31618 is of the same kind). Rows laid out one
    after another, as the model's q, k, v and gradients are, are passed on as they are."""
    return a if a.ndim == 0 or a.shape[-1] <= 1 or a.strides[-1] == a.itemsize else np.ascontiguousarray(a)


def row_sums(a):
    """The sums along the last axis of a contiguous a, kept (shape (..., 1)): one matrix-vector product with a
    vector of ones, which OpenBLAS runs 6 times faster than NumPy's sum over rows of 64 numbers."""
    return (as_rows(a) @ np.ones(a.shape[-1], a.dtype)).reshape(a.shape[:-1] + (1,))


def column_sums(a, out=None):
    """The sums down the columns of a 2-D a, as a vector-matrix product ones^T a: OpenBLAS reads a once in 40 us
    for 2048 x 384 float32, where NumPy's sum over axis 0 took 67."""
    return np.matmul(np.ones(a.shape[0], a.dtype), a, out=out)
