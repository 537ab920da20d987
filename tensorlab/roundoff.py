"""Round-off chaos: every op's result moved by 1 or 2 units in the last place, to test what another machine prints.

A product, a sum or an exp gives different last bits on another BLAS kernel, thread count, SIMD width or CPU.
A test that passes only with this machine's bits fails on a user's. With `TENSORLAB_ROUNDOFF_CHAOS=SEED` in the
environment (any integer; `.ci/run` runs the whole suite with two seeds), every op's floating-point results,
forward and backward, are moved by -2, -1, +1 or +2 ulp before anyone sees them, as another machine would round
them. The move is a function of the element's own bits and the seed, so the chaos is deterministic like a real
kernel: the same inputs give the same outputs, run after run and on any thread count.

Left alone: zeros, infinities, NaNs, subnormals (a move there is not a rounding difference), integer and bool
results, and results that share memory with the op's inputs (reshape, a slice, a gradient passed through as it
came): those are data movements that round nothing on any machine. Unset, nothing is installed and nothing runs.
"""

import functools
import os

import numpy as np

from tensorlab import backend

ENVIRONMENT_VARIABLE = "TENSORLAB_ROUNDOFF_CHAOS"
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
    movable = (magnitude >= info.tiny) & (magnitude < info.max / 4)
    return xp.where(movable, moved, bits).view(array.dtype).reshape(array.shape)


def _memory(array):
    """The array that owns the memory `array` looks at."""
    while getattr(array, "base", None) is not None and hasattr(array.base, "strides"):
        array = array.base
    return array


def _perturbed(results, arguments):
    """Each array of `results` (one, a tuple or a list; None passes) perturbed unless it shares an argument's memory."""
    taken = {id(_memory(a)) for a in arguments if hasattr(a, "dtype")}
    move = lambda y: y if y is None or id(_memory(y)) in taken else perturb(y, _seed)  # noqa: E731
    return type(results)(map(move, results)) if isinstance(results, (tuple, list)) else move(results)


def _wrap(cls):
    """Make `cls`'s own forward and backward hand back perturbed results."""
    own = {name: cls.__dict__[name] for name in ("forward", "backward") if name in cls.__dict__}
    if not own or cls in _installed:
        return
    _installed[cls] = own
    for name, method in own.items():

        @functools.wraps(method)
        def chaotic(self, *arrays, _method=method):
            return _perturbed(_method(self, *arrays), arrays)

        setattr(cls, name, chaotic)


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def install(function_class, seed):
    """Perturb the results of every subclass of `function_class`, those defined later too, with `seed`."""
    global _seed
    uninstall(function_class)
    _seed = int(seed)
    for cls in _subclasses(function_class):
        _wrap(cls)
    function_class.__init_subclass__ = classmethod(lambda cls, **kwargs: _wrap(cls))


def uninstall(function_class):
    """Give every op back its own forward and backward."""
    global _seed
    for cls, own in _installed.items():
        for name, method in own.items():
            setattr(cls, name, method)
    _installed.clear()
    if "__init_subclass__" in function_class.__dict__:
        del function_class.__init_subclass__
    _seed = None


def install_from_environment(function_class):
    """install() with the seed in TENSORLAB_ROUNDOFF_CHAOS, if it is set (tensor.py calls this once, at import)."""
    value = os.environ.get(ENVIRONMENT_VARIABLE, "").strip()
    if not value:
        return
    try:
        seed = int(value)
    except ValueError:
        raise ValueError(f"{ENVIRONMENT_VARIABLE} must be an integer seed, got {value!r}") from None
    install(function_class, seed)
