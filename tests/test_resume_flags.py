"""A flag on --resume takes effect from the resumed step, or is refused in one line; config.json and the metrics say so.

Each allowed flag is checked where it acts (the optimizer's groups, the schedule, a step's batch, the
evaluation's rows); each refused one must leave the run untouched. Before, every flag was written into
config.json while the run went on with the checkpoint's optimizer groups and schedule.
"""

import json
import shutil

import numpy as np
import pytest
from test_bad_inputs import TINY, assert_one_line, run_main

import train
from models.run import Run
from models.run_dir import (
    LOCK_NAME,  # the lock's holder note is rewritten by every start
    RESUME_POLICY,
)
from models.train_config import flag_values
from models.trainer import is_evaluation, read_metrics
from tensorlab.optim import WarmupCosine

STEPS = 8


@pytest.fixture(scope="module")
def stopped(corpus, tmp_path_factory):
    """A run of the tiny config stopped at step 8 (of a cosine meant to end at 8), evaluated every 4 steps."""
    out = tmp_path_factory.mktemp("runs") / "run"
    argv = ["--config", TINY, "--data", corpus, "--out", out, "--max-steps", STEPS, "--eval-interval", 4]
    assert train.main([str(a) for a in [*argv, "--no-report", "--warmup-steps", 2]]) == 0
    return out


def resumed(stopped, tmp_path, *flags):
    """A copy of the stopped run prepared for --resume with `flags` (to 16 steps), as train.py builds it."""
    out = tmp_path / "run"
    shutil.copytree(stopped, out)
    args = train.train_parser().parse_args([str(a) for a in ["--resume", out, "--max-steps", 2 * STEPS, *flags]])
    with Run.resume(out, flag_values(args)) as run:
        return run.trainer


def test_lr_min_lr_and_warmup_move_the_schedule_and_every_group(stopped, tmp_path):
    trainer = resumed(stopped, tmp_path, "--lr", 0.03, "--min-lr", 0.001, "--warmup-steps", 4)
    trainer.step()  # the lr is a function of the step and the config in force, assigned before every step
    expected = WarmupCosine(0.03, 0.001, 4, 2 * STEPS).lr_at(STEPS)  # tensorlab's schedule, written apart
    assert trainer.progress.last["lr"] == pytest.approx(expected, rel=1e-12)
    assert [g["lr"] for g in trainer.optimizer.param_groups] == pytest.approx([expected] * 2, rel=1e-12)


def test_weight_decay_reaches_the_decayed_group_only(stopped, tmp_path):
    trainer = resumed(stopped, tmp_path, "--weight-decay", 0.5)
    trainer.step()
    assert [g["weight_decay"] for g in trainer.optimizer.param_groups] == [0.5, 0.0]


@pytest.mark.parametrize(("flag", "betas"), [("--beta1", (0.8, 0.99)), ("--beta2", (0.9, 0.9))])
def test_betas_reach_every_group(stopped, tmp_path, flag, betas):
    trainer = resumed(stopped, tmp_path, flag, betas[0] if flag == "--beta1" else betas[1])
    trainer.step()
    assert [tuple(g["betas"]) for g in trainer.optimizer.param_groups] == [betas, betas]


def test_grad_clip_and_batch_size_act_on_the_next_step(stopped, tmp_path):
    trainer = resumed(stopped, tmp_path, "--grad-clip", 1e-6, "--batch-size", 3)
    trainer.step()
    assert trainer.progress.interval_tokens == 3 * trainer.cfg.model.context_len  # 3 windows of seq_len
    assert trainer.progress.last["grad_norm"] > 1e-6  # the norm before clipping, logged
    before = {n: p.data.copy() for n, p in trainer.model.named_parameters()}
    trainer.step()  # Adam normalises the clipped gradient, so a tiny clip still moves weights by about lr
    assert all(np.isfinite(p.data).all() for p in trainer.model.parameters()) and any(
        not np.array_equal(before[n], p.data) for n, p in trainer.model.named_parameters()
    )


def test_evaluation_settings_and_the_change_are_in_config_json_and_the_metrics(stopped, tmp_path, capsys):
    out = tmp_path / "run"
    shutil.copytree(stopped, out)
    argv = ["--resume", out, "--max-steps", 2 * STEPS, "--eval-interval", 2, "--eval-batches", 1, "--lr", 0.01]
    status, _, err = run_main([*argv, "--no-report"], capsys)
    assert status == 0 and f"resuming at step {STEPS} with changed settings: " in err
    rows = [row for row in read_metrics(out) if is_evaluation(row)]
    assert [r["step"] for r in rows] == [0, 4, 8, 10, 12, 14, 16]  # every 2 steps from the resume on
    changed = rows[3]["config_changes"][0]
    assert changed["step"] == STEPS and changed["changed"]["lr"] == [0.003, 0.01]
    assert changed["changed"]["eval_interval"] == [4, 2] and all(r["config_changes"] is None for r in rows[4:])
    saved = json.loads((out / "config.json").read_text())
    assert (saved["lr"], saved["eval_interval"], saved["eval_batches"]) == (0.01, 2, 1)


@pytest.mark.parametrize(
    "flag",
    [
        ("--seed", 7),
        ("--d-model", 64),
        ("--vocab-size", 280),
        ("--n-layers", 3),
        ("--pretokenizer", "whitespace"),
        ("--val-fraction", 0.2),
        ("--schedule", "plateau"),
    ],
    ids=lambda f: f[0],
)
def test_a_flag_that_would_change_the_model_tokens_or_streams_is_refused(stopped, tmp_path, capsys, flag):
    out = tmp_path / "run"
    shutil.copytree(stopped, out)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and p.name != LOCK_NAME}
    status, _, err = run_main(["--resume", out, *flag], capsys)
    name = flag[0][2:].replace("-", "_")
    assert_one_line(status, err, f"cannot resume {out} with another {name} (", "train a new run with --out")
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and p.name != LOCK_NAME} == before


def test_one_table_says_what_a_resume_does_with_every_setting():
    """Planted: a TrainConfig field added without a policy, or a policy for a field that is gone, fails here."""
    config = train.TrainConfig().to_dict()
    fields = {k for k in config if k != "model"} | {f"model.{k}" for k in config["model"]}
    assert set(RESUME_POLICY) == fields
    assert set(RESUME_POLICY.values()) == {"refuse", "apply", "limit", "ignore"}
