"""The affine map of a Linear layer in one op: y = x W^T + b.

Composed from primitives this would be a transpose, a batched matmul and a
broadcast add: three graph nodes and their temporaries. Fused, it is one matrix
product (plus the bias add) forward and two matrix products (plus a column sum)
backward, on x flattened to rows. Each product goes through tensorlab.threads.matmul,
which is a @ b split by rows over the threads that use_threads set (a plain a @ b until then).
"""

from tensorlab import threads
from tensorlab.tensor import Function


class Linear(Function):
    def forward(self, x, weight, bias=None):
        out_features, in_features = weight.shape
        if x.shape[-1] != in_features or (bias is not None and bias.shape != (out_features,)):
            bias_shape = None if bias is None else bias.shape
            raise ValueError(
                f"linear: x of shape {x.shape} needs last axis {in_features} to match weight "
                f"{weight.shape} (out, in), and bias {bias_shape} must be ({out_features},)"
            )
        self.x_shape, self.weight = x.shape, weight
        self.x_rows = x.reshape(-1, in_features)  # (N, IN), N = all leading axes
        y = threads.matmul(self.x_rows, weight.T)  # (N, OUT)
        if bias is not None:
            y += bias
        return y.reshape(x.shape[:-1] + (out_features,))

    def backward(self, gy):
        # y = x W^T + b  =>  gx = gy W,  gW = gy^T x,  gb = sum over rows of gy
        g_rows = gy.reshape(-1, self.weight.shape[0])  # (N, OUT)
        gx = threads.matmul(g_rows, self.weight).reshape(self.x_shape)
        return gx, threads.matmul(g_rows.T, self.x_rows), g_rows.sum(axis=0)
