"""Exact GELU's formula (gelu_and_slope in tensorlab/ops/elementwise.py), fast on the CPU.

About twenty-five passes per element, done a block at a time so that each block stays in cache, the
blocks spread over tensorlab.threads, in place wherever a pass allows. NumPy has no erf, and the
formula's exact one (Python's math.erf, one element at a time) is slow, so in float32 the kernel uses
Abramowitz & Stegun 7.1.26, for z >= 0:

    erf(z) = 1 - t (a1 + t (a2 + t (a3 + t (a4 + t a5)))) exp(-z^2),   t = 1 / (1 + 0.3275911 z),

whose error (below 1.5e-7) is under float32's resolution near 1. With z = |x| / sqrt 2, its
exp(-z^2) is exp(-x^2/2), the exponential the pdf needs: one exp serves both. In any other dtype
(float64's error would show; float16's rounding in the many passes too) it takes the exact erfc, one element
at a time, as slow as the formula's erf, and does the rest of the passes as in float32.
"""

import math

import numpy as np

from tensorlab import threads
from tensorlab.kernels import plan


def gelu_and_slope(x):
    """y = x Phi(x) and slope = dy/dx = Phi(x) + x phi(x) for a floating x, as the formula gives them."""
    x = np.ascontiguousarray(x).reshape(x.shape)  # ascontiguousarray makes a 0-d x 1-d
    y, slope = np.empty_like(x), np.empty_like(x)
    flat_x, flat_y, flat_slope = x.reshape(-1), y.reshape(-1), slope.reshape(-1)
    threads.for_each_block(
        lambda b: _gelu_and_slope_of_block(flat_x[b], flat_y[b], flat_slope[b]),
        plan.cache_blocks(x.size, 8 * x.itemsize),
    )
    return y, slope


def gelu_backward(gy, slope):
    """gx = gy * slope, as the formula gives it, a block at a time on every core (a product of two large arrays
    streams them from memory: one core alone does not keep up)."""
    if gy.dtype != slope.dtype or not (gy.flags.c_contiguous and slope.flags.c_contiguous):
        return gy * slope  # NumPy's own promotion and layout
    gx = np.empty_like(gy)
    flat_gy, flat_slope, flat_gx = gy.reshape(-1), slope.reshape(-1), gx.reshape(-1)
    threads.for_each_block(
        lambda b: np.multiply(flat_gy[b], flat_slope[b], out=flat_gx[b]),
        plan.cache_blocks(gy.size, 3 * gy.itemsize),
    )
    return gx


# A&S 7.1.26's a5 .. a1, halved: the Horner sum below gives (1 - erf(|x| / sqrt 2)) / 2 = Phi(-|x|) at once
_HALF_A = [a / 2 for a in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)]
_half_erfc = np.frompyfunc(lambda z: math.erfc(z) / 2, 1, 1)  # erfc(|x| / sqrt 2) / 2 = Phi(-|x|), exactly


def _gelu_and_slope_of_block(x, y, slope):
    """Write y = x Phi(x) and slope = Phi(x) + x phi(x) for one block of x, phi(x) = exp(-x^2/2) / sqrt(2 pi)."""
    gauss = np.multiply(x, -0.5)
    gauss *= x
    np.exp(gauss, out=gauss)  # exp(-x^2/2)
    t = np.abs(x)
    if x.dtype == np.float32:
        t *= 0.3275911 / math.sqrt(2)
        t += 1
        np.divide(1, t, out=t)  # t = 1 / (1 + p |x| / sqrt 2) (np.reciprocal takes twice as long)
        tail = np.multiply(t, _HALF_A[0], out=slope)  # Horner: t (a1 + t (a2 + ... a5 t)) / 2, slope as scratch
        for a in _HALF_A[1:]:
            tail += a
            tail *= t
        tail *= gauss  # Phi(-|x|)
    else:
        t *= 1 / math.sqrt(2)
        tail = slope
        tail[...] = _half_erfc(t)  # Phi(-|x|)
    cdf = np.multiply(tail, -2, out=t)
    cdf += 1  # Phi(|x|) - Phi(-|x|) = 1 - 2 Phi(-|x|)
    cdf *= np.greater_equal(x, 0, out=y)  # ... for x >= 0, else 0 (y as scratch: 1.0 or 0.0)
    cdf += tail  # Phi(x): Phi(|x|) for x >= 0, Phi(-|x|) below (a multiply, where copysign took 6 times longer)
    np.multiply(x, cdf, out=y)
    gauss *= x.dtype.type(1 / math.sqrt(2 * math.pi))  # phi(x)
    gauss *= x
    np.add(cdf, gauss, out=slope)
