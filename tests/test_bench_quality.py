"""bench/quality.py trains both frameworks from the same weights on the same recipe and prints both perplexities."""

import json
import math
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_quality_trains_both_frameworks_and_prints_finite_perplexities(corpus_file, tmp_path):
    scratch = tmp_path / "not" / "made" / "yet"  # --tmp is created when missing (it once ended in a traceback)
    command = [sys.executable, "bench/quality.py", "configs/tiny.json", "--minutes", "0.02", "--threads", "1"]
    command += ["--data", str(corpus_file), "--tmp", str(scratch)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    assert scratch.is_dir() and not any(scratch.iterdir())  # the shared data file is removed at the end
    last = done.stdout.strip().splitlines()[-1]
    found = re.fullmatch(r"validation perplexity after [\d.]+ minutes: tensorlab ([\d.]+), pytorch ([\d.]+)", last)
    assert found, last
    tensorlab_ppl, torch_ppl = map(float, found.groups())
    vocab = json.loads((ROOT / "configs/tiny.json").read_text())["model"]["vocab_size"]  # untrained: about this
    assert math.isfinite(tensorlab_ppl) and math.isfinite(torch_ppl)
    assert tensorlab_ppl < vocab and torch_ppl < vocab, (tensorlab_ppl, torch_ppl)


def test_a_random_window_split_is_refused_with_one_line(corpus_file, tmp_path):
    config = json.loads((ROOT / "configs/tiny.json").read_text())
    (tmp_path / "leaky.json").write_text(json.dumps({**config, "split": "random_windows"}))
    command = [sys.executable, "bench/quality.py", str(tmp_path / "leaky.json"), "--data", str(corpus_file)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .endswith("has split 'random_windows': quality.py scores the ordered split only (set it there)")
    )
