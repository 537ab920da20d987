"""The affine map of a Linear layer in one op: y = x W^T + b.

Composed from primitives this would be a transpose, a batched matmul and a
broadcast add: three graph nodes and their temporaries. Fused, it is one matrix
product (plus the bias add) forward and two matrix products (plus a column sum)
backward, on x flattened to rows: linear_forward and linear_backward below. On the
CPU the op runs them from tensorlab/kernels/linear.py, where each large product is
cut by rows (or columns) over the threads that use_threads set, and the backward of a
large batch by its rows; tests/test_kernels.py checks them against the ones here.
"""

from tensorlab import kernels
from tensorlab.kernels import linear as fast
from tensorlab.layout import as_rows
from tensorlab.ops.dtypes import check_same_dtype
from tensorlab.tensor import Function


def linear_forward(x, weight, bias=None):
    """y = x W^T + b for x (N, IN), W (OUT, IN), b (OUT,): y is (N, OUT)."""
    y = x @ weight.T
    return y if bias is None else y + bias


def linear_backward(gy, x, weight, input_grad=True):
    # y = x W^T + b  =>  gx = gy W,  gW = gy^T x,  gb = sum over rows of gy
    # (gx only if input_grad: a first layer's input is data, and its gx is the largest product of the three)
    return gy @ weight if input_grad else None, gy.T @ x, gy.sum(axis=0)


class Linear(Function):
    """linear_forward and linear_backward on x's rows; on the CPU their kernels (tensorlab/kernels/linear.py)."""

    def forward(self, x, weight, bias=None):
        check_same_dtype("linear", x, weight, *([] if bias is None else [bias]))  # integers too, as PyTorch
        out_features, in_features = weight.shape if weight.ndim == 2 else (None, None)
        if x.shape[-1:] != (in_features,) or (bias is not None and bias.shape != (out_features,)):
            bias_shape = None if bias is None else bias.shape
            raise ValueError(
                f"linear: x of shape {x.shape} needs last axis {in_features} to match weight "
                f"{weight.shape} (out, in), and bias {bias_shape} must be ({out_features},)"
            )
        self.x_shape, self.weight = x.shape, weight
        self.x_rows = as_rows(x)  # (N, IN), N = all leading axes
        forward = kernels.choose(fast.linear_forward, linear_forward, x)
        return forward(self.x_rows, weight, bias).reshape(x.shape[:-1] + (out_features,))

    def backward(self, gy):
        backward = kernels.choose(fast.linear_backward, linear_backward, gy)
        input_grad = self.inputs[0].requires_grad
        gx, gw, gb = backward(as_rows(gy), self.x_rows, self.weight, input_grad)
        return gx.reshape(self.x_shape) if input_grad else None, gw, gb
