"""What a finished run leaves behind: figures, samples.txt, the top-k next-token table, report.md.

`write_outputs` makes all of them; the functions below it make one each. The sweep's
comparison table is here too.
"""

import json

import numpy as np

from models.checkpoint import load_checkpoint
from models.evaluate import device_of
from models.prompts import run_prompts
from models.transformer import TinyTransformerLM, inference
from tensorlab import backend, tensor
from tensorlab import functional as F
from tensorlab.serialization import write_atomically

PASSAGE_TOKENS = 32  # tokens of validation text shown in the attention figures
SAMPLE_PROMPTS = ("ROMEO:", "First Citizen:\nWe are", "To be, or not to be,")
SAMPLE_SETTINGS = ((0.8, 40), (1.0, None))  # (temperature, top_k)
TOPK_PROMPTS = ("ROMEO:", "First Citizen:\nWe are", "O Romeo, Romeo! wherefore art thou")
UNDECODABLE = "\ufffd"
UNDECODABLE_NOTE = (
    "A \ufffd in `samples.txt` marks bytes that form no character: a byte-level model generates bytes, and it "
    "sometimes puts them in an order UTF-8 does not allow (a character's first byte followed by a letter). "
    "A character the sample merely stops inside is held back, not shown (BPETokenizer.decode)."
)


def write_outputs(run, final):
    """Write every figure, samples.txt, topk.md and report.md of a finished Trainer; `final` is its last row."""
    cfg, run_dir, tokenizer, model = run.cfg, run.files, run.tokenizer, run.model
    attention_figures = write_figures(run, final)
    prompts = run_prompts(cfg.prompts, run.val_ids, tokenizer)
    samples = write_samples(model, tokenizer, run_dir / "samples.txt", seed=cfg.seed, prompts=prompts)
    topk = topk_table(model, tokenizer, prompts)
    write_atomically(run_dir / "topk.md", topk.encode("utf-8"))
    write_report(
        run_dir / "report.md",
        f"Training report: {run.run_dir.name}",
        run_summary(run, final),
        cfg.to_dict(),
        report_figures(attention_figures),
        topk,
        samples,
    )


def run_summary(run, final):
    """The report's summary table: (what, value) rows for a finished run whose last metrics row is `final`."""
    cfg, tokenizer, model, progress = run.cfg, run.tokenizer, run.model, run.progress
    train_tokens = progress.step * cfg.batch_size * cfg.model.context_len
    return [
        ("parameters", f"{model.num_parameters():,}"),
        ("steps", f"{progress.step:,} ({progress.stop_reason})"),
        ("training tokens", f"{train_tokens:,} (training split: {len(run.train_ids):,} tokens)"),
        ("wall time", f"{final['elapsed_s'] / 60:.1f} min ({final['elapsed_s']:,.1f} s), evaluations included"),
        ("tokens per second", f"{train_tokens / max(progress.train_time_s, 1e-9):,.0f} (training steps only)"),
        (
            "final validation (all tokens)",
            f"loss {final['val_loss']:.4f}, perplexity {final['perplexity']:.2f}, "
            f"bits per byte {final['bits_per_byte']:.4f}",
        ),
        (
            "best validation loss",
            f"{progress.best_val_loss:.4f} at step {progress.best_step}"
            + (f" (on the {cfg.eval_batches} evaluation batches)" if cfg.eval_batches else ""),
        ),
        (
            "tokenizer",
            f"{cfg.pretokenizer} BPE, {tokenizer.vocab_size} tokens"
            + (
                " (whitespace is dropped, so bits per byte count only the tokens' own bytes and do not compare "
                "with bytelevel runs)"
                if cfg.pretokenizer == "whitespace"
                else ""
            ),
        ),
        ("device", f"{cfg.device}, {cfg.model.dtype}"),
    ] + ([("random-window split", final["split_note"])] if "split_note" in final else [])


def report_figures(attention_figures):
    """The report's figure sections: (heading, [(caption, path), ...])."""
    return [
        (
            "Loss and perplexity",
            [("loss curves", "figures/loss_curves.png"), ("validation perplexity", "figures/val_perplexity.png")],
        ),
        (
            "Per-layer gradients and updates",
            [
                ("gradient norm per layer", "figures/layer_grad_norms.png"),
                ("update-to-weight ratio per layer", "figures/layer_update_ratios.png"),
            ],
        ),
        ("Attention on a validation passage", attention_figures),
        ("Attention across training", [("attention evolution", "figures/attention_evolution.png")]),
        ("Tokens", [("token frequency", "figures/token_frequency.png")]),
    ]


def write_figures(run, final):
    """The run's figures under figures/; returns the (caption, path) of each attention figure."""
    from models import plots  # matplotlib takes longer to import than a short command runs: only drawing pays it

    cfg, run_dir, tokenizer, model = run.cfg, run.files, run.tokenizer, run.model
    metrics, progress = run.metrics, run.progress
    figures = run_dir / "figures"
    plots.loss_curves(metrics, tokenizer.vocab_size, figures / "loss_curves.png")
    plots.val_perplexity(metrics, figures / "val_perplexity.png")
    plots.layer_curves(
        metrics,
        "layer_grad_norm",
        figures / "layer_grad_norms.png",
        "||grad|| (before clipping)",
        "Gradient norm per layer",
    )
    plots.layer_curves(
        metrics,
        "layer_update_ratio",
        figures / "layer_update_ratios.png",
        "||lr * update|| / ||w||",
        "Update-to-weight ratio per layer",
    )
    counts = np.bincount(run.train_ids, minlength=tokenizer.vocab_size)
    plots.token_frequency(
        counts, tokenizer.token_strings(np.arange(tokenizer.vocab_size)), figures / "token_frequency.png"
    )

    passage = attention_passage(np.ravel(run.val_ids), tokenizer, min(PASSAGE_TOKENS, cfg.model.context_len))
    labels = tokenizer.token_strings(passage)
    attention = attention_of(model, passage)
    attention_figures = []
    for layer, weights in enumerate(attention):
        rel = f"figures/attention_layer{layer}.png"
        plots.attention_heads(weights, labels, run_dir / rel, f"Layer {layer} at step {final['step']}")
        attention_figures.append((f"attention, layer {layer}", rel))
    snapshot_model = TinyTransformerLM(model.config).to(cfg.device)
    evolution = []
    for step in progress.snapshots:
        load_checkpoint(run_dir / "checkpoints" / f"snapshot_step{step:06d}", snapshot_model)
        evolution.append((step, attention_of(snapshot_model, passage)))
    plots.attention_evolution(evolution, labels, figures / "attention_evolution.png")
    return attention_figures


def attention_passage(val_ids, tokenizer, n):
    """`n` validation tokens that start right after the first newline (the same passage in every figure)."""
    labels = tokenizer.token_strings(val_ids[:200])
    start = next((i + 1 for i, label in enumerate(labels[: len(val_ids) - n]) if label.endswith("↵")), 0)
    return val_ids[start : start + n]


def attention_of(model, ids):
    """Attention weights of every layer for one passage of token ids: (L, H, T, T) on the CPU."""
    with inference(model):
        _, _, attentions = model(backend.to_device(ids[None, :], device_of(model)), return_attention=True)
    return np.stack([backend.to_device(a.data[0], "cpu") for a in attentions])


def write_samples(model, tokenizer, path, max_new_tokens=120, seed=0, prompts=SAMPLE_PROMPTS):
    """Sample from every prompt of SAMPLE_PROMPTS at every (temperature, top_k) of SAMPLE_SETTINGS.

    Writes them all to `path` and returns them as a list of texts, one per sample.
    """
    rng = np.random.default_rng(seed)
    parts = []
    for prompt in prompts:
        for temperature, top_k in SAMPLE_SETTINGS:
            ids = model.generate(tokenizer.encode(prompt)[None, :], max_new_tokens, temperature, top_k, rng)
            parts.append(
                f"=== prompt {prompt!r}, temperature {temperature}, top_k {top_k} ===\n{tokenizer.decode(ids[0])}\n"
            )
    write_atomically(path, "\n".join(parts).encode("utf-8"))
    return parts


def topk_table(model, tokenizer, prompts=TOPK_PROMPTS, k=5):
    """A markdown table of the k most likely next tokens after each prompt, with their probabilities."""
    lines = ["| prompt | " + " | ".join(f"#{i + 1}" for i in range(k)) + " |", "|---|" + "---|" * k]
    for prompt in prompts:
        ids = tokenizer.encode(prompt)[-model.config.context_len :]
        with inference(model):
            logits, _ = model(backend.to_device(ids[None, :], device_of(model)))  # (1, T, V)
        last = backend.to_device(logits.data[0, -1], "cpu").astype(np.float64)  # (V,)
        probs = F.softmax(tensor(last)).numpy()  # (V,)
        best = np.argsort(probs)[::-1][:k]
        cells = [f"`{_md(label)}` {probs[i]:.3f}" for i, label in zip(best, tokenizer.token_strings(best))]
        lines.append(f"| {_md(prompt)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _md(text):
    """Text that is safe inside a markdown table cell."""
    return text.replace("|", "\\|").replace("\n", "↵").replace("`", "'")


def write_report(path, title, summary, config, figures, topk, samples):
    """report.md: the summary numbers, the config, every figure (relative paths), the top-k table, samples.

    summary: [(what, value)] rows; figures: [(section, [(caption, relative path)])];
    samples: texts from write_samples (the first two are shown).
    """
    lines = [f"# {title}", "", "| | |", "|---|---|"]
    lines += [f"| {what} | {value} |" for what, value in summary]
    lines += ["", "## Config", "", "```json", json.dumps(config, indent=2), "```", ""]
    for section, images in figures:
        lines += [f"## {section}", ""]
        for caption, rel in images:
            lines += [f"![{caption}]({rel})", ""]
    lines += [
        "## Most likely next tokens",
        "",
        topk,
        "## Samples",
        "",
        "The first two of `samples.txt`, which has every prompt and setting:",
        "",
        "```",
        *samples[:2],
        "```",
        "",
    ]
    if any(UNDECODABLE in sample for sample in samples):
        lines += [UNDECODABLE_NOTE, ""]
    write_atomically(path, "\n".join(lines).encode("utf-8"))


def sweep_table(rows):
    """A markdown table comparing runs; rows are dicts with the same keys, in column order."""
    keys = list(rows[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(_cell(row[k]) for k in keys) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _cell(value):
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)
