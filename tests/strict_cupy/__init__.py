"""The strict CuPy stand-in for the tests: `cupy_standin` installed as `cupy`/`cupyx` where no real GPU is.

`install()` puts it into sys.modules for the whole process (used by run.py for train.py
subprocesses); `active()` does it for one test and puts everything back. Neither ever
hides a real GPU: when real CuPy imports and sees a device, they leave it in place.
"""

import contextlib
import sys

from strict_cupy import cupy_standin

ENV = "TENSORLAB_STRICT_CUPY"  # "0" turns the stand-in off (the gpu tests then skip without a GPU)


def real_gpu_present():
    """True when the real CuPy imports and sees at least one CUDA device."""
    if sys.modules.get("cupy") is cupy_standin:
        return False
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # not installed, or no driver: CuPy raises its own CUDA errors
        return False


def _swap_in():
    """Install the stand-in; return what to restore (sys.modules entries, tensorlab.backend's module and probe)."""
    from tensorlab import backend

    saved = {name: sys.modules.get(name) for name in cupy_standin.modules()}, backend._cupy, backend._gpu_problem
    sys.modules.update(cupy_standin.modules())
    backend._cupy, backend._gpu_problem = cupy_standin, backend._UNPROBED
    backend.gpu_problem()  # the stand-in is probed as a GPU is, once, before anything is counted
    cupy_standin.reset_counts()
    return saved


def _swap_out(saved):
    from tensorlab import backend

    modules, backend._cupy, backend._gpu_problem = saved
    for name, module in modules.items():
        if module is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = module


def install():
    """Make `cupy` the stand-in for the rest of the process, unless a real GPU is there. True if installed."""
    if real_gpu_present():
        return False
    _swap_in()
    return True


@contextlib.contextmanager
def active():
    """The stand-in as `cupy` inside the block (a real GPU present: an error, the real one must be used)."""
    if real_gpu_present():
        raise RuntimeError("a real GPU is present: test on it, not on the CuPy stand-in")
    saved = _swap_in()
    try:
        yield cupy_standin
    finally:
        _swap_out(saved)
