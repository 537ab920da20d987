"""A strict stand-in for the `cupy` module, computing with NumPy on the host.

It behaves as CuPy does where tensorlab could get CuPy wrong on a CPU-only machine
(each rule and its source in CuPy is listed in README.md):
  - an `ndarray` is not a NumPy array: implicit conversion (`np.asarray(x)`) raises
    TypeError, and NumPy functions and ufuncs refuse it as an operand;
  - CuPy functions and operators refuse NumPy arrays as operands (only cupy.array,
    cupy.asarray, cupy.ascontiguousarray and `x[...] = host_array` copy from the host);
  - reductions and scalar indexing give 0-d arrays, not Python or NumPy scalars;
  - out-of-range integer-array indices wrap around (i % n) instead of raising;
  - every device-to-host transfer (.get(), asnumpy, float(), int(), bool(), .item(),
    .tolist(), repr) and every wait for the device (a boolean mask, nonzero) is counted in
    `transfers`, and host-to-device copies in `uploads`;
  - functions take only CuPy 14.2's keywords, and ufuncs give CuPy's result dtypes;
  - two modes a real GPU may show: `atomic_order = "random"` adds the targets of
    `cupy.add.at` in a random order, as atomicAdd may; `missing_library = "nvrtc"` (or
    "cublas", "curand") fails as CuPy does where that CUDA library is not installed.
    Both start from the environment (ATOMICS_ENV, MISSING_ENV) for whole-program runs.
Only the functions tensorlab uses are offered, each one that real CuPy has (tests/test_cupy_conformance.py
checks every name, keyword and dtype rule against the real module when it is installed).
"""

import builtins
import collections
import inspect
import math
import os
import sys
import types

import numpy

transfers = collections.Counter()  # device -> host and waits, by kind: "get", "float", "bool", "mask", "nonzero"...
uploads = collections.Counter()  # host -> device, by kind: "asarray", "setitem", "index"

ATOMICS_ENV = "TENSORLAB_STRICT_CUPY_ATOMICS"  # "random": atomic adds in a random order
MISSING_ENV = "TENSORLAB_STRICT_CUPY_MISSING"  # "nvrtc", "cublas" or "curand": that CUDA library is missing
atomic_order = os.environ.get(ATOMICS_ENV, "serial")
missing_library = os.environ.get(MISSING_ENV) or None
_atomic_rng = numpy.random.default_rng()  # the order of atomic adds: unseeded, as a GPU's scheduling is

# What CuPy says when it cannot load a CUDA library (cupy_backends' loaders): NVRTC on the first kernel it
# compiles, cuBLAS and cuRAND on import of their bindings, at the first matmul or random draw.
_LOAD_ERRORS = {
    "nvrtc": (
        RuntimeError,
        "CuPy failed to load libnvrtc.so.12: OSError: libnvrtc.so.12: cannot open shared object file",
    ),
    "cublas": (ImportError, "libcublas.so.12: cannot open shared object file: No such file or directory"),
    "curand": (ImportError, "libcurand.so.10: cannot open shared object file: No such file or directory"),
}


def _needs(library):
    """Raise as CuPy does when `library` ('nvrtc', 'cublas', 'curand') is the one missing_library names."""
    if missing_library == library:
        error, message = _LOAD_ERRORS[library]
        raise error(message)


def reset_counts():
    """Zero both transfer counters."""
    transfers.clear()
    uploads.clear()


def _unsupported(value):
    # cupy/_core/_kernel.pyx, _preprocess_arg: anything not a cupy array or scalar
    raise TypeError(f"Unsupported type {type(value)}")


def _dev(value):
    """The NumPy array behind a stand-in operand; a NumPy array is refused as CuPy refuses it."""
    if isinstance(value, ndarray):
        return value._a
    if isinstance(value, numpy.ndarray):
        _unsupported(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_dev(v) for v in value)
    return value


def _wrap(result):
    """A stand-in array for a NumPy result; NumPy scalars become 0-d arrays, as CuPy returns them."""
    if isinstance(result, numpy.ndarray):
        return ndarray._from_host_array(result)
    if isinstance(result, numpy.generic):
        return ndarray._from_host_array(numpy.asarray(result))
    if isinstance(result, tuple):
        return tuple(_wrap(r) for r in result)
    return result


def _host_to_device(value, kind):
    """Unwrap `value`, counting a copy from the host when it is a NumPy array."""
    if isinstance(value, ndarray):
        return value._a
    if isinstance(value, numpy.ndarray):
        uploads[kind] += 1
        return value
    return value


# ----- indexing: integer arrays wrap around, as CuPy's take and fancy indexing do ---------------------


def _normalize_key(key, shape, kind):
    """The NumPy key for `key` on an array of `shape`, with integer-array indices wrapped modulo their axis.

    A boolean mask makes the host wait: the result's size is its count of True, which the host must
    read before it can allocate (counted as a "mask" transfer).
    """
    if not isinstance(key, tuple):
        key = (key,)
    key = tuple(_host_to_device(k, kind) if isinstance(k, (ndarray, numpy.ndarray)) else k for k in key)
    for _ in filter(_is_bool_array, key):
        transfers["mask"] += 1
    consumed = builtins.sum(
        1
        if k is not Ellipsis and k is not None and not _is_bool_array(k)
        else (numpy.ndim(k) if _is_bool_array(k) else 0)
        for k in key
    )
    out, axis = [], 0
    for k in key:
        if k is Ellipsis:
            axis += len(shape) - consumed
            out.append(k)
        elif k is None:
            out.append(k)
        elif _is_bool_array(k):
            axis += numpy.ndim(k)
            out.append(k)
        elif isinstance(k, (list, numpy.ndarray)) and numpy.asarray(k).dtype.kind in "iu":
            k = numpy.asarray(k)
            out.append(k % shape[axis] if shape[axis] else k)  # out-of-range ids wrap: i % n
            axis += 1
        else:
            out.append(k)
            axis += 1
    return tuple(out)


def _is_bool_array(k):
    return isinstance(k, (numpy.ndarray, list)) and numpy.asarray(k).dtype == bool


class ndarray:
    """A device array: NumPy storage, CuPy's rules (see the module docstring)."""

    __array_priority__ = 100
    __array_ufunc__ = None  # NumPy ufuncs (np.exp(x), np_array + x) refuse it: they raise TypeError
    __hash__ = None

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C"):
        # cupy.ndarray(shape, dtype=float, memptr=None, strides=None, order='C'): uninitialised memory
        if memptr is not None or strides is not None:
            raise NotImplementedError("the stand-in allocates its own memory")
        self._a = numpy.empty(shape, dtype=dtype, order=order)

    @classmethod
    def _from_host_array(cls, array):
        self = cls.__new__(cls)
        self._a = array
        return self

    # ----- no implicit conversion, no NumPy functions --------------------------------------------------

    def __array__(self, dtype=None, copy=None):
        # cupy/_core/core.pyx, ndarray.__array__
        raise TypeError(
            "Implicit conversion to a NumPy array is not allowed. "
            "Please use `.get()` to construct a NumPy array explicitly."
        )

    def __array_function__(self, func, types, args, kwargs):
        return NotImplemented  # NumPy raises TypeError: no implementation found for 'numpy.<func>'

    # ----- device -> host transfers, each counted ------------------------------------------------------

    def get(self, stream=None, order="C", out=None, blocking=True):
        transfers["get"] += 1
        host = numpy.array(self._a, order=order, copy=True)
        if out is not None:
            out[...] = host
            return out
        return host

    def item(self):
        transfers["item"] += 1
        return self._a.item()

    def tolist(self):
        transfers["tolist"] += 1
        return self._a.tolist()

    def __float__(self):
        transfers["float"] += 1
        return float(self._a)

    def __int__(self):
        transfers["int"] += 1
        return int(self._a)

    def __complex__(self):
        transfers["complex"] += 1
        return complex(self._a)

    def __bool__(self):
        transfers["bool"] += 1
        return bool(self._a)

    def __repr__(self):
        transfers["repr"] += 1
        return repr(self._a)

    def __str__(self):
        transfers["repr"] += 1
        return str(self._a)

    def __format__(self, spec):
        transfers["repr"] += 1
        return format(self._a.item() if self._a.ndim == 0 else self._a, spec)

    # ----- attributes -----------------------------------------------------------------------------------

    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    nbytes = property(lambda self: self._a.nbytes)
    itemsize = property(lambda self: self._a.itemsize)
    strides = property(lambda self: self._a.strides)
    flags = property(lambda self: self._a.flags)
    T = property(lambda self: _wrap(self._a.T))
    device = property(lambda self: cuda.Device(0))

    @property
    def base(self):
        return None if self._a.base is None else _wrap(self._a.base)

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        return (self[i] for i in range(len(self)))  # 0-d arrays, never host scalars

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    # ----- methods cupy.ndarray has (the ones tensorlab uses); out-of-range take wraps ------------------

    def take(self, indices, axis=None, out=None):
        return take(self, indices, axis=axis, out=out)

    def __getitem__(self, key):
        return _wrap(self._a[_normalize_key(key, self.shape, "index")])

    def __setitem__(self, key, value):
        # cupy/_core/_routines_indexing.pyx, _scatter_op: a value that is not a cupy array goes to fill(),
        # which takes scalars only: a NumPy array's truth value is asked for (ValueError), a list is refused
        if isinstance(value, numpy.ndarray) and value.ndim:
            raise ValueError(
                "The truth value of an array with more than one element is ambiguous. Use a.any() or a.all()"
            )
        if isinstance(value, (list, tuple)):
            _unsupported(value)
        _needs("nvrtc")
        self._a[_normalize_key(key, self.shape, "index")] = _dev(value) if isinstance(value, ndarray) else value

    def set(self, arr, stream=None):
        self._a[...] = _host_to_device(arr, "set")


def _signature(parameters):
    """An inspect.Signature from a parameter list written as in CuPy's reference ("a, axis=None, *, out=None")."""
    return inspect.signature(eval(f"lambda {parameters}: None", {"float": float}))  # noqa: S307 (our own literals)


def _bind(name, signature, args, kwargs):
    """Refuse a keyword or argument count CuPy's `name` does not take, as Python would for CuPy's own function."""
    try:
        signature.bind(*args, **kwargs)
    except TypeError as err:
        raise TypeError(f"{name}() {err}") from None


# cupy.ndarray's methods that tensorlab uses, with CuPy 14.2's parameters (first line of each docstring)
_METHODS = {
    "all": "axis=None, out=None, keepdims=False",
    "any": "axis=None, out=None, keepdims=False",
    "argmax": "axis=None, out=None, dtype=None, keepdims=False",
    "argmin": "axis=None, out=None, dtype=None, keepdims=False",
    "argsort": "axis=-1, kind=None",
    "astype": "dtype, order='K', casting=None, subok=None, copy=True",
    "clip": "min=None, max=None, out=None",
    "copy": "order='C'",
    "cumsum": "axis=None, dtype=None, out=None",
    "diagonal": "offset=0, axis1=0, axis2=1",
    "dot": "b, out=None",
    "fill": "value",
    "flatten": "order='C'",
    "max": "axis=None, out=None, keepdims=False",
    "mean": "axis=None, dtype=None, out=None, keepdims=False",
    "min": "axis=None, out=None, keepdims=False",
    "nonzero": "",
    "prod": "axis=None, dtype=None, out=None, keepdims=None",
    "ravel": "order='C'",
    "repeat": "repeats, axis=None",
    "reshape": "*shape, order='C', copy=None",
    "round": "decimals=0, out=None",
    "sort": "axis=-1, kind=None",
    "squeeze": "axis=None",
    "std": "axis=None, dtype=None, out=None, ddof=0, keepdims=False",
    "sum": "axis=None, dtype=None, out=None, keepdims=False",
    "swapaxes": "axis1, axis2",
    "transpose": "*axes",
    "var": "axis=None, dtype=None, out=None, ddof=0, keepdims=False",
    "view": "dtype=None, type=None",
    "conj": "",
}
_SYNCS = {"nonzero", "argwhere", "flatnonzero"}  # their result's size is on the device: the host must wait for it


def _method(name, parameters):
    signature = _signature(parameters)

    def method(self, *args, **kwargs):
        _bind(f"ndarray.{name}", signature, args, kwargs)
        if name in _SYNCS:
            transfers["nonzero"] += 1
        _needs("nvrtc")
        return _wrap(getattr(self._a, name)(*_dev(args), **{k: _dev(v) for k, v in kwargs.items()}))

    method.__name__ = name
    method.__signature__ = _signature("self, " + parameters if parameters else "self")
    return method


for _name, _parameters in _METHODS.items():
    setattr(ndarray, _name, _method(_name, _parameters))


def _operator(name, inplace=False):
    numpy_op = getattr(numpy.ndarray, name)

    def op(self, other):
        if isinstance(other, numpy.ndarray):
            _unsupported(other)  # cupy_array + numpy_array raises, as in CuPy
        if not isinstance(other, (ndarray, int, float, complex, bool, numpy.generic)):
            return NotImplemented
        _needs("cublas" if "matmul" in name else "nvrtc")
        result = numpy_op(self._a, _dev(other))
        if result is NotImplemented:
            return NotImplemented
        return self if inplace else _wrap(result)

    op.__name__ = name
    return op


for _name in (
    "add",
    "sub",
    "mul",
    "truediv",
    "floordiv",
    "mod",
    "pow",
    "matmul",
    "and",
    "or",
    "xor",
    "lshift",
    "rshift",
):
    setattr(ndarray, f"__{_name}__", _operator(f"__{_name}__"))
    setattr(ndarray, f"__r{_name}__", _operator(f"__r{_name}__"))
    setattr(ndarray, f"__i{_name}__", _operator(f"__i{_name}__", inplace=True))
for _name in ("lt", "le", "gt", "ge", "eq", "ne"):
    setattr(ndarray, f"__{_name}__", _operator(f"__{_name}__"))
for _name in ("neg", "pos", "abs", "invert"):
    setattr(ndarray, f"__{_name}__", (lambda n: lambda self: _wrap(getattr(self._a, n)()))(f"__{_name}__"))

ndarray.__module__ = "cupy"  # as type(cupy_array).__module__ reads: tensorlab.backend tells arrays apart by it


# ----- module functions (each one CuPy has; signatures as CuPy's) ---------------------------------------


def array(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0, *, blocking=False):
    host = _host_to_device(obj, "asarray")
    return _wrap(numpy.array(host, dtype=dtype, copy=copy, order=order, ndmin=ndmin))


def asarray(a, dtype=None, order=None, copy=None, *, blocking=False):
    if isinstance(a, ndarray) and (dtype is None or numpy.dtype(dtype) == a.dtype) and not copy:
        return a
    return _wrap(numpy.array(_host_to_device(a, "asarray"), dtype=dtype, order=order, copy=bool(copy) or None))


def ascontiguousarray(a, dtype=None):
    if isinstance(a, ndarray) and a._a.flags.c_contiguous and (dtype is None or numpy.dtype(dtype) == a.dtype):
        return a
    return _wrap(numpy.ascontiguousarray(_host_to_device(a, "asarray"), dtype=dtype))


def asnumpy(a, stream=None, order="C", out=None, *, blocking=True):
    if isinstance(a, ndarray):
        return a.get(stream=stream, order=order, out=out, blocking=blocking)
    return numpy.asarray(a, order=order)


def get_array_module(*args):
    return sys.modules[__name__] if any(isinstance(a, ndarray) for a in args) else numpy


def take(a, indices, axis=None, out=None):
    # cupy.take has no `mode`: out-of-range indices wrap (docs: "This function currently does not support mode")
    data = _dev(a)
    size = data.size if axis is None else data.shape[axis]
    wrapped = numpy.asarray(_dev(indices)) % size if size else _dev(indices)
    result = numpy.take(data, wrapped, axis=axis)
    if out is not None:
        out._a[...] = result
        return out
    return _wrap(result)


def _function(name, parameters):
    numpy_function = getattr(numpy, name)
    signature = _signature(parameters)

    def function(*args, **kwargs):
        _bind(name, signature, args, kwargs)
        if name in _SYNCS or (name == "where" and len(args) + len(kwargs) == 1):
            transfers["nonzero"] += 1
        _needs("cublas" if name in ("matmul", "dot", "einsum", "outer") else "nvrtc")
        return _wrap(numpy_function(*_dev(args), **{k: _dev(v) for k, v in kwargs.items()}))

    function.__name__ = function.__qualname__ = name
    function.__signature__ = signature
    return function


# CuPy 14.2's functions that tensorlab uses, with their parameters (inspect.signature of the real ones)
_FUNCTIONS = {
    # creation
    "empty": "shape, dtype=float, order='C'",
    "empty_like": "prototype, dtype=None, order='K', subok=None, shape=None",
    "zeros": "shape, dtype=float, order='C'",
    "zeros_like": "a, dtype=None, order='K', subok=None, shape=None",
    "ones": "shape, dtype=float, order='C'",
    "ones_like": "a, dtype=None, order='K', subok=None, shape=None",
    "full": "shape, fill_value, dtype=None, order='C'",
    "full_like": "a, fill_value, dtype=None, order='K', subok=None, shape=None",
    "arange": "start, stop=None, step=1, dtype=None",
    "triu": "m, k=0",
    "tril": "m, k=0",
    # shape, selection, sorting
    "reshape": "a, newshape, order='C', copy=None",
    "transpose": "a, axes=None",
    "swapaxes": "a, axis1, axis2",
    "broadcast_to": "array, shape",
    "concatenate": "tup, axis=0, out=None, *, dtype=None, casting='same_kind'",
    "stack": "tup, axis=0, out=None, *, dtype=None, casting='same_kind'",
    "where": "condition, x=None, y=None",
    "argwhere": "a",
    "nonzero": "a",
    "flatnonzero": "a",
    "argsort": "a, axis=-1, kind=None",
    "searchsorted": "a, v, side='left', sorter=None",
    "diff": "a, n=1, axis=-1, prepend=None, append=None",
    # reductions
    "sum": "a, axis=None, dtype=None, out=None, keepdims=False",
    "mean": "a, axis=None, dtype=None, out=None, keepdims=False",
    "max": "a, axis=None, out=None, keepdims=False",
    "amax": "a, axis=None, out=None, keepdims=False",
    "min": "a, axis=None, out=None, keepdims=False",
    "amin": "a, axis=None, out=None, keepdims=False",
    "argmax": "a, axis=None, dtype=None, out=None, keepdims=False",
    "cumsum": "a, axis=None, dtype=None, out=None",
    "prod": "a, axis=None, dtype=None, out=None, keepdims=False",
    "allclose": "a, b, rtol=1e-05, atol=1e-08, equal_nan=False",
    "array_equal": "a1, a2, equal_nan=False",
    "may_share_memory": "a, b, max_work=None",
    # linear algebra (cuBLAS)
    "matmul": "*args, axes=None, axis=None, keepdims=False, casting='same_kind', dtype=None, signature=None, "
    "order='K', out=None",
    "einsum": "*operands, **kwargs",
    "dot": "a, b, out=None",
    "outer": "a, b, out=None",
}
for _name, _parameters in _FUNCTIONS.items():
    globals()[_name] = _function(_name, _parameters)


class ufunc:
    """cupy.ufunc: elementwise on cupy arrays and scalars only; call keywords out, casting and dtype.

    Result dtypes follow `types` ('ff->f', ...), CuPy's table, where it is given (erf); else
    NumPy's, which tests/test_cupy_conformance.py checks equal to CuPy's for every offered ufunc.
    Of the methods, `reduceat` and `at` (an atomic add on a GPU: see atomic_order).
    """

    def __init__(self, name, numpy_ufunc, types=None):
        self.__name__ = self.name = name
        self._numpy = numpy_ufunc
        self.nin, self.nout = numpy_ufunc.nin, numpy_ufunc.nout
        self.types = list(types or numpy_ufunc.types)
        self._own_types = types is not None

    def __repr__(self):
        return f"<ufunc '{self.name}'>"

    def __call__(self, *args, out=None, casting="same_kind", dtype=None):
        for arg in args:
            if isinstance(arg, (list, tuple)):
                _unsupported(arg)  # CuPy's ufuncs take only cupy arrays and scalars: a list is refused too
        if len(args) != self.nin:
            raise TypeError(f"Wrong number of arguments for {self.name}")
        _needs("nvrtc")
        inputs = _dev(args)
        if self._own_types:  # a Python function (erf): NumPy computes objects, the table gives the dtype
            result = numpy.asarray(self._numpy(*inputs)).astype(dtype or self._result_type(inputs))
        else:
            result = self._numpy(*inputs, casting=casting, **({} if dtype is None else {"dtype": dtype}))
        if out is None:
            return _wrap(result)
        out._a[...] = result
        return out

    def _result_type(self, inputs):
        """The output dtype from `types`: the first loop every input casts to safely, as CuPy chooses."""
        dtypes = [numpy.asarray(x).dtype for x in inputs]
        for loop in self.types:
            ins, outs = loop.split("->")
            if all(numpy.can_cast(d, numpy.dtype(c), "safe") for d, c in zip(dtypes, ins)):
                return numpy.dtype(outs[0])
        raise TypeError(f"ufunc '{self.name}' not supported for the input types {dtypes}")

    def reduceat(self, array, indices, axis=0, dtype=None, out=None):
        _needs("nvrtc")
        result = self._numpy.reduceat(_dev(array), _dev(indices), axis=axis, dtype=dtype)
        if out is None:
            return _wrap(result)
        out._a[...] = result
        return out

    def at(self, a, indices, b=None):
        """a[indices] op= b, repeated indices applied each (ids wrap); in a random order under atomic_order."""
        _needs("nvrtc")
        target = a._a.reshape(-1)  # a view: a must be contiguous, as every array tensorlab makes is
        picked = numpy.arange(a.size).reshape(a.shape)[_normalize_key(indices, a.shape, "index")]
        values = numpy.broadcast_to(_dev(b), picked.shape).reshape(-1)
        picked = picked.reshape(-1)
        if atomic_order == "random":
            order = _atomic_rng.permutation(picked.size)
            picked, values = picked[order], values[order]
        self._numpy.at(target, picked, values)


_UFUNCS = (
    "add",
    "subtract",
    "multiply",
    "divide",
    "true_divide",
    "negative",
    "power",
    "square",
    "sqrt",
    "exp",
    "log",
    "log1p",
    "expm1",
    "tanh",
    "sin",
    "cos",
    "abs",
    "absolute",
    "sign",
    "maximum",
    "minimum",
    "reciprocal",
    "copysign",
    "isfinite",
    "isnan",
    "isinf",
    "logical_and",
    "logical_or",
    "logical_not",
    "equal",
    "not_equal",
    "less",
    "greater",
)
for _name in _UFUNCS:
    globals()[_name] = ufunc(_name, getattr(numpy, _name))

# dtypes and constants are NumPy's own objects in CuPy too
for _name in (
    "dtype",
    "float16",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "bool_",
    "iinfo",
    "finfo",
    "result_type",
    "newaxis",
    "inf",
    "nan",
    "pi",
    "e",
):
    globals()[_name] = getattr(numpy, _name)


linalg = types.ModuleType("cupy.linalg")
linalg.norm = lambda x, ord=None, axis=None, keepdims=False: _wrap(numpy.linalg.norm(_dev(x), ord, axis, keepdims))


# ----- cupy.random: the Generator API ------------------------------------------------------------------


class _BitGenerator:
    """cupy.random.XORWOW / Philox4x3210(seed=None, *, size=-1): a cuRAND generator seeded with 32 bits.

    As in CuPy, the seed (None, int, array_like[ints] or a SeedSequence) goes through
    numpy.random.SeedSequence, which gives the one 32-bit number that seeds cuRAND. The
    stream comes from NumPy's Philox keyed with it (not cuRAND's stream); it is computed
    on the host at once, like every stand-in array, and no transfer is counted.
    """

    def __init__(self, seed=None, *, size=-1):
        seed_seq = seed if isinstance(seed, numpy.random.SeedSequence) else numpy.random.SeedSequence(seed)
        self._seed = seed_seq.generate_state(1, numpy.uint32)[0]
        self._numpy = numpy.random.Generator(numpy.random.Philox(key=int(self._seed)))


class _Generator:
    """cupy.random.Generator(bit_generator): random, standard_normal, integers, uniform; size=None gives a 0-d array."""

    def __init__(self, bit_generator):
        if not isinstance(bit_generator, _BitGenerator):
            raise TypeError(f"cupy.random.Generator takes a BitGenerator, got {type(bit_generator).__name__}")
        self.bit_generator = bit_generator
        self._rng = bit_generator._numpy

    def random(self, size=None, dtype=numpy.float64, out=None):
        _needs("curand")
        return self._fill(self._rng.random(size=() if size is None else size, dtype=dtype), out)

    def standard_normal(self, size=None, dtype=numpy.float64, out=None):
        _needs("curand")
        return self._fill(self._rng.standard_normal(size=() if size is None else size, dtype=dtype), out)

    def uniform(self, low=0.0, high=1.0, size=None, dtype=numpy.float64):
        _needs("curand")
        return _wrap(numpy.asarray(self._rng.uniform(_dev(low), _dev(high), size=size)).astype(dtype))

    def integers(self, low, high=None, size=None, dtype=numpy.int64, endpoint=False):
        _needs("curand")
        return _wrap(numpy.asarray(self._rng.integers(low, high, size=size, dtype=dtype, endpoint=endpoint)))

    @staticmethod
    def _fill(values, out):
        if out is not None:
            out._a[...] = values
            return out
        return _wrap(numpy.asarray(values))


random = types.ModuleType("cupy.random")
random.XORWOW = type("XORWOW", (_BitGenerator,), {"__module__": "cupy.random"})
random.Philox4x3210 = type("Philox4x3210", (_BitGenerator,), {"__module__": "cupy.random"})
random.default_rng = lambda seed=None: _Generator(random.XORWOW(seed))
random.Generator = _Generator


# ----- cupy.cuda: one device ---------------------------------------------------------------------------


class _Device:
    """cupy.cuda.Device(device=None): a context manager naming device 0."""

    def __init__(self, device=None):
        self.id = 0 if device is None else int(device)
        if self.id != 0:
            raise RuntimeError(f"the CuPy stand-in has one device (0), got {self.id}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def synchronize(self):
        pass

    def __eq__(self, other):
        return isinstance(other, _Device) and other.id == self.id

    __hash__ = object.__hash__


cuda = types.ModuleType("cupy.cuda")
cuda.Device = _Device
cuda.runtime = types.SimpleNamespace(getDeviceCount=lambda: 1)
cuda.is_available = lambda: True


# ----- cupyx.scipy.special.erf --------------------------------------------------------------------------

# cupyx.scipy.special.erf: its CuPy table computes float16 in float64 ('e->d')
erf = ufunc("erf", numpy.frompyfunc(math.erf, 1, 1), types=["e->d", "f->f", "d->d"])

cupyx = types.ModuleType("cupyx")
cupyx.scipy = types.ModuleType("cupyx.scipy")
cupyx.scipy.special = types.ModuleType("cupyx.scipy.special")
cupyx.scipy.special.erf = erf


def modules():
    """The sys.modules entries that make `import cupy` / `import cupyx.scipy.special` find the stand-in."""
    this = sys.modules[__name__]
    return {
        "cupy": this,
        "cupy.random": random,
        "cupy.cuda": cuda,
        "cupy.linalg": linalg,
        "cupyx": cupyx,
        "cupyx.scipy": cupyx.scipy,
        "cupyx.scipy.special": cupyx.scipy.special,
    }
