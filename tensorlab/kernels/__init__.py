"""The fast versions of the ops' formulas, for the CPU: one file per op family, beside tensorlab/ops/.

Every op file states its formula as a student would write it: forward and backward in plain NumPy,
with the derivation in a comment (tensorlab/ops/norm.py's rms_norm_forward, for one). On a NumPy
array the op calls the kernel of the same name from here instead (GELU's only in float32, the
dtype its approximation of erf is made for), which computes the same formula faster:

- in blocks: an op that makes many passes over a large array makes all of them over one block of
  rows that fits in the CPU cache (cache_blocks) before it moves to the next, instead of streaming
  the whole array from memory once per pass;
- on every core: the blocks are spread over tensorlab.threads' pool;
- into buffers allocated once (`out=`), in place where it can;
- in fewer passes: one einsum for a product and its sum, one exp shared by two formulas.

A student who reads the op file learns the math; one who wants the speed opens the kernel.
tests/test_kernels.py checks each kernel against its formula on inputs cut into several blocks,
bitwise where the kernel does the same arithmetic and at a stated tolerance where it reorders it.

On a GPU (a CuPy array) the op runs the formula itself: there every pass is one launch over the
whole array, which is what the formula does; a loop over blocks would only add launches.

Results never depend on the thread count: the blocks are cut by the data alone, and each block is
computed by the same code on whichever thread takes it (tensorlab/threads.py).
"""

import math

import numpy as np

from tensorlab import backend


def applies_to(array):
    """True where the kernels run: on a NumPy array (the CPU); a CuPy array gets the op's formula."""
    return not backend.is_cupy_array(array)


# 4 MiB: chosen on one machine (a 2-core EPYC, 1 MiB L2, 32 MiB L3), where it was the best of 256 KiB to
# 64 MiB for GELU (bench/RESULTS.md). Not measured on other CPUs: a block that fits their cache is the aim.
CACHE_BLOCK_BYTES = 1 << 22


def cache_blocks(length, bytes_per_row):
    """Slices that cut range(length) into equal blocks of at most about CACHE_BLOCK_BYTES of rows, as many as the
    next power of two (or length, if fewer), so that 2, 4, 8 or 16 threads get equal shares.

    An op that makes many passes over a large array is bound by memory speed: each pass streams the
    whole array from RAM. Making all the passes over one block before moving to the next keeps the
    block in the CPU cache (GELU's forward: 29 ms -> 16 ms where it was measured, bench/RESULTS.md).
    Equal blocks matter as much: attention's 64 batch elements cut 21 + 21 + 21 + 1 gave one of two
    threads 42 of them to do, and the step waited for it.
    """
    needed = -(-length * max(bytes_per_row, 1) // CACHE_BLOCK_BYTES)  # blocks of CACHE_BLOCK_BYTES at most
    count = min(length, power_of_two_at_least(needed))
    return [slice(length * i // count, length * (i + 1) // count) for i in range(count)]


def as_rows(a):
    """a (..., C) as the matrix (N, C) of its rows, N the product of the leading axes (NumPy or CuPy). Not
    a.reshape(-1, C): with C = 0 that cannot tell N, where PyTorch computes with an empty last axis."""
    return a.reshape(math.prod(a.shape[:-1]), a.shape[-1])


def row_sums(a):
    """The sums along the last axis of a contiguous a, kept (shape (..., 1)): one matrix-vector product with a
    vector of ones, which OpenBLAS runs 6 times faster than NumPy's sum over rows of 64 numbers."""
    rows = as_rows(a)
    return (rows @ np.ones(a.shape[-1], a.dtype)).reshape(a.shape[:-1] + (1,))


def column_sums(a, out=None):
    """The sums down the columns of a 2-D a, as a vector-matrix product ones^T a: OpenBLAS reads a once in 40 us
    for 2048 x 384 float32, where NumPy's sum over axis 0 took 67."""
    return np.matmul(np.ones(a.shape[0], a.dtype), a, out=out)


def power_of_two_at_least(n):
    """The smallest power of two >= n (1 for n <= 1)."""
    return 1 << max(n - 1, 0).bit_length()


def power_of_two_at_most(n):
    """The largest power of two <= n (1 for n <= 1)."""
    return 1 << max(n.bit_length() - 1, 0)
