"""Training-step speed and memory of tensorlab against PyTorch eager, measured in one run.

For each model config, two worker processes build the same model (tensorlab, and the
PyTorch twin from models/torch_model.py with weights copied through state_dict). The
parent then alternates them step by step (forward, backward, gradient clipping, AdamW),
so both see the same machine conditions, with a pause before each step so the other
worker's spinning threads are idle again (without it, OpenBLAS threads still spinning
after a tensorlab step slow the PyTorch step down by 2x on 2 cores), and reports the median step time after
warm-up, tokens per second, the ratio tensorlab/PyTorch, and each worker's peak
resident memory. Each worker imports only its own framework and uses the same
number of threads. With --memory-steps N the tensorlab worker also runs N steps and
reports how its resident memory moved (flat means no graph is kept alive).

    python bench/speed.py                       # CPU, seed configs and the default config
    python bench/speed.py --device cuda         # CuPy against PyTorch CUDA
    python bench/speed.py --memory-steps 1000

The last line reads `worst step ratio tensorlab/pytorch: R`.
"""
import argparse
import json
import multiprocessing as mp
import os
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEED_CONFIGS = {
    "seed_d128": dict(d_model=128, n_heads=4, d_ff=256, n_layers=2),
    "seed_d256": dict(d_model=256, n_heads=8, d_ff=512, n_layers=2),
}
COMMON = dict(vocab_size=500, pos_encoding="learned", tie_weights=True, dropout=0.0)


def bench_configs(include_default):
    """name -> (model config dict, batch size, sequence length)."""
    configs = {name: ({**COMMON, **dims, "context_len": 64}, 64, 64) for name, dims in SEED_CONFIGS.items()}
    default_file = ROOT / "configs" / "default.json"
    if include_default and default_file.exists():
        from models.train_config import TrainConfig
        train = TrainConfig.from_json(default_file)
        model = {**train.model.to_dict(), "dropout": 0.0}
        configs["default"] = (model, train.batch_size, train.model.context_len)
    return configs


# ----- the workers ------------------------------------------------------------------------------
def worker(framework, model_config, weights_path, batch_size, seq_len, device, threads, conn):
    """Build one framework's model and optimizer, then run a training step whenever asked."""
    sys.path.insert(0, str(ROOT))
    import numpy as np
    if framework == "tensorlab":
        step, generate = _tensorlab_step(model_config, weights_path, device)
    else:
        step, generate = _torch_step(model_config, weights_path, device, threads)
    rng = np.random.default_rng(0)
    batches = [rng.integers(0, model_config["vocab_size"], (batch_size, seq_len + 1)) for _ in range(4)]
    conn.send("ready")
    while True:
        command, arg = conn.recv()
        if command == "step":
            ids = batches[arg % len(batches)]
            start = time.perf_counter()
            step(ids[:, :-1], ids[:, 1:])
            conn.send(time.perf_counter() - start)
        elif command == "rss_over":
            samples = []
            for i in range(arg):
                ids = batches[i % len(batches)]
                step(ids[:, :-1], ids[:, 1:])
                if i % max(arg // 20, 1) == 0 or i == arg - 1:
                    samples.append(_current_rss_mb())
            conn.send(samples)
        elif command == "generate":
            start = time.perf_counter()
            generate(batches[0][:1, :8], arg)
            conn.send(arg / (time.perf_counter() - start))
        elif command == "peak":
            conn.send(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        else:
            return


def _tensorlab_step(model_config, weights_path, device):
    import numpy as np
    import tensorlab
    from models.config import ModelConfig
    from models.transformer import TinyTransformerLM
    from tensorlab.backend import module_for
    from tensorlab.memory import keep_freed_memory
    from tensorlab.optim import AdamW, clip_grad_norm_, weight_decay_groups
    keep_freed_memory()  # as train.py does: reuse freed arrays instead of page-faulting fresh ones each step
    model = TinyTransformerLM(ModelConfig(**model_config))
    with np.load(weights_path) as weights:
        model.load_state_dict({k: weights[k] for k in weights.files})
    model.to(device)
    optimizer = AdamW(weight_decay_groups(model.named_parameters(), 0.1), lr=1e-3)
    sync = module_for("cuda").cuda.Device().synchronize if device == "cuda" else (lambda: None)

    def step(x, y):
        optimizer.zero_grad()
        _, loss = model(x, y)
        loss.backward()
        clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        sync()

    def generate(prompt, n):
        model.generate(prompt, n, temperature=1.0, top_k=50, rng=np.random.default_rng(0))
        sync()
    tensorlab.manual_seed(0)
    return step, generate


def _torch_step(model_config, weights_path, device, threads):
    import numpy as np
    import torch
    from models.config import ModelConfig
    from models.torch_model import TorchTinyLM
    torch.set_num_threads(threads)
    config = ModelConfig(**model_config)
    model = TorchTinyLM(config)
    with np.load(weights_path) as weights:
        model.load_state_dict({k: torch.from_numpy(weights[k]) for k in weights.files})
    model.to(device)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=1e-3)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def step(x, y):
        optimizer.zero_grad()
        _, loss = model(torch.from_numpy(x).to(device), torch.from_numpy(y).to(device))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        sync()

    @torch.no_grad()
    def generate(prompt, n):
        ids = torch.from_numpy(prompt).to(device)
        for _ in range(n):
            logits, _ = model(ids[:, -config.context_len:])
            logits = logits[:, -1, :]
            kth = torch.topk(logits, 50).values[:, -1:]
            probs = torch.softmax(logits.masked_fill(logits < kth, float("-inf")), dim=-1)
            ids = torch.cat([ids, torch.multinomial(probs, 1)], dim=1)
        sync()
    return step, generate


def _current_rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


# ----- the parent ---------------------------------------------------------------------------------
def start_worker(framework, *args):
    parent_end, child_end = mp.Pipe()
    process = mp.get_context("spawn").Process(target=worker, args=(framework, *args, child_end), daemon=True)
    process.start()
    if parent_end.recv() != "ready":
        raise RuntimeError(f"{framework} worker failed to start")
    return process, parent_end


def run_config(name, model_config, batch_size, seq_len, args):
    sys.path.insert(0, str(ROOT))
    import numpy as np
    import tensorlab
    from models.config import ModelConfig
    from models.transformer import TinyTransformerLM
    tensorlab.manual_seed(0)
    weights_path = Path(args.tmp) / f"{name}_weights.npz"
    np.savez(weights_path, **TinyTransformerLM(ModelConfig(**model_config)).state_dict())
    workers = {fw: start_worker(fw, model_config, str(weights_path), batch_size, seq_len, args.device, args.threads)
               for fw in ("tensorlab", "pytorch")}
    times = {fw: [] for fw in workers}
    for i in range(args.warmup + args.steps):
        for fw, (_, conn) in workers.items():
            # BLAS and OpenMP threads spin for a while after their work ends; let the other
            # worker's threads go idle first, or they steal the cores from this step.
            time.sleep(args.settle)
            conn.send(("step", i))
            elapsed = conn.recv()
            if i >= args.warmup:
                times[fw].append(elapsed)
    result = {"config": name, "batch": batch_size, "seq_len": seq_len}
    for fw, (_, conn) in workers.items():
        median = statistics.median(times[fw])
        result[fw] = {"step_ms": 1e3 * median, "tokens_per_s": batch_size * seq_len / median}
        conn.send(("generate", args.gen_tokens))
        result[fw]["generate_tokens_per_s"] = conn.recv()
    if args.memory_steps:
        _, conn = workers["tensorlab"]
        conn.send(("rss_over", args.memory_steps))
        result["tensorlab"]["rss_mb_over_steps"] = conn.recv()
    for fw, (process, conn) in workers.items():
        conn.send(("peak", None))
        result[fw]["peak_rss_mb"] = conn.recv()
        conn.send(("stop", None))
        process.join()
    result["step_ratio"] = result["tensorlab"]["step_ms"] / result["pytorch"]["step_ms"]
    result["memory_ratio"] = result["tensorlab"]["peak_rss_mb"] / result["pytorch"]["peak_rss_mb"]
    return result


def print_result(r):
    tl, pt = r["tensorlab"], r["pytorch"]
    print(f"\n{r['config']}  (batch {r['batch']}, seq {r['seq_len']})")
    print(f"  {'':12}{'step ms':>10}{'tokens/s':>11}{'peak RSS MB':>13}{'gen tok/s':>11}")
    for label, m in (("tensorlab", tl), ("pytorch", pt)):
        print(f"  {label:12}{m['step_ms']:>10.1f}{m['tokens_per_s']:>11.0f}{m['peak_rss_mb']:>13.0f}"
              f"{m['generate_tokens_per_s']:>11.1f}")
    print(f"  step ratio tensorlab/pytorch: {r['step_ratio']:.3f}   peak memory ratio: {r['memory_ratio']:.3f}")
    if "rss_mb_over_steps" in tl:
        rss = tl["rss_mb_over_steps"]
        print(f"  tensorlab RSS over {len(rss)} samples of the memory run: first {rss[0]:.0f} MB, "
              f"max {max(rss):.0f} MB, last {rss[-1]:.0f} MB")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="threads for both frameworks")
    parser.add_argument("--steps", type=int, default=10, help="timed steps per framework")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--settle", type=float, default=0.5,
                        help="seconds of idle time before each step, so the other worker's threads stop spinning")
    parser.add_argument("--gen-tokens", type=int, default=32, help="tokens generated for the generation speed")
    parser.add_argument("--memory-steps", type=int, default=0, help="also run N steps and watch tensorlab's RSS")
    parser.add_argument("--configs", nargs="*", help="a subset of: seed_d128 seed_d256 default")
    parser.add_argument("--json", help="also write the results to this JSON file")
    parser.add_argument("--tmp", default="/tmp")
    args = parser.parse_args(argv)
    # Both frameworks get the same thread count; the workers inherit these before importing anything.
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    configs = bench_configs(include_default=True)
    chosen = args.configs or list(configs)
    unknown = [c for c in chosen if c not in configs]
    if unknown:
        parser.error(f"unknown config(s) {unknown}; choose from {list(configs)}")
    print(f"device {args.device}, {args.threads} threads, {args.steps} timed steps after {args.warmup} warm-up, "
          f"median step (forward, backward, clip, AdamW)")
    results = [run_config(name, *configs[name], args) for name in chosen]
    for r in results:
        print_result(r)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    print(f"\nworst step ratio tensorlab/pytorch: {max(r['step_ratio'] for r in results):.3f}")


if __name__ == "__main__":
    main()
