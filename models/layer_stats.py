"""Per-layer gradient norms and update-to-weight ratios: is every layer learning, and how fast?

For each layer group (the embedding, each block, the final norm, an untied head):

    grad norm      ||g||                                 over the group's gradients, before clipping
    update ratio   ||w_after - w_before|| / ||w_before||  = ||lr * update|| / ||w||, one optimizer step

A rule of thumb (Karpathy, "Building makemore" part 3) puts a healthy update ratio near
1e-3: much smaller and the layer barely moves, much larger and it thrashes.
"""

from tensorlab.optim import global_norm


def layer_groups(model):
    """{group name: [parameters]}: "tok_emb", "blocks.0", "blocks.1", ..., "norm", in model order."""
    groups = {}
    for name, p in model.named_parameters():
        parts = name.split(".")
        key = ".".join(parts[:2]) if parts[0] == "blocks" else parts[0]
        groups.setdefault(key, []).append(p)
    return groups


def _norm(arrays):
    return float(global_norm(arrays)) if arrays else 0.0


def grad_norms(groups):
    """{group: ||g||} over the parameters that have a gradient."""
    return {key: _norm([p.grad for p in params if p.grad is not None]) for key, params in groups.items()}


def copy_weights(groups):
    """The groups' current weights, copied, to compare with after the optimizer step."""
    return {key: [p.data.copy() for p in params] for key, params in groups.items()}


def update_ratios(groups, before):
    """{group: ||w - w_before|| / ||w_before||} for the weights copied by copy_weights."""
    return {
        key: _norm([p.data - old for p, old in zip(params, before[key])]) / max(_norm(before[key]), 1e-12)
        for key, params in groups.items()
    }
