"""Exercise `exp_log`: the gradients of exp and log, elementwise.

Forward (written for you):  Exp: y = exp(x)        Log: y = log(x)   (x > 0)

Your task: write `backward(gy)` for both classes. `gy` is dL/dy (shape of y); return
gx = dL/dx, with the shape of x.

Hint: each y[i] depends on x[i] alone, so dL/dx[i] = gy[i] * dy[i]/dx[i] (the chain rule).
What is the derivative of exp? Of log? Each forward keeps what its backward needs on `self`.

Check it:  python -m tensorlab.exercises check exp_log THIS_FILE.py
"""
import numpy as np

from tensorlab.tensor import Function


class Exp(Function):
    def forward(self, x):
        self.y = np.exp(x)
        return self.y

    def backward(self, gy):
        # TODO: gx = ...
        raise NotImplementedError("Exp.backward: compute gx, then return it")


class Log(Function):
    def forward(self, x):
        self.x = x
        return np.log(x)

    def backward(self, gy):
        # TODO: gx = ...
        raise NotImplementedError("Log.backward: compute gx, then return it")
