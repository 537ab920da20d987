"""Tensor, Function and the backward walk: the whole of reverse-mode autodiff.

A Tensor wraps a backend array (`.data`). Every op is a `Function`: its
`forward` computes on plain arrays, and when gradients are wanted the output
tensor remembers the Function that made it (`.creator`). The creators, linked
through their `.inputs`, form a directed acyclic graph. `loss.backward()`
orders that graph so every node comes after everything that uses it (a reverse
topological order) and hands each Function the gradient of the loss with
respect to its outputs; the Function returns the gradient with respect to its
inputs (the chain rule, one node at a time).

Gradients accumulate: each `backward()` adds into the `.grad` of the leaves
(tensors made by the user with requires_grad=True), exactly as in PyTorch, until
you clear them (`x.grad = None`, or `optimizer.zero_grad()`). Intermediate
tensors keep no `.grad` unless asked to (`retain_grad()`). After `backward()` the graph is released, so a second
`backward()` through it is an error unless the first one passed retain_graph=True.
"""

import contextlib
import math
import threading

import numpy as np

from tensorlab import backend


class _GradMode(threading.local):
    """Whether ops record a graph, per thread (as in PyTorch): no_grad() in one thread leaves the others alone."""

    enabled = True


_grad_mode = _GradMode()

# The hooks for tools that watch the engine (tensorlab.graph adds and removes its own); empty lists cost nothing.
# record_observers: callbacks observer(fn) that Function.__call__ calls on each Function that records a graph, once
# its outputs are linked to it. backward_observers: callbacks observer(fn, output_grads, input_grads) that
# backward() calls after each Function's backward, before releasing it.
record_observers = []
backward_observers = []


@contextlib.contextmanager
def no_grad():
    """Inside this block ops record no graph: for evaluation and optimizer updates (this thread only)."""
    previous, _grad_mode.enabled = _grad_mode.enabled, False
    try:
        yield
    finally:
        _grad_mode.enabled = previous


def is_grad_enabled():
    """False inside `no_grad()` in this thread."""
    return _grad_mode.enabled


class Tensor:
    """An n-dimensional array that remembers how it was computed."""

    # Make NumPy hand `ndarray + Tensor` to Tensor.__radd__ instead of looping over elements.
    __array_ufunc__ = None

    def __init__(self, data, requires_grad=False):
        if isinstance(data, np.generic):  # a NumPy scalar (np.sum's result): a 0-d array, as CuPy gives
            data = np.asarray(data)
        if requires_grad and data.dtype.kind != "f":
            raise TypeError(f"only floating-point tensors can require gradients, got dtype {data.dtype}")
        self._data = data
        self._version_counter = [0]  # in-place writes into this memory so far; one list for a tensor and its views
        self.grad = None
        self.requires_grad = requires_grad
        self.creator = None  # the Function that produced this tensor, None for leaves
        self.output_index = 0  # which of the creator's outputs this tensor is
        self.retains_grad = False  # an intermediate that keeps its .grad (see retain_grad)

    # ----- array facts -------------------------------------------------------------------------
    @property
    def data(self):
        """The values: the plain backend array itself, outside the graph and untracked, as PyTorch's `.data`.

        A write through it moves no version (see `_version`): backward then computes with the new values.
        """
        return self._data

    @data.setter
    def data(self, array):
        self._data = array

    @property
    def _version(self):
        """How often the engine wrote into this tensor's memory in place (PyTorch's name; read only).

        The engine's writers bump it: `copy_`, an optimizer's `step()`, `Module.load_state_dict`. A view of a
        tensor (`reshape`, `x[1:]`, `detach()`) shares its counter, as in PyTorch. Each op notes the versions
        of its inputs and outputs; backward refuses an op whose saved memory was written since.
        """
        return self._version_counter[0]

    def _bump_version(self):
        """Count one in-place write into this tensor's memory (the engine's writers call it after writing)."""
        self._version_counter[0] += 1

    def copy_(self, src):
        """Copy `src` (a Tensor or an array) into this tensor in place, as PyTorch's copy_: broadcast to its
        shape, cast to its dtype, moved to its device; returns self. Outside the graph: a tensor that requires
        grad takes it only under `no_grad()`."""
        if self.requires_grad and _grad_mode.enabled:
            raise RuntimeError(
                "copy_(): this tensor requires grad, and tensorlab records no in-place op in the graph; "
                "copy under `with tensorlab.no_grad():` (as load_state_dict does), or compute a new tensor"
            )
        src = src._data if isinstance(src, Tensor) else src
        shape = getattr(src, "shape", None)
        fits = shape is not None and len(shape) <= self.ndim
        if not fits or any(n not in (1, m) for n, m in zip(shape[::-1], self.shape[::-1])):  # broadcasts to mine?
            got = f"shape {shape}" if shape is not None else type(src).__name__
            raise ValueError(f"copy_(): expected a Tensor or an array that broadcasts to shape {self.shape}, got {got}")
        self._data[...] = backend.to_device(src, self.device).astype(self.dtype, copy=False)
        self._bump_version()
        return self

    @property
    def shape(self):
        return self._data.shape

    @property
    def dtype(self):
        return self._data.dtype

    @property
    def ndim(self):
        return self._data.ndim

    @property
    def size(self):
        return self._data.size

    @property
    def device(self):
        return backend.device_of(self._data)

    @property
    def is_leaf(self):
        return self.creator is None

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor: it has no first axis (as PyTorch); use .item() for its value")
        return len(self._data)

    def __repr__(self):
        body = np.array2string(self.numpy(), separator=", ", prefix="tensor(")
        grad = ", requires_grad=True" if self.requires_grad else ""
        device = ", device='cuda'" if self.device == "cuda" else ""
        return f"tensor({body}, dtype={self.dtype}{device}{grad})"

    # ----- leaving the graph -------------------------------------------------------------------
    def numpy(self):
        """A NumPy copy of the data on the host."""
        return np.array(backend.to_device(self._data, "cpu"), copy=True)

    def item(self):
        """The single value of a one-element tensor as a Python number."""
        if self.size != 1:
            raise ValueError(f"item() needs a tensor with one element, got shape {self.shape}")
        return self._data.reshape(()).item()

    def detach(self):
        """The same data, cut off from the graph: a leaf that shares memory and requires no grad."""
        detached = Tensor(self._data)
        detached._version_counter = self._version_counter  # the same memory: writes into either count for both
        return detached

    def to(self, device):
        """This tensor on 'cpu' or 'cuda', in the graph as PyTorch's `.to` (the gradient comes back to this
        device); itself if it is already there. `.detach().to(device)` gives a leaf instead."""
        return F.to(self, device)

    def astype(self, dtype):
        """A copy in another dtype, in the graph as PyTorch's `.to(dtype)` (the gradient comes back in this
        dtype); an integer or bool copy takes no gradient. `.detach().astype(dtype)` gives a leaf."""
        return F.astype(self, dtype)

    def retain_grad(self):
        """Keep this intermediate tensor's gradient in .grad after backward, as leaves do (PyTorch's name).

        It accumulates like a leaf's. On a leaf that requires grad it changes nothing.
        """
        if not self.requires_grad:
            raise RuntimeError("retain_grad(): this tensor does not require grad, so it gets no gradient")
        self.retains_grad = self.creator is not None

    # ----- the backward walk -------------------------------------------------------------------
    def backward(self, grad=None, retain_graph=False):
        """Add d(self)/d(leaf) * grad into the .grad of every leaf that requires grad.

        `grad` is the gradient of some final scalar with respect to this tensor; it
        defaults to 1 when this tensor holds a single number.
        """
        if not self.requires_grad:
            raise RuntimeError(
                "backward(): this tensor does not require grad; create the inputs with requires_grad=True"
            )
        grad = self._initial_grad(grad)
        if self.creator is None or self.retains_grad:
            _accumulate_into_leaf(self, grad)
        if self.creator is None:
            return
        order = topological_order(self.creator)  # first: it explains a graph freed by an earlier backward()
        pending = {self.creator: _empty_slots(self.creator)}
        pending[self.creator][self.output_index] = grad
        for fn in reversed(order):
            slots = pending.pop(fn, None)
            if slots is None:  # every consumer returned None for it: no gradient flows here
                continue
            output_grads = slots if len(slots) == 1 else _fill_missing(fn, slots)  # one output: it got its gradient
            _check_saved_unchanged(fn)
            input_grads = fn.backward(*output_grads)
            if not isinstance(input_grads, tuple):
                input_grads = (input_grads,)
            for observe in backward_observers:
                observe(fn, output_grads, input_grads)
            for tensor, gx in zip(fn.inputs, input_grads):
                if gx is None or not tensor.requires_grad:
                    continue
                data = tensor._data
                if gx.shape != data.shape or gx.dtype != data.dtype:  # checked here: most gradients match
                    gx = _check_grad(fn, tensor, gx)
                creator = tensor.creator
                if creator is None or tensor.retains_grad:
                    _accumulate_into_leaf(tensor, gx, owned=creator is None and _held_nowhere_else(gx, output_grads))
                if creator is not None:
                    slots = pending.get(creator)
                    if slots is None:
                        pending[creator] = slots = _empty_slots(creator)
                    i = tensor.output_index
                    slots[i] = gx if slots[i] is None else slots[i] + gx
            if not retain_graph:
                fn.release()

    def _initial_grad(self, grad):
        xp = backend.array_module(self._data)
        if grad is None:
            if self.size != 1:
                raise RuntimeError(
                    f"backward() without a gradient needs a one-element tensor, but this one has shape "
                    f"{self.shape}; reduce it first (e.g. .sum()) or pass grad= of shape {self.shape}"
                )
            return xp.ones_like(self._data)
        grad = xp.asarray(grad._data if isinstance(grad, Tensor) else grad, dtype=self.dtype)
        if grad.shape != self.shape:
            raise ValueError(f"backward(): grad has shape {grad.shape}, expected {self.shape}")
        return grad

    # ----- operators and array methods (NumPy names); the ops live in tensorlab.ops -----------
    def __add__(self, other):
        return F.add(self, other)

    def __radd__(self, other):
        return F.add(other, self)

    def __sub__(self, other):
        return F.sub(self, other)

    def __rsub__(self, other):
        return F.sub(other, self)

    def __mul__(self, other):
        return F.mul(self, other)

    def __rmul__(self, other):
        return F.mul(other, self)

    def __truediv__(self, other):
        return F.div(self, other)

    def __rtruediv__(self, other):
        return F.div(other, self)

    def __neg__(self):
        return F.neg(self)

    def __pow__(self, exponent):
        return F.pow(self, exponent)

    def __matmul__(self, other):
        return F.matmul(self, other)

    def __rmatmul__(self, other):
        return F.matmul(other, self)

    def __rpow__(self, base):
        return F.pow(base, self)

    def _in_place(self, other):
        raise RuntimeError(
            "x += y (or -=, *=, /=, **=, @=) on a Tensor: tensorlab has no in-place arithmetic, where PyTorch would "
            "change x itself; write x = x + y for a new tensor"
        )

    __iadd__ = __isub__ = __imul__ = __itruediv__ = __ipow__ = __imatmul__ = _in_place

    def __getitem__(self, index):
        return F.getitem(self, index)

    # comparisons compare elementwise and give boolean tensors that take no gradient, as in PyTorch
    def __eq__(self, other):
        return NotImplemented if other is None else F.eq(self, other)  # t == None is False, as PyTorch

    def __ne__(self, other):
        return NotImplemented if other is None else F.ne(self, other)

    def __lt__(self, other):
        return F.lt(self, other)

    def __le__(self, other):
        return F.le(self, other)

    def __gt__(self, other):
        return F.gt(self, other)

    def __ge__(self, other):
        return F.ge(self, other)

    # hashed by identity, as PyTorch: a tensor stays a dict key or set member whatever its values (a
    # dict compares hashes, then identity, so == is never asked); `t in some_list` asks == and needs bool()
    __hash__ = object.__hash__

    def __bool__(self):
        """The truth of a one-element tensor, as PyTorch; for more or fewer elements it is ambiguous."""
        if self.size != 1:
            raise RuntimeError(
                f"bool() of a tensor with {self.size} elements (shape {self.shape}) is ambiguous; "
                f"use .any() or .all(), or .item() for a one-element tensor"
            )
        return bool(self.item())

    def __float__(self):
        """float(x) of a one-element tensor, as PyTorch."""
        return float(self.item())

    def __int__(self):
        """int(x) of a one-element tensor (truncated toward 0), as PyTorch; NaN and infinities have no int."""
        value = self.item()
        if value != value or value in (math.inf, -math.inf):
            error = ValueError if value != value else OverflowError  # Python's and PyTorch's exception types
            raise error(f"int() of a tensor holding {value}: it has no integer value")
        return int(value)

    def all(self, axis=None, keepdims=False):
        """Whether every element (along `axis`) is nonzero: a boolean tensor, no gradient."""
        return F.all(self, axis, keepdims)

    def any(self, axis=None, keepdims=False):
        """Whether some element (along `axis`) is nonzero: a boolean tensor, no gradient."""
        return F.any(self, axis, keepdims)

    def sum(self, axis=None, keepdims=False):
        return F.sum(self, axis=axis, keepdims=keepdims)

    def mean(self, axis=None, keepdims=False):
        return F.mean(self, axis=axis, keepdims=keepdims)

    def max(self, axis=None, keepdims=False):
        return F.max(self, axis=axis, keepdims=keepdims)

    def min(self, axis=None, keepdims=False):
        return F.min(self, axis=axis, keepdims=keepdims)

    def var(self, axis=None, keepdims=False, correction=1):
        """PyTorch's correction=1 by default (NumPy's ndarray.var has ddof=0)."""
        return F.var(self, axis=axis, keepdims=keepdims, correction=correction)

    def std(self, axis=None, keepdims=False, correction=1):
        return F.std(self, axis=axis, keepdims=keepdims, correction=correction)

    def argmax(self, axis=None, keepdims=False):
        return F.argmax(self, axis=axis, keepdims=keepdims)

    def argmin(self, axis=None, keepdims=False):
        return F.argmin(self, axis=axis, keepdims=keepdims)

    def clamp(self, min=None, max=None):  # noqa: A002 (PyTorch's names)
        return F.clamp(self, min, max)

    def maximum(self, other):
        return F.maximum(self, other)

    def minimum(self, other):
        return F.minimum(self, other)

    def pow(self, exponent):
        return F.pow(self, exponent)

    def exp(self):
        return F.exp(self)

    def log(self):
        return F.log(self)

    def sqrt(self):
        return F.sqrt(self)

    def tanh(self):
        return F.tanh(self)

    def sigmoid(self):
        return F.sigmoid(self)

    def relu(self):
        return F.relu(self)

    def swapaxes(self, axis1, axis2):
        return F.swapaxes(self, axis1, axis2)

    def squeeze(self, axis=None):
        return F.squeeze(self, axis)

    def unsqueeze(self, axis):
        return F.unsqueeze(self, axis)

    def flatten(self, start_axis=0, end_axis=-1):
        return F.flatten(self, start_axis, end_axis)

    def broadcast_to(self, shape):
        return F.broadcast_to(self, shape)

    def expand(self, *shape):
        """PyTorch's name for broadcast_to: expand(2, -1, 4) or expand((2, -1, 4)), -1 keeping that size."""
        return F.broadcast_to(self, _sizes(shape))

    def reshape(self, *shape):
        """Same data, new shape; accepts reshape(2, 3) and reshape((2, 3)) like NumPy."""
        return F.reshape(self, _sizes(shape))

    def transpose(self, *axes):
        """Permute axes; no axes reverses them, like NumPy."""
        return F.transpose(self, tuple(_sizes(axes)) or None)

    @property
    def T(self):
        return F.transpose(self, None)


def _sizes(args):
    """The numbers a method got as reshape(2, 3) or as reshape((2, 3)), as NumPy takes both."""
    return args[0] if len(args) == 1 and isinstance(args[0], (tuple, list)) else args


def tensor(data, requires_grad=False, dtype=None, device=None):
    """Make a leaf Tensor from a list, scalar or array.

    Python floats become float32 (the default dtype), Python ints int64; an array
    keeps its dtype unless `dtype` is given. `device` is 'cpu' (default) or 'cuda'.
    """
    if isinstance(data, Tensor):
        data = data._data
    if device is None:
        device = backend.device_of(data)
    xp = backend.module_for(device)
    if not hasattr(data, "dtype"):
        probe = _numbers(data)  # one-line errors for strings, None and ragged lists
        dtype = dtype if dtype is not None else np.float32 if probe.dtype.kind == "f" else probe.dtype
    elif data.dtype.kind not in "biuf":  # an array of strings or objects: no op could compute on it
        raise TypeError(f"tensorlab.tensor: expected an array of numbers, got dtype {data.dtype} (shape {data.shape})")
    array = xp.array(backend.to_device(data, device) if hasattr(data, "dtype") else data, dtype=dtype)
    return Tensor(array, requires_grad=requires_grad)


_HOST_ARRAYS = {np.ndarray}  # inputs of only this type are all on the host: no device to check


class Function:
    """One op: `forward` on backend arrays, `backward` from output to input gradients.

    Subclasses implement `forward(self, *xs)` returning an array (or a tuple of
    arrays for several outputs) and `backward(self, *gys)` returning one gradient
    per input (None for inputs that take no gradient, such as integer ids). Anything
    backward needs from forward is kept on `self`, as arrays or tuples/lists of arrays:
    backward refuses to run when an input or output whose memory is kept there was written
    in place since (the version counter, `Tensor._version`). Non-tensor settings (an axis, a
    probability) go to `__init__`. Because of that saved state, an instance is called
    once: `Exp()(a) + Exp()(b)`; calling the same instance again raises.
    """

    name = None  # the op's name in tensorlab.functional, for error messages; None: the class name in lower case

    def __call__(self, *inputs):
        # Every op of every step comes through here, so the usual case pays only what it needs: inputs that are
        # Tensors already, NumPy arrays (no device to check), no tool recording. The rest (a Python number to wrap,
        # a CuPy array, the op's name for an error) is computed only when it comes up.
        if "_called" in self.__dict__:  # its saved state belongs to the first call's graph
            raise RuntimeError(
                f"{_op_name(self)}: this {type(self).__name__} instance was already called once; a Function keeps "
                f"what its backward needs on self, so create a new instance for each call "
                f"({type(self).__name__}(...)(a) + {type(self).__name__}(...)(b), not op(a) + op(b))"
            )
        self._called = True
        tensors, arrays, any_requires_grad = [], [], False
        for x in inputs:  # one loop: three comprehensions would cost three times the overhead
            t = x if isinstance(x, Tensor) else _as_tensor(x, inputs)
            tensors.append(t)
            arrays.append(t._data)
            any_requires_grad = any_requires_grad or t.requires_grad
        if set(map(type, arrays)) != _HOST_ARRAYS:  # a CuPy array (or a NumPy scalar) among them
            backend.same_device(_op_name(self), arrays)
        outputs = self.forward(*arrays)
        single = not isinstance(outputs, tuple)
        outputs = (outputs,) if single else outputs
        needs_graph = any_requires_grad and _grad_mode.enabled
        results, output_meta = [], []
        for y in outputs:  # loops, not comprehensions: in Python 3.11 each comprehension is a call of its own
            result = Tensor(y, requires_grad=needs_graph)
            for t in tensors:  # a view (reshape, x[1:]) counts writes with the tensor it views
                if y is t._data or (y.base is not None and _shares_memory(y, t._data)):
                    result._version_counter = t._version_counter
                    break
            results.append(result)
            output_meta.append((y.shape, y.dtype))
        if needs_graph:
            self.inputs, self.output_meta = tensors, output_meta
            # what backward compares: each input's and output's array, version counter and version now
            self.versions = versions = []
            for t in tensors + results:
                versions.append((t._data, t._version_counter, t._version_counter[0]))
            if single:  # most ops: one output, its output_index already 0
                results[0].creator = self
            else:
                for i, result in enumerate(results):
                    result.creator, result.output_index = self, i
            for observe in record_observers:
                observe(self)
        return results[0] if single else tuple(results)

    def forward(self, *xs):
        raise NotImplementedError

    def backward(self, *gys):
        raise NotImplementedError

    def release(self):
        """Drop the inputs and everything saved for backward, freeing their memory."""
        self.__dict__.clear()
        self.inputs, self._called = None, True


def topological_order(root):
    """Every Function reachable from `root`, each after all the Functions it takes input from.

    Iterative depth-first search (no recursion, so a chain of 100,000 ops is fine).
    """
    order, visited = [], set()
    stack = [(root, False)]
    while stack:
        fn, children_done = stack.pop()
        if children_done:
            order.append(fn)
            continue
        if fn in visited:
            continue
        if fn.inputs is None:
            raise RuntimeError(
                f"backward() through {type(fn).__name__} a second time: its graph was freed by the first "
                f"backward(); call backward(retain_graph=True) the first time if you need to do this"
            )
        visited.add(fn)
        stack.append((fn, True))
        for t in fn.inputs:
            if t.creator is not None and t.creator not in visited:
                stack.append((t.creator, False))
    return order


def _as_tensor(x, inputs):
    """Wrap an array or Python number as a constant Tensor on the device of the other inputs (its dtype the op
    chose already: tensorlab.ops.dtypes casts an op's operands to PyTorch's result dtype)."""
    like = next((t for t in inputs if isinstance(t, Tensor)), None)
    if like is None:
        return tensor(x)
    xp = backend.array_module(like._data)
    return Tensor(xp.asarray(backend.to_device(x, like.device) if hasattr(x, "dtype") else x))


def _empty_slots(fn):
    return [None] * len(fn.output_meta)


def _fill_missing(fn, grads):
    """Outputs that did not reach the loss get a zero gradient."""
    xp = backend.array_module(fn.inputs[0]._data)
    return [xp.zeros(shape, dtype) if g is None else g for g, (shape, dtype) in zip(grads, fn.output_meta)]


def _op_name(fn):
    return fn.name or type(fn).__name__.lower()


def _check_saved_unchanged(fn):
    """Refuse fn's backward when memory it kept for it was written in place since its forward (PyTorch's check).

    Only memory fn keeps counts: `x + y` keeps nothing, so writing into x after it changes no gradient
    (PyTorch lets that pass too); `x * y` keeps both.
    """
    for k, (array, counter, version) in enumerate(fn.versions):
        if counter[0] != version and any(_shares_memory(array, a) for a in _kept_arrays(fn)):
            n, name = len(fn.inputs), _op_name(fn)
            which = f"input {k}" if k < n else "output" if len(fn.versions) == n + 1 else f"output {k - n}"
            raise RuntimeError(
                f"backward(): {name} saved its {which} (shape {array.shape}, dtype {array.dtype}), which was modified "
                f"by an inplace operation after {name} ran (it is at version {counter[0]}, {name} saved version "
                f"{version}); call backward() before changing it (optimizer.step(), load_state_dict(), copy_()), "
                f"or run the forward again after the change"
            )


def _kept_arrays(fn):
    """Every array fn keeps on itself for its backward, alone or in a tuple or list."""
    for name, value in vars(fn).items():
        if name not in ("inputs", "versions"):
            yield from (a for a in (value if isinstance(value, (tuple, list)) else [value]) if hasattr(a, "strides"))


def _shares_memory(a, b):
    """Whether arrays a and b may look at the same memory (one a view of the other, or both of a third)."""
    return a is b or (type(a) is type(b) and backend.array_module(a).may_share_memory(a, b))


def _check_grad(fn, tensor, gx):
    """Catch a wrong backward at the op that produced it, not three ops later; return gx.

    An op that promoted an input (float32 * float64 gives float64) hands back that input's
    gradient in the promoted dtype: it is cast back to the input's own dtype, as in PyTorch.
    """
    promoted = gx.dtype != tensor.dtype and any(gx.dtype == dtype for _, dtype in fn.output_meta)
    if gx.shape == tensor.shape and promoted and tensor.dtype.kind == "f":
        return gx.astype(tensor.dtype)
    if gx.shape != tensor.shape or gx.dtype != tensor.dtype:
        raise RuntimeError(
            f"{type(fn).__name__}.backward returned a gradient of shape {gx.shape} and dtype {gx.dtype} "
            f"for an input of shape {tensor.shape} and dtype {tensor.dtype}; they must match"
        )
    return gx


def _accumulate_into_leaf(tensor, gx, owned=False):
    """tensor.grad += gx; a first gradient is kept as it is when `owned`, else copied (gx may be another's too)."""
    if tensor.grad is None:
        tensor.grad = gx if owned else gx.copy()
    else:
        tensor.grad += gx


def _held_nowhere_else(gx, output_grads):
    """Whether a backward's gx is an array of its own (not a view) and not an incoming gradient passed through: a
    leaf then keeps it as its .grad without a copy, a pass over every parameter saved per step (PyTorch's
    AccumulateGrad steals such a gradient too). No backward gives one fresh array to two inputs; the differential
    fuzzer checks that no .grad shares memory with another (tests/fuzz_torch.py, "shared gradient")."""
    return gx.base is None and all(g is not gx for g in output_grads)


# Imported last: functional builds on the ops, and the ops build on Function above.
from tensorlab import functional as F  # noqa: E402


def _numbers(data):
    """np.asarray(data) when it is numbers, else a one-line TypeError or ValueError for tensorlab.tensor."""
    try:
        probe = np.asarray(data)
    except ValueError:
        raise ValueError(
            "tensorlab.tensor: the nested lists are ragged (rows of different lengths); "
            "expected a rectangular array of numbers"
        ) from None
    if probe.dtype.kind not in "biuf":
        raise TypeError(
            f"tensorlab.tensor: expected numbers (a number, a list of numbers or an array), "
            f"got {type(data).__name__} {str(data)[:40]!r}"
        )
    return probe
