"""Every figure of a training run, drawn with matplotlib's Agg backend (no display needed).

Each function takes plain data (metric rows as written to metrics.jsonl, NumPy arrays of
attention weights, token labels) and writes one PNG atomically, so a figure on disk is
always whole.
"""

import io
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
import numpy as np  # noqa: E402
from matplotlib.colors import PowerNorm  # noqa: E402
from matplotlib.ticker import LogFormatter  # noqa: E402

from models.trainer import is_evaluation  # noqa: E402
from tensorlab.serialization import write_atomically  # noqa: E402

ATTENTION_TICKS = (0, 0.02, 0.1, 0.25, 0.5, 1)  # the colour bar's marks, spread evenly by the square-root scale


def _figure(*args, **kwargs):
    """plt.subplots laid out "constrained": labels fit inside the figure, so _save crops nothing (a crop draws the
    figure twice)."""
    return plt.subplots(*args, layout="constrained", **kwargs)


def _save(fig, path):
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    write_atomically(path, buffer.getvalue())


def _series(metrics, key):
    """(steps, values) of the metric rows that have `key`."""
    rows = [m for m in metrics if m.get(key) is not None]
    return [m["step"] for m in rows], [m[key] for m in rows]


def _train_series(metrics):
    """(steps, losses) of the training loss: the train-loss rows, and before the first of them the means that
    evaluation rows hold (a run from before train-loss rows logged the training loss only at evaluations)."""
    logged = [m for m in metrics if not is_evaluation(m)]
    first = logged[0]["step"] if logged else math.inf
    older = [m for m in metrics if is_evaluation(m) and m.get("train_loss") is not None and m["step"] < first]
    return [m["step"] for m in older + logged], [m["train_loss"] for m in older + logged]


def loss_curves(metrics, vocab_size, path):
    """Training loss (each point the mean since the previous one) and validation loss against step, with the
    loss of a uniform guess over the vocabulary, ln V, where an untrained model starts."""
    fig, ax = _figure(figsize=(7, 4.2))
    uniform = math.log(vocab_size)
    ax.axhline(
        uniform, color="grey", linestyle="--", linewidth=1, label=f"uniform guess: ln {vocab_size} = {uniform:.2f}"
    )
    ax.plot(*_train_series(metrics), linewidth=1, label="train (each point: the mean since the previous one)")
    ax.plot(*_series([m for m in metrics if is_evaluation(m)], "val_loss"), marker=".", label="validation")
    ax.set(xlabel="step", ylabel="cross-entropy (nats per token)", title="Loss")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right")
    _save(fig, path)


def val_perplexity(metrics, path):
    """Validation perplexity against step, on a log scale."""
    fig, ax = _figure(figsize=(7, 4.2))
    steps, values = _series(metrics, "perplexity")
    ax.plot(steps, values, marker=".", color="tab:orange")
    ax.set(xlabel="step", ylabel="perplexity", yscale="log", title="Validation perplexity")
    _plain_log_ticks(ax)
    ax.grid(alpha=0.3, which="both")
    _save(fig, path)


def _plain_log_ticks(ax):
    """Label a log y axis with plain numbers (60, 200), not matplotlib's default 6×10^1."""
    ax.yaxis.set_major_formatter(LogFormatter())
    ax.yaxis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(2, 1)))  # more within 2 decades


def layer_curves(metrics, key, path, ylabel, title):
    """One line per layer group of a per-layer metric (a dict per row under `key`), log scale."""
    steps, values = _series(metrics, key)
    fig, ax = _figure(figsize=(7, 4.2))
    groups = list(values[0]) if values else []
    colors = plt.cm.viridis(np.linspace(0, 0.9, max(len(groups), 1)))
    for group, color in zip(groups, colors):
        ax.plot(steps, [v.get(group, np.nan) for v in values], marker=".", label=group, color=color)
    ax.set(xlabel="step", ylabel=ylabel, yscale="log", title=title)
    ax.grid(alpha=0.3, which="both")
    if groups:
        ax.legend(fontsize=8)
    _save(fig, path)


def _heatmap(ax, weights, labels, show_x=True, show_y=True):
    """Attention weights (T, T): row = the query token, column = the key token it looks at; returns the image.

    The colour follows the square root of the weight, so that the many small weights of
    a head that spreads its attention still show.
    """
    image = ax.imshow(weights, cmap="viridis", norm=PowerNorm(0.5, vmin=0, vmax=1), interpolation="nearest")
    ticks = np.arange(len(labels))
    ax.set_xticks(ticks if show_x else [], labels if show_x else [], rotation=90, fontsize=6)  # no unlabelled marks
    ax.set_yticks(ticks if show_y else [], labels if show_y else [], fontsize=6)
    ax.tick_params(length=0)
    return image


def _colour_bar(fig, image, axes, shrink=0.8):
    """One colour bar beside `axes` that reads every heatmap of the figure (they share the colormap and scale)."""
    bar = fig.colorbar(image, ax=axes, shrink=shrink, aspect=30, ticks=ATTENTION_TICKS)
    bar.set_label("attention weight", fontsize=9)
    bar.ax.tick_params(labelsize=8)


def attention_heads(weights, labels, path, title):
    """A grid of one layer's heads: weights (H, T, T), token labels on both axes of every head."""
    H, T = weights.shape[0], weights.shape[-1]
    cols = min(H, 3)
    rows = -(-H // cols)
    size = 1.2 + T * 0.13
    fig, axes = _figure(rows, cols, figsize=(cols * size, rows * size), squeeze=False)
    for h, ax in enumerate(axes.flat):
        if h >= H:
            ax.axis("off")
            continue
        image = _heatmap(ax, weights[h], labels)
        ax.set_title(f"head {h}", fontsize=9)
    _colour_bar(fig, image, axes)
    fig.suptitle(f"{title}\nrow: query token, column: the token it attends to", fontsize=10)
    _save(fig, path)


def attention_evolution(snapshots, labels, path):
    """How attention changes: a row per checkpoint [(step, weights (L, H, T, T))], a column per layer (head mean)."""
    n_rows, n_layers = len(snapshots), snapshots[0][1].shape[0]
    size = 1.0 + len(labels) * 0.1
    fig, axes = _figure(n_rows, n_layers, figsize=(n_layers * size, n_rows * size), squeeze=False)
    for r, (step, weights) in enumerate(snapshots):
        for layer in range(n_layers):
            ax = axes[r, layer]
            image = _heatmap(ax, weights[layer].mean(axis=0), labels, show_x=r == n_rows - 1, show_y=layer == 0)
            if r == 0:
                ax.set_title(f"layer {layer} (mean of heads)", fontsize=9)
            if layer == 0:
                ax.set_ylabel(f"step {step}", fontsize=10)
    _colour_bar(fig, image, axes, shrink=min(0.8, 1.5 / n_rows))  # about one row of heatmaps long
    fig.suptitle("Attention on one validation passage across training", fontsize=11)
    _save(fig, path)


def token_frequency(counts, labels, path, top=30):
    """The `top` most frequent tokens (bars) and every token's count against its rank (log-log, Zipf)."""
    order = np.argsort(counts)[::-1]
    fig, (bars, zipf) = _figure(1, 2, figsize=(12, 4.2), gridspec_kw={"width_ratios": [2, 1]})
    bars.bar(range(top), counts[order[:top]], color="tab:blue")
    bars.set_xticks(range(top), [labels[i] for i in order[:top]], rotation=90, fontsize=8)
    bars.set(ylabel="count in the training split", title=f"The {top} most frequent tokens")
    ranked = counts[order]
    ranked = ranked[ranked > 0]
    zipf.loglog(np.arange(1, len(ranked) + 1), ranked, marker=".", linestyle="none")
    zipf.set(xlabel="rank", ylabel="count", title="Count against rank")
    zipf.grid(alpha=0.3, which="both")
    _save(fig, path)


def sweep_perplexity(runs, path):
    """Validation perplexity against step for several runs: {name: metric rows}."""
    fig, ax = _figure(figsize=(7, 4.2))
    for name, metrics in runs.items():
        steps, values = _series(metrics, "perplexity")
        ax.plot(steps, values, marker=".", label=name)
    ax.set(xlabel="step", ylabel="validation perplexity", yscale="log", title="Sweep: validation perplexity")
    _plain_log_ticks(ax)
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    _save(fig, path)
