"""How far each constant of tensorlab/kernels/plan.py is from the best value on this machine, setting by setting.

For every setting this machine allows (1 and 2 threads; the L2 size OpenBLAS detects and half of it, through
OPENBLAS_L2_SIZE; NumPy's AVX-512 loops and, where the CPU has them, its AVX2 loops instead, through
NPY_DISABLE_CPU_FEATURES) and every constant of the plan, each candidate value (the chosen one times 1/4, 1/2, 2
and 4) runs in a child process of its own, set through TENSORLAB_<NAME> with every other constant at its chosen
value. A child times training steps of two workloads as training runs them (the thread pool and the kept memory
on): the transformer of bench config seed_d256 and bench/engines.py's MLP 784-1024-1024-10 (batch 256). A value's
cost is the mean over the workloads of its median step against the chosen value's; the candidates run in turn,
--repeats rounds, and each keeps its median round. Per setting and constant it prints the best value, the chosen
one, and how much slower the chosen one is than the best (0.0% where the chosen is the best).

    python bench/tune.py                    # every setting, every constant: long; on a quiet machine
    python bench/tune.py --constants ROW_PARTS MIN_PART_ROWS --threads 2
    python bench/tune.py --quick            # tiny models, one setting, two values: proves the script runs

The last line reads `worst distance from the best: D% (NAME, setting)`.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `python bench/NAME.py` puts bench/ on the path; models/ lives in the checkout

from tensorlab.kernels import plan  # noqa: E402

FACTORS = (0.25, 0.5, 2, 4)  # the candidates, as multiples of the chosen value
TINY = (dict(vocab_size=50, context_len=8, d_model=16, n_layers=1, n_heads=2, d_ff=32, dropout=0.0), 2, 8)


def candidates(name, quick):
    """The chosen value first, then the others: whole numbers stay whole (and at least 1)."""
    chosen = plan.CHOSEN[name]
    values = [chosen * f for f in (FACTORS[2:3] if quick else FACTORS)]
    values = [max(1, round(v)) if isinstance(chosen, int) else v for v in values]
    return [chosen] + sorted(set(values) - {chosen})


def settings(threads, quick):
    """[(label, environment)] for every combination this machine allows."""
    l2 = _l2_bytes()
    l2_sizes = [("L2 as detected", {})] + ([(f"L2 {l2 // 2048} KiB", {"OPENBLAS_L2_SIZE": str(l2 // 2)})] if l2 else [])
    avx512 = _avx512_features()
    loops = [("NumPy's widest loops", {})]
    if avx512:
        loops.append(("NumPy's AVX2 loops", {"NPY_DISABLE_CPU_FEATURES": " ".join(avx512)}))
    combos = [
        (f"{n} thread{'s' * (n > 1)}, {l2_label}, {loop_label}", {**l2_env, **loop_env, "THREADS": str(n)})
        for n in threads
        for l2_label, l2_env in l2_sizes
        for loop_label, loop_env in loops
    ]
    return combos[:1] if quick else combos


def _l2_bytes():
    """This CPU's L2 per core in bytes from the OS (Linux), or None."""
    try:
        size = Path("/sys/devices/system/cpu/cpu0/cache/index2/size").read_text().strip()
    except OSError:
        return None
    number, unit = re.fullmatch(r"(\d+)([KMG]?)", size).groups()
    return int(number) << {"": 0, "K": 10, "M": 20, "G": 30}[unit]


def _avx512_features():
    """NumPy's dispatched AVX-512 feature groups this CPU has (disabling them leaves NumPy's AVX2 loops)."""
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    return [f for f in __cpu_dispatch__ if __cpu_features__.get(f) and re.match(r"AVX512|X86_V4", f)]


def run_child(env, args):
    """{workload: median step seconds} from a fresh process under `env` (a setting plus TENSORLAB_<NAME>)."""
    threads = env.pop("THREADS")
    full_env = {**os.environ, **env, "OPENBLAS_NUM_THREADS": threads, "OMP_NUM_THREADS": threads}
    for name in plan.CHOSEN:  # only the constant under test differs from the chosen plan
        if f"TENSORLAB_{name}" not in env:
            full_env.pop(f"TENSORLAB_{name}", None)
    command = [sys.executable, __file__, "--child", threads, str(args.steps)] + ["--quick"] * args.quick
    done = subprocess.run(command, env=full_env, capture_output=True, text=True, timeout=args.timeout)
    if done.returncode:
        sys.exit(f"tune.py: a child failed under {env}:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def child(threads, steps, quick):
    """Time `steps` training steps of each workload after two warm-up steps; print their medians as JSON."""
    import time

    from bench.engines import _tensorlab_step
    from bench.profile_step import build_step, model_step
    from tensorlab.memory import keep_freed_memory
    from tensorlab.threads import use_threads

    keep_freed_memory()
    use_threads(threads)
    workloads = {
        "transformer": model_step(*TINY) if quick else build_step("seed_d256"),
        "mlp": _tensorlab_step("mlp", threads),
    }
    medians = {}
    for name, step in workloads.items():
        times = []
        for i in range(steps + 2):
            start = time.perf_counter()
            step()
            if i >= 2:
                times.append(time.perf_counter() - start)
        medians[name] = statistics.median(times)
    print(json.dumps(medians))


def tune(constant, setting_env, args):
    """{value: cost}, the cost the mean over the workloads of the value's median step / the chosen value's."""
    values = candidates(constant, args.quick)
    rounds = {v: [] for v in values}
    for _ in range(args.repeats):  # the values in turn, so that all of them see the same drift of the machine
        for v in values:
            env = {**setting_env} if v == plan.CHOSEN[constant] else {**setting_env, f"TENSORLAB_{constant}": str(v)}
            rounds[v].append(run_child(env, args))
    medians = {v: {w: statistics.median(r[w] for r in rs) for w in rs[0]} for v, rs in rounds.items()}
    chosen = medians[plan.CHOSEN[constant]]
    return {v: statistics.mean(m[w] / chosen[w] for w in m) for v, m in medians.items()}


def main(argv=None):
    if argv is None and sys.argv[1:2] == ["--child"]:
        return child(int(sys.argv[2]), int(sys.argv[3]), "--quick" in sys.argv)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--constants", nargs="*", choices=list(plan.CHOSEN), default=list(plan.CHOSEN))
    parser.add_argument("--threads", type=int, nargs="*", default=[1, 2], help="thread counts to try (default 1 2)")
    parser.add_argument("--steps", type=int, default=10, help="timed steps per workload in each child")
    parser.add_argument("--repeats", type=int, default=3, help="rounds over the candidates; each keeps its median")
    parser.add_argument("--timeout", type=float, default=600, help="seconds a child may take")
    parser.add_argument("--quick", action="store_true", help="tiny transformer, one setting, 2 values, 1 round")
    args = parser.parse_args(argv)
    if args.quick:
        args.steps, args.repeats = min(args.steps, 2), 1
    overridden = [f"TENSORLAB_{n}" for n in plan.CHOSEN if f"TENSORLAB_{n}" in os.environ]
    if overridden:
        parser.error(f"unset {' '.join(overridden)} first: the chosen values are the baseline")
    worst = (-1.0, "", "")
    for label, env in settings(args.threads, args.quick):
        print(f"\n{label}")
        print(f"  {'constant':22}{'best':>12}{'chosen':>12}{'chosen vs best':>16}   cost of each value (chosen = 1)")
        for constant in args.constants:
            costs = tune(constant, env, args)
            best = min(costs, key=costs.get)
            distance = 100 * (costs[plan.CHOSEN[constant]] / costs[best] - 1)
            each = "  ".join(f"{v}: {c:.3f}" for v, c in costs.items())
            print(f"  {constant:22}{best!s:>12}{plan.CHOSEN[constant]!s:>12}{distance:>15.1f}%   {each}")
            worst = max(worst, (distance, constant, label))
    print(f"\nworst distance from the best: {worst[0]:.1f}% ({worst[1]}, {worst[2]})")


if __name__ == "__main__":
    main()
