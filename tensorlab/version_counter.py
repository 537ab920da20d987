"""The version counter: backward refuses values that were changed in place after an op saved them.

An op's backward reads what its forward saved: `x` for `x * x`, `y` for `exp`. Write into that memory
between forward and backward and the gradient is computed from the new values, silently wrong:

    y = x * x;  x.data[...] = 10;  y.sum().backward()      # 2 * 10 instead of 2 * x

PyTorch counts the in-place writes into each tensor (its `_version`) and backward refuses a saved tensor
whose count moved. tensorlab counts them per block of memory, so every tensor that shares the block (a
reshape, a slice, a `detach()`) sees the write. Function.__call__ notes how many writes there had been;
before backward runs an op, it looks for memory the op kept that was written since, and names the op and
the tensor.

Writes are counted when they go through `Tensor.data`, which hands out a `WatchedArray`: an ndarray that
counts `[...] =`, `+=` and the other in-place operators, ufuncs with `out=`, `fill`, `np.copyto` and the
other NumPy functions that write into their first argument, on itself and on every view taken from it
(`x.data[0]`, `x.data.T`). Optimizers write through `.data` too, so `loss = f(w); opt.step();
loss.backward()` is refused as in PyTorch. Not counted: a write through another name for the memory (a
NumPy array you wrapped with `Tensor(array)`, then `array[0] = 1`), and writes on CuPy arrays (the GPU
hands out its arrays unwatched; docs/differences-from-pytorch.md).
"""

import weakref

import numpy as np

writes = 0  # watched writes so far, into any memory: Function.__call__ notes it, a cheap "anything since?"
_last_write = {}  # id(memory owner) -> the number of the latest watched write into it; absent: never written


def owner(array):
    """The array that owns the memory `array` looks at (itself when it owns it)."""
    base = getattr(array, "base", None)
    while hasattr(base, "strides"):  # an array; a bytes or mmap base (no strides) owns the memory: stop there
        array, base = base, base.base
    return array


def count_write(array):
    """Note one in-place write into the memory of `array`."""
    global writes
    memory = owner(array)
    key = id(memory)
    if key not in _last_write:
        weakref.finalize(memory, _last_write.pop, key, None)  # the id may be reused once the memory is gone
    writes += 1
    _last_write[key] = writes


def changed_saved(fn):
    """An array `fn` kept for its backward whose memory was written since `fn` ran forward; None if none.

    `fn.writes_before` is `writes` when it ran; backward asks only when `writes` has moved since, so the
    usual case costs it one comparison. Only memory that `fn` kept counts: `x + y` keeps nothing, so writing
    into x after it changes no gradient (PyTorch lets that pass too).
    """
    for array in _kept_arrays(fn):
        if _last_write.get(id(owner(array)), 0) > fn.writes_before:
            return array
    return None


def _kept_arrays(fn):
    """Every array `fn` keeps on itself (its inputs' tensors aside), alone or in a tuple or list."""
    for name, value in vars(fn).items():
        if name != "inputs":
            yield from (a for a in (value if isinstance(value, (tuple, list)) else [value]) if hasattr(a, "strides"))


def watched(array):
    """`array` as Tensor.data hands it out: a WatchedArray view for a NumPy array, a CuPy array as it is."""
    if type(array) is not np.ndarray:
        return array
    view = array.view(WatchedArray)
    view.source = array
    return view


def unwatched(array):
    """The plain array behind a WatchedArray (the very array Tensor.data viewed, when it is that view)."""
    if not isinstance(array, WatchedArray):
        return array
    return array.source if array.source is not None else array.view(np.ndarray)


class WatchedArray(np.ndarray):
    """An ndarray whose in-place writes are counted (see the module docstring); `Tensor.data` hands one out.

    Computing with it gives plain ndarrays back; views of it (slices, transposes) are watched too.
    """

    source = None  # the plain array Tensor.data viewed; None for a view taken from that view

    def __setitem__(self, index, value):
        count_write(self)
        super().__setitem__(index, value)

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        if method == "at" and isinstance(inputs[0], WatchedArray):  # np.add.at(a, ...) writes into a
            count_write(inputs[0])
        if out is None:
            return getattr(ufunc, method)(*[unwatched(x) for x in inputs], **kwargs)
        for array in out:  # out= is written: `a -= b` comes here as np.subtract(a, b, out=(a,))
            if isinstance(array, WatchedArray):
                count_write(array)
        kwargs["out"] = tuple([unwatched(array) for array in out])
        getattr(ufunc, method)(*[unwatched(x) for x in inputs], **kwargs)
        return out[0] if len(out) == 1 else out  # `a += b` must hand back `a` itself

    def __array_function__(self, func, types, args, kwargs):
        target = args[0] if func in _WRITES_FIRST_ARGUMENT and args else kwargs.get("out")
        if isinstance(target, WatchedArray):
            count_write(target)
        return super().__array_function__(func, types, args, kwargs)

    def fill(self, value):
        count_write(self)
        super().fill(value)

    def put(self, *args, **kwargs):
        count_write(self)
        super().put(*args, **kwargs)

    def sort(self, *args, **kwargs):
        count_write(self)
        super().sort(*args, **kwargs)

    def partition(self, *args, **kwargs):
        count_write(self)
        super().partition(*args, **kwargs)


_WRITES_FIRST_ARGUMENT = {np.copyto, np.put, np.place, np.putmask, np.fill_diagonal, np.put_along_axis}
