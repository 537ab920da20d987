"""Every failure is one line and a non-zero status: a full disk, sizes no machine holds, absurd limits, empty
prompts, a config nested too deep, weights that became non-finite, a broken tokenizer, a temperature near 0.

Each was a traceback (or, for the temperature, token 0 printed forever) before; each test plants the input.
"""

import errno
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from test_bad_inputs import TINY, assert_one_line, run_main, tiny_args
from tools import tmpfs

import train
from models.checkpoint import read_checkpoint
from models.prompts import MAX_PROMPTS, read_prompts_file
from models.run import Run, open_run_dir
from models.tokenizer import FILE_FORMAT
from models.train_config import TrainConfig
from models.trainer import NonFiniteError
from models.transformer import sample_next


@pytest.fixture
def small_disk(tmp_path):
    """A 700 KiB tmpfs (or None: then the write is failed by injection)."""
    yield from tmpfs(tmp_path, "700k")


@pytest.fixture
def disk(tmp_path):
    """A 64 MiB tmpfs, to remount read-only (or None)."""
    yield from tmpfs(tmp_path, "64m")


def test_a_full_disk_is_one_line_and_the_checkpoints_stay_whole(corpus, tmp_path, small_disk, capsys, monkeypatch):
    out = (small_disk or tmp_path) / "run"
    if small_disk is None:  # no mount here: the disk is full a few writes after the first latest
        real_fsync, writes = os.fsync, []

        def full_soon_after_latest(fd):
            if (out / "checkpoints" / "latest.safetensors").exists():
                writes.append(fd)
            if len(writes) > 6:  # a file and its directory: two each
                raise OSError(errno.ENOSPC, "No space left on device")
            return real_fsync(fd)

        monkeypatch.setattr(os, "fsync", full_soon_after_latest)
    status, _, err = run_main(tiny_args(corpus, out, "--max-steps", 400, "--checkpoint-interval", 1), capsys)
    assert_one_line(status, err, "cannot use ", "No space left on device", "continue with --resume", code=1)
    monkeypatch.undo()
    state = read_checkpoint(out / "checkpoints" / "latest")  # the last whole one
    assert 0 < state["progress"]["step"] < 400
    assert not list(out.rglob("*.tmp"))  # the half-written file was removed


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--vocab-size", 10**30], ["--vocab-size 1000000000000000000000000000000", "GiB to train", "make it smaller"]),
        (["--d-model", 2**20, "--n-heads", 1], ["--d-model 1048576", "GiB to train"]),
        (["--max-minutes", "1e307"], ["max_minutes (--max-minutes) must be in [0, 1000000]"]),
    ],
)
def test_sizes_and_limits_no_machine_holds_are_refused_at_once(corpus, tmp_path, capsys, flags, words):
    status, _, err = run_main(tiny_args(corpus, tmp_path / "run", *flags), capsys)
    assert_one_line(status, err, *words)
    assert not (tmp_path / "run").exists()


def test_an_empty_prompt_is_refused_before_training(corpus, tmp_path, capsys):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({**json.loads(Path(TINY).read_text()), "prompts": ["ROMEO:", ""]}))
    status, _, err = run_main(["--config", config, "--data", corpus, "--out", tmp_path / "run"], capsys)
    assert_one_line(status, err, "prompts (--prompts) must be non-empty texts")
    assert not (tmp_path / "run").exists()


def test_more_prompts_than_a_report_samples_are_refused_before_training(corpus, tmp_path, capsys):
    """A corpus given as --prompts (each line a prompt, each sampled twice for 120 tokens) kept the fuzzer's scenario at
    the report for 60 s on the tiny model: more than MAX_PROMPTS are refused at once, by count; MAX_PROMPTS pass."""
    status, _, err = run_main(tiny_args(corpus, tmp_path / "run", "--prompts", corpus), capsys)
    lines = len(read_prompts_file(corpus))
    assert_one_line(status, err, f"prompts (--prompts) must be at most {MAX_PROMPTS} texts", f"got '{lines:,}'")
    assert not (tmp_path / "run").exists()
    assert TrainConfig(prompts=("ROMEO:",) * MAX_PROMPTS).problems() == []
    assert len(TrainConfig(prompts=("ROMEO:",) * (MAX_PROMPTS + 1)).problems()) == 1


def test_a_config_nested_too_deep_is_one_line(corpus, tmp_path, capsys):
    config = tmp_path / "deep.json"
    config.write_text("[" * 100_000 + "]" * 100_000)
    status, _, err = run_main(["--config", config, "--data", corpus, "--out", tmp_path / "run"], capsys)
    assert_one_line(status, err, "is nested too deeply to be a config")


def test_weights_that_became_non_finite_stop_the_run_and_are_never_written(corpus, tmp_path):
    cfg = train.resolve_config(train.train_parser().parse_args(map(str, tiny_args(corpus, tmp_path / "run"))))
    with Run.new(tmp_path / "run", cfg) as run:
        trainer = run.trainer
        open_run_dir(trainer)
        trainer.save("latest")
        before = (tmp_path / "run" / "checkpoints" / "latest.safetensors").read_bytes()
        trainer.model.parameters()[0].data[0, 0] = np.inf  # a finite loss and gradient, then too large a step
        with pytest.raises(NonFiniteError, match=r"step 0: parameter tok_emb.weight holds non-finite values .*lr"):
            trainer.save("latest")
    assert (tmp_path / "run" / "checkpoints" / "latest.safetensors").read_bytes() == before


def test_export_with_a_broken_tokenizer_is_one_line(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(Path(TINY).read_text())
    (run / "tokenizer.json").write_text(json.dumps({"format": FILE_FORMAT, "tokenizer": {"model": 3}}))
    status, _, err = run_main(["export", run], capsys)
    assert_one_line(status, err, "is not a usable tokenizer")


def test_a_temperature_whose_inverse_overflows_samples_greedily():
    logits = np.array([[1.0, 3.0, 2.0], [0.5, -1.0, 0.25]])
    for temperature in (1e-310, 5e-324, 1e-300):
        picked = sample_next(logits, temperature, None, np.random.default_rng(0))
        assert picked.tolist() == [1, 0]  # the limit as the temperature goes to 0
    assert sample_next(logits, 1.0, None, np.random.default_rng(0)).shape == (2,)


@pytest.mark.parametrize(
    ("code", "strerror"), [(errno.EROFS, "Read-only file system"), (errno.EACCES, "Permission denied")]
)
def test_a_checkpoints_folder_that_turns_unwritable_is_one_line_naming_it(
    corpus, tmp_path, capsys, monkeypatch, code, strerror
):
    """Root writes anywhere, so the refusal is injected where the atomic write puts its file in place."""
    out = tmp_path / "run"
    real_replace, saved = os.replace, []

    def refused_after_three_latests(src, dst, *args, **kwargs):
        if Path(dst).name == "latest.safetensors":
            if len(saved) == 3:
                raise OSError(code, strerror, str(dst))
            saved.append(dst)
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", refused_after_three_latests)
    status, _, err = run_main(tiny_args(corpus, out, "--max-steps", 400, "--checkpoint-interval", 1), capsys)
    monkeypatch.undo()
    latest = out / "checkpoints" / "latest.safetensors"
    assert_one_line(status, err, f"cannot use {latest}: {strerror}", "make it writable", "--resume", code=1)
    assert read_checkpoint(latest)["progress"]["step"] == 2  # the third (steps 0, 1, 2), whole
    assert not list(out.rglob("*.tmp"))


def test_a_read_only_mount_on_resume_is_one_line_and_loses_nothing(corpus, disk, capsys):
    if disk is None:
        pytest.skip(
            "this user cannot mount a tmpfs (root can, as CI runs the suite): the injected EROFS test covers it"
        )
    out = disk / "run"
    status, _, err = run_main(tiny_args(corpus, out, "--max-steps", 4), capsys)
    assert status == 0, err
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    remount = subprocess.run(["mount", "-o", "remount,ro", str(disk)], capture_output=True, text=True)
    assert remount.returncode == 0, remount.stderr
    status, _, err = run_main(["--resume", out, "--data", corpus, "--max-steps", 8, "--no-report"], capsys)
    assert status in (1, 2) and len([line for line in err.splitlines() if line.strip()]) == 1, err
    assert "Traceback" not in err and str(out) in err and ("Read-only" in err or "cannot write" in err), err
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
