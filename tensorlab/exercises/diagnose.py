"""Turning a wrong gradient into hints a student can act on.

Two kinds of wrong reach us. A gradient of the wrong shape, type or dtype is caught before
its values are judged (`shape_problem`, `dtype_problem`, `type_problem`), with the fix when
one is plain (sum over the broadcast axes; undo a transpose). A gradient of the right shape
with wrong values: `explain` compares the student's gradient A with the analytic reference R
(a report's `analytic` and `numeric`) and names the slips it recognises:

    A = R to 1e-11 .. 1e-6 only    finite differences (or float32 arithmetic): close, never exact
    A = 0 everywhere               a placeholder left in, or a factor that is zero
    A = -R                         the sign of the derivative
    A = the right gradient of another input    gradients swapped
    A^T = R (last two axes)        a transposed product, hidden by a square shape
    A = c R                        a constant factor; named when c or 1/c is an axis length
                                   (a missing or extra 1/n) or its square root (a 1/sqrt(D))
Where the backward's own variables hold its steps, the first step that goes wrong is named
too (check.py); `band` says when the wrong elements of a (T, T) step lie on one diagonal
(a mask that drops the diagonal, or lets in the next position).
"""

import math
from itertools import combinations, permutations

import numpy as np

from tensorlab.ops.broadcast import broadcast_axes

LISTED = 12  # wrong elements named by index, at most (`listed`)

FALLBACK = (
    "None of the usual slips fits (a sign, a constant factor, a transpose, all zeros, swapped inputs). "
    "Re-derive the gradient on paper for a tiny case (one row, two or three elements) and compare "
    "with the numbers in the table below."
)
# said before the fallback, which then localises the slip: the first stage of the backward that goes wrong


APPROXIMATE = 1e-6  # right to this (relative to the case's scale) but not exactly: finite differences or float32


class Context:
    """What the diagnosis knows about one case: every input's shape, the output's shape, the reports.

    atol and rtol say when two gradients match (a slip reproduced, a stage found); scale is the
    largest reference gradient of the case; settings are the op's constructor arguments.
    """

    def __init__(self, shapes, output_shape, reports, atol, rtol, scale=1.0, settings=None):
        self.shapes = {name: tuple(shape) for name, shape in shapes.items()}  # every forward argument
        self.output_shape = tuple(output_shape)
        self.reports = reports  # name -> InputReport, for the inputs that take a gradient
        self.atol, self.rtol, self.scale = atol, rtol, scale
        self.settings = settings or {}

    def close(self, a, b):
        """a matches b: |a - b| <= atol + rtol * |b| everywhere, b finite (an inf in b would match any number)."""
        with np.errstate(invalid="ignore", over="ignore"):
            return a.shape == b.shape and bool(
                np.all(np.isfinite(b) & (np.abs(a - b) <= self.atol + self.rtol * np.abs(b)))
            )


def ignores_gy(names):
    """The line for gradients that stay the same when gy is doubled."""
    return (
        f"Your gradient for {' and '.join(repr(n) for n in names)} stays the same when gy is doubled: it ignores gy, "
        f"the gradient arriving from the output. By the chain rule dL/dx = dL/dy * dy/dx: multiply your local "
        f"derivative by gy."
    )


# ----- wrong values: what gradcheck found --------------------------------------------------------------
def explain(name, report, ctx, detailed=True, steps=(), advice=(), hints=()):
    """Lines for one failed input: how many elements are wrong, then the slip it looks like.

    `steps` (where the backward first goes wrong, when the student's variables show it) follow
    whatever else is said; `advice` follows the general advice when no slip fits; `hints`, the exercise's own
    reading of the numbers (case.hint), come last and stand for a slip: with them, no "none fits".
    """
    a, n, wrong = report.analytic, report.numeric, report.wrong
    count, total = int(wrong.sum()), wrong.size
    what = f"all {total} elements are wrong" if count == total else f"{count} of {total} elements are wrong"
    lines = [f"input '{name}' (shape {tuple(a.shape)}): {what}."]
    if not detailed:
        return lines + list(hints)
    found = _approximate(name, a, n, ctx) or _whole_array_slip(name, a, n, report, ctx)
    if not found and not steps and not hints:
        found = [FALLBACK, *advice]
    elif not found and not hints:
        found = ["None of the usual slips fits (a sign, a constant factor, a transpose, all zeros, swapped inputs)."]
    return lines + found + list(steps) + list(hints)


def _approximate(name, a, n, ctx):
    """The finite-difference line, when a is close to n everywhere but not exact."""
    if not np.all(np.isfinite(a)):
        return []
    off = float(np.abs(a - n).max()) / ctx.scale
    if off > APPROXIMATE:
        return []
    return [
        f"Your gradient for '{name}' is close to the right one everywhere, but only to about {off:.0e} of its "
        f"size, where a derived formula in float64 agrees to about 1e-15. This looks like finite differences "
        f"(the op run again at nudged inputs), or arithmetic in float32 somewhere: write the derivative itself, "
        f"in float64."
    ]


def band(off):
    """': exactly on the diagonal ...' when the True elements of a (..., T, T) array lie on one diagonal, else ''."""
    if off.ndim < 2 or off.shape[-1] != off.shape[-2] or not off.any():
        return ""
    where = np.argwhere(off)
    k = set((where[:, -1] - where[:, -2]).tolist())  # key j minus query i
    if k == {0}:
        return (
            ": exactly on the diagonal, where the key is the query's own position. Each position attends to itself: "
            "a mask in your backward drops the diagonal (np.tril(..., k=-1), or j < i where j <= i belongs)"
        )
    if k == {1}:
        return (
            ": exactly one above the diagonal, the key right after the query. Your mask is off by one: it lets each "
            "position see the next one (np.tril(..., k=1), or j <= i + 1 where j <= i belongs)"
        )
    if min(k) > 0:
        return ": only above the diagonal, at keys after the query, which the causal mask hides"
    return ""


def _whole_array_slip(name, a, n, report, ctx):
    if not np.all(np.isfinite(a)):
        return [
            line[0].upper() + line[1:] + ": look for a division by zero, a log of 0, an exp that overflows, "
            "or inf - inf (a masked -inf score used in arithmetic)."
            for line in report.nonfinite_lines()
        ]
    if np.all(np.abs(a) <= ctx.atol) and not np.all(np.abs(n) <= ctx.atol):
        return [
            "Your gradient is all zeros. Is a placeholder such as np.zeros_like(...) still returned, "
            "or does a factor that should not be zero (gy, a mask, a saved value) come out as zero?"
        ]
    if ctx.close(a, -n):
        return ["Your gradient is exactly -1 times the right one: check the sign of your derivative."]
    for other, other_report in ctx.reports.items():
        if other != name and ctx.close(a, other_report.numeric) and not ctx.close(other_report.numeric, n):
            order = ", ".join(f"g{x}" for x in ctx.reports)
            return [
                f"Your gradient for '{name}' is the right gradient for '{other}': the two are swapped. "
                f"Return one gradient per input in the order of forward's arguments ({order}), and check "
                f"which input each formula uses."
            ]
    if a.ndim >= 2 and a.shape[-1] == a.shape[-2] and ctx.close(a.swapaxes(-1, -2), n):
        return [
            f"Your gradient is the transpose of the right one (swap its last two axes and it matches). "
            f"The shape could not show it, because the last two axes of '{name}' have the same length "
            f"{a.shape[-1]}; with other shapes it would have the wrong shape. In a matrix product, check "
            f"the order of the factors and which one is transposed."
        ]
    c = _factor(a, n, ctx)
    if c is not None:
        return [_factor_message(c, name, ctx)]
    return []


def _factor(a, n, ctx):
    """The constant c with a = c * n, when there is one and it is not 1 (or 0, or -1): n has two elements at least
    that are not zero to the case's tolerance (any two numbers are some constant times each other; a gradient of
    1e-186 everywhere, whose squares are 0, is none)."""
    if np.count_nonzero(np.abs(n) > ctx.atol) < 2:
        return None
    size = np.abs(n).max()
    unit = n / size  # n scaled to 1: squares that do not underflow
    with np.errstate(over="ignore", invalid="ignore"):  # a huge a over a tiny n: c is inf, and no factor
        c = float(np.sum(a * unit) / np.sum(unit**2) / size)
    if abs(c) < 1e-6 or abs(abs(c) - 1) < 1e-3 or not ctx.close(a, c * n):
        return None
    return c


def _factor_message(c, name, ctx):
    k = abs(c) if abs(c) > 1 else 1 / abs(c)
    sign = " and has the wrong sign" if c < 0 else ""
    head = f"Your gradient is {_format_factor(c)} times the right one{sign}"
    if math.isclose(k, 2, rel_tol=1e-3):  # the power rule's 2, before an axis of length 2 or the square root of 4
        return (
            f"{head}: off by 2, the constant of the power rule: the 2 of d(x^2) = 2x dx, or the 1/2 of "
            f"d sqrt(u) = du / (2 sqrt(u)), dropped or doubled (or a 1/n over 2 elements)."
        )
    lengths = _lengths(name, ctx)
    for length, words in lengths:
        if math.isclose(k, length, rel_tol=1e-3):
            if abs(c) > 1:
                why = (
                    f"it is too large by {length}: a division by {length} is missing (like the 1/n of a mean), "
                    f"you summed where each element should get a copy, or a scale is inverted (multiplying by "
                    f"sqrt({length}) where the forward divides by it is off by {length})."
                )
            else:
                why = (
                    f"it is too small by {length}: you divide by {length} once too often, or took a mean "
                    f"where a sum (or a copy) belongs."
                )
            return f"{head}: off by {words}; {why}"
    for length, words in lengths:  # a square root only when no length itself fits
        if math.isclose(k, math.sqrt(length), rel_tol=1e-3):
            return (
                f"{head}: off by sqrt({length}) = {math.sqrt(length):.4g}, the square root of {words}. "
                f"A scale such as 1/sqrt(D) in the forward must appear in the backward too, exactly once."
            )
    return (
        f"{head}, everywhere: the formula is right up to a constant. Look for a constant factor that is "
        f"off: a 2 from differentiating a square, a 1/n, a scale the forward applied."
    )


def _lengths(name, ctx):
    """(length, words) for the axis lengths a factor could come from, the failing input's first."""
    candidates = []
    shape = ctx.shapes[name]
    for axis, length in reversed(list(enumerate(shape))):  # the last axis first: it is usually D or C
        candidates.append((length, f"the axis length {length} (axis {axis} of '{name}')"))
    for r in range(2, len(shape) + 1):
        for axes in combinations(range(len(shape)), r):
            count = math.prod(shape[a] for a in axes)
            where = f"over axes {axes}" if r < len(shape) else "in all"
            candidates.append((count, f"{count}, the number of elements of '{name}' {where}"))
    for other, other_shape in ctx.shapes.items():
        if other != name:
            candidates += [
                (length, f"the axis length {length} (axis {axis} of '{other}')")
                for axis, length in enumerate(other_shape)
            ]
    candidates += [
        (length, f"the axis length {length} (axis {axis} of the output)")
        for axis, length in enumerate(ctx.output_shape)
    ]
    return [(length, words) for length, words in candidates if length > 1]


def _format_factor(c):
    sign, size = ("-" if c < 0 else ""), abs(c)
    if size > 1 and abs(size - round(size)) < 1e-3 * size:
        return f"{sign}{round(size)}"
    if size < 1 and abs(1 / size - round(1 / size)) < 1e-3 / size:
        return f"{sign}1/{round(1 / size)}"
    return f"{c:.4g}"


def _index(index):
    return str(tuple(int(i) for i in index))


def listed(indices, shown=LISTED):
    """'(0, 3), (1, 2) and 4 more' for an array of indices as np.argwhere gives them."""
    text = ", ".join(_index(i) for i in indices[:shown])
    return text + (f" and {len(indices) - shown} more" if len(indices) > shown else "")


# ----- wrong shapes, types and dtypes: caught before the engine -------------------------------------
def shape_problem(name, g, shape, output_shape, shape_hint=""):
    """(lines, fix) for a gradient of the wrong shape; fix(g) repairs it when the slip is plain, else None."""
    gshape, shape = tuple(g.shape), tuple(shape)
    of_output = " (the output's shape)" if gshape == tuple(output_shape) else ""
    head = (
        f"input '{name}' has shape {shape}, but your gradient for it has shape {gshape}{of_output}. "
        f"A gradient always has the shape of its input."
    )
    try:
        broadcast = len(gshape) >= len(shape) and np.broadcast_shapes(gshape, shape) == gshape
    except ValueError:
        broadcast = False
    if broadcast:
        axes = broadcast_axes(gshape, shape)
        leading = len(gshape) - len(shape)
        added = [a for a in axes if a < leading]
        stretched = [a for a in axes if a >= leading]
        how = " and ".join(
            part
            for part in [
                f"along {_axes_words(added)} (added in front)" if added else "",
                f"along {_axes_words(stretched)} (where it had size 1)" if stretched else "",
            ]
            if part
        )
        axis_arg = str(axes[0]) if len(axes) == 1 else str(axes)
        if not stretched:
            code = f"g{name} = g{name}.sum(axis={axis_arg})"
        elif not added:
            code = f"g{name} = g{name}.sum(axis={axis_arg}, keepdims=True)"
        else:
            code = f"g{name} = g{name}.sum(axis={axis_arg}).reshape({shape})"
        return [
            head,
            f"'{name}' was broadcast: NumPy repeated it {how} to make the output, and every copy adds "
            f"to the loss, so its gradient is the sum over the copies. A missing sum over the broadcast "
            f"axes: sum over {_axes_words(axes)} to get back shape {shape}:  {code}",
        ], lambda g: g.sum(axis=axes).reshape(shape)
    order = _axes_moved(gshape, shape)
    if order:
        n = len(shape)
        moved = "its last two axes swapped: your gradient is transposed"
        moved = moved if order == (*range(n - 2), n - 1, n - 2) else f"its axes in the order {order}"
        return [
            head,
            f"That is {shape} with {moved}. A matrix product with its factors in the wrong order (or the wrong one "
            f"transposed) does this, and so does an axis moved (np.moveaxis, .swapaxes, .T) and not moved back.",
        ], lambda g: g.transpose(np.argsort(order))
    summed = _summed_elsewhere(name, gshape, shape, tuple(output_shape))
    return [head] + (summed or ([shape_hint] if shape_hint else [])), None


def _axes_moved(gshape, shape):
    """The order of the axes of `shape` that makes `gshape` (the first, with the leading axes kept where it can), or
    None when there is none but their own."""
    orders = permutations(range(len(shape))) if len(shape) <= 6 else ()
    return next((o for o in orders if o != tuple(sorted(o)) and tuple(shape[i] for i in o) == gshape), None)


def _summed_elsewhere(name, gshape, shape, output_shape):
    """[line] when the input was broadcast to the output and the gradient kept (size > 1) an axis the input was
    stretched along, and has size 1 where the input does not: the sum over the copies along a fixed axis (0, the
    last) instead of the broadcast one."""
    try:
        broadcast = np.broadcast_shapes(shape, output_shape) == output_shape != shape
    except ValueError:  # a reduction's input does not broadcast to its output
        broadcast = False
    if not broadcast or len(gshape) < len(shape):
        return []
    padded = (1,) * (len(gshape) - len(shape)) + shape  # the input's axes lined up with the gradient's, from the right
    wrong = [a for a, (g, x) in enumerate(zip(gshape, padded)) if g == 1 and x != 1]
    kept = [a for a, (g, x) in enumerate(zip(gshape, padded)) if x == 1 and g != 1]
    if not (wrong and kept):
        return []
    return [
        f"Your gradient for '{name}' is summed over {_axes_words(wrong)}, where '{name}' has full length (it was not "
        f"broadcast there), and not over {_axes_words(kept)}, along which it was stretched from size 1 (or added): "
        f"sum over the axes broadcasting added or stretched, found from the two shapes, not over a fixed axis."
    ]


def type_problem(name, g, shape):
    """Lines for a gradient that is not an array at all, or None when it is one."""
    if type(g).__name__ == "Tensor":  # sent back from the student's process as its type's name
        return [
            f"Your gradient for '{name}' is a tensorlab Tensor. backward works on plain NumPy arrays "
            f"(gy and what forward saved are arrays): compute with NumPy and return the array."
        ]
    if not (hasattr(g, "shape") and hasattr(g, "dtype")):
        return [
            f"Your gradient for '{name}' is a {type(g).__name__}, not a NumPy array of numbers: return a float array "
            f"of shape {tuple(shape)}."
        ]
    return None


def dtype_problem(name, g, dtype):
    """Lines for a gradient whose dtype is not its input's."""
    if g.dtype.kind in "biu":
        return [
            f"Your gradient for '{name}' has the integer dtype {g.dtype}; gradients are floating point, "
            f"{dtype} here. An array made from integers (np.zeros_like(ids), dtype=int) stays integer: "
            f"give it dtype=gy.dtype."
        ]
    return [
        f"Your gradient for '{name}' has dtype {g.dtype}, but '{name}' is {dtype}: a gradient has its "
        f"input's dtype. Make new arrays with dtype=gy.dtype."
    ]


def _axes_words(axes):
    return f"axis {axes[0]}" if len(axes) == 1 else f"axes {tuple(axes)}"
