"""Keeping freed memory for the next training step (Linux with glibc).

A training step allocates and frees the same large arrays every time. By default
glibc's malloc gives big freed blocks back to the operating system: an array above its
mmap threshold gets a mapping of its own that free() unmaps, and free space at the top
of the heap is trimmed. The next step's arrays then land on fresh pages, which the
kernel zero-fills one 4 KiB page at a time on first touch: we measured 19,000 to 42,000
page faults per step, 15 to 40% of the step's time. Raising the thresholds makes malloc
keep freed memory and hand it out again, as the caching allocators of PyTorch (on GPUs)
and CuPy do. Resident memory then stays near its peak between steps instead of dropping.

The setting is process-wide and cannot be undone, so tensorlab never makes it on its own:
`import tensorlab` leaves malloc alone. A program that runs training steps asks for it once,
at its start (train.py and the bench/ scripts do):

    import tensorlab.memory
    tensorlab.memory.keep_freed_memory()

The cost is resident memory that stays at its peak after big arrays are freed (bench/RESULTS.md,
"Keeping freed memory", has the numbers for both sides).
"""

import ctypes
import sys

_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3  # mallopt parameters, from glibc's malloc.h
_SETTINGS = {
    _M_MMAP_THRESHOLD: 32 << 20,  # arrays up to 32 MiB (glibc's maximum) come from the reusable heap
    _M_TRIM_THRESHOLD: 1 << 30,  # never give back less than 1 GiB of free heap top
    _M_TOP_PAD: 64 << 20,  # grow the heap 64 MiB at a time
}


def keep_freed_memory():
    """Ask glibc's malloc, for the whole process, to keep freed blocks for reuse; False where it cannot (not glibc)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:  # another C library (musl): leave it as it is
        return False
    return all(libc.mallopt(option, value) == 1 for option, value in _SETTINGS.items())
