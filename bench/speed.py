"""Training-step speed and memory of tensorlab against PyTorch eager, measured the way training runs.

For each model config, two worker processes build the same model (tensorlab, and the
PyTorch twin from models/torch_model.py with weights copied through state_dict), each
importing only its own framework and using the same number of threads. After a few
warm-up steps each, the parent asks them in turn for blocks of consecutive steps
(forward, backward, gradient clipping, AdamW; no pause inside a block), alternating
A B A B, so both see the same drift of the machine. Between blocks it idles --settle
seconds so the other worker's BLAS threads stop spinning. A block's time is its median
step; the reported ratio tensorlab/PyTorch is the median over the pairs of blocks.
Also reported: tokens per second, each worker's peak resident memory and generation
speed (tensorlab with and without its key/value cache, PyTorch's loop without one).

Measured against the machine's own limit: each worker times a 2048 x 2048 float32 product in its own
framework (NumPy's BLAS for tensorlab, PyTorch's for PyTorch), its product peak in GFLOP/s. The step's
model arithmetic (6 x the weights that multiply x tokens, plus attention's 12 x layers x d_model x
seq_len per token) over its median time is its GFLOP/s, printed as a share of that peak. Where the rest
goes comes from --profile-steps more steps, op by op (tensorlab: bench/profile_step.py's timers around
every op; PyTorch: torch.profiler's self times of its aten ops): the matrix products, tensorlab's fused
attention, the other ops (element-wise passes, norms, softmax, the optimizer), and Python and the graph
(the profiled steps' time no op accounts for; the profiler's own cost lands in the ops and here). The
first lines name the CPU, its vector flags, the BLAS kernels and the thread count. A worker that raises,
dies or stays silent past --timeout ends the benchmark with its error. With --memory-steps N the
tensorlab worker also runs N steps and reports how its resident memory moved (flat means no graph is
kept alive).

    python bench/speed.py                       # CPU, seed configs and the default config
    python bench/speed.py --device cuda         # CuPy against PyTorch CUDA
    python bench/speed.py --memory-steps 1000

The last line reads `worst step ratio tensorlab/pytorch: R`.
"""

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `python bench/NAME.py` puts bench/ on the path; models/ lives in the checkout
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
    """Build one framework's model and optimizer, then run whatever the parent asks; report any error back."""
    try:
        _serve(framework, model_config, weights_path, batch_size, seq_len, device, threads, conn)
    except BaseException:  # the parent prints it and stops the benchmark
        import traceback

        conn.send(("error", traceback.format_exc()))


def _serve(framework, model_config, weights_path, batch_size, seq_len, device, threads, conn):
    import numpy as np

    if framework == "tensorlab":
        step, generate = _tensorlab_step(model_config, weights_path, device, threads)
    else:
        step, generate = _torch_step(model_config, weights_path, device, threads)
    rng = np.random.default_rng(0)
    batches = [rng.integers(0, model_config["vocab_size"], (batch_size, seq_len + 1)) for _ in range(4)]
    conn.send(("ok", "ready"))
    while True:
        command, arg = conn.recv()
        if command == "block":  # arg steps back to back, as training runs them; one time per step
            times = []
            for i in range(arg):
                ids = batches[i % len(batches)]
                start = time.perf_counter()
                step(ids[:, :-1], ids[:, 1:])
                times.append(time.perf_counter() - start)
            conn.send(("ok", times))
        elif command == "rss_over":
            samples = []
            for i in range(arg):
                ids = batches[i % len(batches)]
                step(ids[:, :-1], ids[:, 1:])
                if i % max(arg // 20, 1) == 0 or i == arg - 1:
                    samples.append(_current_rss_mb())
            conn.send(("ok", samples))
        elif command == "generate":  # arg = (new tokens, use the key/value cache)
            n, cache = arg
            start = time.perf_counter()
            generate(batches[0][:1, :8], n, cache)
            conn.send(("ok", n / (time.perf_counter() - start)))
        elif command == "peak":
            conn.send(("ok", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))
        elif command == "product_peak":  # GFLOP/s of the best of arg 2048^2 float32 products
            conn.send(("ok", product_peak(framework, device, arg)))
        elif command == "profile":  # {category: seconds per step} over arg steps, op by op
            profile = _profile_tensorlab if framework == "tensorlab" else _profile_torch
            conn.send(("ok", profile(step, batches, arg)))
        elif command == "fail":  # for the test that a dying worker stops the benchmark
            raise RuntimeError("worker asked to fail")
        else:
            return


def _tensorlab_step(model_config, weights_path, device, threads):
    import numpy as np

    import tensorlab
    from models.config import ModelConfig
    from models.transformer import TinyTransformerLM
    from tensorlab.backend import module_for
    from tensorlab.memory import keep_freed_memory
    from tensorlab.optim import AdamW, clip_grad_norm_, weight_decay_groups
    from tensorlab.threads import use_threads

    keep_freed_memory()  # as train.py does: reuse freed arrays instead of page-faulting fresh ones each step
    if threads:  # as train.py does: block loops and big products on every thread (0, --no-pool: NumPy as it is)
        use_threads(threads)
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

    def generate(prompt, n, cache):
        model.generate(prompt, n, temperature=1.0, top_k=50, rng=np.random.default_rng(0), kv_cache=cache)
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
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}], lr=1e-3
    )
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def step(x, y):
        optimizer.zero_grad()
        _, loss = model(torch.from_numpy(x).to(device), torch.from_numpy(y).to(device))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        sync()

    @torch.no_grad()
    def generate(prompt, n, cache):  # the twin has no cache: always the whole window
        ids = torch.from_numpy(prompt).to(device)
        for _ in range(n):
            logits, _ = model(ids[:, -config.context_len :])
            logits = logits[:, -1, :]
            kth = torch.topk(logits, 50).values[:, -1:]
            probs = torch.softmax(logits.masked_fill(logits < kth, float("-inf")), dim=-1)
            ids = torch.cat([ids, torch.multinomial(probs, 1)], dim=1)
        sync()

    return step, generate


def product_peak(framework, device, repeats, n=2048):
    """The GFLOP/s of the best of `repeats` n x n float32 products in the framework's own BLAS (after one more)."""
    import numpy as np

    if framework == "tensorlab":
        from tensorlab.backend import module_for

        xp = module_for(device)
        a, b = (xp.asarray(np.random.default_rng(i).standard_normal((n, n)), dtype=np.float32) for i in (0, 1))
        sync = xp.cuda.Device().synchronize if device == "cuda" else (lambda: None)
    else:
        import torch

        a, b = (torch.randn(n, n, dtype=torch.float32, device=device) for _ in range(2))
        sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    best = float("inf")
    with contextlib.ExitStack() as stack:
        if framework == "tensorlab" and device == "cpu":  # tensorlab.threads holds OpenBLAS to one thread for
            import threadpoolctl  # its own row parts: the machine's limit is OpenBLAS on all the threads given

            stack.enter_context(threadpoolctl.threadpool_limits(int(os.environ["OPENBLAS_NUM_THREADS"]), "blas"))
        for _ in range(repeats + 1):
            start = time.perf_counter()
            a @ b
            sync()
            best = min(best, time.perf_counter() - start)
    return 2 * n**3 / best / 1e9


PRODUCTS = {"Linear", "MatMul", "aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"}


def _profile_tensorlab(step, batches, steps):
    """{'products', 'attention', 'other ops': seconds per step}, timed around every op (bench/profile_step.py)."""
    import collections

    from bench.profile_step import time_each, timed_methods

    spent = collections.defaultdict(float)
    undo = time_each(timed_methods(), spent)
    try:
        wall = _run_steps(step, batches, steps)
    finally:
        undo()
    split = collections.Counter()
    for label, seconds in spent.items():
        op = label.split(".")[0]
        split["products" if op in PRODUCTS else "attention" if op == "CausalAttention" else "other ops"] += seconds
    return _per_step(split, wall, steps)


def _profile_torch(step, batches, steps):
    """{'products', 'other ops': seconds per step}: torch.profiler's self times of the aten ops."""
    import collections

    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        wall = _run_steps(step, batches, steps)
    split = collections.Counter()
    for event in prof.key_averages():
        if event.key.startswith("aten::"):
            split["products" if event.key in PRODUCTS else "other ops"] += event.self_cpu_time_total / 1e6
    return _per_step(split, wall, steps)


def _run_steps(step, batches, steps):
    """Run `steps` steps; return their wall-clock seconds."""
    start = time.perf_counter()
    for i in range(steps):
        step(batches[i % len(batches)][:, :-1], batches[i % len(batches)][:, 1:])
    return time.perf_counter() - start


def _per_step(split, wall, steps):
    """{category: ms per step}, with 'Python and graph' the profiled steps' time that no op accounts for."""
    rest = wall - sum(split.values())
    return {**{k: 1e3 * v / steps for k, v in split.items()}, "Python and graph": 1e3 * rest / steps}


def model_flops(model_config, batch_size, seq_len):
    """(FLOPs of one training step's model arithmetic, weights counted): 6 x weights x tokens + attention's
    12 x layers x d_model x seq_len x tokens (q k^T and P v, forward and twice backward). The weights are
    those that multiply: every matrix but the embedding tables, and the token table once more as the head
    when tied."""
    import numpy as np

    from models.config import ModelConfig
    from models.transformer import TinyTransformerLM

    c = ModelConfig(**model_config)
    state = TinyTransformerLM(c).state_dict()
    weights = sum(np.size(v) for k, v in state.items() if np.ndim(v) == 2 and not k.endswith("emb.weight"))
    weights += np.size(state["tok_emb.weight"]) if c.tie_weights else 0
    tokens = batch_size * seq_len
    return 6 * weights * tokens + 12 * c.n_layers * c.d_model * seq_len * tokens, weights


def machine(threads):
    """'CPU model | vector flags | NumPy's BLAS kernel | PyTorch's BLAS | N threads' (bench/engines.py's machine)."""
    from bench.engines import machine as cpu_and_blas

    return f"{cpu_and_blas()} | {threads} threads"


def plan_line():
    """The plan tensorlab's kernels cut their work by on this machine (tensorlab/kernels/plan.py), and its caches."""
    from tensorlab.kernels import plan

    values = ", ".join(f"{name} {value}" for name, value in plan.in_use().items())
    return f"{values} (L2 {plan.L2_PER_CPU >> 10} KiB and L3 {plan.L3_PER_CPU >> 10} KiB per CPU)"


def _current_rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


# ----- the parent ---------------------------------------------------------------------------------
class WorkerDied(RuntimeError):
    pass


class Worker:
    """One framework's process and the pipe to it; every answer is awaited with a timeout."""

    def __init__(self, framework, args, *worker_args, target=worker):
        """Start target(framework, *worker_args, pipe) in its own process (bench/engines.py brings its own)."""
        self.framework, self.timeout = framework, args.timeout
        self.conn, child_end = mp.Pipe()
        self.process = mp.get_context("spawn").Process(
            target=target, args=(framework, *worker_args, child_end), daemon=True
        )
        self.process.start()
        child_end.close()  # so a dead worker shows as EOF here
        self.ask(None)

    def ask(self, command, arg=None):
        """Send a command (None: only wait) and return the worker's answer, or raise WorkerDied."""
        try:
            if command is not None:
                self.conn.send((command, arg))
            if not self.conn.poll(self.timeout):
                self.stop()
                raise WorkerDied(f"{self.framework} worker: no answer to {command!r} within {self.timeout:.0f} s")
            status, value = self.conn.recv()
        except (EOFError, OSError):  # the pipe's other end is gone (OSError: broken pipe, connection reset)
            self.process.join(5)
            raise WorkerDied(
                f"{self.framework} worker died (exit code {self.process.exitcode}) during {command!r}"
            ) from None
        if status == "error":
            self.stop()
            raise WorkerDied(f"{self.framework} worker failed during {command!r}:\n{value}")
        return value

    def stop(self):
        if self.process.is_alive():
            try:
                self.conn.send(("stop", None))
            except (BrokenPipeError, OSError):
                pass
            self.process.join(5)
            if self.process.is_alive():
                self.process.kill()
                self.process.join()


def run_config(name, model_config, batch_size, seq_len, args):
    import numpy as np

    import tensorlab
    from models.config import ModelConfig
    from models.transformer import TinyTransformerLM

    tensorlab.manual_seed(0)
    weights_path = Path(args.tmp) / f"{name}_weights.npz"
    np.savez(weights_path, **TinyTransformerLM(ModelConfig(**model_config)).state_dict())
    workers = {}
    try:
        for fw in ("tensorlab", "pytorch"):
            threads = 0 if fw == "tensorlab" and args.no_pool else args.threads  # OpenBLAS keeps args.threads
            workers[fw] = Worker(fw, args, model_config, str(weights_path), batch_size, seq_len, args.device, threads)
        return _measure(name, model_config, workers, batch_size, seq_len, args)
    finally:
        for w in workers.values():
            w.stop()


def _measure(name, model_config, workers, batch_size, seq_len, args):
    for w in workers.values():  # warm-up: caches, allocator, thread pools
        time.sleep(args.settle)
        w.ask("block", args.warmup)
    blocks = {fw: [] for fw in workers}  # per block: median step time of its steps
    for _ in range(args.blocks):  # A B A B ...: both see the same drift of the machine
        for fw, w in workers.items():
            # Between blocks only (never inside one): let the other worker's BLAS threads stop spinning.
            time.sleep(args.settle)
            blocks[fw].append(statistics.median(w.ask("block", args.block_steps)))
    result = {
        "config": name,
        "batch": batch_size,
        "seq_len": seq_len,
        "block_ratios": [a / b for a, b in zip(blocks["tensorlab"], blocks["pytorch"])],
    }
    for fw, w in workers.items():
        median = statistics.median(blocks[fw])
        result[fw] = {
            "step_ms": 1e3 * median,
            "tokens_per_s": batch_size * seq_len / median,
            "block_ms": [1e3 * b for b in blocks[fw]],
        }
        if args.gen_tokens:
            result[fw]["generate_tokens_per_s"] = w.ask("generate", (args.gen_tokens, False))
    if args.gen_tokens:
        result["tensorlab"]["generate_cached_tokens_per_s"] = workers["tensorlab"].ask(
            "generate", (args.gen_tokens, True)
        )
    if args.memory_steps:
        result["tensorlab"]["rss_mb_over_steps"] = workers["tensorlab"].ask("rss_over", args.memory_steps)
    flops, weights = model_flops(model_config, batch_size, seq_len)
    result["model_gflop"], result["weights"] = flops / 1e9, weights
    for fw, w in workers.items():
        result[fw]["peak_rss_mb"] = w.ask("peak")
        time.sleep(args.settle)  # the other worker's threads stop spinning first: they are not the machine's limit
        result[fw]["product_peak_gflops"] = w.ask("product_peak", args.peak_repeats)
        result[fw]["gflops"] = flops / 1e9 / (result[fw]["step_ms"] / 1e3)
        result[fw]["peak_share"] = result[fw]["gflops"] / result[fw]["product_peak_gflops"]
        if args.profile_steps:
            result[fw]["where_ms"] = w.ask("profile", args.profile_steps)
    result["step_ratio"] = statistics.median(result["block_ratios"])
    result["memory_ratio"] = result["tensorlab"]["peak_rss_mb"] / result["pytorch"]["peak_rss_mb"]
    return result


def print_result(r):
    tl, pt = r["tensorlab"], r["pytorch"]
    print(f"\n{r['config']}  (batch {r['batch']}, seq {r['seq_len']})")
    print(f"  {'':12}{'step ms':>10}{'tokens/s':>11}{'peak RSS MB':>13}  step ms of each block")
    for label, m in (("tensorlab", tl), ("pytorch", pt)):
        blocks = " ".join(f"{b:.1f}" for b in m["block_ms"])
        print(f"  {label:12}{m['step_ms']:>10.1f}{m['tokens_per_s']:>11.0f}{m['peak_rss_mb']:>13.0f}  {blocks}")
    ratios = " ".join(f"{x:.3f}" for x in r["block_ratios"])
    print(
        f"  step ratio tensorlab/pytorch: {r['step_ratio']:.3f} (median of blocks {ratios})   "
        f"peak memory ratio: {r['memory_ratio']:.3f}"
    )
    if "generate_tokens_per_s" in tl:
        print(
            f"  generation tokens/s: tensorlab cached {tl['generate_cached_tokens_per_s']:.1f}, "
            f"tensorlab uncached {tl['generate_tokens_per_s']:.1f}, "
            f"pytorch uncached {pt['generate_tokens_per_s']:.1f}"
        )
    print(
        f"  model arithmetic {r['model_gflop']:.2f} GFLOP per step (6 x {r['weights']:,} weights x "
        f"{r['batch'] * r['seq_len']} tokens, plus attention)"
    )
    for label, m, blas in (("tensorlab", tl, "NumPy's"), ("pytorch", pt, "PyTorch's")):
        print(
            f"  {label:12}{m['gflops']:.1f} GFLOP/s = {100 * m['peak_share']:.0f}% of {blas} float32 product peak "
            f"({m['product_peak_gflops']:.1f} GFLOP/s, 2048^2)"
        )
        if "where_ms" in m:
            where = ", ".join(f"{k} {v:.1f}" for k, v in sorted(m["where_ms"].items(), key=lambda kv: -kv[1]))
            print(f"  {'':12}where a profiled step's {sum(m['where_ms'].values()):.1f} ms go (ms): {where}")
    if "rss_mb_over_steps" in tl:
        rss = tl["rss_mb_over_steps"]
        print(
            f"  tensorlab RSS over {len(rss)} samples of the memory run: first {rss[0]:.0f} MB, "
            f"max {max(rss):.0f} MB, last {rss[-1]:.0f} MB"
        )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="threads for both frameworks")
    parser.add_argument(
        "--no-pool",
        action="store_true",
        help="tensorlab without tensorlab.threads: element-wise passes on one core, OpenBLAS on --threads",
    )
    parser.add_argument("--blocks", type=int, default=3, help="timed blocks per framework, alternating (>= 3)")
    parser.add_argument("--block-steps", type=int, default=10, help="consecutive steps per block (>= 10)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps per worker before the blocks")
    parser.add_argument(
        "--settle",
        type=float,
        default=0.5,
        help="seconds of idle time between blocks, so the other worker's threads stop spinning",
    )
    parser.add_argument("--timeout", type=float, default=600, help="seconds to wait for any worker answer")
    parser.add_argument(
        "--gen-tokens", type=int, default=32, help="tokens generated for the generation speed (0: skip)"
    )
    parser.add_argument("--memory-steps", type=int, default=0, help="also run N steps and watch tensorlab's RSS")
    parser.add_argument("--peak-repeats", type=int, default=5, help="2048^2 products timed for each product peak")
    parser.add_argument(
        "--profile-steps", type=int, default=3, help="steps profiled op by op for where the time goes (0: skip)"
    )
    parser.add_argument("--configs", nargs="*", help="a subset of: seed_d128 seed_d256 default")
    parser.add_argument("--json", help="also write the results to this JSON file")
    parser.add_argument("--tmp", default="/tmp", help="folder for the workers' weight files (created if missing)")
    args = parser.parse_args(argv)
    if args.blocks < 3 or args.block_steps < 10:
        parser.error(f"--blocks must be >= 3 and --block-steps >= 10, got {args.blocks} and {args.block_steps}")
    # Both frameworks get the same thread count; the workers inherit these before importing anything.
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    Path(args.tmp).mkdir(parents=True, exist_ok=True)
    configs = bench_configs(include_default=True)
    chosen = args.configs or list(configs)
    unknown = [c for c in chosen if c not in configs]
    if unknown:
        parser.error(f"unknown config(s) {unknown}; choose from {list(configs)}")
    print(f"machine: {machine(args.threads)}")
    print(f"kernel plan: {plan_line()}")
    print(
        f"device {args.device}, {args.threads} threads, {args.blocks} blocks of {args.block_steps} consecutive "
        f"steps per framework after {args.warmup} warm-up, alternating; ratio = median over block pairs "
        f"(step: forward, backward, clip, AdamW)"
    )
    try:
        results = [run_config(name, *configs[name], args) for name in chosen]
    except WorkerDied as error:
        sys.exit(f"speed.py: benchmark stopped: {error}")
    for r in results:
        print_result(r)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    print(f"\nworst step ratio tensorlab/pytorch: {max(r['step_ratio'] for r in results):.3f}")


if __name__ == "__main__":
    main()
