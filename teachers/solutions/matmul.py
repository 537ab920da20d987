"""Reference solution for exercise `matmul`: y = a @ b for 2-D a (n, k) and b (k, m)."""
from tensorlab.tensor import Function


class MatMul(Function):
    def forward(self, a, b):
        self.a, self.b = a, b
        return a @ b

    def backward(self, gy):
        # y = a b  =>  ga = gy b^T  (n, m)(m, k) -> (n, k),   gb = a^T gy  (k, n)(n, m) -> (k, m)
        return gy @ self.b.T, self.a.T @ gy
