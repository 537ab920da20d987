"""What the version counter (tensorlab/version_counter.py) costs: a step with it against a step without.

Two workloads where the per-op Python cost shows most and least: a chain of small residual blocks
(`h = h + tanh(h @ W + b)`, batch 32, width 32: the op bookkeeping dominates) and one training step of
the default transformer (the arrays dominate). "Off" replaces the check before each backward by a no-op
(Function.__call__'s one read of the write count stays); the two settings alternate
and the medians are paired, so a busy machine slows both alike.

    python bench/version_counter.py
    python bench/version_counter.py --repeats 41 --blocks 200
"""

import argparse
import contextlib
import importlib
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `python bench/NAME.py` puts bench/ on the path; models/ lives in the checkout

import tensorlab  # noqa: E402
from bench.speed import bench_configs  # noqa: E402
from models.config import ModelConfig  # noqa: E402
from models.transformer import TinyTransformerLM  # noqa: E402

walk = importlib.import_module("tensorlab.tensor")  # the module: `tensorlab.tensor` is the function


@contextlib.contextmanager
def counter_off():
    check = walk._check_saved_unchanged
    walk._check_saved_unchanged = lambda fn: None
    try:
        yield
    finally:
        walk._check_saved_unchanged = check


def chain_step(blocks, width=32, batch=32):
    rng = np.random.default_rng(0)
    weights = [
        (
            tensorlab.tensor(rng.standard_normal((width, width)) * 0.1, requires_grad=True, dtype="float32"),
            tensorlab.tensor(np.zeros(width), requires_grad=True, dtype="float32"),
        )
        for _ in range(blocks)
    ]
    x = tensorlab.tensor(rng.standard_normal((batch, width)), dtype="float32")

    def step():
        h = x
        for w, b in weights:
            h = h + (h @ w + b).tanh()
        (h * h).mean().backward()

    return step


def transformer_step():
    model_config, batch_size, seq_len = bench_configs(include_default=True)["default"]
    tensorlab.manual_seed(0)
    model = TinyTransformerLM(ModelConfig(**model_config))
    ids = np.random.default_rng(0).integers(0, model_config["vocab_size"], (batch_size, seq_len + 1))

    def step():
        _, loss = model(ids[:, :-1], ids[:, 1:])
        loss.backward()

    return step


def paired_ratio(step, repeats):
    """Median of (time with the counter) / (time without), the two alternating."""
    step()  # warm up both paths once
    with counter_off():
        step()
    ratios, on_times = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        on = time.perf_counter() - start
        with counter_off():
            start = time.perf_counter()
            step()
            off = time.perf_counter() - start
        ratios.append(on / off)
        on_times.append(on)
    return statistics.median(ratios), statistics.median(on_times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--blocks", type=int, default=100)
    args = parser.parse_args(argv)
    for name, step in [
        (f"chain of {args.blocks} blocks", chain_step(args.blocks)),
        ("default transformer", transformer_step()),
    ]:
        ratio, seconds = paired_ratio(step, args.repeats)
        print(f"{name:24s} step {seconds * 1e3:8.2f} ms with the counter; with/without {ratio:.3f}")


if __name__ == "__main__":
    main()
