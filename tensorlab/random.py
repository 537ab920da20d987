"""The random numbers tensorlab draws (initialisation, dropout), seeded in one place.

`manual_seed(s)` makes a run repeatable; `get_state()`/`set_state()` give a
JSON-friendly snapshot, so a checkpoint can resume the exact same stream.
"""
from tensorlab import backend

_seed = 0
_generators = {}  # device -> Generator, made from _seed on first use


def manual_seed(seed):
    """Reseed every generator tensorlab uses (CPU, and the GPU one if CuPy is in use)."""
    global _seed
    _seed = seed
    _generators.clear()


def generator(device="cpu"):
    """The numpy (or cupy) random Generator for `device`."""
    if device not in _generators:
        _generators[device] = backend.module_for(device).random.default_rng(_seed)
    return _generators[device]


def get_state():
    """The CPU generator's state as plain Python data (JSON-serialisable)."""
    return generator("cpu").bit_generator.state


def set_state(state):
    """Restore a state from `get_state()`."""
    generator("cpu").bit_generator.state = state
