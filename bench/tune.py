"""How far each constant of tensorlab/kernels/plan.py is from the best value on this machine, setting by setting,
beside how far apart two measurements of the same value fall: the noise that bounds what a sweep can show.

For every setting this machine allows (1 and 2 threads; the L2 size OpenBLAS detects and half of it, through
OPENBLAS_L2_SIZE; NumPy's AVX-512 loops and, where the CPU has them, its AVX2 loops instead, through
NPY_DISABLE_CPU_FEATURES) one child process builds two workloads as training runs them (the thread pool and the
kept memory on): the transformer of bench config seed_d256 and bench/engines.py's MLP 784-1024-1024-10 (batch
256). For each constant it sets the candidates in turn in that running process (the kernels read plan.NAME at
every call): the chosen value, the chosen value again, and the chosen one times 1/4, 1/2, 2 and 4, every other
constant at its chosen value. --rounds rounds, the order rotated each round so that every value meets the same
drift of the machine; in a round each value gets one untimed step and --steps timed steps of each workload, and
keeps their median. A value's cost is the mean over the workloads of its median over the rounds against the chosen
value's. The untimed step records what plan's cutting functions (plan.CUTS) answered under the value: a value that
got the chosen one's answers everywhere (marked `=`) cut every piece of work the same way, so its cost differs from
1 by the machine's noise alone. Per setting and constant it prints the best value of those that cut differently,
the chosen one, how much slower the chosen one is than that best, and the noise: the farthest that a measurement
of the chosen value's cuts (its second one, and every `=` value) fell from 1. A distance within the noise is not a
difference this machine showed.

    python bench/tune.py                    # every setting, every constant: about 8 minutes a setting here
    python bench/tune.py --constants ROW_PARTS MIN_PART_ROWS --threads 2
    python bench/tune.py --quick            # tiny models, one setting, two values: proves the script runs

The last line reads `worst distance from the best: D% (NAME, setting; noise N%)`.
"""

import argparse
import collections
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
    """{constant: {value label: cost}} from a fresh process under `env` (a setting)."""
    threads = env.pop("THREADS")
    full_env = {**os.environ, **env, "OPENBLAS_NUM_THREADS": threads, "OMP_NUM_THREADS": threads}
    command = [sys.executable, __file__, "--child", threads, str(args.steps), str(args.rounds), *args.constants]
    done = subprocess.run(command + ["--quick"] * args.quick, env=full_env, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"tune.py: a child failed under {env}:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def child(threads, steps, rounds, constants, quick):
    """Print {constant: {value: cost, "again": the chosen value's second cost}} as JSON."""
    import time

    from bench.engines import _tensorlab_step
    from bench.profile_step import build_step, model_step
    from tensorlab.memory import keep_freed_memory
    from tensorlab.threads import use_threads

    keep_freed_memory()
    use_threads(threads)
    workloads = [model_step(*TINY) if quick else build_step("seed_d256"), _tensorlab_step("mlp", threads)]

    def median_step(step):
        """(the median time of `steps` steps, the cuts of an untimed first step under the new value)"""
        cuts = cuts_of(step)
        times = []
        for _ in range(steps):
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
        return statistics.median(times), cuts

    results = {}
    for name in constants:
        values = candidates(name, quick)
        labels = [str(values[0]), "again", *map(str, values[1:])]
        medians = {label: [[] for _ in workloads] for label in labels}
        cuts = {label: [None] * len(workloads) for label in labels}
        for r in range(rounds):
            for label in labels[r % len(labels) :] + labels[: r % len(labels)]:
                setattr(plan, name, values[0] if label == "again" else type(values[0])(label))
                for w, step in enumerate(workloads):
                    median, cuts[label][w] = median_step(step)
                    medians[label][w].append(median)
        setattr(plan, name, values[0])
        chosen = [statistics.median(m) for m in medians[labels[0]]]
        costs = {
            label: statistics.mean(statistics.median(m) / c for m, c in zip(medians[label], chosen)) for label in labels
        }
        same = [label for label in labels if cuts[label] == cuts[labels[0]]]
        results[name] = {"costs": costs, "same cuts": same}
    print(json.dumps(results))


def cuts_of(step):
    """Run step() once; what plan's cutting functions (plan.CUTS) answered meanwhile, each answer with its count
    (the pool's threads ask too, in no fixed order). Two values with the same answers cut all the work alike."""
    answers, originals = collections.Counter(), {name: getattr(plan, name) for name in plan.CUTS}

    def recorded(name, function):
        def call(*args):
            answer = function(*args)
            answers[f"{name}{args} = {answer}"] += 1
            return answer

        return call

    for name, function in originals.items():
        setattr(plan, name, recorded(name, function))
    try:
        step()
    finally:
        for name, function in originals.items():
            setattr(plan, name, function)
    return answers


def main(argv=None):
    if argv is None and sys.argv[1:2] == ["--child"]:
        threads, steps, rounds, *constants = [a for a in sys.argv[2:] if a != "--quick"]
        return child(int(threads), int(steps), int(rounds), constants, "--quick" in sys.argv)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--constants", nargs="*", choices=list(plan.CHOSEN), default=list(plan.CHOSEN))
    parser.add_argument("--threads", type=int, nargs="*", default=[1, 2], help="thread counts to try (default 1 2)")
    parser.add_argument("--steps", type=int, default=5, help="timed steps per workload, value and round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds over the values, the order rotated each")
    parser.add_argument("--quick", action="store_true", help="tiny transformer, one setting, 2 values, 1 round")
    args = parser.parse_args(argv)
    if args.quick:
        args.steps, args.rounds = min(args.steps, 2), 1
    overridden = [f"TENSORLAB_{n}" for n in plan.CHOSEN if f"TENSORLAB_{n}" in os.environ]
    if overridden:
        parser.error(f"unset {' '.join(overridden)} first: the chosen values are the baseline")
    worst = (-1.0, "", "", 0.0)
    for label, env in settings(args.threads, args.quick):
        print(f"\n{label}")
        print(f"  {'constant':22}{'best':>12}{'chosen':>12}{'chosen vs best':>16}{'noise':>8}   cost of each value")
        for constant, result in run_child(env, args).items():
            costs, same, chosen = result["costs"], result["same cuts"], str(plan.CHOSEN[constant])
            noise = 100 * max(abs(costs[label] - 1) for label in same)
            del costs["again"]
            best = min((v for v in costs if v == chosen or v not in same), key=costs.get)
            distance = 100 * (costs[chosen] / costs[best] - 1)
            each = "  ".join(f"{v}: {c:.3f}{'=' * (v in same and v != chosen)}" for v, c in costs.items())
            print(f"  {constant:22}{best:>12}{chosen:>12}{distance:>15.1f}%{noise:>7.1f}%   {each}")
            worst = max(worst, (distance, constant, label, noise))
    print(f"\nworst distance from the best: {worst[0]:.1f}% ({worst[1]}, {worst[2]}; noise {worst[3]:.1f}%)")


if __name__ == "__main__":
    main()
