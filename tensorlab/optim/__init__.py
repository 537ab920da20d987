"""Optimizers, gradient clipping and learning-rate schedules, named as in torch.optim."""

from tensorlab.optim.adamw import AdamW
from tensorlab.optim.clip import clip_grad_norm, clip_grad_norm_, global_norm
from tensorlab.optim.groups import weight_decay_groups
from tensorlab.optim.optimizer import Optimizer
from tensorlab.optim.schedules import ReduceLROnPlateau, WarmupCosine
from tensorlab.optim.sgd import SGD

__all__ = [
    "Optimizer",
    "SGD",
    "AdamW",
    "clip_grad_norm_",
    "clip_grad_norm",
    "global_norm",
    "WarmupCosine",
    "ReduceLROnPlateau",
    "weight_decay_groups",
]
