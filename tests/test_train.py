"""train.py end to end, in-process through main(argv), on tiny configs and the 64 KB test corpus (tests/data)."""

import json
import math
import os
import re
import shutil
import signal
import time
from pathlib import Path

import numpy as np
import pytest

import tensorlab
import train
from models.checkpoint import read_checkpoint
from models.config import ModelConfig
from models.evaluate import evaluate
from models.report import run_summary
from models.run import open_run_dir
from models.run_dir import LOCK_NAME  # the lock's holder note is rewritten by every start
from models.tokenizer import BPETokenizer
from models.train_config import TrainConfig
from models.trainer import Trainer, horizon, is_evaluation
from models.transformer import TinyTransformerLM
from tensorlab import serialization
from tensorlab.optim import AdamW, WarmupCosine

ROOT = Path(__file__).resolve().parent.parent
TINY = str(ROOT / "configs" / "tiny.json")
STEPS = 24  # tiny.json evaluates every 10 steps, so runs end between evaluations
METRIC_KEYS = {
    "step",
    "train_loss",
    "val_loss",
    "perplexity",
    "bits_per_byte",
    "lr",
    "tokens_per_s",
    "grad_norm",
    "layer_grad_norm",
    "layer_update_ratio",
}
TIMING_KEYS = {"tokens_per_s", "elapsed_s"}


@pytest.fixture(scope="module")
def corpus(corpus_file):
    """The test corpus, as a --data file."""
    return corpus_file


def run_main(argv, capsys, on_step=None):
    """main(argv) in-process: (exit status, stdout, stderr)."""
    status = train.main([str(a) for a in argv], on_step=on_step)
    out, err = capsys.readouterr()
    return status, out, err


def tiny_args(corpus, out, *extra):
    return ["--config", TINY, "--data", corpus, "--out", out, "--max-steps", STEPS, *extra]


@pytest.fixture(scope="module")
def run_dir(corpus, tmp_path_factory):
    """One finished tiny run that several tests read."""
    out = tmp_path_factory.mktemp("runs") / "tiny"
    assert train.main([str(a) for a in tiny_args(corpus, out)]) == 0
    return out


def read_metrics(run_dir):
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def evaluation_rows(run_dir):
    return [row for row in read_metrics(run_dir) if is_evaluation(row)]


def parameters(run_dir, checkpoint="latest"):
    return read_checkpoint(run_dir / "checkpoints" / checkpoint)["model"]


def without_timing(rows):
    return [{k: v for k, v in row.items() if k not in TIMING_KEYS} for row in rows]


# ----- a run writes every output ------------------------------------------------------------------------


def test_a_run_writes_every_output(run_dir):
    for name in (
        "config.json",
        "tokenizer.json",
        "metrics.jsonl",
        "report.md",
        "samples.txt",
        "topk.md",
        "checkpoints/latest.safetensors",
        "checkpoints/best.safetensors",
        "checkpoints/snapshot_step000000.safetensors",
        "figures/loss_curves.png",
        "figures/val_perplexity.png",
        "figures/attention_layer0.png",
        "figures/attention_layer1.png",
        "figures/attention_evolution.png",
        "figures/token_frequency.png",
        "figures/layer_grad_norms.png",
        "figures/layer_update_ratios.png",
    ):
        assert (run_dir / name).is_file() and (run_dir / name).stat().st_size > 0, name
    assert json.loads((run_dir / "config.json").read_text())["max_steps"] == STEPS
    assert BPETokenizer.load(run_dir / "tokenizer.json").vocab_size == 300


def test_metrics_have_every_key_and_make_sense(run_dir):
    rows = evaluation_rows(run_dir)
    assert [r["step"] for r in rows] == [0, 10, 20, STEPS]
    for row in rows:
        assert METRIC_KEYS <= set(row)
        assert math.isclose(row["perplexity"], math.exp(row["val_loss"]))
        assert 0 < row["bits_per_byte"] < 10
    assert rows[0]["val_loss"] == pytest.approx(math.log(300), abs=0.3)  # untrained: about uniform
    assert rows[-1]["val_loss"] < rows[0]["val_loss"] - 0.5
    assert rows[-1]["full_eval"] and not rows[1]["full_eval"]
    assert set(rows[-1]["layer_grad_norm"]) == {"tok_emb", "blocks.0", "blocks.1", "norm"}
    assert all(0 < r < 1 for r in rows[-1]["layer_update_ratio"].values())
    assert rows[1]["lr"] == pytest.approx(3e-3 * 9 / 10)  # the lr of step 9, the last warmup step


def test_report_summarises_and_embeds_every_figure(run_dir):
    report = (run_dir / "report.md").read_text()
    assert "perplexity" in report and "bits per byte" in report and "parameters" in report
    images = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", report)
    assert len(images) >= 8
    for rel in images:
        assert (run_dir / rel).is_file(), rel
    assert "| prompt |" in report


def test_samples_and_topk_table(run_dir):
    samples = (run_dir / "samples.txt").read_text()
    assert samples.count("=== prompt") == 6 and "temperature 0.8, top_k 40" in samples
    assert len(samples) > 500
    table = (run_dir / "topk.md").read_text().splitlines()
    assert table[0].startswith("| prompt | #1 |") and len(table) == 5
    for row in table[2:]:  # the top 5 of a softmax: falling, each in (0, 1], together at most 1
        probs = [float(cell.split()[-1]) for cell in row.split("|")[2:-1]]
        assert len(probs) == 5 and probs == sorted(probs, reverse=True) and 0 < probs[-1] and sum(probs) <= 1.003


# ----- repeatability and exact resume --------------------------------------------------------------------


def test_the_same_seed_gives_the_same_run(run_dir, corpus, tmp_path, capsys):
    status, _, _ = run_main(tiny_args(corpus, tmp_path / "again", "--no-report"), capsys)
    assert status == 0
    assert without_timing(read_metrics(tmp_path / "again")) == without_timing(read_metrics(run_dir))
    a, b = parameters(run_dir), parameters(tmp_path / "again")
    assert all(np.array_equal(a[k], b[k]) for k in a)


def test_interrupted_and_resumed_run_ends_exactly_like_an_uninterrupted_one(
    run_dir, corpus, tmp_path, capsys, monkeypatch
):
    def interrupt_at_13(step):
        if step == 13:
            raise KeyboardInterrupt

    out = tmp_path / "interrupted"
    status, _, err = run_main(tiny_args(corpus, out, "--no-report"), capsys, on_step=interrupt_at_13)
    assert status == 130 and "interrupted at step 13" in err
    assert read_checkpoint(out / "checkpoints" / "latest")["progress"]["step"] == 13
    assert not (out / "report.md").exists()

    status, _, _ = run_main(["--resume", out, "--no-report"], capsys)
    assert status == 0
    a, b = parameters(run_dir), parameters(out)
    assert tinyconfig_dropout() > 0 and sorted(a) == sorted(b)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert without_timing(read_metrics(out)) == without_timing(read_metrics(run_dir))


def tinyconfig_dropout():
    return json.loads(Path(TINY).read_text())["model"]["dropout"]


@pytest.fixture
def as_in_a_terminal():
    """SIGINT and SIGHUP as a terminal's foreground job has them (Python's handler, the default), whatever this
    test process inherited (a shell's background job ignores SIGINT; nohup ignores SIGHUP); put back after."""
    before = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGHUP)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    yield
    for number, handler in before.items():
        signal.signal(number, handler)


def test_ctrl_c_saves_a_checkpoint_after_the_current_step(corpus, tmp_path, capsys, as_in_a_terminal):
    def press_ctrl_c(step):
        if step == 5:
            os.kill(os.getpid(), signal.SIGINT)  # the real signal, caught by train.py's handler

    status, _, err = run_main(tiny_args(corpus, tmp_path / "run"), capsys, on_step=press_ctrl_c)
    assert status == 130 and "Ctrl-C" in err
    state = read_checkpoint(tmp_path / "run" / "checkpoints" / "latest")
    assert state["progress"]["step"] == 5
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is put back


@pytest.mark.parametrize("name", ["SIGINT", "SIGHUP"])
def test_a_signal_ignored_when_the_run_starts_stays_ignored(corpus, tmp_path, capsys, as_in_a_terminal, name):
    """nohup ignores SIGHUP and a shell's background job Ctrl-C: the run goes on to its end through them."""
    number = getattr(signal, name)
    signal.signal(number, signal.SIG_IGN)

    def send(step):
        if step == 5:
            os.kill(os.getpid(), number)

    status, _, err = run_main(tiny_args(corpus, tmp_path / "run"), capsys, on_step=send)
    assert status == 0 and "saving a checkpoint" not in err
    assert read_checkpoint(tmp_path / "run" / "checkpoints" / "latest")["progress"]["step"] == STEPS
    assert signal.getsignal(number) is signal.SIG_IGN


def test_resume_of_a_finished_run_can_extend_it(run_dir, tmp_path, capsys):
    out = tmp_path / "extended"
    shutil.copytree(run_dir, out)
    (out / "report.md").unlink()
    status, _, _ = run_main(["--resume", out, "--max-steps", STEPS + 6], capsys)
    assert status == 0
    assert [r["step"] for r in evaluation_rows(out)] == [0, 10, 20, STEPS, STEPS + 6]
    assert f"| steps | {STEPS + 6} (reached max_steps={STEPS + 6}) |" in (out / "report.md").read_text()  # written anew
    assert read_metrics(out)[-1]["lr"] > 3e-4  # the cosine now ends at step 30, not 24 (then it would be min_lr)
    assert json.loads((out / "config.json").read_text())["max_steps"] == STEPS + 6


# ----- the learning-rate schedule ----------------------------------------------------------------------


def test_warmup_counts_steps_and_the_cosine_ends_when_time_runs_out():
    cfg = TrainConfig(lr=1e-3, min_lr=1e-4, warmup_steps=100, max_steps=0, max_minutes=10)
    assert horizon(cfg, 0, 0.0) >= 10**9  # no estimate before the first step
    optimizer = AdamW([tensorlab.tensor([1.0], requires_grad=True)], lr=cfg.lr)
    schedule = WarmupCosine(cfg.lr, cfg.min_lr, cfg.warmup_steps, horizon(cfg, 0, 0.0), optimizer)
    for step in range(1, 51):
        schedule.step(horizon(cfg, step, elapsed_s=10.0 * step))  # 10 s a step: 60 steps fit
    assert optimizer.param_groups[0]["lr"] == pytest.approx(5e-4)  # still warming up, in steps
    assert schedule.max_steps == 100  # the horizon never precedes warmup's end
    for step in range(51, 501):
        schedule.step(horizon(cfg, step, elapsed_s=step * 300.0 / 450))  # faster now: 900 steps fit
    assert schedule.max_steps == 900
    assert optimizer.param_groups[0]["lr"] == pytest.approx(1e-4 + 0.9e-3 * 0.5)  # halfway down the cosine
    state = schedule.state_dict()
    again = WarmupCosine(cfg.lr, cfg.min_lr, cfg.warmup_steps, 10**9, optimizer)
    again.load_state_dict(state)  # a resumed run keeps the horizon
    assert again.max_steps == 900 and again.last_step == 500
    again.step(horizon(cfg, 501, elapsed_s=600.0))  # time is up at step 501
    assert optimizer.param_groups[0]["lr"] == pytest.approx(1e-4)


def test_max_steps_sets_the_horizon_unless_time_runs_out_first():
    both = TrainConfig(max_steps=300, max_minutes=1)
    assert horizon(both, 10, elapsed_s=1.0) == 300
    assert horizon(both, 10, elapsed_s=6.0) == 100


def test_wall_time_carries_over_a_second_fit_and_reaches_the_report(corpus, tmp_path):
    """A stopped fit() keeps its wall time: the next fit() in the same process counts on from it (max_minutes and
    the report read this clock; it once restarted from zero, and every report said 0.0 min)."""
    cfg = train.resolve_config(train.train_parser().parse_args(["--config", TINY, "--data", str(corpus)]))
    trainer = Trainer(cfg.replace(max_steps=6), tmp_path / "run", *train.load_data(cfg))
    open_run_dir(trainer)
    trainer.on_step = lambda step: time.sleep(0.5)  # 1.5 s of wall time in the first fit, beyond its steps
    stops = iter([False, False, True])
    assert trainer.fit(lambda: next(stops), report=lambda row: None) is None
    first, steps_time = trainer.progress.elapsed_s, trainer.progress.train_time_s
    assert first >= 1.5 + steps_time
    trainer.on_step = lambda step: None
    started = time.perf_counter()
    final = trainer.fit(report=lambda row: None)
    second = time.perf_counter() - started
    assert first + (trainer.progress.train_time_s - steps_time) <= final["elapsed_s"] <= first + second
    summary = dict(run_summary(trainer, final))
    assert summary["wall time"].endswith(f"({final['elapsed_s']:,.1f} s), evaluations included")


def test_plateau_halves_the_lr_and_early_stopping_ends_the_run(corpus, tmp_path, capsys):
    """lr 0.9 without warmup makes the val loss jump about. Which evaluations improve depends on the last bits of
    every product (another CPU's BLAS stops the run elsewhere), so the test replays the run's own val losses through
    PyTorch's ReduceLROnPlateau and the early-stopping rule, and checks each row's lr and where the run ended. The
    last row's loss is on every validation token, not the eval batches the rule compared (an AMD EPYC of
    2026-11-30 stopped at step 26, whose loss on every token happened to beat the best on the batches)."""
    import torch

    out = tmp_path / "run"
    flags = ["--eval-interval", 2, "--warmup-steps", 0, "--lr", 0.9, "--min-lr", 0, "--schedule", "plateau"]
    flags += ["--plateau-patience", 0, "--early-stopping-patience", 3, "--max-steps", 40]
    status, _, _ = run_main(tiny_args(corpus, out, *flags), capsys)
    assert status == 0
    rows = evaluation_rows(out)
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.9)
    plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=0, min_lr=0)
    expected_lrs, best, since_best = [None], math.inf, 0
    for row in rows[:-1]:  # the last row's loss is on every validation token; the rule compared its eval batches'
        plateau.step(row["val_loss"])
        expected_lrs.append(optimizer.param_groups[0]["lr"])  # in force until the next evaluation
        best, since_best = (row["val_loss"], 0) if row["val_loss"] < best else (best, since_best + 1)
        assert since_best < 3, row  # the rule would have stopped the run here
    assert rows[-1]["full_eval"] and [r["step"] for r in rows] == list(range(0, rows[-1]["step"] + 1, 2))
    assert [r["lr"] for r in rows] == expected_lrs
    stopped = rows[-1]["step"] < 40
    assert since_best == 2 or not stopped  # it stopped where one more evaluation without a better loss stops it
    assert ("early stopping" in (out / "report.md").read_text()) == stopped
    assert min(expected_lrs[1:]) < 0.9  # the plateau was met: the lr was halved at least once


# ----- evaluation -----------------------------------------------------------------------------------------


def test_bits_per_byte_is_total_nll_in_bits_over_utf8_bytes():
    text = "To be, or not to be: où est-il? That is the question.\n"  # ù is two bytes
    tokenizer = BPETokenizer.train(text * 20, vocab_size=270)
    ids = tokenizer.encode(text)
    tensorlab.manual_seed(0)
    model = TinyTransformerLM(
        ModelConfig(
            vocab_size=tokenizer.vocab_size, context_len=8, d_model=16, n_layers=1, n_heads=2, d_ff=32, dropout=0.0
        )
    )
    result = evaluate(model, ids, tokenizer, batch_size=3)

    total_nll, n_predicted = 0.0, 0
    for start in range(0, len(ids) - 1, 8):  # non-overlapping windows, each token predicted once
        x = ids[start : min(start + 8, len(ids) - 1)]
        y = ids[start + 1 : start + 1 + len(x)]
        logits = model(x[None, :])[0].numpy()[0].astype(np.float64)  # (t, V)
        log_probs = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
        total_nll -= log_probs[np.arange(len(y)), y].sum()
        n_predicted += len(y)
    first = tokenizer.decode(ids[:1])
    assert text.startswith(first) and first.isascii()
    n_bytes = len(text.encode("utf-8")) - len(first)  # every token's bytes but the first's
    assert n_predicted == len(ids) - 1 and result["tokens"] == n_predicted and result["bytes"] == n_bytes
    assert result["bits_per_byte"] == pytest.approx(total_nll / (math.log(2) * n_bytes), rel=1e-5)
    assert result["perplexity"] == pytest.approx(math.exp(total_nll / n_predicted), rel=1e-5)


def test_eval_subcommand_matches_the_final_full_evaluation(run_dir, capsys):
    status, out, _ = run_main(["eval", run_dir, "--checkpoint", "latest"], capsys)
    assert status == 0
    final = read_metrics(run_dir)[-1]
    assert f"val loss {final['val_loss']:.4f}" in out and "perplexity" in out and "bits per byte" in out


def test_generate_subcommand_continues_the_prompt(run_dir, capsys):
    status, out, _ = run_main(["generate", run_dir, "--prompt", "ROMEO:", "--max-new-tokens", 20, "--top-k", 5], capsys)
    assert status == 0 and out.startswith("ROMEO:") and len(out) > len("ROMEO:") + 5


def two_sweep_configs(tmp_path):
    """The tiny config at two widths, written as narrow.json and wide.json: what the sweep tests compare."""
    configs = []
    for name, d_model in (("narrow", 16), ("wide", 32)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(dict(json.loads(Path(TINY).read_text()), d_model=d_model)))
        configs.append(path)
    return configs


def test_sweep_trains_each_config_and_compares_them(corpus, tmp_path, capsys):
    configs = two_sweep_configs(tmp_path)
    out = tmp_path / "sweep"
    status, _, _ = run_main(["sweep", *configs, "--out", out, "--data", corpus, "--max-steps", 10], capsys)
    assert status == 0
    table = (out / "sweep.md").read_text()
    assert "| narrow |" in table and "| wide |" in table and "bits per byte" in table
    lines = [line for line in table.splitlines() if line.startswith("|")]
    header, _, *rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]
    assert all(float(row[header.index("minutes")]) > 0 for row in rows)  # each run's own clock, not a zero
    assert (out / "sweep_perplexity.png").is_file()
    assert (out / "narrow" / "report.md").is_file() and (out / "wide" / "report.md").is_file()


# ----- bad input: one line on stderr, a nonzero status, no run directory -----------------------------------


def assert_one_line_error(status, err, *fragments):
    lines = [line for line in err.splitlines() if line.strip()]
    assert status != 0 and len(lines) == 1, err
    assert lines[0].startswith("train.py: error:") and "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.mark.parametrize(
    "flags, fragment",
    [
        (["--d-model", "abc"], "--d-model"),
        (["--schedule", "linear"], "--schedule"),
        (["--dropout", "1.5"], "dropout"),
        (["--d-model", "30", "--n-heads", "4"], "divisible"),
        (["--max-steps", "0", "--max-minutes", "0"], "never end"),
        (["--no-such-flag"], "--no-such-flag"),
    ],
)
def test_a_wrong_flag_value(flags, fragment, corpus, tmp_path, capsys):
    status, _, err = run_main(tiny_args(corpus, tmp_path / "run", *flags), capsys)
    assert_one_line_error(status, err, fragment)
    assert not (tmp_path / "run").exists()


def test_a_config_key_that_does_not_exist(corpus, tmp_path, capsys):
    config = tmp_path / "bad.json"
    config.write_text(json.dumps({"d_modle": 32}))
    status, _, err = run_main(["--config", config, "--data", corpus, "--out", tmp_path / "run"], capsys)
    assert_one_line_error(status, err, "'d_modle'", "d_model")
    assert not (tmp_path / "run").exists()


def test_a_corpus_too_small_for_the_context(tmp_path, capsys):
    small = tmp_path / "small.txt"
    small.write_text("To be, or not to be: that is the question.\n" * 30)
    status, _, err = run_main(["--config", TINY, "--data", small, "--seq-len", 128, "--out", tmp_path / "run"], capsys)
    assert_one_line_error(status, err, "corpus too small", "seq_len=128")
    assert not (tmp_path / "run").exists()


def test_a_missing_corpus(tmp_path, capsys):
    status, _, err = run_main(["--config", TINY, "--data", tmp_path / "nope.txt", "--out", tmp_path / "run"], capsys)
    assert_one_line_error(status, err, "nope.txt")
    assert not (tmp_path / "run").exists()


def test_an_existing_out_dir_is_not_overwritten(run_dir, corpus, capsys):
    before = (run_dir / "metrics.jsonl").read_bytes()
    status, _, err = run_main(tiny_args(corpus, run_dir), capsys)
    assert_one_line_error(status, err, "not empty", "--resume")
    assert (run_dir / "metrics.jsonl").read_bytes() == before


def test_resume_with_another_model_shape(run_dir, tmp_path, capsys):
    out = tmp_path / "copy"
    shutil.copytree(run_dir, out)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and p.name != LOCK_NAME}
    status, _, err = run_main(["--resume", out, "--d-model", 48], capsys)
    assert_one_line_error(status, err, "cannot resume", "with another d_model (32 -> 48)")
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and p.name != LOCK_NAME} == before


def test_eval_of_a_checkpoint_from_another_config(run_dir, tmp_path, capsys):
    out = tmp_path / "copy"
    shutil.copytree(run_dir, out)
    config = json.loads((out / "config.json").read_text())
    (out / "config.json").write_text(json.dumps(dict(config, d_model=48, d_ff=96)))
    status, _, err = run_main(["eval", out], capsys)
    assert_one_line_error(status, err, "another model config", "d_model=32")


def test_a_truncated_checkpoint(run_dir, tmp_path, capsys):
    out = tmp_path / "copy"
    shutil.copytree(run_dir, out)
    npz = out / "checkpoints" / "latest.safetensors"
    npz.write_bytes(npz.read_bytes()[:1000])
    status, _, err = run_main(["--resume", out], capsys)
    assert_one_line_error(status, err, "truncated")
    status, _, err = run_main(["eval", out, "--checkpoint", "latest"], capsys)
    assert_one_line_error(status, err, "truncated")
    assert npz.stat().st_size == 1000  # nothing rewrote it


def test_eval_and_generate_of_something_that_is_not_a_run(tmp_path, capsys):
    status, _, err = run_main(["eval", tmp_path], capsys)
    assert_one_line_error(status, err, "not a run directory")
    status, _, err = run_main(["generate", tmp_path / "missing"], capsys)
    assert_one_line_error(status, err, "not a run directory")


# ----- issue 9: bookkeeping, sweeps, permissions, host transfers ------------------------------------------


def test_run_outputs_have_ordinary_permissions(run_dir):
    modes = {
        p.relative_to(run_dir).as_posix(): oct(p.stat().st_mode & 0o777) for p in run_dir.rglob("*") if p.is_file()
    }
    assert set(modes.values()) == {oct(0o666 & ~current_umask())}, modes


def current_umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_second_ctrl_c_inside_the_best_save_leaves_best_and_progress_consistent(
    run_dir, corpus, tmp_path, capsys, monkeypatch
):
    import models.trainer

    real_save = models.trainer.save_checkpoint

    def ctrl_c_inside_best_at_20(path, state):
        if path.name == "best" and state["step"] == 20:
            raise KeyboardInterrupt  # before the file is complete: best.safetensors stays the old one
        real_save(path, state)

    monkeypatch.setattr(models.trainer, "save_checkpoint", ctrl_c_inside_best_at_20)
    out = tmp_path / "run"
    status, _, _ = run_main(tiny_args(corpus, out, "--no-report"), capsys)
    assert status == 130
    latest, best = read_checkpoint(out / "checkpoints" / "latest"), read_checkpoint(out / "checkpoints" / "best")
    assert best["step"] == latest["progress"]["best_step"] == 10  # progress names the best that exists
    assert best["val_loss"] == latest["progress"]["best_val_loss"]
    monkeypatch.undo()
    assert run_main(["--resume", out, "--no-report"], capsys)[0] == 0  # redoes step 20's evaluation
    a, b = read_checkpoint(out / "checkpoints" / "best"), read_checkpoint(run_dir / "checkpoints" / "best")
    assert a["step"] == b["step"] and all(np.array_equal(a["model"][k], b["model"][k]) for k in b["model"])
    assert without_timing(read_metrics(out)) == without_timing(read_metrics(run_dir))


def test_per_layer_statistics_are_computed_only_for_logged_steps(corpus, tmp_path, capsys, monkeypatch):
    """Host transfers: a step between evaluations fetches the loss alone (.item()) and no per-layer statistics."""
    import models.trainer

    calls, items = [], []
    real_norms, real_item = models.trainer.grad_norms, tensorlab.Tensor.item
    monkeypatch.setattr(models.trainer, "grad_norms", lambda groups: (calls.append(1), real_norms(groups))[1])
    monkeypatch.setattr(tensorlab.Tensor, "item", lambda self: (items.append(1), real_item(self))[1])
    after_step = []
    status, _, _ = run_main(
        tiny_args(corpus, tmp_path / "run", "--no-report"), capsys, on_step=lambda step: after_step.append(len(items))
    )
    assert status == 0 and len(after_step) == STEPS
    assert len(calls) == 3  # the steps shown by the rows of steps 10, 20 and 24 (the last)
    fetches = np.diff(after_step)  # .item() calls from one step's end to the next's: step s+1, and eval at s if due
    assert all(n == 1 for s, n in enumerate(fetches, start=1) if s % 10), fetches


def test_an_interrupted_sweep_continues_and_skips_finished_configs(corpus, tmp_path, capsys):
    configs = two_sweep_configs(tmp_path)
    out = tmp_path / "sweep"
    argv = ["sweep", *configs, "--out", out, "--data", corpus, "--max-steps", 10]
    steps = []

    def stop_in_the_second_run(step):
        steps.append(step)
        if len(steps) == 14:
            raise KeyboardInterrupt

    assert run_main(argv, capsys, on_step=stop_in_the_second_run)[0] == 130
    assert (out / "narrow" / "report.md").is_file() and not (out / "wide" / "report.md").exists()
    steps.clear()
    assert run_main(argv, capsys, on_step=steps.append)[0] == 0
    assert steps == [5, 6, 7, 8, 9, 10]  # narrow is not trained again; wide goes on from step 4
    table = (out / "sweep.md").read_text()
    assert "| narrow |" in table and "| wide |" in table


@pytest.mark.parametrize("saved", ["before the draw counts", "with the draw counts"])
def test_resume_of_a_gpu_run_saved_before_the_draw_counts_says_in_one_line_that_dropout_differs(
    saved, run_dir, tmp_path, capsys
):
    out = tmp_path / "copy"
    shutil.copytree(run_dir, out)
    path = out / "checkpoints" / "latest.safetensors"
    tensors, meta = serialization.load(path)
    if saved == "before the draw counts":  # tensorlab_rng as it was: {"seed", "cpu", "gpu_used"}
        del meta["tensorlab_rng"]["device_draws"]
        meta["tensorlab_rng"]["gpu_used"] = True
    else:
        meta["tensorlab_rng"]["device_draws"] = {"cuda": 7}
    serialization.save(tensors, meta, path)
    status, _, err = run_main(["--resume", out, "--max-steps", STEPS + 2, "--no-report"], capsys)
    assert status == 0
    notes = [line for line in err.splitlines() if "dropout" in line]
    assert notes == (
        [
            f"note: {path} was saved on a GPU before tensorlab saved the dropout draw counts, so this "
            "resumed run draws other dropout masks than an uninterrupted one would"
        ]
        if saved == "before the draw counts"
        else []
    )


def test_the_console_says_which_validation_loss_is_which(corpus, tmp_path, capsys):
    """The last step is evaluated twice (on eval_batches, then on every token): each line says which it is."""
    status, out, err = run_main(tiny_args(corpus, tmp_path / "run", "--no-report"), capsys)
    assert status == 0
    lines = [line for line in (out + err).replace("\r", "\n").splitlines() if "val loss" in line]
    rows = read_metrics(tmp_path / "run")
    assert len(lines) >= 3 and all(line.startswith("step ") for line in lines[:-1]), lines
    assert all(line.endswith("(on 2 validation batches)") for line in lines[:-1]), lines
    assert lines[-1].startswith(f"done: final val loss {rows[-1]['val_loss']:.4f}")
    assert lines[-1].endswith("(on every validation token)"), lines
