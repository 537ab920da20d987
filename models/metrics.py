"""metrics.jsonl: one JSON object per line, a train-loss row or an evaluation row (models/trainer.py says which)."""

import json
from pathlib import Path

from tensorlab.serialization import write_atomically


class MetricsError(ValueError):
    """metrics.jsonl is not one JSON object per line."""


def read_metrics(run_dir):
    """The rows of a run's metrics.jsonl ([] when there is none yet); MetricsError naming the file and line."""
    path = Path(run_dir) / "metrics.jsonl"
    if not path.exists():
        return []
    if not path.is_file():  # a directory, or a FIFO that a read would wait on forever
        raise MetricsError(f"{path} is not a file; move it away (a resume then continues without the old rows)")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise MetricsError(f"{path} is not text (UTF-8); delete it to continue without the old rows") from None
    rows = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except ValueError:
            raise MetricsError(f"{path} line {number} is not JSON; fix or delete that line") from None
        if not isinstance(rows[-1], dict) or not isinstance(rows[-1].get("step"), int):
            raise MetricsError(f"{path} line {number} is not a metrics row (a JSON object with a step)")
    return rows


def is_evaluation(row):
    """Whether a metrics row is an evaluation's (it has val_loss), not a train-loss row."""
    return "val_loss" in row


def write_metrics(run_dir, metrics):
    """Rewrite metrics.jsonl atomically with every row so far."""
    text = "".join(json.dumps(row) + "\n" for row in metrics)
    write_atomically(Path(run_dir) / "metrics.jsonl", text.encode("utf-8"))
