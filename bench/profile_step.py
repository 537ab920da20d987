"""Where a tensorlab training step spends its time, op by op.

Runs a few training steps (forward, backward, clipping, AdamW) of the model under
cProfile and prints, for every forward and backward in tensorlab/ops and the optimizer,
milliseconds per step and the share of the step. --composed-attention runs attention
as separate primitive ops instead of the fused op, to see what fusing buys.

    python bench/profile_step.py --config seed_d256
    python bench/profile_step.py --config seed_d256 --composed-attention
"""

import argparse
import cProfile
import importlib
import inspect
import pkgutil
import pstats
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


def build_step(name, composed_attention, dropout):
    model_config, batch_size, seq_len = bench_configs(include_default=True)[name]
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


def method_names():
    """(file, first line) -> "Class.method" for every forward/backward in tensorlab.ops and every optimizer update."""
    import tensorlab.ops
    import tensorlab.optim

    names = {}
    modules = [importlib.import_module(f"tensorlab.ops.{m.name}") for m in pkgutil.iter_modules(tensorlab.ops.__path__)]
    for module in modules + [tensorlab.optim]:
        for cls_name, cls in inspect.getmembers(module, inspect.isclass):
            for method in ("forward", "backward", "update"):
                fn = cls.__dict__.get(method)
                if fn is not None:
                    code = fn.__code__
                    names[(code.co_filename, code.co_firstlineno)] = f"{cls_name}.{method}"
    names[
        (inspect.getsourcefile(tensorlab.optim.clip_grad_norm), tensorlab.optim.clip_grad_norm.__code__.co_firstlineno)
    ] = "clip_grad_norm"
    return names


def main(argv=None):
    keep_freed_memory()  # as train.py does, so the profile shows a training step's real costs
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="seed_d256", help="seed_d128, seed_d256 or default")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--composed-attention", action="store_true")
    parser.add_argument("--rows", type=int, default=20)
    parser.add_argument(
        "--threads", type=int, default=1, help="tensorlab.threads.use_threads(N) first (1: NumPy as is)"
    )
    args = parser.parse_args(argv)
    tensorlab.threads.use_threads(args.threads)
    step = build_step(args.config, args.composed_attention, args.dropout)
    step()  # warm-up: caches, allocator
    start = time.perf_counter()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(args.steps):
        step()
    profiler.disable()
    step_ms = 1e3 * (time.perf_counter() - start) / args.steps
    stats = pstats.Stats(profiler).stats
    names = method_names()
    rows = []
    for (filename, line, _), (_, calls, _, cumulative, _) in stats.items():
        if (filename, line) in names:  # cumulative: the op's own NumPy calls included
            rows.append((1e3 * cumulative / args.steps, calls // args.steps, names[filename, line]))
    rows.sort(reverse=True)
    attention = "composed primitives" if args.composed_attention else "fused op"
    print(
        f"{args.config}, attention as {attention}, dropout {args.dropout}: {step_ms:.0f} ms per step (under cProfile)"
    )
    print(f"{'ms/step':>8} {'share':>6} {'calls':>6}  where")
    for ms, calls, owner in rows[: args.rows]:
        print(f"{ms:8.1f} {100 * ms / step_ms:5.1f}% {calls:6d}  {owner}")
    counted = sum(r[0] for r in rows)
    print(
        f"{counted:8.1f} {100 * counted / step_ms:5.1f}%         all of the above; the rest is the graph walk, "
        f"the model's Python code and the profiler itself"
    )


if __name__ == "__main__":
    main()
