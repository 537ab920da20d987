"""How gradient cases make their inputs: each maker is rng -> array, drawn fresh on every check run.

Shapes are chosen so that a mistake shows: axis lengths differ from each other (a factor names
one axis), non-square matrices (a transposed gradient has the wrong shape) beside square ones
(where it does not), broadcasts along leading and size-1 axes, and ids that repeat.
"""


def normal(*shape):
    return lambda rng: rng.standard_normal(shape)


def positive(*shape):
    return lambda rng: rng.uniform(0.5, 2.0, shape)


def with_zeros(*shape):
    """Normal values with exact zeros at a few places: a backward that divides by an input gives NaN there."""

    def make(rng):
        x = rng.standard_normal(shape)
        x.reshape(-1)[:: max(1, x.size // 3)] = 0.0
        return x

    return make


def near_1000(*shape):
    """Logits near 1,000 (spread by a few units, so the softmax is not one-hot): exp overflows unless the max goes
    first, in forward and in a backward that computes the softmax again."""
    return lambda rng: 1000.0 + 3.0 * rng.standard_normal(shape)


def drawn_shape(rng, ndims=(1, 4), longest=5, shortest=0):
    """A shape of ndims[0] to ndims[1] axes, each `shortest` to `longest` long, drawn afresh on each run: what a list
    of chosen shapes leaves out (a 1-d or 4-d input, a negative axis of a 3-d one, an axis of length 0)."""
    size = int(rng.integers(ndims[0], ndims[1] + 1))
    return tuple(int(n) for n in rng.integers(shortest, longest + 1, size=size))


def drawn_pair(rng, values=lambda rng, shape: rng.standard_normal(shape)):
    """Two inputs of shapes broadcasting relates, drawn: an output of 1 to 3 axes of 0 to 3 elements, and each input
    keeping each axis, stretching it from 1, or (a leading one) leaving it out."""
    shape = drawn_shape(rng, (1, 3), longest=3, shortest=0)

    def side():
        kept = shape[int(rng.integers(len(shape) + 1)) :]
        return tuple(1 if rng.random() < 0.4 else n for n in kept)

    return [values(rng, side()), values(rng, side())]


def spread(rng, shape):
    """Normal values times magnitudes drawn from 1e-14 to 1e2: a constant that keeps a division or a log safe
    (x + 1e-12, max(x, 1e-12)) changes the smallest by more than rounding."""
    return rng.standard_normal(shape) * 10.0 ** rng.uniform(-14, 2, shape)


def inputs(*makers):
    """One maker per forward argument, as a case's `make`: rng -> [arrays]."""
    return lambda rng: [make(rng) for make in makers]


# binary ops: equal shapes, a row broadcast over rows, both sides broadcast (one by two added axes: an unbroadcast
# that sums one leading axis passes every case with one), and an axis added in front of a size-1
# axis of the gradient's in front of a stretched one (an unbroadcast that looks up the wrong axis of the gradient,
# leading, i or leading - i for leading + i, sums too little; one stretched to 2 shows a size test against 2 for 1),
# and a stretched axis beside a size-1 axis of the gradient (a size test that reads the axis after it skips the sum)
BROADCAST_PAIRS = [
    (normal(3, 4), normal(3, 4)),
    (normal(3, 4), normal(4)),
    (normal(2, 2, 1, 4), normal(3, 1)),
    (normal(1, 1, 2), normal(1, 1)),
    (normal(1, 1), normal(3, 1)),
]
