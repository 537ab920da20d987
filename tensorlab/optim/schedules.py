"""Learning-rate schedules: they set `group["lr"]` on an optimizer's parameter groups between steps.

WarmupCosine follows a fixed curve of the step number (the one nanoGPT uses);
ReduceLROnPlateau reacts to a metric such as the validation loss. As in
torch.optim.lr_scheduler, each is bound to an optimizer, `step()` moves it on, and
`state_dict()` / `load_state_dict()` save and restore everything but the optimizer
(whose groups hold the lrs themselves), so a resumed run continues the same curve.
"""

import math


class WarmupCosine:
    """Linear warmup from 0 to max_lr over warmup_steps, cosine decay to min_lr at max_steps, then min_lr.

        lr(t) = max_lr * t / warmup_steps                                     t < warmup_steps
        lr(t) = min_lr + (max_lr - min_lr) * (1 + cos(pi * r)) / 2,
                r = (t - warmup_steps) / (max_steps - warmup_steps)           warmup_steps <= t <= max_steps
        lr(t) = min_lr                                                        t > max_steps

    `lr_at(t)` is that pure function. `apply(optimizer, t)` sets every group's lr,
    each scaled relative to its own base lr: a group whose base lr is half of
    max_lr always gets half of lr(t). A group's base lr is its "lr" the first time
    `apply` sees it, kept in the group as "initial_lr" (PyTorch's key for the same).

    Given an optimizer, the schedule drives it as a torch lr_scheduler does: it sets
    the lrs of step 0 at once, and each `step()` after `optimizer.step()` sets those of
    the next step. `step(max_steps=n)` moves the end of the cosine to n: a run bounded
    by time learns its horizon as it goes (the horizon is part of the state_dict).

        schedule = WarmupCosine(max_lr=6e-4, min_lr=6e-5, warmup_steps=100, max_steps=5000, optimizer=opt)
        for step in range(5000):
            ...  # forward, backward, opt.step()
            schedule.step()
    """

    def __init__(self, max_lr, min_lr, warmup_steps, max_steps, optimizer=None):
        if not 0 <= warmup_steps <= max_steps:
            raise ValueError(f"WarmupCosine: need 0 <= warmup_steps <= max_steps, got {warmup_steps} and {max_steps}")
        if max_lr <= 0:
            raise ValueError(f"WarmupCosine: max_lr must be > 0, got {max_lr}")
        self.max_lr, self.min_lr = max_lr, min_lr
        self.warmup_steps, self.max_steps = warmup_steps, max_steps
        self.optimizer, self.last_step = optimizer, 0
        if optimizer is not None:
            self.apply(optimizer, 0)

    def lr_at(self, step):
        """The learning rate at `step` (a Python float), for a group whose base lr is max_lr."""
        if step < self.warmup_steps:
            return self.max_lr * step / self.warmup_steps
        if step > self.max_steps:
            return self.min_lr
        if self.max_steps == self.warmup_steps:  # no decay phase at all
            return self.max_lr
        ratio = (step - self.warmup_steps) / (self.max_steps - self.warmup_steps)  # 0 -> 1
        coeff = 0.5 * (1 + math.cos(math.pi * ratio))  # 1 -> 0
        return self.min_lr + coeff * (self.max_lr - self.min_lr)

    def apply(self, optimizer, step):
        """Set each group's lr to lr_at(step) * base_lr / max_lr; return lr_at(step)."""
        lr = self.lr_at(step)
        for group in optimizer.param_groups:
            base_lr = group.setdefault("initial_lr", group["lr"])
            group["lr"] = base_lr * (lr / self.max_lr)
        return lr

    def step(self, max_steps=None):
        """Set the bound optimizer's lrs for the next step; `max_steps`, if given, is a new end of the cosine."""
        if max_steps is not None:
            self.max_steps = max(max_steps, self.warmup_steps)
        self.last_step += 1
        self.apply(self.optimizer, self.last_step)

    def state_dict(self):
        """Everything but the optimizer: the curve's settings, its horizon and the step reached."""
        return {k: v for k, v in vars(self).items() if k != "optimizer"}

    def load_state_dict(self, state):
        """Restore what state_dict() returned."""
        vars(self).update({k: state[k] for k in self.state_dict()})


class ReduceLROnPlateau:
    """Multiply every group's lr by `factor` once the metric has not improved for more than `patience` steps.

    As torch.optim.lr_scheduler.ReduceLROnPlateau (same defaults). In mode "min" a
    metric improves when it drops below best * (1 - threshold) ("rel") or
    best - threshold ("abs"); mode "max" mirrors that. After a reduction, `cooldown`
    steps pass before bad steps count again. No lr goes below `min_lr`, and a
    reduction smaller than `eps` is skipped.
    """

    def __init__(
        self,
        optimizer,
        mode="min",
        factor=0.1,
        patience=10,
        threshold=1e-4,
        threshold_mode="rel",
        cooldown=0,
        min_lr=0.0,
        eps=1e-8,
    ):
        if mode not in ("min", "max") or threshold_mode not in ("rel", "abs"):
            raise ValueError(
                f"ReduceLROnPlateau: mode must be 'min' or 'max' and threshold_mode 'rel' or 'abs', "
                f"got {mode!r} and {threshold_mode!r}"
            )
        if factor >= 1:
            raise ValueError(f"ReduceLROnPlateau: factor must be < 1, got {factor}")
        self.optimizer = optimizer
        self.mode, self.factor, self.patience = mode, factor, patience
        self.threshold, self.threshold_mode = threshold, threshold_mode
        self.cooldown, self.min_lr, self.eps = cooldown, min_lr, eps
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_steps = 0
        self.cooldown_counter = 0

    def is_better(self, metric):
        """True when `metric` beats the best so far by more than the threshold."""
        if self.mode == "min":
            bar = self.best * (1 - self.threshold) if self.threshold_mode == "rel" else self.best - self.threshold
            return metric < bar
        bar = self.best * (1 + self.threshold) if self.threshold_mode == "rel" else self.best + self.threshold
        return metric > bar

    def step(self, metric):
        """Record one metric value (e.g. a validation loss) and reduce the lrs if it has plateaued."""
        metric = float(metric)
        if self.is_better(metric):
            self.best, self.num_bad_steps = metric, 0
        else:
            self.num_bad_steps += 1
        if self.cooldown_counter > 0:  # right after a reduction: bad steps do not count yet
            self.cooldown_counter -= 1
            self.num_bad_steps = 0
        if self.num_bad_steps > self.patience:
            for group in self.optimizer.param_groups:
                old_lr = float(group["lr"])
                new_lr = max(old_lr * self.factor, self.min_lr)  # lr = max(lr * factor, min_lr)
                if old_lr - new_lr > self.eps:
                    group["lr"] = new_lr
            self.cooldown_counter = self.cooldown
            self.num_bad_steps = 0

    def state_dict(self):
        """Everything but the optimizer: the settings, the best metric and the counters."""
        return {k: v for k, v in vars(self).items() if k != "optimizer"}

    def load_state_dict(self, state):
        """Restore what state_dict() returned."""
        vars(self).update({k: state[k] for k in self.state_dict()})
