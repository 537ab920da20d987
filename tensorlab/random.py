"""The random numbers tensorlab draws (initialisation, dropout), seeded in one place.

`manual_seed(s)` makes a run repeatable; `get_state()`/`set_state()` give a
JSON-friendly snapshot, so a checkpoint can resume the exact same stream on the CPU.
A GPU generator's state lives in device memory and is not saved: `get_state()`
records that one was used, and `set_state()` then returns False (a resumed GPU run
draws other dropout masks than an uninterrupted one).
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
    """{"seed", "cpu": the CPU generator's state, "gpu_used": whether a GPU generator has drawn}, plain JSON data."""
    return {"seed": _seed, "cpu": generator("cpu").bit_generator.state, "gpu_used": "cuda" in _generators}


def set_state(state):
    """Restore a state from `get_state()`; returns whether the restored streams are exactly the saved ones."""
    global _seed
    _seed = state.get("seed", _seed)
    generator("cpu").bit_generator.state = state.get("cpu", state)  # older checkpoints: the CPU state alone
    return not state.get("gpu_used", False)
