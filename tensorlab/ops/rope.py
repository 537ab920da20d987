"""Rotary position embedding (RoPE) in one op.

For x (..., T, D) split into halves x = [x1, x2], and per-position tables cos, sin (T, D):
    y = x * cos + rotate_half(x) * sin,    rotate_half(x) = [-x2, x1]
Each pair (x1[i], x2[i]) turns by the angle of its position, so q . k after rotation
depends only on how far apart the two positions are.
Composed from primitives (tensorlab/nn/positional.py, apply_rope) it is a split, a
negation, a concatenation, two products and a sum: six graph nodes and their copies.
Here the last axis is viewed as (2, D/2), so [x2, x1] is a view (the halves read in
reverse order) and the sign of -x2 moves into the table: rotate_half(x) sin = [x2, x1] * [-sin1, sin2].

rope_forward and rope_backward below are the formula in plain NumPy. On the CPU the op runs them from
tensorlab/kernels/rope.py, a few batch elements at a time on every core; tests/test_kernels.py checks them
against the ones here.
"""

from tensorlab import kernels
from tensorlab.kernels import rope as fast
from tensorlab.layout import halves  # (..., D) as (..., 2, D/2), a view
from tensorlab.ops.dtypes import check_floating
from tensorlab.tensor import Function


def rope_forward(x, cos, signed_sin):
    """y = x cos + S(x) s for x (..., T, D), with the tables as halves (T, 2, D/2): cos, and s = [-sin1, sin2]."""
    x2 = halves(x)  # (..., T, 2, D/2), a view
    y = x2 * cos
    y += x2[..., ::-1, :] * signed_sin  # S(x) s = [x2, x1] * [-sin1, sin2]
    return y.reshape(x.shape)


def rope_backward(gy, cos, signed_sin):
    # y = x cos + S(x) s with S([x1, x2]) = [x2, x1], s = [-sin1, sin2]  =>  gx = gy cos + S(gy s)
    g2 = halves(gy)
    gx = g2 * cos
    gx += (g2 * signed_sin)[..., ::-1, :]
    return gx.reshape(gy.shape)


class Rope(Function):
    """rope_forward and rope_backward; on the CPU their kernels (tensorlab/kernels/rope.py)."""

    name = "rope"

    def forward(self, x, cos, sin):
        if x.ndim < 2 or x.shape[-1] % 2 or cos.shape != x.shape[-2:] or sin.shape != x.shape[-2:]:
            raise ValueError(
                f"rope: x (..., T, D) needs an even D and cos, sin of shape (T, D) = {x.shape[-2:]}; "
                f"got x {x.shape}, cos {cos.shape}, sin {sin.shape}"
            )
        for table in (x, cos, sin):
            check_floating("rope", table)
        self.cos = halves(cos.astype(x.dtype, copy=False))  # (T, 2, D/2), in x's dtype: the tables take no gradient
        self.signed_sin = halves(sin).astype(x.dtype)  # a copy
        self.signed_sin[:, 0] *= -1  # [-sin1, sin2]
        forward = kernels.choose(fast.rope_forward, rope_forward, x)
        return forward(x, self.cos, self.signed_sin)

    def backward(self, gy):
        backward = kernels.choose(fast.rope_backward, rope_backward, gy)
        return backward(gy, self.cos, self.signed_sin), None, None
