"""The random numbers tensorlab draws (initialisation, dropout), seeded in one place.

`manual_seed(s)` makes a run repeatable; `get_state()`/`set_state()` give a
JSON-friendly snapshot, so a checkpoint can resume the exact same stream.
"""
import numpy as np

from tensorlab import backend

_rng = {"cpu": np.random.default_rng(0), "cuda": None}


def manual_seed(seed):
    """Reseed every generator tensorlab uses (CPU, and the GPU one if CuPy is in use)."""
    _rng["cpu"] = np.random.default_rng(seed)
    _rng["cuda"] = backend.module_for("cuda").random.default_rng(seed) if _rng["cuda"] is not None else None
    _rng["seed"] = seed


def generator(device="cpu"):
    """The numpy (or cupy) random Generator for `device`."""
    if _rng[device] is None:
        _rng[device] = backend.module_for(device).random.default_rng(_rng.get("seed", 0))
    return _rng[device]


def get_state():
    """The CPU generator's state as plain Python data (JSON-serialisable)."""
    return _rng["cpu"].bit_generator.state


def set_state(state):
    """Restore a state from `get_state()`."""
    _rng["cpu"].bit_generator.state = state
