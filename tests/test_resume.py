"""Exact resume: a run stopped at any step and resumed ends bitwise like one that never stopped.

Parameters, optimizer state, lr schedules and every metrics row (all but the timings) are
compared exactly, for a stop on an evaluation step, a crash that resumes from a checkpoint
step, and a stop on neither, under both the warmup-cosine and the plateau schedule. The
tiny config has dropout, so the random streams must be restored too.
"""

import json
from pathlib import Path

import numpy as np
import pytest

import train
from models.checkpoint import read_checkpoint, save_checkpoint
from models.run import load_tokenizer
from models.run_dir import saved_config
from models.trainer import Trainer, is_evaluation

ROOT = Path(__file__).resolve().parent.parent
TINY = str(ROOT / "configs" / "tiny.json")
STEPS = 24
RUN = ["--max-steps", STEPS, "--eval-interval", 5, "--checkpoint-interval", 4]  # evals 0 5 10 15 20 24; ckpts 4 8 ..
SCHEDULES = {
    "warmup_cosine": [],
    "plateau": ["--schedule", "plateau", "--lr", 0.05, "--warmup-steps", 3, "--plateau-patience", 0, "--min-lr", 0],
}
TIMING_KEYS = {"tokens_per_s", "elapsed_s"}


class Crash(Exception):
    """Stands for a kill: nothing is saved on the way out."""


STOPS = {  # name: (step, what happens after that step)
    "eval_step": (15, KeyboardInterrupt),  # Ctrl-C saves latest before step 15's evaluation
    "checkpoint_step": (14, Crash),  # a crash: the run resumes from latest of step 12
    "neither": (13, KeyboardInterrupt),
}


@pytest.fixture(scope="module")
def corpus(corpus_file):
    """The whole 64 KB test corpus (test_kill.py takes less of it, for speed)."""
    return corpus_file


def args(corpus, out, schedule):
    return [
        str(a) for a in ["--config", TINY, "--data", corpus, "--out", out, "--no-report", *RUN, *SCHEDULES[schedule]]
    ]


@pytest.fixture(scope="module")
def uninterrupted(corpus, tmp_path_factory):
    runs = {}
    for schedule in SCHEDULES:
        out = tmp_path_factory.mktemp("ref") / schedule
        assert train.main(args(corpus, out, schedule)) == 0
        runs[schedule] = out
    return runs


def rows(run_dir):
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [{k: v for k, v in json.loads(line).items() if k not in TIMING_KEYS} for line in lines]


def assert_same(a, b, where=""):
    """Nested dicts/lists of arrays and numbers are bitwise equal."""
    if isinstance(a, dict):
        assert sorted(a) == sorted(b), where
        for k in a:
            assert_same(a[k], b[k], f"{where}/{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}/{i}")
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and np.array_equal(a, b), where
    else:
        assert a == b, where


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("stop", STOPS)
def test_a_stopped_and_resumed_run_is_bitwise_the_uninterrupted_one(stop, schedule, uninterrupted, corpus, tmp_path):
    at, how = STOPS[stop]

    def stop_at(step):
        if step == at:
            raise how

    out = tmp_path / "run"
    if how is Crash:
        with pytest.raises(Crash):
            train.main(args(corpus, out, schedule), on_step=stop_at)
        assert read_checkpoint(out / "checkpoints" / "latest")["progress"]["step"] == 12
    else:
        assert train.main(args(corpus, out, schedule), on_step=stop_at) == 130
        assert read_checkpoint(out / "checkpoints" / "latest")["progress"]["step"] == at
    assert train.main(["--resume", str(out), "--no-report"]) == 0

    ref = uninterrupted[schedule]
    assert rows(out) == rows(ref)
    if schedule == "plateau":  # the plateau schedule did lower the lr, before and after the stop
        lrs = [r["lr"] for r in rows(ref) if is_evaluation(r)]
        assert lrs[-1] < lrs[1], lrs  # ... which depends on the best loss before the stop
    a, b = read_checkpoint(out / "checkpoints" / "latest"), read_checkpoint(ref / "checkpoints" / "latest")
    for key in ("model", "optimizer", "batch_rng", "tensorlab_rng"):
        assert_same(a[key], b[key], key)
    assert_same(a["progress"]["plateau"], b["progress"]["plateau"], "plateau")
    assert_same(
        read_checkpoint(out / "checkpoints" / "best")["model"], read_checkpoint(ref / "checkpoints" / "best")["model"]
    )


def test_trainer_state_dict_round_trips_through_a_checkpoint(uninterrupted, corpus, tmp_path):
    """load_state_dict(state_dict()) on a fresh Trainer reproduces the state; a step from each agrees bitwise."""
    ref = uninterrupted["plateau"]
    state = read_checkpoint(ref / "checkpoints" / "latest")
    cfg = saved_config(ref)
    trainers = []
    for _ in range(2):
        tokenizer, train_ids, val_ids, sha = train.load_data(cfg, load_tokenizer(ref / "tokenizer.json"))
        trainer = Trainer(cfg, ref, tokenizer, train_ids, val_ids, sha)
        trainer.load_state_dict(state)
        trainers.append(trainer)
    save_checkpoint(tmp_path / "again", trainers[0].state_dict())
    again = read_checkpoint(tmp_path / "again")
    assert again["progress"].pop("elapsed_s") >= state["progress"].pop("elapsed_s")  # the clock runs on
    for key in ("model", "optimizer", "batch_rng", "tensorlab_rng", "progress", "config"):
        assert_same(again[key], state[key], key)
    losses = []
    for trainer in trainers:
        train.tensorlab.random.set_state(trainer.tensorlab_rng)
        losses.append(trainer.step())
    assert losses[0] == losses[1]
    assert_same(trainers[0].state_dict()["model"], trainers[1].state_dict()["model"])


@pytest.mark.gpu
def test_a_trainer_step_on_the_gpu_fetches_at_most_three_values(cuda, corpus):
    """Between evaluations a step fetches the loss and the clipped norm only (issue 12 allows 3), counted by the
    CuPy stand-in; a step whose per-layer statistics are logged may fetch more."""
    from strict_cupy import cupy_standin

    if cuda.xp is not cupy_standin:
        pytest.skip("transfers are counted by the CuPy stand-in; this machine has a real GPU")
    cfg = train.resolve_config(
        train.train_parser().parse_args(
            ["--config", TINY, "--device", "cuda", "--data", str(corpus), "--max-steps", "30"]
        )
    )
    tokenizer, train_ids, val_ids, sha = train.load_data(cfg)
    trainer = Trainer(cfg, Path("unused"), tokenizer, train_ids, val_ids, sha)
    trainer.step()  # the first step fills the per-device constant tables
    counts = []
    for _ in range(3):  # steps 2, 3, 4: none is shown by an evaluation row (eval_interval 10)
        cupy_standin.reset_counts()
        trainer.step()
        counts.append(sum(cupy_standin.transfers.values()))
    assert counts == [2, 2, 2], counts  # the loss's .item() and float() of clip_grad_norm_'s total
