"""The array backend: NumPy on the CPU, CuPy on an NVIDIA GPU.

This is the only module that knows CuPy exists (an import-linter contract in pyproject.toml
checks it). Ops compute with the module `array_module(x)` returns for their inputs, so the same
op code runs on both; they name NumPy only for host-side constants (a mask built once, then
moved) and CPU-only paths. CuPy is imported lazily, on first need: `import tensorlab` never
touches CUDA.
"""

import numpy as np

_cupy = None  # the cupy module once imported, False if it is not installed


def _import_cupy():
    """Return the cupy module, or None when it is not installed."""
    global _cupy
    if _cupy is None:
        try:
            import cupy

            _cupy = cupy
        except ImportError:
            _cupy = False
    return _cupy or None


def gpu_available():
    """True when CuPy is installed and sees at least one CUDA device."""
    cupy = _import_cupy()
    if cupy is None:
        return False
    try:
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # CuPy without a driver raises its own CUDA errors
        return False


def is_cupy_array(array):
    """True for a cupy.ndarray; never imports cupy to find out."""
    return type(array).__module__.startswith("cupy")


def device_of(array):
    """'cuda' for a CuPy array, 'cpu' for anything else."""
    return "cuda" if is_cupy_array(array) else "cpu"


def array_module(array):
    """numpy or cupy: the module that computes on `array`."""
    return _import_cupy() if is_cupy_array(array) else np


def module_for(device):
    """numpy for 'cpu', cupy for 'cuda' (with a clear error if there is none)."""
    check_device_name(device)
    if device == "cpu":
        return np
    if not gpu_available():
        raise RuntimeError(
            "device 'cuda' was asked for, but CuPy is not installed or sees no GPU; "
            'install it with `pip install -e ".[gpu]"` on a machine with an NVIDIA GPU'
        )
    return _import_cupy()


def check_device_name(device):
    """Raise a ValueError unless `device` is 'cpu' or 'cuda'."""
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")


def to_device(array, device):
    """Copy `array` to 'cpu' or 'cuda' (no copy when it is already there)."""
    if device_of(array) == device:
        return array
    if device == "cpu":
        return array.get()
    return module_for("cuda").asarray(array)


def same_device(op_name, arrays):
    """The one device all `arrays` live on; mixing devices in one op is an error."""
    devices = {device_of(a) for a in arrays}
    if len(devices) > 1:
        raise RuntimeError(
            f"{op_name}: inputs are on different devices ({' and '.join(sorted(devices))}); "
            f"move them to one device with .to('cpu') or .to('cuda') first"
        )
    return devices.pop() if devices else "cpu"


# 4 MiB: chosen on one machine (a 2-core EPYC, 1 MiB L2, 32 MiB L3), where it was the best of 256 KiB to
# 64 MiB for GELU (bench/RESULTS.md). Not measured on other CPUs: a block that fits their cache is the aim.
CACHE_BLOCK_BYTES = 1 << 22


def cache_blocks(length, bytes_per_row, array):
    """Slices that cut range(length) into blocks of about CACHE_BLOCK_BYTES of rows.

    An op that makes many passes over a large array is bound by memory speed: each pass
    streams the whole array from RAM. Making all the passes over one block before moving
    to the next keeps the block in the CPU cache (GELU's forward: 29 ms -> 16 ms where it was
    measured, bench/RESULTS.md). On a GPU the array is one block: there a kernel launch per
    block would cost more than it saves.
    """
    if is_cupy_array(array):
        return [slice(0, length)]
    rows = max(1, CACHE_BLOCK_BYTES // max(bytes_per_row, 1))
    return [slice(start, min(start + rows, length)) for start in range(0, length, rows)]


def scatter_add(target, index, values):
    """target[index] += values, where repeated indices add up (a plain += would keep only one)."""
    if is_cupy_array(target):
        import cupyx

        cupyx.scatter_add(target, index, values)
    else:
        np.add.at(target, index, values)


def scatter_add_rows(target, ids, rows):
    """target[ids[n]] += rows[n] for every n (ids 1-D), repeated ids adding up.

    On the CPU: sort the ids, sum each run of equal ids with one reduceat, and add
    each sum once. np.add.at handles one element at a time: on 4,096 ids into (500, C) this was
    4.1x faster at C = 128 and 4.7x at C = 192 where measured (bench/RESULTS.md). On the GPU,
    CuPy's scatter_add adds with atomic operations.
    """
    if is_cupy_array(target):
        scatter_add(target, ids, rows)
        return
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    starts = np.flatnonzero(np.diff(sorted_ids, prepend=-1))  # where each run of equal ids begins
    target[sorted_ids[starts]] += np.add.reduceat(rows[order], starts, axis=0)


def cupy_erf(x):
    """The error function on a CuPy array (NumPy has none; tensorlab.ops.elementwise has the CPU one)."""
    import cupyx.scipy.special

    return cupyx.scipy.special.erf(x)
