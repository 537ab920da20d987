"""Per-op cost and a plain MLP: tensorlab's training step against PyTorch, DeZero and MyGrad.

Two workloads, each a full training step (forward, backward, SGD update), float32:

- chain: 100 small residual blocks `h = h + tanh(h @ W + b)`, width 64, batch 64, loss mean(h * h). Each
  op computes on 64 x 64 arrays (microseconds), so the step measures the engine's own Python cost per op.
- mlp: 784-1024-1024-10, batch 256, ReLU, cross-entropy. The matrix products dominate.

Each engine runs in its own process with the same thread count (torch.set_num_threads and OpenBLAS's
threads; tensorlab as train.py runs it, with its thread pool and freed-memory reuse) and the same initial
weights. After warm-up the parent asks the engines in turn for blocks of consecutive steps, alternating
A B C D A B C D, idling --settle seconds between blocks; a block's time is its median step, and a ratio is the
median over the blocks of (tensorlab's block / the other engine's block in the same round). DeZero and MyGrad
are optional (`pip install --no-deps dezero==0.0.13 mygrad==2.5.0`, or the `bench` extra; both need only NumPy);
without them the rest runs. Every ratio line names the CPU, its AVX flags, the OpenBLAS kernel NumPy uses (the
three NumPy engines share it) and PyTorch's BLAS, which can use wider vectors than OpenBLAS was told to.

    python bench/engines.py
    python bench/engines.py --workloads chain --blocks 11
"""

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `python bench/NAME.py` puts bench/ on the path; tensorlab lives in the checkout

from bench.speed import Worker, WorkerDied  # noqa: E402

WORKLOADS = {
    "chain": "100 residual blocks h = h + tanh(h @ W + b), width 64, batch 64, SGD",
    "mlp": "MLP 784-1024-1024-10, batch 256, ReLU, cross-entropy, SGD",
}
GOALS = {("chain", "pytorch"): 1.30, ("chain", "dezero"): 0.85, ("mlp", "pytorch"): 1.00}  # issue 24, item 3
CHAIN_BLOCKS, WIDTH, CHAIN_BATCH = 100, 64, 64
MLP_SIZES, MLP_BATCH = (784, 1024, 1024, 10), 256
LR = 0.01
OPTIONAL = {"dezero": "dezero==0.0.13", "mygrad": "mygrad==2.5.0"}


# ----- the same weights and data for every engine ---------------------------------------------------
def initial_arrays(workload):
    """(weights as [(W, b), ...], x, targets or None): float32 NumPy arrays from a fixed seed."""
    import numpy as np

    rng = np.random.default_rng(0)
    if workload == "chain":
        sizes, batch = [WIDTH] * (CHAIN_BLOCKS + 1), CHAIN_BATCH
        scale = [0.5 / np.sqrt(WIDTH)] * CHAIN_BLOCKS
    else:
        sizes, batch = MLP_SIZES, MLP_BATCH
        scale = [np.sqrt(2 / n) for n in sizes[:-1]]  # He initialisation
    weights = [
        ((rng.standard_normal((n_in, n_out)) * s).astype(np.float32), np.zeros(n_out, np.float32))
        for n_in, n_out, s in zip(sizes[:-1], sizes[1:], scale)
    ]
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    targets = rng.integers(0, sizes[-1], batch) if workload == "mlp" else None
    return weights, x, targets


# ----- one step per engine -------------------------------------------------------------------------
def _tensorlab_step(workload, threads):
    import tensorlab as tl
    import tensorlab.functional as F
    import tensorlab.nn
    from tensorlab.memory import keep_freed_memory
    from tensorlab.optim import SGD
    from tensorlab.threads import use_threads

    keep_freed_memory()  # as train.py runs
    use_threads(threads)
    weights, x_array, targets = initial_arrays(workload)
    params = [(tl.tensor(w, requires_grad=True), tl.tensor(b, requires_grad=True)) for w, b in weights]
    layers = [tl.nn.Linear(*w.shape) for w, _ in weights]  # the MLP as a user writes it: nn.Linear modules
    for layer, (w, b) in zip(layers, weights):
        layer.load_state_dict({"weight": w.T, "bias": b})
    chain = workload == "chain"
    optimizer = SGD(
        [p for pair in params for p in pair] if chain else [p for m in layers for p in m.parameters()], lr=LR
    )
    x, y = tl.tensor(x_array), None if targets is None else tl.tensor(targets)

    def step():
        optimizer.zero_grad()
        h = x
        if chain:
            for w, b in params:
                h = h + (h @ w + b).tanh()
            loss = (h * h).mean()
        else:
            for i, layer in enumerate(layers):
                h = layer(h)
                h = h.relu() if i < len(layers) - 1 else h
            loss = F.cross_entropy(h, y)
        loss.backward()
        optimizer.step()
        return loss

    return step


def _pytorch_step(workload, threads):
    import torch

    torch.set_num_threads(threads)
    weights, x_array, targets = initial_arrays(workload)
    params = [(torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True)) for w, b in weights]
    layers = [torch.nn.Linear(*w.shape) for w, _ in weights]
    for layer, (w, b) in zip(layers, weights):
        layer.load_state_dict({"weight": torch.from_numpy(w.T.copy()), "bias": torch.from_numpy(b)})
    chain = workload == "chain"
    optimizer = torch.optim.SGD(
        [p for pair in params for p in pair] if chain else [p for m in layers for p in m.parameters()], lr=LR
    )
    x, y = torch.from_numpy(x_array), None if targets is None else torch.from_numpy(targets)

    def step():
        optimizer.zero_grad()
        h = x
        if chain:
            for w, b in params:
                h = h + torch.tanh(h @ w + b)
            loss = (h * h).mean()
        else:
            for i, layer in enumerate(layers):
                h = layer(h)
                h = torch.relu(h) if i < len(layers) - 1 else h
            loss = torch.nn.functional.cross_entropy(h, y)
        loss.backward()
        optimizer.step()
        return loss

    return step


def _dezero_step(workload, threads):
    import numpy as np

    np.int = int  # DeZero 0.0.13 names np.int at import (a default argument), an alias NumPy 1.24 removed
    try:
        import dezero
        import dezero.functions as F
    finally:
        del np.int  # only its datasets use it again, which the benchmark does not

    weights, x_array, targets = initial_arrays(workload)
    layer = dezero.Layer()  # holds the parameters for DeZero's optimizer
    params = []
    for i, (w, b) in enumerate(weights):
        setattr(layer, f"w{i}", dezero.Parameter(w))
        setattr(layer, f"b{i}", dezero.Parameter(b))
        params.append((getattr(layer, f"w{i}"), getattr(layer, f"b{i}")))
    optimizer = dezero.optimizers.SGD(LR).setup(layer)
    x = dezero.Variable(x_array)

    def step():
        layer.cleargrads()
        h = x
        if workload == "chain":
            for w, b in params:
                h = h + F.tanh(F.matmul(h, w) + b)
            loss = F.sum(h * h) / h.size
        else:
            for i, (w, b) in enumerate(params):
                h = F.linear(h, w, b)
                h = F.relu(h) if i < len(params) - 1 else h
            loss = F.softmax_cross_entropy(h, targets)
        loss.backward()
        optimizer.update()
        return loss

    return step


def _mygrad_step(workload, threads):
    import mygrad as mg
    from mygrad.nnet import relu, softmax_crossentropy

    weights, x_array, targets = initial_arrays(workload)
    params = [(mg.tensor(w), mg.tensor(b)) for w, b in weights]
    x = mg.tensor(x_array, constant=True)

    def step():  # MyGrad has no optimizers: SGD by hand
        h = x
        if workload == "chain":
            for w, b in params:
                h = h + mg.tanh(h @ w + b)
            loss = (h * h).mean()
        else:
            for i, (w, b) in enumerate(params):
                h = h @ w + b
                h = relu(h) if i < len(params) - 1 else h
            loss = softmax_crossentropy(h, targets)
        loss.backward()
        for pair in params:
            for p in pair:
                p.data -= LR * p.grad
        return loss

    return step


# Each step returns its loss (as the engine's own scalar, not converted: that would add to the time), so
# tests/test_bench_engines.py can check that every engine computes the same model and the same update.
STEPS = {"tensorlab": _tensorlab_step, "pytorch": _pytorch_step, "dezero": _dezero_step, "mygrad": _mygrad_step}


def engine_worker(engine, workload, threads, conn):
    """Build one engine's step for `workload`, then run blocks of steps when asked; report any error back."""
    try:
        step = STEPS[engine](workload, threads)
        conn.send(("ok", "ready"))
        while True:
            command, arg = conn.recv()
            if command != "block":
                return
            times = []
            for _ in range(arg):
                start = time.perf_counter()
                step()
                times.append(time.perf_counter() - start)
            conn.send(("ok", times))
    except BaseException:  # the parent prints it and stops the benchmark
        import traceback

        conn.send(("error", traceback.format_exc()))


# ----- the parent ----------------------------------------------------------------------------------
def machine():
    """'CPU model | AVX flags | OpenBLAS version and kernel | PyTorch's BLAS' here, printed beside every figure."""
    import numpy as np  # noqa: F401 (loads OpenBLAS, so threadpoolctl sees it)
    from threadpoolctl import threadpool_info

    model, flags = platform.processor() or platform.machine(), set()
    if Path("/proc/cpuinfo").exists():
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
    avx = " ".join(f for f in ("avx2", "avx512f", "amx_tile") if f in flags) or "no avx2/avx512f/amx_tile"
    blas = [i for i in threadpool_info() if i.get("internal_api") == "openblas"]
    kernel = f"OpenBLAS {blas[0]['version']} {blas[0]['architecture']}" if blas else "no OpenBLAS"
    coretype = os.environ.get("OPENBLAS_CORETYPE")
    kernel += f" (OPENBLAS_CORETYPE={coretype})" if coretype else ""
    return f"{model} | {avx} | {kernel} | PyTorch {_torch_blas()}"


def _torch_blas():
    """PyTorch's own BLAS and the widest vector instructions it uses here, e.g. 'MKL, AVX512'."""
    import torch

    blas = "MKL" if torch.backends.mkl.is_available() else "no MKL"
    return f"{blas}, {torch.backends.cpu.get_cpu_capability()}"


def available_engines():
    """The engines importable here, and a line for each optional one that is not."""
    import importlib.util

    engines, missing = ["tensorlab", "pytorch"], []
    for name, pin in OPTIONAL.items():
        if importlib.util.find_spec(name) is None:
            missing.append(f"{name} not installed, left out: pip install --no-deps {pin}")
        else:
            engines.append(name)
    return engines, missing


def run_workload(workload, engines, args):
    """{engine: [median step of each block]} with the engines alternating block by block."""
    workers = {}
    try:
        for engine in engines:
            workers[engine] = Worker(engine, args, workload, args.threads, target=engine_worker)
        for w in workers.values():
            time.sleep(args.settle)
            w.ask("block", args.warmup)
        blocks = {engine: [] for engine in engines}
        for _ in range(args.blocks):
            for engine, w in workers.items():
                time.sleep(args.settle)  # between blocks only: the other engine's threads stop spinning
                blocks[engine].append(statistics.median(w.ask("block", args.block_steps)))
        return blocks
    finally:
        for w in workers.values():
            w.stop()


def paired_ratio(blocks, engine, other):
    return statistics.median(a / b for a, b in zip(blocks[engine], blocks[other]))


def report(workload, blocks, where):
    lines = [f"\n{workload}: {WORKLOADS[workload]}", f"  {'engine':10}{'step ms':>9}  median step of each block (ms)"]
    for engine, times in blocks.items():
        each = " ".join(f"{1e3 * t:.2f}" for t in times)
        lines.append(f"  {engine:10}{1e3 * statistics.median(times):>9.2f}  {each}")
    for other in (e for e in blocks if e != "tensorlab"):
        ratio = paired_ratio(blocks, "tensorlab", other)
        goal = GOALS.get((workload, other))
        verdict = "" if goal is None else f" (goal <= {goal:.2f}: {'met' if ratio <= goal else 'missed'})"
        lines.append(f"  {workload} tensorlab/{other}: {ratio:.3f}{verdict}   [{where}]")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="threads for every engine")
    parser.add_argument("--workloads", nargs="*", choices=list(WORKLOADS), default=list(WORKLOADS))
    parser.add_argument("--blocks", type=int, default=7, help="timed blocks per engine, alternating (>= 3)")
    parser.add_argument("--block-steps", type=int, default=20, help="consecutive steps per block (>= 5)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps per engine before the blocks")
    parser.add_argument("--settle", type=float, default=0.3, help="seconds idle between blocks")
    parser.add_argument("--timeout", type=float, default=600, help="seconds to wait for any worker answer")
    args = parser.parse_args(argv)
    if args.blocks < 3 or args.block_steps < 5:
        parser.error(f"--blocks must be >= 3 and --block-steps >= 5, got {args.blocks} and {args.block_steps}")
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # the workers inherit these
        os.environ[var] = str(args.threads)
    where = f"{machine()} | {args.threads} threads"
    engines, missing = available_engines()
    print(f"machine: {where}")
    print(
        f"{args.blocks} blocks of {args.block_steps} steps per engine after {args.warmup} warm-up, alternating; "
        f"ratio = median over rounds of tensorlab's block / the other's"
    )
    for line in missing:
        print(line)
    try:
        for workload in args.workloads:
            print(report(workload, run_workload(workload, engines, args), where), flush=True)
    except WorkerDied as error:
        sys.exit(f"engines.py: benchmark stopped: {error}")


if __name__ == "__main__":
    main()
