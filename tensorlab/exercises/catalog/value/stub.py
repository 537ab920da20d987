"""Exercise `value` (engine track 1 of 4): a scalar Value that knows its own gradient (micrograd).

Every Value holds a number `data`, its gradient `grad` (dL/d this value, 0 until backward runs),
the Values it was computed from (`parents`) and `_backward`, a function that adds this Value's
share of the gradient into its parents' `grad`. For c = a * b, c._backward does
    a.grad += b.data * c.grad        b.grad += a.data * c.grad
(`+=`, not `=`: a Value used twice gets a gradient from each use).

Your task: write `__add__`, `__mul__`, `tanh`, `exp` (each returns a new Value with its parents
and its `_backward`) and `backward`: set this Value's grad to 1, then call `_backward` of every
Value it depends on, each one after every Value that uses it (a topological order, reversed).

Check it:  python -m tensorlab.exercises check value THIS_FILE.py
"""
import math  # noqa: F401 (for your code)


class Value:
    def __init__(self, data, parents=(), op=""):
        self.data = float(data)
        self.grad = 0.0
        self.parents = tuple(parents)      # the Values this one was computed from
        self.op = op                       # '+', '*', 'tanh', 'exp': for printing
        self._backward = lambda: None      # adds this Value's gradient into its parents' grads

    def __repr__(self):
        return f"Value(data={self.data:.4g}, grad={self.grad:.4g})"

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        # TODO: out = Value(...); define out._backward; return out
        raise NotImplementedError("Value.__add__: make the output Value and its _backward")

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        # TODO
        raise NotImplementedError("Value.__mul__: make the output Value and its _backward")

    def tanh(self):
        # TODO
        raise NotImplementedError("Value.tanh: make the output Value and its _backward")

    def exp(self):
        # TODO
        raise NotImplementedError("Value.exp: make the output Value and its _backward")

    def backward(self):
        # TODO: order every Value this one depends on, set self.grad = 1, call _backward in reverse order
        raise NotImplementedError("Value.backward: order the graph, then call each _backward")

    __radd__ = __add__   # 2 + a
    __rmul__ = __mul__   # 2 * a
