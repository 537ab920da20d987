"""The run report teaches (issue 22, item 6): train-loss rows every log_interval steps, a ln V line on the loss
figure, plain numbers on the perplexity axes, a colour bar for the attention heatmaps, and a word on "\ufffd".

The figures are read back from matplotlib's artists (plots._save is swapped for one that keeps the figure).
"""

import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import train
from models import plots
from models.report import UNDECODABLE_NOTE, write_outputs, write_report
from models.run import open_run_dir
from models.sweep import finished_row
from models.trainer import Trainer, is_evaluation, read_metrics

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "configs" / "tiny.json"
STEPS, EVAL_INTERVAL, LOG_INTERVAL = 23, 8, 5
SETTINGS = ["--max-steps", STEPS, "--eval-interval", EVAL_INTERVAL, "--log-interval", LOG_INTERVAL]
TIMING_KEYS = {"tokens_per_s", "elapsed_s"}


class Crash(Exception):
    """Stands for a kill: nothing is saved on the way out."""


def run_args(corpus, out, *extra):
    return [str(a) for a in ["--config", TINY, "--data", corpus, "--out", out, *SETTINGS, *extra]]


@pytest.fixture(scope="module")
def run(corpus_file, tmp_path_factory):
    """A finished tiny run of STEPS steps, with the training loss of each step as step() returned it."""
    cfg = train.resolve_config(train.train_parser().parse_args(run_args(corpus_file, "unused")))
    trainer = Trainer(cfg, tmp_path_factory.mktemp("report") / "run", *train.load_data(cfg))
    open_run_dir(trainer)
    losses, step = [], trainer.step
    trainer.step = lambda: losses.append(step()) or losses[-1]
    final = trainer.fit(report=lambda row: None)
    return trainer, final, losses


@pytest.fixture
def figures(monkeypatch):
    """The figures the plots module draws, kept open instead of written."""
    kept = []
    monkeypatch.setattr(plots, "_save", lambda fig, path: kept.append(fig))
    yield kept
    for fig in kept:
        plots.plt.close(fig)


# ----- train-loss rows ----------------------------------------------------------------------------------------


def test_a_train_loss_row_every_log_interval_steps_and_before_each_evaluation(run):
    trainer, _, losses = run
    rows = [row for row in read_metrics(trainer.run_dir) if not is_evaluation(row)]
    logged = sorted(
        set(range(LOG_INTERVAL, STEPS + 1, LOG_INTERVAL))
        | set(range(EVAL_INTERVAL, STEPS + 1, EVAL_INTERVAL))
        | {STEPS}
    )
    assert logged == [5, 8, 10, 15, 16, 20, 23]
    assert [row["step"] for row in rows] == logged
    assert len(losses) == STEPS
    starts = [0, *logged[:-1]]  # each row: the steps after the previous row, up to its own
    assert [row["steps_averaged"] for row in rows] == [end - start for start, end in zip(starts, logged)]
    for row, start in zip(rows, starts):
        assert row["train_loss"] == pytest.approx(np.mean(losses[start : row["step"]]), rel=1e-12, abs=0)
    assert rows[-1]["lr"] == trainer.progress.last["lr"]


def test_evaluation_rows_keep_their_mean_since_the_previous_evaluation(run):
    trainer, final, losses = run
    evaluations = [row for row in read_metrics(trainer.run_dir) if is_evaluation(row)]
    assert [row["step"] for row in evaluations] == [0, 8, 16, 23]
    assert evaluations[0]["train_loss"] is None
    for previous, row in zip(evaluations, evaluations[1:]):
        assert row["train_loss"] == pytest.approx(np.mean(losses[previous["step"] : row["step"]]), rel=1e-12)
    lines = (trainer.run_dir / "metrics.jsonl").read_text().splitlines()
    assert json.loads(lines[-1]) == final  # the last line is still the final evaluation


def untimed(rows):
    return [{k: v for k, v in row.items() if k not in TIMING_KEYS} for row in rows]


@pytest.mark.parametrize("stop", ["ctrl_c_at_13", "crash_at_14"])
def test_a_resumed_run_continues_the_rows_and_the_file_only_grows(stop, run, corpus_file, tmp_path):
    """Ctrl-C after step 13 saves latest there; a crash after step 14 resumes from the checkpoint of step 12."""
    at, how = (13, KeyboardInterrupt) if stop == "ctrl_c_at_13" else (14, Crash)

    def stop_at(step):
        if step == at:
            raise how

    out = tmp_path / "run"
    args = run_args(corpus_file, out, "--checkpoint-interval", 6, "--no-report")
    if how is Crash:
        with pytest.raises(Crash):
            train.main(args, on_step=stop_at)
    else:
        assert train.main(args, on_step=stop_at) == 130
    before = (out / "metrics.jsonl").read_text()
    assert train.main(["--resume", str(out), "--no-report"]) == 0
    after = (out / "metrics.jsonl").read_text()
    assert after.startswith(before) and len(after) > len(before)  # nothing rewritten, nothing dropped
    assert untimed(read_metrics(out)) == untimed(read_metrics(run[0].run_dir))  # no gap, no duplicate, bitwise
    assert sum(r["steps_averaged"] for r in read_metrics(out) if not is_evaluation(r)) == STEPS


def test_rows_written_just_before_a_kill_that_latest_never_counted_are_written_once(
    run, corpus_file, tmp_path, monkeypatch
):
    """A kill after metrics.jsonl is written for step 16's evaluation and before latest is: the resume starts from
    latest of step 12 (--checkpoint-interval 6), drops the rows past it and writes them again, each once."""
    save = Trainer.save

    def killed_writing_latest(trainer, name, **extra):
        if name == "latest" and trainer.progress.step == 16:
            raise Crash
        return save(trainer, name, **extra)

    out = tmp_path / "run"
    with monkeypatch.context() as patch:
        patch.setattr(Trainer, "save", killed_writing_latest)
        with pytest.raises(Crash):
            train.main(run_args(corpus_file, out, "--checkpoint-interval", 6, "--no-report"))
    assert [r["step"] for r in read_metrics(out)][-3:] == [15, 16, 16]  # a train row and the evaluation's
    assert train.main(["--resume", str(out), "--no-report"]) == 0
    assert untimed(read_metrics(out)) == untimed(read_metrics(run[0].run_dir))


# ----- the figures ------------------------------------------------------------------------------------------


def test_the_loss_figure_draws_ln_v_where_step_0_starts(run, figures):
    trainer, _, _ = run
    metrics, vocab_size = trainer.metrics, trainer.tokenizer.vocab_size
    assert vocab_size == 300
    plots.loss_curves(metrics, vocab_size, "unused.png")
    (ax,) = figures[0].axes
    lines = {line.get_label(): line for line in ax.get_lines()}
    uniform = lines["uniform guess: ln 300 = 5.70"]
    assert np.all(np.asarray(uniform.get_ydata()) == math.log(300))
    assert tuple(uniform.get_xdata()) == (0, 1) and uniform.get_transform() == ax.get_yaxis_transform()  # full width
    step_0 = metrics[0]
    assert step_0["step"] == 0 and step_0["val_loss"] == pytest.approx(math.log(300), abs=0.1)

    train_rows = [m for m in metrics if not is_evaluation(m)]
    train_line = lines["train (each point: the mean since the previous one)"]
    assert list(train_line.get_xdata()) == [m["step"] for m in train_rows]
    assert list(train_line.get_ydata()) == [m["train_loss"] for m in train_rows]
    validation = lines["validation"]
    assert list(validation.get_ydata()) == [m["val_loss"] for m in metrics if is_evaluation(m)]


def test_a_run_without_train_loss_rows_draws_the_means_its_evaluations_hold(figures):
    """An older run, resumed today: its evaluation rows' means before its first train-loss row, then the rows."""
    old = [
        dict(step=0, train_loss=None, val_loss=5.7),
        dict(step=100, train_loss=3.0, val_loss=3.1),
        dict(step=102, train_loss=2.9, steps_averaged=2, lr=1e-3),
        dict(step=104, train_loss=2.8, steps_averaged=2, lr=1e-3),
    ]
    plots.loss_curves(old, 300, "unused.png")
    train_line = figures[0].axes[0].get_lines()[1]
    assert list(train_line.get_xdata()) == [100, 102, 104]
    assert list(train_line.get_ydata()) == [3.0, 2.9, 2.8]


def perplexity_rows(values):
    return [dict(step=100 * i, val_loss=math.log(v), perplexity=v) for i, v in enumerate(values)]


@pytest.mark.parametrize("values", [(480, 60, 30, 20), (80, 60, 50, 45), (9.5, 7.2, 6.1)], ids=str)
def test_perplexity_axes_read_as_plain_numbers(values, figures):
    plots.val_perplexity(perplexity_rows(values), "unused.png")
    plots.sweep_perplexity({"a": perplexity_rows(values), "b": perplexity_rows(values[1:])}, "unused.png")
    for fig in figures:
        (ax,) = fig.axes
        fig.canvas.draw()
        ticks = ax.yaxis.get_major_ticks() + ax.yaxis.get_minor_ticks()
        low, high = ax.get_ylim()  # the ticks shown: matplotlib labels some beyond the limits too (3.10: 0.1 as 1e-01)
        shown = [tick for tick in ticks if low <= tick.get_loc() <= high and tick.label1.get_text()]
        labelled = {tick.get_loc(): tick.label1.get_text() for tick in shown}
        assert len(labelled) >= 2  # the axis shows at least two numbers
        assert all(text == f"{loc:g}" for loc, text in labelled.items()), labelled


def attention(shape, seed=0):
    """Causal attention weights of the given shape (..., T, T): each row sums to 1 over the past."""
    rng = np.random.default_rng(seed)
    T = shape[-1]
    scores = np.where(np.tril(np.ones((T, T), bool)), rng.normal(size=shape), -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return weights / weights.sum(axis=-1, keepdims=True)


def heatmaps_and_bars(fig):
    images = [image for ax in fig.axes for image in ax.images]
    return images, [image.colorbar for image in images if image.colorbar is not None]


def same_scale(a, b):
    return (a.cmap.name, type(a.norm), getattr(a.norm, "gamma", None), a.norm.vmin, a.norm.vmax) == (
        b.cmap.name,
        type(b.norm),
        getattr(b.norm, "gamma", None),
        b.norm.vmin,
        b.norm.vmax,
    )


def test_every_attention_heatmap_is_read_by_a_colour_bar(figures):
    labels = [f"t{i}" for i in range(6)]
    plots.attention_heads(attention((4, 6, 6)), labels, "unused.png", "Layer 0")
    plots.attention_evolution([(0, attention((2, 2, 6, 6), 1)), (10, attention((2, 2, 6, 6), 2))], labels, "x.png")
    for fig, n_heatmaps in zip(figures, (4, 4)):
        images, bars = heatmaps_and_bars(fig)
        assert len(images) == n_heatmaps and len(bars) == 1
        (bar,) = bars
        assert bar.ax in fig.axes and bar.ax.get_ylabel() == "attention weight"
        assert all(same_scale(image, bar.mappable) for image in images)  # one bar reads every heatmap
        fig.canvas.draw()
        ticks = [float(text.get_text()) for text in bar.ax.get_yticklabels()]
        assert ticks == list(plots.ATTENTION_TICKS)


# ----- report.md ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sample", ["ROMEO: well met", "ROMEO: caf\ufffd au lait"], ids=["clean", "undecodable"])
def test_report_says_why_a_sample_shows_a_replacement_character(sample, tmp_path):
    samples = ["=== prompt 'ROMEO:' ===\nROMEO: hello\n", "=== prompt 'ROMEO:' ===\nROMEO: there\n", sample]
    write_report(tmp_path / "report.md", "t", [], {}, [], "", samples)
    assert (UNDECODABLE_NOTE in (tmp_path / "report.md").read_text()) == ("\ufffd" in sample)


def test_a_finished_run_writes_the_report_with_these_figures(run):
    trainer, final, _ = run
    write_outputs(trainer, final)
    report = (trainer.run_dir / "report.md").read_text()
    samples = (trainer.run_dir / "samples.txt").read_text()
    assert (UNDECODABLE_NOTE in report) == ("\ufffd" in samples)  # an untrained byte-level model shows many
    assert (trainer.run_dir / "figures" / "loss_curves.png").stat().st_size > 0


def test_a_run_whose_last_row_is_a_train_loss_row_has_not_finished(tmp_path):
    """A finished run resumed for more steps and stopped at a log step: its report.md is old, its last row a train
    row, so the sweep trains it on (this once raised KeyError: full_eval)."""
    (tmp_path / "report.md").write_text("# an older report\n")
    resumed = SimpleNamespace(
        run_dir=tmp_path,
        metrics=[dict(step=24, val_loss=4.0, full_eval=True), dict(step=26, train_loss=3.9, steps_averaged=2, lr=1e-3)],
        stop_reason=lambda: None,
    )
    assert finished_row(resumed) is None
