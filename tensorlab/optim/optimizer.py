"""Optimizer: the base class that holds parameter groups and per-parameter state.

An optimizer owns a list of parameter groups. Each group is a plain dict: its
"params" (a list of Parameters) and its own hyperparameters ("lr",
"weight_decay", ...); any hyperparameter a group leaves out is filled from the
constructor's defaults, as in PyTorch. A learning-rate schedule changes
`group["lr"]` between steps.

`step()` walks every parameter that has a gradient and hands it to the
subclass's `update(p, grad, group, state)`, which changes `p.data` in place.
Updates work on the raw backend arrays (NumPy or CuPy), so they record no
autodiff graph. `state[p]` is a dict of arrays and numbers that the update keeps
between steps (momentum buffers, Adam's moments).
"""

from tensorlab import backend
from tensorlab.tensor import Tensor


class Optimizer:
    """Base class: parameter groups, per-parameter state, step, zero_grad, state_dict."""

    def __init__(self, params, defaults):
        self.defaults = dict(defaults)
        self.param_groups = []
        self.state = {}  # Parameter -> dict of arrays and numbers
        if isinstance(params, Tensor):
            raise TypeError(
                "params must be an iterable of Parameters or of group dicts, got a single Tensor; wrap it in a list"
            )
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, group):
        """Append a group dict; hyperparameters it lacks are taken from the defaults."""
        group = dict(group)
        params = group["params"]
        group["params"] = [params] if isinstance(params, Tensor) else list(params)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        for p in group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizers update Tensors, got {type(p).__name__}")
            if id(p) in seen:  # it would be updated twice per step
                raise ValueError("a parameter appears more than once in the optimizer's groups")
            seen.add(id(p))
        for name, value in self.defaults.items():
            group.setdefault(name, value)
        self.param_groups.append(group)

    def zero_grad(self):
        """Forget every gradient (`p.grad = None`), so the next backward starts afresh."""
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None

    def step(self):
        """Update every parameter that has a gradient, in place."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:  # not used in this step's loss: leave it and its state alone
                    continue
                self.update(p, p.grad, group, self.state.setdefault(p, {}))
                p._bump_version()  # p changed in place: backward refuses a graph that saved it before the step

    def update(self, p, grad, group, state):
        """Change `p.data` in place using `grad` (an array), the group's hyperparameters and `state`."""
        raise NotImplementedError

    # ----- saving and restoring ----------------------------------------------------------------
    def _params_in_order(self):
        return [p for group in self.param_groups for p in group["params"]]

    def state_dict(self):
        """A plain dict: {"state": {index: {name: array or number}}, "param_groups": [...]}.

        Parameters are named by their position across all groups (0, 1, ...), as in
        PyTorch. Arrays are copies, so later steps do not change a saved dict.
        """
        index = {id(p): i for i, p in enumerate(self._params_in_order())}
        state = {index[id(p)]: {name: _copy(value) for name, value in s.items()} for p, s in self.state.items()}
        groups = []
        for group in self.param_groups:
            saved = {name: value for name, value in group.items() if name != "params"}
            saved["params"] = [index[id(p)] for p in group["params"]]
            groups.append(saved)
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Restore hyperparameters and state saved by `state_dict()` into these same-shaped parameters."""
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(
                f"load_state_dict: the saved state has {len(saved_groups)} parameter groups, "
                f"this optimizer has {len(self.param_groups)}"
            )
        for i, (saved, group) in enumerate(zip(saved_groups, self.param_groups)):
            if len(saved["params"]) != len(group["params"]):
                raise ValueError(
                    f"load_state_dict: parameter group {i} has {len(saved['params'])} parameters "
                    f"in the saved state and {len(group['params'])} in this optimizer"
                )
            missing = [name for name in self.defaults if name not in saved]
            if missing:
                raise ValueError(
                    f"load_state_dict: saved parameter group {i} lacks {missing}; "
                    f"was it saved by another kind of optimizer than {type(self).__name__}?"
                )
        params = self._params_in_order()
        new_state = {}
        for i, saved in state_dict["state"].items():
            p = params[int(i)]
            new_state[p] = {}
            for name, value in saved.items():
                if getattr(value, "ndim", None) == 0 and (value.dtype.kind in "biu" or p.ndim):
                    value = value.item()  # a count (step) that went through np.save; a 0-d moment stays an array
                if hasattr(value, "shape"):
                    if tuple(value.shape) != p.shape:
                        raise ValueError(
                            f"load_state_dict: parameter {i} has shape {p.shape}, but its saved "
                            f"{name!r} has shape {tuple(value.shape)}"
                        )
                    value = backend.to_device(value, p.device).astype(p.dtype)  # astype copies
                new_state[p][name] = value
        for saved, group in zip(saved_groups, self.param_groups):
            group.update({name: value for name, value in saved.items() if name != "params"})
        self.state = new_state

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            settings = ", ".join(f"{k}={v}" for k, v in group.items() if k != "params")
            lines.append(f"  group {i}: {len(group['params'])} params, {settings}")
        return "\n".join(lines + [")"])


def _copy(value):
    """A copy of an array; numbers are immutable and come back as they are."""
    return value.copy() if hasattr(value, "copy") else value
