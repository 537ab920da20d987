"""Module: the base of every layer, holding Parameters and sub-Modules in insertion order.

Assigning a Parameter or a Module to an attribute registers it, so
`named_parameters()` can walk the tree and name every weight by its path
("blocks.0.attn.qkv.weight"), the same names a PyTorch twin of the model uses.
"""

import contextlib

import numpy as np

from tensorlab import backend
from tensorlab.nn.parameter import Parameter
from tensorlab.tensor import no_grad

# Context managers hook(module) that Module.__call__ enters around each forward, for tools that watch module calls
# (tensorlab.graph.record() adds one while it records); empty, a call is just forward.
call_hooks = []


class Module:
    """Base class of layers and models: call it like a function to run `forward`."""

    def __init__(self):
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "training", True)

    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise RuntimeError(
                f"{type(self).__name__}.__init__ must call super().__init__() before assigning attributes"
            )
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        object.__setattr__(self, name, value)

    def __call__(self, *args, **kwargs):
        if not call_hooks:
            return self.forward(*args, **kwargs)
        with contextlib.ExitStack() as hooks:
            for hook in call_hooks:
                hooks.enter_context(hook(self))
            return self.forward(*args, **kwargs)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    # ----- walking the tree --------------------------------------------------------------------
    def named_modules(self, prefix=""):
        """(path, module) for this module and every sub-module, depth first, in insertion order."""
        yield prefix, self
        for name, module in self._modules.items():
            yield from module.named_modules(f"{prefix}.{name}" if prefix else name)

    def named_parameters(self, prefix=""):
        """(path, parameter) for every parameter, each once, in insertion order."""
        seen = set()
        for path, module in self.named_modules(prefix):
            for name, p in module._parameters.items():
                if id(p) not in seen:
                    seen.add(id(p))
                    yield (f"{path}.{name}" if path else name), p

    def parameters(self):
        """Every parameter, each once, in insertion order."""
        return [p for _, p in self.named_parameters()]

    def num_parameters(self):
        """How many numbers the parameters hold in all."""
        return sum(p.size for p in self.parameters())

    # ----- modes, gradients, devices -----------------------------------------------------------
    def train(self, mode=True):
        """Training mode (dropout active) for this module and all sub-modules; returns self."""
        for _, module in self.named_modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self):
        """Evaluation mode (dropout off); returns self."""
        return self.train(False)

    def zero_grad(self):
        """Forget every parameter's gradient (sets .grad to None)."""
        for p in self.parameters():
            p.grad = None

    def to(self, device):
        """Move every parameter to 'cpu' or 'cuda' in place; returns self."""
        backend.check_device_name(device)
        for p in self.parameters():
            p.data = backend.to_device(p.data, device)
            p.grad = None if p.grad is None else backend.to_device(p.grad, device)
        return self

    # ----- saving and loading ------------------------------------------------------------------
    def state_dict(self):
        """{name: array} for every parameter, in insertion order (the arrays themselves, not copies)."""
        return {name: p.data for name, p in self.named_parameters()}

    def load_state_dict(self, state):
        """Copy arrays into the parameters; every name must match and every shape fit (strict)."""
        own = dict(self.named_parameters())
        state = {name: v if hasattr(v, "dtype") else np.asarray(v) for name, v in state.items()}  # NumPy, CuPy or lists
        missing = [name for name in own if name not in state]
        unexpected = [name for name in state if name not in own]
        wrong_shape = [
            f"{name}: got {tuple(state[name].shape)}, expected {own[name].shape}"
            for name in own
            if name in state and tuple(state[name].shape) != own[name].shape
        ]
        wrong_kind = [
            f"{name}: got dtype {state[name].dtype}, expected real numbers"
            for name in own
            if name in state and state[name].dtype.kind not in "biuf"
        ]
        problems = [f"not real numbers: {'; '.join(wrong_kind)}"] if wrong_kind else []
        if missing:
            problems.append("missing: " + ", ".join(missing))
        if unexpected:
            problems.append("unexpected: " + ", ".join(unexpected))
        if wrong_shape:
            problems.append("wrong shape: " + "; ".join(wrong_shape))
        if problems:
            raise ValueError(f"load_state_dict into {type(self).__name__} failed: " + " | ".join(problems))
        with no_grad():  # copy_ counts the write: backward refuses a graph that saved p before the load
            for name, p in own.items():
                p.copy_(state[name])

    def __repr__(self):
        lines = [f"  ({name}): " + repr(m).replace("\n", "\n  ") for name, m in self._modules.items()]
        extra = self.extra_repr()
        if not lines:
            return f"{type(self).__name__}({extra})"
        return f"{type(self).__name__}({extra}\n" + "\n".join(lines) + "\n)"

    def extra_repr(self):
        return ""


class ModuleList(Module):
    """A list of modules, registered as "0", "1", ... so their parameters are named by position."""

    def __init__(self, modules=()):
        super().__init__()
        for module in modules:
            self.append(module)

    def append(self, module):
        setattr(self, str(len(self._modules)), module)
        return self

    def __getitem__(self, i):
        return list(self._modules.values())[i]

    def __iter__(self):
        return iter(self._modules.values())

    def __len__(self):
        return len(self._modules)
