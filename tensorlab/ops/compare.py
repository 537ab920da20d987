"""Comparisons: eq, ne, lt, le, gt, ge, elementwise, giving boolean tensors that take no gradient.

A comparison is a step function of its inputs: its derivative is 0 wherever it is defined, so no
gradient flows through it and its output requires none, as in PyTorch. The operands broadcast and are
compared in PyTorch's common dtype (an int tensor against 0.5 compares in float32).
"""

import operator

from tensorlab import backend
from tensorlab.ops.broadcast import broadcast_shape
from tensorlab.ops.dtypes import cast, result_type

COMPARISONS = {
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
}


def compare(op_name, a, b):
    """a <op> b for two tensors, or a tensor and a Python number or array: a boolean Tensor, no gradient."""
    from tensorlab.tensor import Tensor, tensor

    like = a if isinstance(a, Tensor) else b
    a, b = (v if isinstance(v, (Tensor, bool, int, float)) else tensor(v, device=like.device) for v in (a, b))
    dtype, xp = result_type(a, b), backend.array_module(like.data)

    def operand(v):
        if isinstance(v, Tensor):
            return v.data.astype(dtype, copy=False)
        if type(v) is int and dtype.kind in "iu":
            return v  # compared exactly: 300 == a uint8 tensor is False, not an overflow
        return xp.asarray(cast(op_name, v, dtype))

    data = [operand(v) for v in (a, b)]
    broadcast_shape(op_name, *[getattr(v, "shape", ()) for v in data])
    arrays = [v for v in data if hasattr(v, "dtype")]
    backend.same_device(op_name, arrays)
    return Tensor(xp.asarray(COMPARISONS[op_name](*data)))
