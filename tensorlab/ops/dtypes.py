"""Result dtypes: PyTorch's promotion rule, in one place (result_type), which every op's dtype goes through.

The categories are bool < integer < floating. An op's operands come in three ranks: tensors with axes,
0-d tensors, Python numbers (a Python bool, int and float stand for bool, int64 and the default float32).
A higher category always wins; within the winning category the highest rank decides, its operands
promoting among themselves (int32 with int64 gives int64, float32 with float64 float64). So
float32 (3,) + float64 0-d is float32, int64 (3,) + 2.5 is float32, bool ** 2 is int64, and a uint8
tensor + 3 stays uint8, where NumPy would widen each of them.
"""

import numpy as np

DEFAULT_FLOAT = np.dtype(np.float32)  # PyTorch's default dtype, and tensorlab.tensor's for Python floats
_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2}
_PYTHON_NUMBER = {bool: np.dtype(bool), int: np.dtype(np.int64), float: DEFAULT_FLOAT}


def result_type(*operands):
    """PyTorch's result dtype for an op of `operands`: Tensors, arrays or Python numbers (None is skipped)."""
    first = getattr(operands[0], "dtype", None) if operands else None
    if first is not None and all(hasattr(v, "dtype") and v.dtype == first for v in operands[1:]):
        return first  # one dtype among tensors and arrays, whatever their ranks: that one (most ops of a step)
    best = {}  # rank (0: tensors with axes, 1: 0-d tensors, 2: Python numbers) -> the promoted dtype of that rank
    for v in operands:
        if v is None:
            continue
        if not hasattr(v, "dtype") and type(v) not in _PYTHON_NUMBER:
            raise TypeError(f"expected tensors, arrays or Python numbers as operands, got {type(v).__name__} {v!r:.40}")
        rank, dtype = (0 if v.ndim else 1, v.dtype) if hasattr(v, "dtype") else (2, _PYTHON_NUMBER[type(v)])
        best[rank] = _promote(best[rank], dtype) if rank in best else dtype
    result = None
    for rank in sorted(best):  # a lower rank takes over only with a higher category
        if result is None or _CATEGORY[best[rank].kind] > _CATEGORY[result.kind]:
            result = best[rank]
    return result


def _promote(a, b):
    """Two dtypes of one rank: the higher category's; within one category NumPy's (and PyTorch's) widening."""
    if _CATEGORY[a.kind] != _CATEGORY[b.kind]:
        return a if _CATEGORY[a.kind] > _CATEGORY[b.kind] else b
    return np.promote_types(a, b)


def floating(dtype):
    """dtype itself if it is floating, else the default float dtype: the result of int / int, exp of an int."""
    return dtype if dtype.kind == "f" else DEFAULT_FLOAT


def promote(op_name, *operands, dtype=None):
    """The operands cast to `dtype` (result_type's by default), in the graph: see cast."""
    dtype = result_type(*operands) if dtype is None else dtype
    return tuple(cast(op_name, v, dtype) for v in operands)


def cast(op_name, v, dtype):
    """v in `dtype`: a Tensor through astype, in the graph (its gradient comes back in its own dtype), an array
    by astype, a Python number as a 0-d host array (a Python int that the dtype cannot hold: OverflowError)."""
    if v is None or (hasattr(v, "dtype") and v.dtype == dtype):  # not getattr(v, "dtype", None): np.dtype(None)
        return v  # is float64, so a Python number would pass as one
    from tensorlab.ops.convert import AsType
    from tensorlab.tensor import Tensor

    if isinstance(v, Tensor):
        return AsType(dtype)(v)
    if hasattr(v, "dtype"):
        return v.astype(dtype)
    if type(v) is int and dtype.kind in "iu" and not np.iinfo(dtype).min <= v <= np.iinfo(dtype).max:
        raise OverflowError(f"{op_name}: the Python int {v} does not fit the tensor's dtype {dtype}")
    with np.errstate(over="ignore"):  # 1e300 as float32 is inf, as in PyTorch
        return np.asarray(v, dtype=dtype)


def check_same_dtype(op_name, *arrays):
    """TypeError unless the arrays share one dtype, other than bool: PyTorch's matrix products promote nothing."""
    first = arrays[0].dtype
    if first.kind == "b" or any(a.dtype != first for a in arrays[1:]):
        raise TypeError(
            f"{op_name}: operands of one dtype, not bool, expected (as PyTorch), got "
            f"{' and '.join(str(a.dtype) for a in arrays)}; "
            f"convert them first, e.g. a.astype(b.dtype)"
        )


def check_not_bool(op_name, x):
    """TypeError if array x holds bools, for ops PyTorch refuses on them (argmax, argmin)."""
    if x.dtype.kind == "b":
        raise TypeError(
            f"{op_name}: input must not be bool (shape {x.shape}), as PyTorch asks too; convert it first, "
            f"e.g. x.astype('int64')"
        )


def check_floating(op_name, x):
    """TypeError unless array x holds floats, for ops PyTorch refuses on integers (softmax, mean, gelu, ...)."""
    if x.dtype.kind != "f":
        raise TypeError(
            f"{op_name}: input must be floating point, got dtype {x.dtype} (shape {x.shape}); "
            f"convert it first, e.g. x.astype('float32'), as PyTorch asks too"
        )
