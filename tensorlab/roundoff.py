"""Round-off chaos: every op's result moved by 1 or 2 units in the last place, to test what another machine prints.

A product, a sum or an exp gives different last bits on another BLAS kernel, thread count, SIMD width or CPU.
A test that passes only with this machine's bits fails on a user's. With `TENSORLAB_ROUNDOFF_CHAOS=SEED` in the
environment (any integer; `.ci/run` runs the whole suite with two seeds), every op's floating-point results,
forward and backward, are moved by -2, -1, +1 or +2 ulp before anyone sees them, as another machine would round
them. The move is a function of the element's own bits and the seed, so the chaos is deterministic like a real
kernel: the same inputs give the same outputs, run after run and on any thread count.

Only what rounds differently from machine to machine moves: products, reductions and transcendental functions.
Left alone:
- the ops (or one direction of an op) in EXACT, whose results IEEE 754 fixes to the bit on every machine: +, -,
  *, / element by element, comparisons, selections, casts, data movement. An op missing from EXACT is moved: at
  worst a test meets a difference no machine makes, never the reverse;
- numbers whose last third of mantissa bits are all zero (4, 0.75, 2.5): nothing was rounded away to reach them
  (a sum of small integers is exact in any order, on any machine), while a rounded result ends in such zeros
  once in 2^7 (float32) or 2^17 (float64);
- zeros, infinities, NaNs and subnormals; integer and bool results; results that share memory with the op's
  inputs (a view, a gradient passed through as it came).
Unset, nothing is installed and nothing runs.
"""

import functools
import os

import numpy as np

from tensorlab import backend

ENVIRONMENT_VARIABLE = "TENSORLAB_ROUNDOFF_CHAOS"
EXACT = frozenset(  # "module.Class" (forward and backward) or "module.Class.method": rounded alike everywhere
    [f"tensorlab.ops.elementwise.{name}" for name in "Add Sub Mul Div Neg Maximum Minimum Clamp Relu LeakyRelu".split()]
    + [f"tensorlab.ops.reduce.{name}" for name in ("Max", "Min", "Sum.backward", "Mean.backward")]
    + [
        f"tensorlab.ops.shape.{name}"
        for name in "Reshape BroadcastTo Transpose GetItem Concatenate Stack Split".split()
    ]
    + [f"tensorlab.ops.{name}" for name in ("select.Where", "select.MaskedFill", "convert.ToDevice", "convert.AsType")]
    + [f"tensorlab.ops.{name}" for name in ("embedding.Embedding", "dropout.Dropout")]
)
_installed = {}  # Function subclass -> its own forward and backward before install(); empty when off
_seed = None


def perturb(array, seed):
    """`array` with each finite, normal, nonzero element moved by -2, -1, +1 or +2 ulp, chosen by its bits and seed."""
    if array.dtype.kind != "f" or array.size == 0:
        return array
    xp = backend.array_module(array)
    info = np.finfo(array.dtype)
    unsigned = np.dtype(f"u{array.dtype.itemsize}")
    bits = xp.ascontiguousarray(array).view(unsigned)
    h = bits.astype(np.uint64) ^ np.uint64((seed * 0x9E3779B97F4A7C15) % 2**64)  # splitmix64's finaliser
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    h ^= h >> np.uint64(31)
    step = (h >> np.uint64(62)).astype(np.int64)  # 0, 1, 2, 3 -> -2, -1, +1, +2 ulp of the magnitude
    step = step - 2 + (step >= 2)
    moved = (bits.astype(np.int64) + step).astype(unsigned)  # the bits of a float, one ulp per integer step
    magnitude = xp.abs(array)
    rounded = (bits & unsigned.type(2 ** (info.nmant // 3) - 1)) != 0  # exact results end in zeros
    movable = (magnitude >= info.tiny) & (magnitude < info.max / 4) & rounded
    return xp.where(movable, moved, bits).view(array.dtype).reshape(array.shape)


def _memory(array):
    """The array that owns the memory `array` looks at."""
    while getattr(array, "base", None) is not None and hasattr(array.base, "strides"):
        array = array.base
    return array


def _perturbed(results, arguments, in_place):
    """Each array of `results` (one, a tuple or a list; None passes) perturbed unless it shares an argument's memory.

    A forward's results are moved in place, as a kernel would have written them: an op that keeps its output for
    backward (exp keeps y) then keeps the moved values, and a write into that output is still one into what it kept.
    """

    def move(y):
        if y is None or id(_memory(y)) in taken:
            return y
        moved = perturb(y, _seed)
        if not (in_place and getattr(getattr(y, "flags", None), "writeable", True)):
            return moved
        y[...] = moved
        return y

    taken = {id(_memory(a)) for a in arguments if hasattr(a, "dtype")}
    return type(results)(map(move, results)) if isinstance(results, (tuple, list)) else move(results)


def _exact(cls, method_name):
    op = f"{cls.__module__}.{cls.__qualname__}"
    return op in EXACT or f"{op}.{method_name}" in EXACT


def _wrap(cls):
    """Make `cls`'s own forward and backward hand back perturbed results (unless EXACT names them)."""
    own = {name: cls.__dict__[name] for name in ("forward", "backward") if name in cls.__dict__}
    own = {name: method for name, method in own.items() if not _exact(cls, name)}
    if not own or cls in _installed:
        return
    _installed[cls] = own
    for name, method in own.items():

        @functools.wraps(method)
        def chaotic(self, *arrays, _method=method, _name=name):
            results = _method(self, *arrays)  # an exact subclass may inherit this method: asked at each call
            return results if _exact(type(self), _name) else _perturbed(results, arrays, _name == "forward")

        setattr(cls, name, chaotic)


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def install(function_class, seed):
    """Perturb the results of the engine's ops (the subclasses of `function_class` in tensorlab.ops) with `seed`.

    A Function of the user's own (a student's exercise) is left alone: the reference it is checked against is
    plain NumPy in the same process, which another machine would round as it rounds the user's code.
    """
    global _seed
    uninstall()
    _seed = int(seed)
    for cls in _subclasses(function_class):
        if cls.__module__.startswith("tensorlab.ops."):
            _wrap(cls)


def uninstall():
    """Give every op back its own forward and backward."""
    global _seed
    for cls, own in _installed.items():
        for name, method in own.items():
            setattr(cls, name, method)
    _installed.clear()
    _seed = None


def install_from_environment(function_class):
    """install() with the seed in TENSORLAB_ROUNDOFF_CHAOS, if it is set (tensorlab/__init__.py calls this once, when
    every op is defined)."""
    value = os.environ.get(ENVIRONMENT_VARIABLE, "").strip()
    if not value:
        return
    try:
        seed = int(value)
    except ValueError:
        raise ValueError(f"{ENVIRONMENT_VARIABLE} must be an integer seed, got {value!r}") from None
    install(function_class, seed)
