"""Reference solution for exercise `value`: a scalar Value with + * tanh exp and backward."""
import math


class Value:
    def __init__(self, data, parents=(), op=""):
        self.data = float(data)
        self.grad = 0.0
        self.parents = tuple(parents)
        self.op = op
        self._backward = lambda: None

    def __repr__(self):
        return f"Value(data={self.data:.4g}, grad={self.grad:.4g})"

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data + other.data, (self, other), "+")

        def _backward():                     # d(a + b)/da = d(a + b)/db = 1
            self.grad += out.grad
            other.grad += out.grad
        out._backward = _backward
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data * other.data, (self, other), "*")

        def _backward():                     # d(a b)/da = b, d(a b)/db = a
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out._backward = _backward
        return out

    def tanh(self):
        t = math.tanh(self.data)
        out = Value(t, (self,), "tanh")

        def _backward():                     # d tanh(x)/dx = 1 - tanh(x)^2
            self.grad += (1 - t * t) * out.grad
        out._backward = _backward
        return out

    def exp(self):
        out = Value(math.exp(self.data), (self,), "exp")

        def _backward():                     # d exp(x)/dx = exp(x)
            self.grad += out.data * out.grad
        out._backward = _backward
        return out

    def backward(self):
        order, visited, stack = [], set(), [(self, False)]
        while stack:                         # iterative depth-first search: parents before children
            node, parents_done = stack.pop()
            if parents_done:
                order.append(node)
            elif id(node) not in visited:
                visited.add(id(node))
                stack.append((node, True))
                stack.extend((p, False) for p in node.parents if id(p) not in visited)
        self.grad = 1.0
        for node in reversed(order):         # each node after every node that uses it
            node._backward()

    __radd__ = __add__
    __rmul__ = __mul__
