"""Parameter: a Tensor that a Module owns and an optimizer updates."""

from tensorlab.tensor import Tensor


class Parameter(Tensor):
    """A leaf tensor that requires grad; assigning one to a Module attribute registers it."""

    def __init__(self, data, requires_grad=True):
        if isinstance(data, Tensor):
            data = data.data
        super().__init__(data, requires_grad=requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()
