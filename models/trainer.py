"""The training loop as one object whose state is exactly what a checkpoint holds.

    trainer = Trainer(cfg, run_dir, tokenizer, train_ids, val_ids, corpus_sha256)
    trainer.load_state_dict(read_checkpoint(run_dir / "checkpoints" / "latest"))   # to resume
    final = trainer.fit()   # None when interrupted

`fit` reads in the order a run happens: evaluate when one is due, stop when a limit is
reached, else `step()` (batch, forward, backward, clip, AdamW, the lr schedule), log, save.

metrics.jsonl holds two kinds of rows, in the order they happened. A train-loss row
({"step", "train_loss", "steps_averaged", "lr"}) every log_interval steps, and before each
evaluation for the steps since the last one: train_loss is the mean of the training losses of
the steps_averaged steps ending at step. An evaluation row (it has val_loss) at every
evaluation: its train_loss is the mean since the previous evaluation. Each training step is in
exactly one train-loss row, across resumes too. The file is rewritten just before latest is
saved, with the rows latest counts, so a resume continues it (only a kill between the two
writes leaves rows that latest has not counted: the resume drops them and writes them again).
`state_dict()` gathers the model, the optimizer, both random generators and `progress`
(counters, the best val loss, the plateau's counters, the values of the latest step);
`load_state_dict()` puts them back, so a resumed run continues bitwise as if it had
never stopped. The learning rate is a function of the step and the config in force
(`lr_at`, nanoGPT's get_lr), assigned to every group before every step, with the weight
decay and the betas: a resume that changes them needs nothing but the new config. The
cosine ends at `horizon` (renewed from the speed so far when --max-minutes bounds the run);
the plateau schedule's scale is the one thing a step cannot recompute, so progress keeps it.
"""

import dataclasses
import math
import time
import typing
from pathlib import Path

import numpy as np

import tensorlab
from models.checkpoint import NonFiniteParameter, save_checkpoint
from models.data import random_windows
from models.evaluate import evaluate
from models.layer_stats import copy_weights, grad_norms, layer_groups, update_ratios
from models.metrics import MetricsError, is_evaluation, read_metrics, write_metrics  # noqa: F401 (tests import them here)
from models.run_dir import APPLY, HeldDir, resume_changes
from models.transformer import TinyTransformerLM
from tensorlab import random as tl_random
from tensorlab.optim import AdamW, clip_grad_norm_, weight_decay_groups


class NonFiniteError(RuntimeError):
    """The training loss or gradient norm is NaN or infinite: the run stops before the weights are touched."""


def horizon(cfg, step, elapsed_s):
    """The step at which the cosine ends: max_steps, or the steps that fit in max_minutes at the speed so far."""
    ends = [cfg.max_steps] if cfg.max_steps else []
    if cfg.max_minutes and step > 0:
        ends.append(int(step * cfg.max_minutes * 60 / max(elapsed_s, 1e-9)))
    return max(min(ends, default=10**9), 1)


def lr_at(cfg, step, horizon_steps, plateau_scale=1.0):
    """The learning rate of the step after `step` steps: linear warmup from 0, then lr (constant), lr lowered by
    the plateau to no less than min_lr (plateau), or a cosine from lr to min_lr at `horizon_steps` (warmup_cosine)."""
    if step < cfg.warmup_steps:
        return cfg.lr * step / cfg.warmup_steps
    if cfg.schedule == "constant":
        return cfg.lr
    if cfg.schedule == "plateau":
        return max(cfg.lr * plateau_scale, cfg.min_lr)
    end = max(horizon_steps, cfg.warmup_steps)
    if step > end:
        return cfg.min_lr
    if end == cfg.warmup_steps:  # no decay phase at all
        return cfg.lr
    coeff = 0.5 * (1 + math.cos(math.pi * (step - cfg.warmup_steps) / (end - cfg.warmup_steps)))  # 1 -> 0
    return cfg.min_lr + coeff * (cfg.lr - cfg.min_lr)


@dataclasses.dataclass
class Progress:
    """The counters of a run: what a checkpoint holds besides arrays, the configs and the random streams."""

    step: int = 0
    elapsed_s: float = 0.0
    train_time_s: float = 0.0
    best_val_loss: float | None = None
    best_step: int | None = None
    evals_since_best: int = 0
    last_eval_step: int | None = None
    snapshots: list = dataclasses.field(default_factory=list)
    train_losses: list = dataclasses.field(default_factory=list)  # since the last evaluation
    losses_since_log: list = dataclasses.field(default_factory=list)  # since the last train-loss row
    corpus_sha256: str | None = None
    stop_reason: str | None = None
    last: dict = dataclasses.field(default_factory=dict)  # the latest step's lr, gradient norms, update ratios
    interval_tokens: int = 0
    interval_time: float = 0.0
    config_changes: list = dataclasses.field(default_factory=list)  # [{"step", "changed": {name: [old, new]}}]
    plateau: dict = dataclasses.field(default_factory=lambda: dict(best=None, bad_evals=0, scale=1.0))

    @classmethod
    def from_dict(cls, saved):
        """The progress a checkpoint saved; ValueError naming every counter whose type is not its field's.

        A counter a checkpoint lacks (an older one's) takes its default; one this class no longer has is dropped.
        """
        kinds = {field.name: field.type for field in dataclasses.fields(cls)}
        given = {name: value for name, value in saved.items() if name in kinds}
        wrong = [f"{name}={value!r}" for name, value in given.items() if not _fits(value, kinds[name])]
        if wrong:
            raise ValueError(f"its progress has values of the wrong type: {', '.join(wrong)}")
        if "losses_since_log" not in given:  # saved before train-loss rows: they start at its evaluation
            given["losses_since_log"] = list(given.get("train_losses", []))
        return cls(**given)


def _fits(value, kind):
    """Whether `value` is of the annotated type `kind` (an int is a float too, a bool is not a number)."""
    kinds = typing.get_args(kind) or (kind,)
    return isinstance(value, kinds + ((int,) if float in kinds else ())) and not isinstance(value, bool)


class Trainer:
    """A training run: model, optimizer, lr schedules, random generators and progress; see the module docstring."""

    def __init__(self, cfg, run_dir, tokenizer, train_ids, val_ids, corpus_sha256, on_step=None):
        self.cfg, self.tokenizer = cfg, tokenizer
        self.run = run_dir if isinstance(run_dir, HeldDir) else None  # a held directory (models/run_dir.py), or a path
        self.run_dir = self.run.path if self.run else Path(run_dir)  # what the messages name
        self.files = self.run.files if self.run else self.run_dir  # where the run's files are written
        self.train_ids, self.val_ids = train_ids, val_ids
        self.on_step = on_step or (lambda step: None)  # called after every step; tests interrupt runs with it
        tensorlab.manual_seed(cfg.seed)
        self.model = TinyTransformerLM(cfg.model_config(tokenizer.vocab_size)).to(cfg.device)
        self.optimizer = AdamW(
            weight_decay_groups(self.model.named_parameters(), cfg.weight_decay),
            lr=cfg.lr,
            betas=(cfg.beta1, cfg.beta2),
        )
        self.batch_rng = np.random.default_rng([cfg.seed, 1])  # its own stream, apart from tensorlab's (init, dropout)
        self.tensorlab_rng = tl_random.get_state()  # as it is once the model is built; fit() continues it
        self.progress, self.metrics = Progress(corpus_sha256=corpus_sha256), []
        self.tokenizer_sha256 = tokenizer.fingerprint()  # every checkpoint records it (models/run_dir.check_tokenizer)
        self.groups = layer_groups(self.model)
        self._clock = (time.perf_counter(), 0.0)  # (when fit started, elapsed_s then)

    # ----- state -----------------------------------------------------------------------------------------

    def state_dict(self):
        """Everything a checkpoint holds: with it, load_state_dict continues this run exactly."""
        return {
            "model": self.model.state_dict(),
            "model_config": self.model.config.to_dict(),
            "optimizer": self.optimizer.state_dict(),
            "batch_rng": self.batch_rng.bit_generator.state,
            "tensorlab_rng": self.tensorlab_rng,
            "config": self.cfg.to_dict(),
            "progress": {**dataclasses.asdict(self.progress), "elapsed_s": self.elapsed()},
            "tokenizer_sha256": self.tokenizer_sha256,
        }

    def load_state_dict(self, state):
        """Continue from `state` (a checkpoint); the metrics rows it has not counted are dropped.

        Returns False when the random streams cannot be restored exactly (a GPU run saved before the draw counts).
        """
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.batch_rng.bit_generator.state = state["batch_rng"]
        self.tensorlab_rng = state["tensorlab_rng"]
        tl_random.set_state(self.tensorlab_rng)  # a malformed one is refused here, not at the first step
        self.progress = p = Progress.from_dict({**state["progress"], **older_plateau(state)})
        last_eval, last_log = p.last_eval_step, p.step - len(p.losses_since_log)
        self.metrics = [
            row
            for row in read_metrics(self.run_dir)
            if last_eval is not None and row["step"] <= (last_eval if is_evaluation(row) else last_log)
        ]
        self._clock = (time.perf_counter(), self.progress.elapsed_s)
        return tl_random.restores_exactly(self.tensorlab_rng)

    def note_changes(self, trained_with):
        """Record the settings that changed since `trained_with` (the config dict the checkpoint was trained with) in
        progress.config_changes, for the next evaluation row; returns {name: [old, new]} of every change.

        Nothing else is needed: every step takes the lr, the weight decay and the betas from the config in
        force (apply_config). models/run_dir.py's RESUME_POLICY says what a resume does with each setting.
        """
        changed = resume_changes(trained_with, self.cfg.to_dict(), APPLY)
        changes = {name.removeprefix("model."): v for name, v in changed.items()}
        if changes:
            self.progress.config_changes = self.progress.config_changes + [
                {"step": self.progress.step, "changed": changes}
            ]
        return changes

    def apply_config(self, step):
        """Put the config in force into the optimizer for the step after `step`: lr_at's lr, the weight decay of the
        decayed group (biases and gains keep 0), the betas; returns the lr."""
        cfg = self.cfg
        lr = lr_at(cfg, step, horizon(cfg, step, self.elapsed()), self.progress.plateau["scale"])
        for group in self.optimizer.param_groups:
            group.update(lr=lr, betas=(cfg.beta1, cfg.beta2))
        self.optimizer.param_groups[0]["weight_decay"] = cfg.weight_decay  # weight_decay_groups: decayed first
        return lr

    def elapsed(self):
        """Seconds of this run so far, over every resume."""
        started, before = self._clock
        return before + time.perf_counter() - started

    # ----- one step ----------------------------------------------------------------------------------------

    def step(self):
        """One optimizer step on one random batch; returns the loss (a float: the step's one fetch from the device)."""
        cfg, step = self.cfg, self.progress.step
        logged = self._logged(step + 1)  # per-layer statistics only for steps an evaluation row shows
        t0 = time.perf_counter()
        x, y = random_windows(
            self.train_ids, cfg.batch_size, cfg.model.context_len, self.batch_rng
        )  # (B, T) on the host
        _, loss = self.model(x, y)  # the model checks host ids on the host, then moves them: no GPU sync
        self.optimizer.zero_grad()
        loss.backward()
        layer_norms = grad_norms(self.groups) if logged else None
        grad_norm = clip_grad_norm_(self.model.parameters(), cfg.grad_clip or math.inf)
        loss_value, grad_norm = float(loss.item()), float(grad_norm)
        check_finite(step, cfg, training_loss=loss_value, gradient_norm=grad_norm)
        before = copy_weights(self.groups) if logged else None
        lr = self.apply_config(step)
        self.optimizer.step()
        dt = time.perf_counter() - t0
        p = self.progress
        p.step, p.train_time_s = step + 1, p.train_time_s + dt
        p.interval_tokens, p.interval_time = p.interval_tokens + x.size, p.interval_time + dt
        p.last = dict(
            lr=lr,
            grad_norm=grad_norm,
            layer_grad_norm=layer_norms,
            layer_update_ratio=update_ratios(self.groups, before) if logged else None,
        )
        p.train_losses.append(loss_value)
        p.losses_since_log.append(loss_value)
        self.tensorlab_rng = tl_random.get_state()  # after this step's dropout masks
        return loss_value

    def _logged(self, step):
        """Whether an evaluation's metrics row will show the step that ends at `step` (a time limit is not foreseen)."""
        return step % self.cfg.eval_interval == 0 or step == self.cfg.max_steps

    def log_train_loss(self):
        """Append a train-loss row for the steps since the last one (none when there are none)."""
        p = self.progress
        if p.losses_since_log:
            losses = p.losses_since_log
            self.metrics.append(
                dict(
                    step=p.step,
                    train_loss=math.fsum(losses) / len(losses),
                    steps_averaged=len(losses),
                    lr=p.last["lr"],
                )
            )
            p.losses_since_log = []

    # ----- evaluation and checkpoints ------------------------------------------------------------------------

    def evaluate(self, final=False):
        """Evaluate the model now, log an evaluation row, keep best and latest; the final one uses every token."""
        self.log_train_loss()  # each evaluation row follows the train-loss row of its step
        step, metrics = self.progress.step, self.metrics
        same_step = bool(metrics) and is_evaluation(metrics[-1]) and metrics[-1]["step"] == step
        if final and same_step and metrics[-1]["full_eval"]:
            return metrics[-1]  # this very model was just evaluated on every token
        val = evaluate(
            self.model, self.val_ids, self.tokenizer, self.cfg.batch_size, 0 if final else self.cfg.eval_batches
        )
        check_finite(step, self.cfg, validation_loss=val["loss"])
        row = self._row(step, val, final)
        if same_step:  # the final evaluation on every token replaces the one on eval_batches of this step
            replaced = metrics.pop()
            row.update({k: replaced[k] for k in ("train_loss", "tokens_per_s")})
        else:
            self._keep_best(step, val, final)
            if self.cfg.schedule == "plateau" and step >= self.cfg.warmup_steps:
                self._plateau(val["loss"])
        metrics.append(row)
        p = self.progress
        p.train_losses, p.last_eval_step, p.interval_tokens, p.interval_time = [], step, 0, 0.0
        self._snapshot(step, final)
        self.save_latest()
        return row

    def _row(self, step, val, final):
        p, last = self.progress, self.progress.last
        return dict(
            step=step,
            train_loss=float(np.mean(p.train_losses)) if p.train_losses else None,
            val_loss=val["loss"],
            perplexity=val["perplexity"],
            bits_per_byte=val["bits_per_byte"],
            lr=last.get("lr"),
            tokens_per_s=p.interval_tokens / p.interval_time if p.interval_time else None,
            grad_norm=last.get("grad_norm"),
            elapsed_s=self.elapsed(),
            full_eval=final or self.cfg.eval_batches == 0,
            layer_grad_norm=last.get("layer_grad_norm"),
            layer_update_ratio=last.get("layer_update_ratio"),
            config_changes=[c for c in p.config_changes if c["step"] >= (p.last_eval_step or 0)] or None,
        )

    def _keep_best(self, step, val, final):
        """Save `best` when this evaluation beats every earlier one, and only then record it as the best."""
        score = val["loss"]  # "best" compares like with like: the loss on the same eval batches as every other
        if final and self.cfg.eval_batches:
            score = evaluate(self.model, self.val_ids, self.tokenizer, self.cfg.batch_size, self.cfg.eval_batches)[
                "loss"
            ]
        if self.progress.best_val_loss is None or score < self.progress.best_val_loss:
            self.save("best", val_loss=score)
            self.progress.best_val_loss, self.progress.best_step, self.progress.evals_since_best = score, step, 0
        else:
            self.progress.evals_since_best += 1

    def _plateau(self, val_loss):
        """Count an evaluation without improvement (torch's ReduceLROnPlateau: by more than 1e-4 relative); past
        plateau_patience of them, scale the lr by plateau_factor."""
        plateau = self.progress.plateau
        if plateau["best"] is None or val_loss < plateau["best"] * (1 - 1e-4):
            plateau.update(best=val_loss, bad_evals=0)
        elif plateau["bad_evals"] + 1 > self.cfg.plateau_patience:
            plateau.update(bad_evals=0, scale=plateau["scale"] * self.cfg.plateau_factor)
        else:
            plateau["bad_evals"] += 1

    def _snapshot(self, step, final):
        snaps = self.progress.snapshots  # at 0, 1, 2, 4, 8, ... eval intervals, and the end
        if not snaps or snaps[-1] != step and (final or step >= 2 * max(snaps[-1], self.cfg.eval_interval // 2)):
            self.save(f"snapshot_step{step:06d}")
            snaps.append(step)

    def save_latest(self):
        """metrics.jsonl, then checkpoints/latest: a kill between them leaves rows that a resume drops and redoes."""
        self.check_in_place()
        write_metrics(self.files, self.metrics)
        self.save("latest")

    def check_in_place(self):
        """Stop (RunDirError) when the held run was moved or deleted: nothing more is written (run_dir.HeldDir)."""
        if self.run:
            self.run.check_in_place()

    def save(self, name, **extra):
        """Write checkpoints/<name>.safetensors: the whole state for "latest", the model alone for the others.

        Weights that became NaN or infinite (a finite loss and gradient, then too large a step) are never
        written: the run stops as for a non-finite loss (NonFiniteError), and the files keep the last finite ones.
        """
        self.check_in_place()
        path = self.files / "checkpoints" / name
        state = (
            self.state_dict()
            if name == "latest"
            else {
                "model": self.model.state_dict(),
                "model_config": self.model.config.to_dict(),
                "step": self.progress.step,
                "tokenizer_sha256": self.tokenizer_sha256,
                "corpus_sha256": self.progress.corpus_sha256,
                **extra,
            }
        )
        try:
            save_checkpoint(path, state)
        except NonFiniteParameter as err:
            raise NonFiniteError(
                f"step {self.progress.step}: {err.detail}; stopped before it could touch the "
                f"checkpoints (latest keeps the last finite weights); try a lower --lr (now {self.cfg.lr:g})"
            ) from None

    # ----- the loop --------------------------------------------------------------------------------------------

    def stop_reason(self):
        """Why the run ends now, or None."""
        cfg, p = self.cfg, self.progress
        if cfg.max_steps and p.step >= cfg.max_steps:
            return f"reached max_steps={cfg.max_steps}"
        if cfg.max_minutes and self.elapsed() >= cfg.max_minutes * 60:
            return f"reached max_minutes={cfg.max_minutes:g}"
        if cfg.early_stopping_patience and p.evals_since_best >= cfg.early_stopping_patience:
            return f"early stopping: no better val loss in {cfg.early_stopping_patience} evaluations"
        return None

    def fit(self, stop_requested=lambda: False, report=print):
        """Train until a stop reason, then evaluate on every token; returns that final metrics row.

        `stop_requested()` (Ctrl-C, SIGTERM) is asked after each step. On a KeyboardInterrupt
        between steps, or a stop request, `latest` is saved and None returned; one inside a step
        or an evaluation saves nothing more (the step is half made; the evaluation's metrics row,
        snapshot and best are redone whole from the latest before it) and propagates.
        """
        tl_random.set_state(self.tensorlab_rng)
        self._clock = (time.perf_counter(), self.progress.elapsed_s)
        self.progress.stop_reason, self._busy = None, False
        with np.errstate(all="ignore"):  # a NaN or inf is caught by check_finite, not printed as a warning
            try:
                self._loop(stop_requested, report)
            except KeyboardInterrupt:
                if self._busy:
                    raise
                self.save_latest()
                return None
            else:
                return self.evaluate(final=True)
            finally:
                self.progress.elapsed_s = self.elapsed()  # the clock a later fit() starts from

    def _loop(self, stop_requested, report):
        p, cfg = self.progress, self.cfg
        while True:
            if p.step % cfg.eval_interval == 0 and p.last_eval_step != p.step:
                self._busy = True  # an interrupt inside propagates: a resume redoes the evaluation whole
                report(self.evaluate())
                self._busy = False
            p.stop_reason = self.stop_reason()
            if p.stop_reason:
                return
            self._busy = True
            self.step()  # a KeyboardInterrupt in here propagates: a half-made step is never saved
            self._busy = False
            if p.step % cfg.log_interval == 0:
                self.log_train_loss()
            self.on_step(p.step)
            if stop_requested():
                raise KeyboardInterrupt
            if cfg.checkpoint_interval and p.step % cfg.checkpoint_interval == 0:
                self.save_latest()


def older_plateau(state):
    """The plateau's counters of a checkpoint written when tensorlab's ReduceLROnPlateau kept them ({} if none)."""
    old = state.get("plateau") or state["progress"].get("plateau")  # beside progress, or in the .npz's progress
    if isinstance(old, dict) and "scale" in old:  # today's
        return {}
    if not isinstance(old, dict) or "num_bad_steps" not in old:
        return {"plateau": Progress().plateau}
    groups = state["optimizer"]["param_groups"]
    scale = groups[0]["lr"] / groups[0].get("initial_lr", groups[0]["lr"])  # the lr the plateau lowered, relative
    best = old["best"] if math.isfinite(old["best"]) else None
    return {"plateau": dict(best=best, bad_evals=old["num_bad_steps"], scale=scale)}


def check_finite(step, cfg, **values):
    """NonFiniteError naming the step, the value and what to try, when one of `values` is NaN or infinite."""
    for name, value in values.items():
        if not math.isfinite(value):
            clip = (
                "turn on --grad-clip (e.g. 1.0)" if not cfg.grad_clip else f"lower --grad-clip (now {cfg.grad_clip:g})"
            )
            raise NonFiniteError(
                f"step {step}: the {name.replace('_', ' ')} is {value}; stopped before it could "
                f"touch the checkpoints (latest keeps the last finite weights); try a lower --lr "
                f"(now {cfg.lr:g}) or {clip}"
            )
