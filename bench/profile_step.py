"""Where a tensorlab training step spends its time, op by op.

Runs training steps (forward, backward, clipping, AdamW) of the model as training runs them (the thread
pool and the kept memory on, as train.py sets them) and prints, for every forward and backward in
tensorlab/ops and the optimizer, the wall-clock milliseconds per step and the share of the step: each is
timed around its call, so the time its kernel's blocks spend on the pool's other threads is inside it (a
profiler such as cProfile sees the calling thread only). --composed-attention runs attention as separate
primitive ops instead of the fused op, to see what fusing buys.

    python bench/profile_step.py --config seed_d256
    python bench/profile_step.py --config seed_d256 --composed-attention
"""

import argparse
import collections
import importlib
import inspect
import pkgutil
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `python bench/NAME.py` puts bench/ on the path; models/ lives in the checkout

import tensorlab  # noqa: E402
import tensorlab.threads  # noqa: E402
from bench.speed import bench_configs  # noqa: E402
from models.config import ModelConfig  # noqa: E402
from models.transformer import TinyTransformerLM  # noqa: E402
from tensorlab.memory import keep_freed_memory  # noqa: E402
from tensorlab.optim import AdamW, clip_grad_norm_, weight_decay_groups  # noqa: E402


def build_step(name, composed_attention=False, dropout=0.0):
    """One training step of bench config `name` (bench/speed.py's), as a function of no arguments."""
    return model_step(*bench_configs(include_default=True)[name], composed_attention, dropout)


def model_step(model_config, batch_size, seq_len, composed_attention=False, dropout=0.0):
    """One training step (forward, backward, clipping, AdamW) of the model on fixed random ids."""
    tensorlab.manual_seed(0)
    model = TinyTransformerLM(ModelConfig(**{**model_config, "dropout": dropout}))
    for block in model.blocks:
        block.attn.fused = not composed_attention
    optimizer = AdamW(weight_decay_groups(model.named_parameters(), 0.1), lr=1e-3)
    ids = np.random.default_rng(0).integers(0, model_config["vocab_size"], (batch_size, seq_len + 1))

    def step():
        optimizer.zero_grad()
        _, loss = model(ids[:, :-1], ids[:, 1:])
        loss.backward()
        clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()

    return step


def timed_methods():
    """(class, method name) for every forward/backward in tensorlab.ops and every optimizer's update."""
    import tensorlab.ops
    import tensorlab.optim

    modules = [importlib.import_module(f"tensorlab.ops.{m.name}") for m in pkgutil.iter_modules(tensorlab.ops.__path__)]
    methods = set()  # a set: a class imported into several modules is timed once
    for module in modules + [tensorlab.optim]:
        for _, cls in inspect.getmembers(module, inspect.isclass):
            for name in ("forward", "backward", "update"):
                if name in cls.__dict__:
                    methods.add((cls, name))
    return methods


def timed(fn, label, spent):
    """fn, adding the wall-clock seconds of every call to spent[label]."""

    def call(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[label] += time.perf_counter() - start

    return call


def time_each(methods, spent):
    """Wrap each method so that spent["Class.method"] gathers its wall-clock seconds; returns an undo function."""
    originals = []
    for cls, name in methods:
        original = cls.__dict__[name]
        setattr(cls, name, timed(original, f"{cls.__name__}.{name}", spent))
        originals.append((cls, name, original))
    return lambda: [setattr(cls, name, original) for cls, name, original in originals]


def main(argv=None):
    keep_freed_memory()  # as train.py does, so the profile shows a training step's real costs
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="seed_d256", help="seed_d128, seed_d256 or default")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--composed-attention", action="store_true")
    parser.add_argument("--rows", type=int, default=20)
    parser.add_argument(
        "--threads", type=int, default=None, help="tensorlab.threads.use_threads(N) first (default: as train.py)"
    )
    args = parser.parse_args(argv)
    threads = tensorlab.threads.use_threads(args.threads)
    step = build_step(args.config, args.composed_attention, args.dropout)
    for _ in range(3):
        step()  # warm-up: caches, allocator, the pool's threads
    spent = collections.defaultdict(float)
    undo = time_each(timed_methods(), spent)
    global clip_grad_norm_  # the name step() calls
    clip = clip_grad_norm_
    clip_grad_norm_ = timed(clip, "clip_grad_norm_", spent)
    try:
        start = time.perf_counter()
        for _ in range(args.steps):
            step()
        step_ms = 1e3 * (time.perf_counter() - start) / args.steps
    finally:
        undo()
        clip_grad_norm_ = clip
    rows = sorted(((1e3 * seconds / args.steps, label) for label, seconds in spent.items()), reverse=True)
    attention = "composed primitives" if args.composed_attention else "fused op"
    print(
        f"{args.config}, attention as {attention}, dropout {args.dropout}, threads {threads}: {step_ms:.1f} ms per step"
    )
    print(f"{'ms/step':>8} {'share':>6}  where")
    for ms, label in rows[: args.rows]:
        print(f"{ms:8.2f} {100 * ms / step_ms:5.1f}%  {label}")
    counted = sum(ms for ms, _ in rows)
    print(
        f"{counted:8.2f} {100 * counted / step_ms:5.1f}%  all of the ops and the optimizer; the rest is the graph walk "
        f"and the model's Python code"
    )


if __name__ == "__main__":
    main()
