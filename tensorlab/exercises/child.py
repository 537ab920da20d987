"""The student's side of a check: a child process that runs the student's code and answers with data.

The checker (the parent, student.py) starts `python -I -S` in an empty working folder with a
HOME of its own, and only a private copy of this package and NumPy importable. It sends
requests on stdin (pickles: from the parent, never read by it); each names a function of
HANDLERS and its arguments, runs the student's code, and sends back plain data: numbers,
strings, lists, tuples and NumPy arrays, as JSON and the arrays' bytes (`pack`), read by the parent
without pickle (`unpack`), with the request's number (a second process answering shows). The parent
computes every verdict from that data: what this process prints, returns or forges can make a
check fail, never pass, unless it holds the right numbers.

What the student's code raises becomes {"error": lines, "not_written": bool}, the lines naming
the student's file and line (student.describe_exception).
"""

import io
import json
import linecache
import math
import os
import pickle
import struct
import sys
import types
import warnings
from functools import partial

import numpy as np

HEADER = struct.Struct("<Q")  # the length of each message in bytes
LARGEST = 256 * 2**20  # a reply larger than this is refused (a student's code could send anything)


# ----- the messages --------------------------------------------------------------------------------------------
def pack(value):
    """`value` (dicts, lists, tuples, numbers, strings, arrays; any other object by its type's name) as bytes: the
    length of a JSON tree, the tree, then each array's bytes, which the tree gives as [dtype, shape, offset]."""
    arrays, offset = [], 0

    def tree(v):
        nonlocal offset
        if isinstance(v, np.generic) and v.dtype.kind in "biufc":
            v = np.asarray(v)  # a NumPy scalar (a sum over all axes) stays NumPy's: a 0-d array
        if isinstance(v, np.ndarray) and v.dtype.kind in "biufc":
            arrays.append(np.ascontiguousarray(v).tobytes())
            offset += len(arrays[-1])
            return {"array": [v.dtype.str, list(v.shape), offset - len(arrays[-1])]}
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, (list, tuple)):
            return {"list" if isinstance(v, list) else "tuple": [tree(x) for x in v]}
        if isinstance(v, dict):
            return {"dict": {str(k): tree(x) for k, x in v.items()}}
        return {"object": type(v).__name__}

    text = json.dumps(tree(value)).encode()
    return HEADER.pack(len(text)) + text + b"".join(arrays)


def unpack(data):
    """What `pack` wrote, read without pickle: arrays of numbers only, each inside the message (anything else raises);
    an object not sent is an instance of an empty class of its name."""
    (length,) = HEADER.unpack_from(data)
    data = memoryview(data)
    tree, arrays = json.loads(bytes(data[HEADER.size : HEADER.size + length])), data[HEADER.size + length :]

    def array(dtype, shape, offset):
        dtype, sizes = np.dtype(str(dtype)), all(type(n) is int and n >= 0 for n in shape)
        if dtype.kind not in "biufc" or dtype.fields or dtype.subdtype or not sizes:
            raise ValueError(f"not an array of numbers: {dtype}, {shape}")
        return np.frombuffer(arrays, dtype, math.prod(shape), offset).reshape(shape).copy()

    def value(v):
        if not isinstance(v, dict):
            return v
        (kind, x), *_ = v.items()
        if kind == "array":
            return array(*x)
        if kind in ("list", "tuple"):
            return (list if kind == "list" else tuple)(value(i) for i in x)
        if kind == "dict":
            return {k: value(i) for k, i in x.items()}
        return type(str(x), (), {})()

    return value(tree)


def send(stream, data):
    stream.write(HEADER.pack(len(data)) + data)
    stream.flush()


def receive(stream):
    """One message from a binary stream; None at its end."""
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        return None
    (length,) = HEADER.unpack(header)
    return stream.read(length)


# ----- the child -------------------------------------------------------------------------------------------------
def serve(replies_fd):
    """Answer requests from stdin until it closes."""
    replies = os.fdopen(replies_fd, "wb", closefd=False)
    requests = sys.stdin.buffer
    sys.stdin = io.StringIO("")  # the student's code reads nothing the checker sends
    from tensorlab.exercises import catalog, student, watch  # noqa: F401 (their import is no case's time)
    from tensorlab.tensor import Tensor  # noqa: F401

    np.seterr(all="ignore")  # no NumPy warning amid the cases (runner.quiet_numpy): verdicts are on the numbers
    warnings.simplefilter("ignore", RuntimeWarning)
    send(replies, pack({}))  # ready
    while (message := receive(requests)) is not None:
        turn, name, arguments = pickle.loads(message)
        try:
            answer = HANDLERS[name](**arguments)
        except Exception as error:  # noqa: BLE001 (a StudentError, or anything the student's code raised)
            answer = _error(error, name)
        send(replies, pack((turn, answer)))  # the request's number: a second process's answer shows


def _error(error, what):
    from tensorlab.exercises.student import NotWritten, StudentError, describe_exception

    if isinstance(error, StudentError):
        return {"error": error.lines, "not_written": isinstance(error, NotWritten)}
    return {"error": describe_exception(error, _student.path, f"Your code ({what})"), "not_written": False}


class _Student:
    module = None
    path = "?"


_student = _Student()


def _load(display, source):
    """Run the student's source as a fresh module, its functions reported at `display` (their file's path)."""
    from tensorlab.exercises.student import StudentError, describe_exception

    _student.path = display
    name = os.path.basename(display)
    module = types.ModuleType(f"exercise_{os.path.splitext(name)[0]}")
    module.__file__ = os.path.abspath(name)  # the private copy, in this process's own folder
    try:
        code = compile(source, display, "exec")
    except SyntaxError as error:
        lines = [f"{name}, line {error.lineno}: Python cannot read this file: {error.msg}."]
        if error.text:
            text = error.text.rstrip()
            indent = len(text) - len(text.lstrip())
            lines.append(f"    {text.strip()}")
            if error.offset:
                lines.append("    " + " " * max(error.offset - 1 - indent, 0) + "^")
        lines.append("Fix the syntax there (a missing bracket, colon or indentation is typical) and check again.")
        raise StudentError(*lines) from None
    linecache.cache[display] = (len(source), None, source.splitlines(True), display)  # its lines, for tracebacks
    try:
        exec(code, module.__dict__)
    except Exception as error:  # noqa: BLE001 (anything the student's top level raises is reported)
        raise StudentError(*describe_exception(error, display, f"Running {name} (before any check)")) from None
    _student.module = module
    return {}


def _find(name, kind):
    from tensorlab.exercises.student import find

    find(_student.module, name, _student.path, kind)
    return {}


def _target(name):
    return getattr(_student.module, name)


def _call(what, call):
    """call(), with what it raises turned into a StudentError naming the student's line."""
    from tensorlab.exercises.student import NotWritten, StudentError, describe_exception, raising_function

    try:
        return call()
    except NotImplementedError as error:
        raise NotWritten(
            *describe_exception(error, _student.path, raising_function(error, _student.path) or what)
        ) from None
    except RecursionError as error:
        raise StudentError(*describe_exception(error, _student.path, what), RECURSION) from None
    except Exception as error:  # noqa: BLE001 (whatever the student's code raises is reported)
        raise StudentError(*describe_exception(error, _student.path, what)) from None


WHY = "Why: "  # begins the checker's explanation of what the student's code raised: it names the slip
RECURSION = (
    f"{WHY}Python stops at about 1000 nested calls, and a graph can be deeper: keep your own stack "
    "(a list of nodes still to visit) instead of recursing."
)


def _later(call):
    """{} when call() raises nothing, else {"error": ...}: a step after one whose data is sent anyway."""
    try:
        call()
    except Exception as error:  # noqa: BLE001
        return {"later_error": _error(error, "")}
    return {}


def _watched(function, call):
    """(what call() returned, the watch): the calls it made into the engine, the function's locals."""
    from tensorlab.exercises.watch import watch

    with watch(getattr(function, "__code__", None)) as watched:
        result = call()
    return result, watched


def _op(cls, settings, inputs, gy, engine=False):
    """The student's op on a fresh instance: forward, then backward(gy) watched (or both through the engine)."""
    op_class = _target(cls)
    args = ", ".join(f"{k}={v!r}" for k, v in settings.items())
    if engine:
        from tensorlab.tensor import Tensor

        tensors = [Tensor(x.copy(), requires_grad=x.dtype.kind == "f") for x in inputs]
        _call(f"running {cls} through the engine", lambda: op_class(**settings)(*tensors).backward(gy.copy()))
        return {"grads": [np.zeros(t.shape) if t.grad is None else np.asarray(t.grad) for t in tensors]}
    op = _call(f"{cls}({args})", lambda: op_class(**settings))
    xs = [x.copy() for x in inputs]
    y = _call(f"{cls}.forward", lambda: op.forward(*xs))
    given = gy.copy()
    answer = {"y": np.copy(y) if isinstance(y, np.ndarray) else y}

    def backward():
        handed = [given, y, *xs]  # gy, forward's output, its inputs: judged as such, not as what forward saved
        saved = {
            f"self.{k}": np.copy(v)
            for k, v in vars(op).items()
            if isinstance(v, np.ndarray) and not any(v is h for h in handed)
        }
        grads, watched = _watched(type(op).backward, lambda: _call(f"{cls}.backward", lambda: op.backward(given)))
        before = [gy, answer["y"], *inputs]
        answer.update(
            grads=grads,
            locals=watched.locals,
            engine_calls=watched.engine_calls,
            forwards=watched.calls(type(op).forward),
            changed=[i for i, (a, b) in enumerate(zip(handed, before)) if _written(a, b)],
            rewritten=[k for k, v in saved.items() if _written(getattr(op, k[5:], None), v)],  # a second backward
        )

    return answer | _later(backward)


def _written(now, before):
    """An array changed since it was handed over (forward's output may be anything: only an array is compared)."""
    return isinstance(now, np.ndarray) and not np.array_equal(now, before, equal_nan=True)


def _value(index, values, upstream=None):
    """A value probe: the expression on the student's Values; its data, then the inputs' grads after backward()
    (or, with `upstream`, after the output's own _backward alone with out.grad = upstream)."""
    from tensorlab.exercises.catalog.value import PROBES

    title, expression, _, _ = PROBES[index]
    value = _target("Value")
    xs = _call(f"Value(...) for the inputs of {title}", lambda: [value(v) for v in values])
    out = _call(f"building {title}", lambda: expression(*xs))
    data = getattr(out, "data", None)
    answer = {"data": _number(data), "shown": repr(data if hasattr(out, "data") else out)}

    def backward():
        if upstream is None:
            _call(f"backward() of {title}", out.backward)
        else:
            out.grad = upstream
            _call(f"_backward of {title}", out._backward)
        answer["grads"] = [_number(getattr(x, "grad", None)) for x in xs]

    return answer | _later(backward)


def _number(v):
    try:
        return float(v)
    except (TypeError, ValueError, OverflowError):
        return math.nan


def _topo(graphs):
    """A topo probe: the student's order of each graph (described as data: catalog/topo's build), each node by its key
    (None: not one of the graph's nodes)."""
    from tensorlab.exercises.catalog.topo import build

    function, orders, engine_calls = _target("topological_order"), [], []
    for nodes in map(build, graphs):
        root, keys = list(nodes.values())[-1], {id(node): key for key, node in nodes.items()}
        order, watched = _watched(function, partial(_call, "topological_order", partial(function, root)))
        engine_calls += watched.engine_calls
        orders.append([keys.get(id(n)) for n in order] if isinstance(order, (list, tuple)) else order)
    return {"engine_calls": engine_calls, "orders": orders}


def _function(name, args, settings=None, what=None):
    """A function of the student's file called on `args` (and `settings` as keywords), watched."""
    function = _target(name)
    result, watched = _watched(function, lambda: _call(what or name, lambda: function(*args, **(settings or {}))))
    return {"engine_calls": watched.engine_calls, "result": result}


HANDLERS = {
    "load": _load,
    "find": _find,
    "op": _op,
    "value": _value,
    "topo": _topo,
    "function": _function,
}
