"""The random numbers tensorlab draws (initialisation, dropout), seeded in one place.

`manual_seed(s)` makes a run repeatable; `get_state()`/`set_state()` give a
JSON-friendly snapshot (plain numbers), so a checkpoint resumes the exact same streams.

On the CPU one NumPy Generator, made from the seed, serves every draw; its state is
NumPy's JSON-friendly `bit_generator.state`. A GPU generator's state lives in device
memory and cannot be saved, so a GPU keeps none: each draw there takes a fresh
generator keyed by (seed, number of draws made on that device so far): cuRAND's
Philox4x32-10, counter-based, so setting it up takes a state allocation and one init
kernel with no skip-ahead work (XORWOW's init would skip ahead per thread). The state of the GPU stream is
then that count, and restoring it continues the stream exactly. CuPy derives a 32-bit
cuRAND seed from each key (`numpy.random.SeedSequence(key).generate_state(1, uint32)`),
so two draws of a long run may share a stream (about n^2 / 2^33 pairs in n draws):
harmless for dropout masks, and the same on every run of that seed.
"""

import numpy as np

from tensorlab import backend

_seed = 0
_cpu = None  # the CPU Generator, made from _seed on first use
_device_draws = {}  # device -> how many draws it has made since the seed was set


def manual_seed(seed):
    """Reseed every generator tensorlab uses (CPU, and the GPU one if CuPy is in use)."""
    global _seed, _cpu
    _seed, _cpu = seed, None
    _device_draws.clear()


def generator(device="cpu"):
    """The Generator the next draw on `device` takes from: numpy's CPU one, or a fresh one per GPU draw."""
    global _cpu
    if device == "cpu":
        if _cpu is None:
            _cpu = np.random.default_rng(_seed)
        return _cpu
    cupy = backend.module_for(device)
    draw = _device_draws.get(device, 0)
    _device_draws[device] = draw + 1
    return cupy.random.Generator(cupy.random.Philox4x3210([_seed, draw]))


def get_state():
    """{"seed", "cpu": the CPU generator's state, "device_draws": {device: draws made}}, plain JSON data."""
    return {"seed": _seed, "cpu": generator("cpu").bit_generator.state, "device_draws": dict(_device_draws)}


def set_state(state):
    """Restore a state from `get_state()` (or the CPU state alone, as older checkpoints hold it)."""
    global _seed, _cpu
    _seed, _cpu = state.get("seed", _seed), None
    generator("cpu").bit_generator.state = state.get("cpu", state)
    _device_draws.clear()
    _device_draws.update(state.get("device_draws", {}))


def restores_exactly(state):
    """Whether set_state(state) continues the saved streams bitwise: not a GPU state saved before the draw counts."""
    return "device_draws" in state or not state.get("gpu_used", False)
