"""Split parameters into a weight-decayed group and a not-decayed group, as nanoGPT does."""


def weight_decay_groups(named_parameters, weight_decay):
    """Two optimizer groups: tensors with 2+ dimensions get `weight_decay`, the rest get 0.

    Weight decay pulls weights toward zero to keep them small. That suits the
    matrices of matmuls and the embedding tables (2-D and up), whose size sets how
    strongly the layer responds to its input. It does not suit biases and the gains
    of normalization layers (1-D): a bias only shifts, a norm gain of 1 is the
    neutral value (decay would pull it to 0, not to 1), and both are few, so they
    barely overfit. Parameters that do not require grad are left out, and a tensor
    shared under two names (tied weights) appears once.

        optimizer = AdamW(weight_decay_groups(model.named_parameters(), 0.1), lr=6e-4)

    `named_parameters` is an iterable of (name, Parameter) pairs, or a dict of them.
    """
    if isinstance(named_parameters, dict):
        named_parameters = named_parameters.items()
    decay, no_decay, seen = [], [], set()
    for _name, p in named_parameters:
        if not p.requires_grad or id(p) in seen:
            continue
        seen.add(id(p))
        (decay if p.ndim >= 2 else no_decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
