"""Parameter: a Tensor that a Module owns and an optimizer updates."""

from tensorlab.tensor import Tensor


class Parameter(Tensor):
    """A leaf tensor that requires grad; assigning one to a Module attribute registers it."""

    def __init__(self, data, requires_grad=True):
        source = data if isinstance(data, Tensor) else None
        super().__init__(data.data if source is not None else data, requires_grad=requires_grad)
        if source is not None:  # the same memory: writes into either count for both, as PyTorch's Parameter(t)
            self._version_counter = source._version_counter

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()
