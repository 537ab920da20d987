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


_UNPROBED = object()
_gpu_problem = _UNPROBED  # None once a GPU has run the probe's kernels, else the one line that says why not


def gpu_available():
    """True when CuPy can compile and run a kernel on a CUDA device here (see gpu_problem)."""
    return gpu_problem() is None


def gpu_problem():
    """None when the GPU works, else one line naming what is missing: CuPy, the driver, a device or a CUDA library.

    Counting devices is not enough: CuPy without the NVIDIA driver, or without the CUDA libraries it
    loads on first use (NVRTC compiles every elementwise kernel, cuBLAS runs matmul, cuRAND draws
    dropout masks), imports fine and fails deep inside the first op. So the probe runs one small
    kernel of each kind and checks the answer. It runs once per process.
    """
    global _gpu_problem
    if _gpu_problem is _UNPROBED:
        _gpu_problem = _probe_gpu()
    return _gpu_problem


INSTALL_GPU = 'pip install -e ".[gpu]" brings CuPy and the CUDA libraries it needs'


def _probe_gpu():
    cupy = _import_cupy()
    if cupy is None:
        return f"CuPy is not installed ({INSTALL_GPU})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as err:  # no driver, or one too old for CuPy's CUDA: CuPy raises its own CUDA errors
        return f"CuPy finds no usable NVIDIA driver ({_first_line(err)}): install or update the NVIDIA driver"
    if count == 0:
        return "CuPy sees no CUDA device"
    host = np.arange(6, dtype=np.float32).reshape(2, 3)
    try:
        x = cupy.asarray(host)
        y = cupy.exp(x * x.dtype.type(0.1))  # an elementwise kernel, compiled by NVRTC
        product = float((y @ y.T).sum())  # cuBLAS, a reduction, and the copy back
        cupy.random.Generator(cupy.random.Philox4x3210(0)).random(2)  # cuRAND
    except Exception as err:
        return f"CuPy sees {count} GPU(s) but cannot run a kernel: {_name_the_library(err)}"
    y_host = np.exp(host * np.float32(0.1))
    expected = float((y_host @ y_host.T).sum())
    if not abs(product - expected) <= 1e-4 * abs(expected):
        return f"a test kernel on the GPU gave {product}, expected {expected}: the GPU or its driver is not working"
    return None


def _first_line(err):
    return (str(err).strip().splitlines() or [type(err).__name__])[0][:200]


def _name_the_library(err):
    """The CUDA library an error from CuPy names, with what to do; else the error's first line."""
    text = f"{type(err).__name__}: {_first_line(err)}"
    for library, name in (
        ("nvrtc", "NVRTC"),
        ("cublas", "cuBLAS"),
        ("curand", "cuRAND"),
        ("cudart", "the CUDA runtime"),
    ):
        if library in text.lower():
            return f"the CUDA library {name} is missing or unusable ({text}); {INSTALL_GPU}"
    return text


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
    problem = gpu_problem()
    if problem is not None:
        raise RuntimeError(f"device 'cuda' was asked for, but {problem}")
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


def segment_sum(ids, rows, num_segments):
    """out[v] = the sum of rows[n] over every n with ids[n] = v, for v in range(num_segments); ids 1-D.

    The scatter-add that embedding and indexing backwards need, where a repeated id must add
    up. It uses no atomics, so it is bitwise the same on every run, on a GPU too: there
    `atomicAdd` (cupyx.scatter_add, cupy.add.at) would add the rows of a repeated id in an
    order that changes from run to run, and float addition is not associative. Instead: sort
    the ids once (stable, so each id's rows keep their order), find where each id's run
    begins (searchsorted), and sum each run with one add.reduceat. Every shape is known in
    advance, so nothing waits for the GPU (no nonzero, no boolean mask).
    """
    xp = array_module(rows)
    order = xp.argsort(ids, kind="stable")
    sorted_rows = rows[order]
    starts = xp.searchsorted(ids[order], xp.arange(num_segments))  # run of id v: sorted_rows[starts[v]:starts[v+1]]
    lengths = xp.diff(starts, append=xp.asarray([len(ids)], dtype=starts.dtype))
    # reduceat gives row starts[v] for an empty run (and needs starts[v] < len): pad one zero row, mask empty runs.
    padded = xp.concatenate([sorted_rows, xp.zeros((1,) + rows.shape[1:], dtype=rows.dtype)])
    sums = xp.add.reduceat(padded, starts, axis=0)
    present = (lengths > 0).reshape((num_segments,) + (1,) * (rows.ndim - 1))
    return xp.where(present, sums, xp.zeros((), dtype=rows.dtype))


def cupy_erf(x):
    """The error function on a CuPy array, in x's dtype (NumPy has none; tensorlab.ops.elementwise has the CPU one).

    CuPy's erf computes float16 in float64 (its types are e->d, f->f, d->d): cast back.
    """
    import cupyx.scipy.special

    return cupyx.scipy.special.erf(x).astype(x.dtype, copy=False)
