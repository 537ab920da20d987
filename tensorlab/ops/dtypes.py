"""Result dtypes as PyTorch gives them, where NumPy's rules would give another.

NumPy and PyTorch agree on floats with floats and integers with integers. They differ where an
integer meets a float: NumPy widens to float64 (int32 * float32, int / int, exp(int), int ** 0.5)
and PyTorch keeps the float's dtype, or its default dtype (float32) when the float is a Python number
or there is no float. And a Python int wrapped in an array before it meets an int32 array would
make int64 (PyTorch and NumPy's own scalar rule, NEP 50, keep int32).
"""

import numpy as np

from tensorlab import backend

DEFAULT_FLOAT = np.float32  # PyTorch's default dtype, and tensorlab.tensor's for Python floats


def check_floating(op_name, x):
    """TypeError unless array x holds floats, for ops PyTorch refuses on integers (softmax, mean, gelu, ...)."""
    if x.dtype.kind != "f":
        raise TypeError(
            f"{op_name}: input must be floating point, got dtype {x.dtype} (shape {x.shape}); "
            f"convert it first, e.g. x.astype('float32'), as PyTorch asks too"
        )


def as_floating(x):
    """Array x itself if it holds floats, else x in the default float dtype (exp of an int is float32)."""
    return x if x.dtype.kind == "f" else x.astype(DEFAULT_FLOAT)


def promote(a, b, true_divide=False, python_ints=True):
    """The operands a, b (Tensors, arrays or Python numbers) of a binary op, cast so that NumPy gives
    PyTorch's result dtype. An integer or bool array meeting a float takes the float's dtype (the default
    float dtype for a Python float); a Python int meeting an integer array takes the array's dtype.

    true_divide: an integer or bool array divided without floats is first made default float (int / int).
    python_ints=False leaves Python ints alone (a comparison needs no common dtype, and 300 == uint8 array is
    False, not an overflow).
    Python floats are left to Function's scalar rule (they take the other operand's float dtype).
    """
    dtype_a, dtype_b = getattr(a, "dtype", None), getattr(b, "dtype", None)
    one_array = dtype_a is not None or dtype_b is not None
    if one_array and (dtype_a is None or dtype_a.kind == "f") and (dtype_b is None or dtype_b.kind == "f"):
        return a, b  # the usual case, for two lookups: floats, or a float and a Python number
    from tensorlab.tensor import Tensor

    arrays = [v for v in (a, b) if hasattr(v, "dtype")]
    floats = [v.dtype for v in arrays if v.dtype.kind == "f"]
    python_float = any(isinstance(v, float) and not hasattr(v, "dtype") for v in (a, b))
    if floats or python_float or true_divide:
        dtype = max(floats, key=lambda d: d.itemsize) if floats else DEFAULT_FLOAT
        return tuple(
            Tensor(_data(v).astype(dtype)) if hasattr(v, "dtype") and v.dtype.kind != "f" else v for v in (a, b)
        )
    if python_ints and len(arrays) == 1 and arrays[0].dtype.kind in "iu":
        like = _data(arrays[0])
        xp = backend.array_module(like)
        return tuple(xp.asarray(v, dtype=like.dtype) if type(v) is int else v for v in (a, b))
    return a, b


def _data(v):
    from tensorlab.tensor import Tensor

    return v.data if isinstance(v, Tensor) else v
