"""Realistic mistakes in the exercises, and the words a precise diagnosis of each must contain.

Each mistake is a small edit of a teachers' solution (teachers/solutions/NAME.py): pairs of
(text in the solution, what a student wrote instead), applied in order. `says` are the words
that name the mistake precisely: the check's output must contain every one of them. Vague
advice ("what is special about those?", "re-derive it on paper") does not count, and a
check that passes the edited file is the worst outcome: tests/test_exercise_mistakes.py runs
them all.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Mistake:
    exercise: str
    edits: tuple  # ((old, new), ...)
    says: tuple  # every one must appear in the check's output
    what: str  # the mistake in a few words, for the test's report


def m(exercise, what, *edits, says):
    pairs = tuple(zip(edits[::2], edits[1::2]))
    return Mistake(exercise, pairs, (says,) if isinstance(says, str) else tuple(says), what)


# ----- shared fragments of the solutions --------------------------------------------------------------------------
ADD_SELF = "            self.grad += out.grad\n"
ADD_OTHER = "            other.grad += out.grad\n"
MUL_SELF = "self.grad += other.data * out.grad"
MUL_OTHER = "other.grad += self.data * out.grad"
TANH = "self.grad += (1 - t * t) * out.grad"
EXP_LINE = "self.grad += out.data * out.grad"
WALK = "        for node in reversed(order):"
SEED = "        self.grad = 1.0\n"
TOPO_SEEN = "        elif id(node) not in visited:"
TOPO_MARK = "            visited.add(id(node))\n"
UNBROADCAST = "return grad.sum(axis=tuple(range(leading)) + stretched, keepdims=True).reshape(shape)"
HYPOT = "return unbroadcast(gy * self.a / self.y, self.a.shape), unbroadcast(gy * self.b / self.y, self.b.shape)"
MUL = "return unbroadcast(gy * self.b, self.a.shape), unbroadcast(gy * self.a, self.b.shape)"
MATMUL = "return gy @ self.b.T, self.a.T @ gy"
SOFTMAX = "return self.y * (gy - (gy * self.y).sum(axis=self.axis, keepdims=True))"
NLL_HOT = "gx[np.arange(n), self.targets] -= 1"
NLL_RETURN = "return gy * gx / n, None"
RMS_GX = "gx = self.r * (g - self.xhat * (g * self.xhat).mean(axis=-1, keepdims=True))"
RMS_GW = "gw = (gy * self.xhat).sum(axis=tuple(range(gy.ndim - 1)))"
RECOMPUTED_R = (
    "x = self.xhat / self.r\n        ms = {ms}\n        r = {r}\n"
    "        xhat = x * r\n        gx = r * (g - xhat * (g * xhat).mean(axis=-1, keepdims=True))"
)
ATT_GS = "gs = p * (gp - (gp * p).sum(axis=-1, keepdims=True))"
ATT_GQ = "gq = gs @ self.k * self.scale"
ATT_GK = "gk = gs.swapaxes(-1, -2) @ self.q * self.scale"
ATT_P = "        p = self.p\n"
RECOMPUTE_P = (
    "        T = self.q.shape[-2]\n        s = self.q @ self.k.swapaxes(-1, -2) * self.scale\n"
    "        s = np.where(np.tril(np.ones((T, T), dtype=bool){k}), s, -np.inf)\n"
    "        e = np.exp(s - s.max(axis=-1, keepdims=True))\n        p = e / e.sum(axis=-1, keepdims=True)\n"
)
SUM_EXPAND = (
    "        if not self.keepdims:\n"
    "            gy = np.expand_dims(gy, self.axes)                  # the summed axes back, as size 1\n"
)
MEAN_EXPAND = (
    "        if not self.keepdims:\n"
    "            gy = np.expand_dims(gy, self.axes)                  # the averaged axes back, as size 1\n"
)
MEAN_N = "n = math.prod(self.x_shape[a] for a in self.axes)"
VAR = "return gy * 2 * self.centered / self.dof"
VAR_EXPAND = (
    "        if not self.keepdims:\n"
    "            gy = np.expand_dims(gy, self.axes)  # the reduced axes back, as size 1\n"
)
TIE_SHARE = "share_a = (self.a > self.b) + 0.5 * (self.a == self.b)"
CLAMP = "return gy * ((self.low <= self.x) & (self.x <= self.high))"
DECAY = "param = param - lr * weight_decay * param"
M_LINE = "m = b1 * m + (1 - b1) * grad"
V_LINE = "v = b2 * v + (1 - b2) * grad * grad"
M_HAT = "m_hat = m / (1 - b1 ** step)"
V_HAT = "v_hat = v / (1 - b2 ** step)"
UPDATE = "param = param - lr * m_hat / (np.sqrt(v_hat) + eps)"
RETURN = "return param, m, v"

MISTAKES = [
    # ----- value: accumulation, local derivatives, the walk ---------------------------------------------------------
    m(
        "value",
        "= for += in __add__",
        ADD_SELF + ADD_OTHER,
        ADD_SELF.replace("+=", "=") + ADD_OTHER.replace("+=", "="),
        says="Forgetting to accumulate in __add__'s _backward",
    ),
    m("value", "= for += in __add__, self's line", ADD_SELF, ADD_SELF.replace("+=", "="), says="accumulate in __add__"),
    m(
        "value",
        "= for += in __add__, other's line",
        ADD_OTHER,
        ADD_OTHER.replace("+=", "="),
        says="accumulate in __add__",
    ),
    m("value", "= for += in __mul__, self's line", MUL_SELF, MUL_SELF.replace("+=", "="), says="accumulate in __mul__"),
    m(
        "value",
        "= for += in __mul__, other's line",
        MUL_OTHER,
        MUL_OTHER.replace("+=", "="),
        says="accumulate in __mul__",
    ),
    m("value", "= for += in tanh", TANH, TANH.replace("+=", "="), says="Forgetting to accumulate in tanh's _backward"),
    m("value", "= for += in exp", EXP_LINE, EXP_LINE.replace("+=", "="), says="accumulate in exp's _backward"),
    m("value", "tanh' as 1 - t", TANH, "self.grad += (1 - t) * out.grad", says="_backward of tanh is wrong"),
    m(
        "value",
        "tanh' from the input",
        TANH,
        "self.grad += (1 - self.data ** 2) * out.grad",
        says="_backward of tanh is wrong",
    ),
    m("value", "exp' from the input", EXP_LINE, "self.grad += self.data * out.grad", says="_backward of exp is wrong"),
    m(
        "value",
        "mul's factors swapped",
        MUL_SELF,
        "self.grad += self.data * out.grad",
        MUL_OTHER,
        "other.grad += other.data * out.grad",
        says="_backward of __mul__ is wrong",
    ),
    m("value", "backward does not seed grad = 1", SEED, "", says="set its own grad to 1"),
    m("value", "the walk in forward order", WALK, "        for node in order:", says="before its consumers"),
    m(
        "value",
        "add ignores out.grad",
        ADD_SELF + ADD_OTHER,
        "            self.grad += 1.0\n            other.grad += 1.0\n",
        says=["_backward of __add__", "out.grad"],
    ),
    # ----- topo ------------------------------------------------------------------------------------------------------
    m("topo", "no visited check", TOPO_SEEN, "        elif True:", says="appear more than once"),
    m("topo", "visited never filled", TOPO_MARK, "", says="appear more than once"),
    m("topo", "the order reversed", "    return order\n", "    return order[::-1]\n", says="comes before"),
    m(
        "topo",
        "Kahn's counts gathered without a visited set",
        "    order, visited, stack = [], set(), [(root, False)]\n",
        """    users, stack = {}, [root]
    while stack:  # each node's consumers counted, on every path that reaches it
        node = stack.pop()
        for p in node.parents:
            users[id(p)] = users.get(id(p), 0) + 1
            stack.append(p)
    order, ready = [], [root]
    while ready:
        node = ready.pop()
        order.append(node)
        for p in node.parents:
            users[id(p)] -= 1
            if users[id(p)] == 0:
                ready.append(p)
    return order[::-1]
    order, visited, stack = [], set(), [(root, False)]
""",
        says="count each consumer once",
    ),
    m(
        "topo",
        "pre-order (a node before its parents)",
        "        if parents_done:                     # all its parents are in `order` already\n"
        "            order.append(node)\n        elif id(node) not in visited:\n"
        "            visited.add(id(node))\n",
        "        if parents_done:\n            pass\n        elif id(node) not in visited:\n"
        "            visited.add(id(node))\n            order.append(node)\n",
        says="comes before",
    ),
    m(
        "topo",
        "only the first parent followed",
        "stack.extend((p, False) for p in node.parents if id(p) not in visited)",
        "stack.extend((p, False) for p in node.parents[:1] if id(p) not in visited)",
        says="leaves out",
    ),
    m(
        "topo",
        "recursive",
        "    order, visited, stack = [], set(), [(root, False)]\n",
        "    order, visited = [], set()\n\n    def visit(node):\n        if id(node) not in visited:\n"
        "            visited.add(id(node))\n            for p in node.parents:\n                visit(p)\n"
        "            order.append(node)\n    visit(root)\n    return order\n    stack = []\n",
        says="RecursionError",
    ),
    # ----- unbroadcast -----------------------------------------------------------------------------------------------
    m(
        "unbroadcast",
        "only the leading axes",
        UNBROADCAST,
        "return grad.sum(axis=tuple(range(leading)))",
        says="summed only the axes added in front",
    ),
    m(
        "unbroadcast",
        "only the stretched axes",
        UNBROADCAST,
        "return grad.sum(axis=stretched, keepdims=True)",
        says="summed only the stretched size-1 axes",
    ),
    m(
        "unbroadcast",
        "the trailing axes",
        UNBROADCAST,
        "return grad.sum(axis=tuple(range(len(shape), grad.ndim)))",
        says="Summing over the wrong axes",
    ),
    m(
        "unbroadcast",
        "stretched axes dropped",
        UNBROADCAST,
        "return grad.sum(axis=tuple(range(leading)) + stretched)",
        says="keep the stretched size-1 axes",
    ),
    m("unbroadcast", "sum of everything", UNBROADCAST, "return grad.sum()", says="You summed over every axis"),
    m(
        "unbroadcast",
        "a mean",
        UNBROADCAST,
        UNBROADCAST.replace("grad.sum(", "grad.mean("),
        says="a mean where a sum belongs",
    ),
    # ----- function: Hypot -------------------------------------------------------------------------------------------
    m(
        "function",
        "no unbroadcast",
        HYPOT,
        "return gy * self.a / self.y, gy * self.b / self.y",
        says="A missing sum over the broadcast axes",
    ),
    m(
        "function",
        "no division by y",
        "gy * self.a / self.y, self.a.shape",
        "gy * self.a, self.a.shape",
        says="You left out the division by y",
    ),
    m(
        "function",
        "times y",
        "gy * self.a / self.y, self.a.shape",
        "gy * self.a * self.y, self.a.shape",
        says="You multiplied by y",
    ),
    m(
        "function",
        "the 2 of the square kept",
        HYPOT,
        HYPOT.replace("gy * self.", "gy * 2 * self."),
        says="2 times the right one",
    ),
    m("function", "gy ignored", HYPOT, HYPOT.replace("gy * self.", "self."), says="it ignores gy"),
    m(
        "function",
        "divided by y squared",
        "gy * self.a / self.y, self.a.shape",
        "gy * self.a / self.y ** 2, self.a.shape",
        says="divided by y^2",
    ),
    m(
        "function",
        "b's gradient copied from a's",
        "unbroadcast(gy * self.b / self.y, self.b.shape)",
        "unbroadcast(gy * self.a / self.y, self.b.shape)",
        says="Your gradient for 'b' is the right gradient for 'a'",
    ),
    m("function", "forward edited", "np.sqrt(a * a + b * b)", "np.sqrt(a * a + b)", says="forward does not compute"),
    # ----- mul -------------------------------------------------------------------------------------------------------
    m(
        "mul",
        "b not summed over its broadcast axes",
        "unbroadcast(gy * self.a, self.b.shape)",
        "gy * self.a",
        says="A missing sum over the broadcast axes",
    ),
    m(
        "mul",
        "gradients swapped",
        MUL,
        MUL.replace("self.b, self.a", "self.a, self.a").replace("gy * self.a, self.b", "gy * self.b, self.b"),
        says="the two are swapped",
    ),
    m(
        "mul",
        "divides the output by the input",
        MUL,
        "return unbroadcast(gy * (self.a * self.b) / self.a, self.a.shape), "
        "unbroadcast(gy * (self.a * self.b) / self.b, self.b.shape)",
        says="NaN",
    ),
    m(
        "mul",
        "ga from its own input",
        "unbroadcast(gy * self.b, self.a.shape)",
        "unbroadcast(gy * self.a, self.a.shape)",
        says="Your gradient for 'a' is the right gradient for 'b'",
    ),
    m(
        "mul",
        "the sum over axis 0 always",
        "return g.sum(axis=tuple(range(leading)) + stretched, keepdims=True).reshape(shape)",
        "return g.sum(axis=0, keepdims=True)",
        says="not over a fixed axis",
    ),
    m("mul", "gy ignored", MUL, MUL.replace("gy * ", ""), says="it ignores gy"),
    m(
        "mul",
        "summed to the other input's shape",
        "unbroadcast(gy * self.b, self.a.shape)",
        "unbroadcast(gy * self.b, self.b.shape)",
        says="input 'a' has shape (3, 4), but your gradient for it has shape (4,)",
    ),
    m("mul", "the sign", MUL, MUL.replace("gy * ", "-gy * "), says="exactly -1 times the right one"),
    # ----- matmul ----------------------------------------------------------------------------------------------------
    m("matmul", "b not transposed", MATMUL, "return gy @ self.b, self.a.T @ gy", says="where its transpose"),
    m("matmul", "ga's factors swapped", MATMUL, "return self.b.T @ gy, self.a.T @ gy", says="ga the factors"),
    m("matmul", "a not transposed", MATMUL, "return gy @ self.b.T, self.a @ gy", says="where a's transpose"),
    m("matmul", "gb's factors swapped", MATMUL, "return gy @ self.b.T, gy @ self.a.T", says="gb the factors"),
    m("matmul", "gb transposed", MATMUL, "return gy @ self.b.T, gy.T @ self.a", says="gradient is transposed"),
    m("matmul", "returned in the wrong order", MATMUL, "return self.a.T @ gy, gy @ self.b.T", says="wrong order"),
    m(
        "matmul",
        "gy ignored",
        MATMUL,
        "return np.ones_like(gy) @ self.b.T, self.a.T @ np.ones_like(gy)",
        "from tensorlab",
        "import numpy as np\nfrom tensorlab",
        says="it ignores gy",
    ),
    # ----- exp and log -----------------------------------------------------------------------------------------------
    m("exp_log", "exp's sign", "return gy * self.y", "return -gy * self.y", says="exactly -1 times"),
    m("exp_log", "log times x", "return gy / self.x", "return gy * self.x", says="You multiplied by x"),
    m("exp_log", "log over x squared", "return gy / self.x", "return gy / self.x ** 2", says="You divided by x^2"),
    m("exp_log", "log times log", "return gy / self.x", "return gy * np.log(self.x)", says="multiplied gy by log(x)"),
    m("exp_log", "exp of gy", "return gy * self.y", "return np.exp(gy)", says="You took exp of gy"),
    m("exp_log", "exp ignores gy", "return gy * self.y", "return self.y", says="it ignores gy"),
    m("exp_log", "exp of y", "return gy * self.y", "return gy * np.exp(self.y)", says="You took exp of y"),
    m("exp_log", "log's sign", "return gy / self.x", "return -gy / self.x", says="exactly -1 times"),
    m(
        "exp_log",
        "exp times x",
        "return gy * self.y",
        "return gy * np.log(self.y)",
        says="You multiplied by x where the derivative of exp",
    ),
    m("exp_log", "log ignores gy", "return gy / self.x", "return 1 / self.x", says="it ignores gy"),
    # ----- ties: maximum and clamp ------------------------------------------------------------------------------------
    m(
        "ties",
        "a tie goes to a",
        TIE_SHARE,
        "share_a = (self.a >= self.b) + 0.0",
        says="At a tie (a == b) you give all of gy to a",
    ),
    m(
        "ties",
        "clamp's limits left out",
        CLAMP,
        CLAMP.replace("<=", "<"),
        says="At x equal to a limit (low or high) your gradient is 0",
    ),
    m("ties", "clamp ignores gy", CLAMP, CLAMP.replace("gy * ", "1.0 * "), says="it ignores gy"),
    m(
        "ties",
        "b not summed over its broadcast axes",
        "_summed_to(gy * (1 - share_a), self.b.shape)",
        "gy * (1 - share_a)",
        says="A missing sum over the broadcast axes",
    ),
    # ----- sum -------------------------------------------------------------------------------------------------------
    m(
        "sum",
        "expand_dims even with keepdims",
        "if not self.keepdims:\n            gy = np.expand_dims",
        "if True:\n            gy = np.expand_dims",
        says="fails only with keepdims=True",
    ),
    m("sum", "no expand_dims", SUM_EXPAND, "", says="np.expand_dims(gy, self.axes)"),
    m(
        "sum",
        "divided by the axis length",
        "return np.broadcast_to(gy, self.x_shape).copy()",
        "return np.broadcast_to(gy, self.x_shape).copy() / self.x_shape[self.axes[0]]",
        says="a mean where a sum",
    ),
    m(
        "sum",
        "expand_dims along self.axis",
        "gy = np.expand_dims(gy, self.axes)",
        "gy = np.expand_dims(gy, self.axis)",
        says="use self.axes",
    ),
    m(
        "sum",
        "ones times gy without expand_dims",
        SUM_EXPAND + "        return np.broadcast_to(gy, self.x_shape).copy()",
        "        return np.ones(self.x_shape) * gy",
        says="np.expand_dims(gy, self.axes)",
    ),
    # ----- mean ------------------------------------------------------------------------------------------------------
    m(
        "mean",
        "no 1/n",
        "np.broadcast_to(gy / n, self.x_shape)",
        "np.broadcast_to(gy, self.x_shape)",
        says="a division by 4 is missing (like the 1/n of a mean)",
    ),
    m("mean", "n from the last axis", MEAN_N, "n = self.x_shape[-1]", says="but this mean averaged"),
    m("mean", "n from every axis", MEAN_N, "n = math.prod(self.x_shape)", says="but this mean averaged"),
    m("mean", "n as the number of axes", MEAN_N, "n = len(self.axes)", says="but this mean averaged"),
    m(
        "mean",
        "times n",
        "np.broadcast_to(gy / n, ",
        "np.broadcast_to(gy * n, ",
        says="You multiplied by n where the mean divides by it",
    ),
    m(
        "mean",
        "expand_dims even with keepdims",
        "if not self.keepdims:\n            gy = np.expand_dims",
        "if True:\n            gy = np.expand_dims",
        says="fails only with keepdims=True",
    ),
    m("mean", "no expand_dims", MEAN_EXPAND, "", says="np.expand_dims(gy, self.axes)"),
    # ----- var -------------------------------------------------------------------------------------------------------
    m(
        "var",
        "the 2 of the square left out",
        VAR,
        "return gy * self.centered / self.dof",
        says="1/2 times the right one",
    ),
    m(
        "var",
        "expand_dims even with keepdims",
        "if not self.keepdims:\n            gy = np.expand_dims",
        "if True:\n            gy = np.expand_dims",
        says="fails only with keepdims=True",
    ),
    m("var", "no expand_dims", VAR_EXPAND, "", says="np.expand_dims(gy, self.axes)"),
    m("var", "the sign", VAR, "return -gy * 2 * self.centered / self.dof", says="exactly -1 times"),
    m(
        "var",
        "divided by n, not n - correction",
        VAR,
        VAR.replace("/ self.dof", "/ (self.dof + self.correction)"),
        says="the right one for correction=0, but this case has correction=1",
    ),
    m(
        "var",
        "correction fixed at 1",
        VAR,
        VAR.replace("/ self.dof", "/ (self.dof + self.correction - 1)"),
        says="the right one for correction=1",
    ),
    # ----- softmax ---------------------------------------------------------------------------------------------------
    m("softmax", "y(1 - y)", SOFTMAX, "return gy * self.y * (1 - self.y)", says="You used y(1 - y)"),
    m(
        "softmax",
        "the diagonal without y",
        SOFTMAX,
        "return gy - self.y * (gy * self.y).sum(axis=self.axis, keepdims=True)",
        says="The diagonal of your Jacobian is 1 where it is y_i",
    ),
    m("softmax", "the row sum dropped", SOFTMAX, "return self.y * gy", says="The row-sum term is missing"),
    m("softmax", "the row sum's sign", SOFTMAX, SOFTMAX.replace("(gy - ", "(gy + "), says="has the wrong sign"),
    m("softmax", "no keepdims", SOFTMAX, SOFTMAX.replace(", keepdims=True", ""), says="keepdims=True"),
    m("softmax", "axis fixed at -1", SOFTMAX, SOFTMAX.replace("axis=self.axis", "axis=-1"), says="self.axis"),
    m(
        "softmax",
        "gy summed without y",
        SOFTMAX,
        "return self.y * (gy - gy.sum(axis=self.axis, keepdims=True))",
        says="sums gy alone",
    ),
    m(
        "softmax",
        "not multiplied by y",
        SOFTMAX,
        "return gy - (gy * self.y).sum(axis=self.axis, keepdims=True)",
        says="The factor y in front is missing",
    ),
    m(
        "softmax",
        "a mean for the row sum",
        SOFTMAX,
        SOFTMAX.replace(").sum(", ").mean("),
        says="takes a mean over the row where the sum belongs",
    ),
    m("softmax", "the sign", SOFTMAX, "return -" + SOFTMAX[len("return ") :], says="exactly -1 times"),
    # ----- log_softmax + NLL -----------------------------------------------------------------------------------------
    m("log_softmax_nll", "log-probabilities", "gx = self.p.copy()", "gx = np.log(self.p)", says="log-probabilities"),
    m("log_softmax_nll", "1 off everywhere", NLL_HOT, "gx -= 1", says="subtracted 1 from every element"),
    m("log_softmax_nll", "no one-hot", NLL_HOT, "pass", says="The one-hot term is missing"),
    m("log_softmax_nll", "+1 at the target", NLL_HOT, NLL_HOT.replace("-= 1", "+= 1"), says="added 1"),
    m("log_softmax_nll", "no 1/N", NLL_RETURN, "return gy * gx, None", says="1/n"),
    m(
        "log_softmax_nll",
        "divided by the classes",
        NLL_RETURN,
        "return gy * gx / gx.shape[1], None",
        says="number of classes",
    ),
    m(
        "log_softmax_nll",
        "the target's right neighbour",
        NLL_HOT,
        "gx[np.arange(n), self.targets + 1] -= 1",
        says="neighbour, column targets[n]",
    ),
    m(
        "log_softmax_nll",
        "the target's left neighbour",
        NLL_HOT,
        "gx[np.arange(n), self.targets - 1] -= 1",
        says="neighbour, column targets[n]",
    ),
    m(
        "log_softmax_nll",
        "every row at each target",
        NLL_HOT,
        "gx[:, self.targets] -= 1",
        says="in every row at each target's column",
    ),
    m("log_softmax_nll", "gy ignored", NLL_RETURN, "return gx / n, None", says="it ignores gy"),
    m(
        "log_softmax_nll",
        "one-hot at the row index",
        NLL_HOT,
        "gx[np.arange(n), np.arange(n)] -= 1",
        says="not at the target",
    ),
    # ----- RMSNorm ---------------------------------------------------------------------------------------------------
    m("rms_norm", "r a constant", RMS_GX, "gx = self.r * g", says="as a constant"),
    m("rms_norm", "the term's sign", RMS_GX, RMS_GX.replace("(g - ", "(g + "), says="has the wrong sign"),
    m("rms_norm", "sum for mean", RMS_GX, RMS_GX.replace(".mean(", ".sum("), says="C times too large"),
    m(
        "rms_norm",
        "eps dropped",
        RMS_GX,
        RECOMPUTED_R.format(ms="(x * x).mean(axis=-1, keepdims=True)", r="1 / np.sqrt(ms)"),
        says="eps",
    ),
    m(
        "rms_norm",
        "eps outside the root",
        RMS_GX,
        RECOMPUTED_R.format(ms="(x * x).mean(axis=-1, keepdims=True)", r="1 / (np.sqrt(ms) + self.eps)"),
        says="eps outside the square root",
    ),
    m(
        "rms_norm",
        "the row mean over every row",
        RMS_GX,
        RECOMPUTED_R.format(ms="(x * x).mean()", r="1 / np.sqrt(ms + self.eps)"),
        says="mean over the last axis",
    ),
    m(
        "rms_norm",
        "the row mean along axis 0",
        RMS_GX,
        RMS_GX.replace(".mean(axis=-1, keepdims=True)", ".mean(axis=0, keepdims=True)"),
        says="mean over the last axis",
    ),
    m("rms_norm", "row mean without keepdims", RMS_GX, RMS_GX.replace(", keepdims=True", ""), says="keepdims=True"),
    m("rms_norm", "weight left out", "g = gy * self.weight", "g = gy", says="weight is missing"),
    m("rms_norm", "gweight without xhat", RMS_GW, "gw = gy.sum(axis=tuple(range(gy.ndim - 1)))", says="factor xhat"),
    m(
        "rms_norm",
        "gweight from x",
        RMS_GW,
        "gw = (gy * self.xhat / self.r).sum(axis=tuple(range(gy.ndim - 1)))",
        says="uses x where",
    ),
    m("rms_norm", "gweight not summed", RMS_GW, "gw = gy * self.xhat", says="sum over"),
    m(
        "rms_norm",
        "x for xhat in the term",
        RMS_GX,
        RMS_GX.replace("self.xhat", "(self.xhat / self.r)"),
        says="uses x where xhat = x * r belongs",
    ),
    m(
        "rms_norm",
        "the outer r left out",
        RMS_GX,
        RMS_GX.replace("self.r * (g", "(g"),
        says="The factor r in front is missing",
    ),
    m(
        "rms_norm",
        "gweight summed over the first axis only",
        RMS_GW,
        "gw = (gy * self.xhat).sum(axis=0)",
        says="sum over",
    ),
    # ----- embedding -------------------------------------------------------------------------------------------------
    m("embedding", "= for np.add.at", "np.add.at(gw, self.ids, gy)", "gw[self.ids] = gy", says="overwrite each other"),
    m("embedding", "buffered +=", "np.add.at(gw, self.ids, gy)", "gw[self.ids] += gy", says="overwrite each other"),
    m("embedding", "no None for ids", "return None, gw", "return gw", says="returned no gradient for 'weight'"),
    m(
        "embedding",
        "a repeat's first gradient times its count",
        "np.add.at(gw, self.ids, gy)",
        "ids = self.ids.reshape(-1)\n        first = {v: n for n, v in reversed(list(enumerate(ids)))}\n"
        "        for v, n in first.items():\n"
        "            gw[v] = gy.reshape(len(ids), -1)[n] * (ids == v).sum()",
        says="Only rows of ids that repeat are wrong",
    ),
    m(
        "embedding",
        "gy as the table's gradient",
        "return None, gw",
        "return None, gy",
        says="np.zeros(self.weight_shape)",
    ),
    m(
        "embedding",
        "a loop that overwrites",
        "np.add.at(gw, self.ids, gy)",
        "for n, i in enumerate(self.ids.reshape(-1)):\n            gw[i] = gy.reshape(-1, gy.shape[-1])[n]",
        says="overwrite each other",
    ),
    # ----- causal attention ------------------------------------------------------------------------------------------
    m(
        "causal_attention",
        "scale inverted",
        "gs @ self.k * self.scale",
        "gs @ self.k / self.scale",
        "@ self.q * self.scale",
        "@ self.q / self.scale",
        says="You multiplied by sqrt(D)",
    ),
    m("causal_attention", "gq without the scale", ATT_GQ, "gq = gs @ self.k", says="scale of the scores is missing"),
    m(
        "causal_attention",
        "gk without the scale",
        ATT_GK,
        "gk = gs.swapaxes(-1, -2) @ self.q",
        says="scale of the scores is missing",
    ),
    m(
        "causal_attention",
        "gk not transposed",
        "gs.swapaxes(-1, -2) @ self.q",
        "gs @ self.q",
        says="gS is not transposed",
    ),
    m(
        "causal_attention",
        "gq transposed",
        ATT_GQ,
        "gq = gs.swapaxes(-1, -2) @ self.k * self.scale",
        says="gS is transposed",
    ),
    m(
        "causal_attention",
        "k transposed in gq",
        ATT_GQ,
        "gq = gs @ self.k.swapaxes(-1, -2) * self.scale",
        says="In gq, k is transposed",
    ),
    m(
        "causal_attention",
        "v not transposed in gP",
        "gp = gy @ self.v.swapaxes(-1, -2)",
        "gp = gy @ self.v",
        says="v is not transposed",
    ),
    m(
        "causal_attention",
        "P not transposed in gv",
        "gv = p.swapaxes(-1, -2) @ gy",
        "gv = p @ gy",
        says="P is not transposed",
    ),
    m("causal_attention", "softmax step P(1 - P)", ATT_GS, "gs = p * (1 - p) * gp", says="P(1 - P)"),
    m("causal_attention", "softmax step without the row sum", ATT_GS, "gs = p * gp", says="row-sum term is missing"),
    m(
        "causal_attention",
        "the scale twice in gq",
        ATT_GQ,
        "gq = gs @ self.k * self.scale * self.scale",
        says="Your gq carries the 1/sqrt(D) scale twice",
    ),
    m(
        "causal_attention",
        "softmax step's diagonal without P",
        ATT_GS,
        "gs = gp - p * (gp * p).sum(axis=-1, keepdims=True)",
        says="diagonal of your Jacobian is 1 where it is P",
    ),
    m(
        "causal_attention",
        "softmax step's sign",
        ATT_GS,
        ATT_GS.replace("(gp - ", "(gp + "),
        says="row-sum term has the wrong sign",
    ),
    m(
        "causal_attention",
        "softmax recomputed without the mask",
        ATT_P,
        RECOMPUTE_P.replace("np.where(np.tril(np.ones((T, T), dtype=bool){k}), s, -np.inf)", "s"),
        says="Gradient leaks to future positions",
    ),
    m(
        "causal_attention",
        "softmax recomputed without the max",
        ATT_P,
        RECOMPUTE_P.format(k="").replace("np.exp(s - s.max(axis=-1, keepdims=True))", "np.exp(s)"),
        says="exp that overflows",
    ),
    m(
        "causal_attention",
        "mask drops the diagonal",
        ATT_GS,
        ATT_GS + "\n        gs = np.where(np.tril(np.ones(gs.shape[-2:], dtype=bool), -1), gs, 0.0)",
        says="exactly on the diagonal, where the key is the query's own position",
    ),
    m("causal_attention", "mask off by one", ATT_P, RECOMPUTE_P.format(k=", 1"), says="Your mask is off by one"),
    m(
        "causal_attention",
        "softmax step summed over queries",
        ATT_GS,
        ATT_GS.replace("axis=-1", "axis=-2"),
        says="over the queries",
    ),
    m(
        "causal_attention",
        "softmax step without keepdims",
        ATT_GS,
        ATT_GS.replace(", keepdims=True", ""),
        says="without keepdims=True",
    ),
    m(
        "causal_attention",
        "the scale applied twice",
        ATT_GS,
        ATT_GS + " * self.scale",
        says=("Your gq carries the 1/sqrt(D) scale twice", "Your gk carries the 1/sqrt(D) scale twice"),
    ),
    # ----- AdamW -----------------------------------------------------------------------------------------------------
    m("adamw", "no bias correction of m", M_HAT, "m_hat = m", says="bias correction of m is missing"),
    m("adamw", "no bias correction of v", V_HAT, "v_hat = v", says="bias correction of v is missing"),
    m("adamw", "no bias corrections", M_HAT, "m_hat = m", V_HAT, "v_hat = v", says="skipped the bias correction"),
    m(
        "adamw",
        "(1 - beta)**step",
        M_HAT,
        "m_hat = m / (1 - b1) ** step",
        V_HAT,
        "v_hat = v / (1 - b2) ** step",
        says="raise 1 - beta to the power step",
    ),
    m("adamw", "L2 in the gradient", DECAY, "grad = grad + weight_decay * param", says="L2"),
    m("adamw", "decay without lr", DECAY, "param = param - weight_decay * param", says="learning rate"),
    m("adamw", "no decay", DECAY, "pass", says="no weight decay"),
    m("adamw", "eps inside the root", "np.sqrt(v_hat) + eps", "np.sqrt(v_hat + eps)", says="eps belongs outside"),
    m("adamw", "eps added to param", UPDATE, "param = param - lr * m_hat / np.sqrt(v_hat) + eps", says="eps is added"),
    m("adamw", "decay's brackets", DECAY, "param = param * (1 - lr) * weight_decay", says="brackets belong around"),
    m("adamw", "m's betas swapped", M_LINE, "m = (1 - b1) * m + b1 * grad", says="beta1 and 1 - beta1 are swapped"),
    m("adamw", "v's betas swapped", V_LINE, "v = (1 - b2) * v + b2 * grad * grad", says="beta2 and 1 - beta2"),
    m("adamw", "v not squared", V_LINE, "v = b2 * v + (1 - b2) * grad", says="squared gradient"),
    m("adamw", "v from abs(grad)", V_LINE, "v = b2 * v + (1 - b2) * np.abs(grad)", says="not of abs(grad)"),
    m("adamw", "returned in the wrong order", RETURN, "return param, v, m", says="in the order (param, m, v)"),
    m("adamw", "step + 1", "** step)", "** (step + 1))", says="step + 1"),
    m("adamw", "step - 1", "** step)", "** (step - 1))", says="1 - beta**0 = 0"),
    m("adamw", "no square root", "np.sqrt(v_hat) + eps", "v_hat + eps", says="square root"),
    m(
        "adamw",
        "decay after the update",
        DECAY + "                # decay the weight, not through the gradient",
        "",
        RETURN,
        DECAY + "\n    " + RETURN,
        says="after the Adam update",
    ),
    m(
        "adamw",
        "state ignored",
        M_LINE,
        "m = (1 - b1) * grad",
        V_LINE,
        "v = (1 - b2) * grad * grad",
        says="ignore the m and v passed in",
    ),
    m("adamw", "m_hat stored as m", RETURN, "return param, m_hat, v", says="You returned m_hat as the new m"),
    m("adamw", "v_hat stored as v", RETURN, "return param, m, v_hat", says="You returned v_hat as the new v"),
    m(
        "adamw",
        "beta1 in v's correction",
        V_HAT,
        "v_hat = v / (1 - b1 ** step)",
        says="each moment is corrected with its own beta",
    ),
    m(
        "adamw",
        "b1 * step for b1 ** step",
        M_HAT,
        "m_hat = m / (1 - b1 * step)",
        says="1 - b1 * step instead of 1 - b1 ** step",
    ),
    m(
        "adamw",
        "no lr in the update",
        UPDATE,
        "param = param - m_hat / (np.sqrt(v_hat) + eps)",
        says="missing the learning rate",
    ),
    m(
        "adamw",
        "the update's sign",
        UPDATE,
        "param = param + lr * m_hat / (np.sqrt(v_hat) + eps)",
        says="Your update has the wrong sign",
    ),
]
