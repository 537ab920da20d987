"""The engines' training steps counted in CPU instructions (valgrind's callgrind), not timed.

On a shared machine a step's time moves by 20-50% from one minute to the next, more than an engine change
of a few percent; the instructions a step executes, counted three times, agreed to 0.01%. For a workload bound by the
engine's own Python cost per op (bench/engines.py's chain) they are the yardstick of that cost, and its
Python part counts the same on another x86 CPU. They leave out cache misses and how many instructions a
cycle retires, so the timed ratio (bench/engines.py) stays the goal; this one shows whether a change did
what it meant to.

Each engine's step, from bench/engines.py, runs 1 thread in a process of its own under callgrind, with
Python's hash randomization off (PYTHONHASHSEED=0: sets and dicts laid out another way moved the counts by
about 1%) and counting off; after the warm-up steps the process switches counting on (callgrind_control)
for --steps steps. Printed per step: all instructions, those in BLAS (OpenBLAS, MKL), and the rest, against PyTorch
(OpenBLAS clears a product's output with libc's memset, which valgrind counts byte by byte: in the rest).
Needs valgrind (Debian: apt install valgrind). The chain takes about 2.5 minutes here, the MLP far longer:
under callgrind every instruction of its products is counted.

    python bench/instructions.py
    python bench/instructions.py --steps 10
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import engines  # noqa: E402

WARMUP = 3
BLAS = re.compile(r"openblas|mkl_blas", re.IGNORECASE)  # OpenBLAS's library; MKL's BLAS functions (in libtorch)


def counted(engine, workload, steps):
    """(all, BLAS) instructions per step of `engine` on `workload`, counted by callgrind."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "callgrind.out"
        command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]
        command += [sys.executable, __file__, "--worker", engine, workload, str(steps)]
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONHASHSEED="0")
        run = subprocess.run(command, capture_output=True, text=True, env=env)
        if run.returncode != 0:
            sys.exit(f"instructions.py: {engine} {workload} failed under valgrind:\n{run.stderr[-2000:]}")
        report = subprocess.run(
            ["callgrind_annotate", "--threshold=100", str(out)], capture_output=True, text=True, check=True
        ).stdout
    total, blas = totals(report)
    return total / steps, blas / steps


def totals(report):
    """(all, BLAS) instructions in callgrind_annotate's report: its PROGRAM TOTALS, and its function lines
    ("count (share%)  file:function [object]") whose function or object is BLAS."""
    total = blas = 0
    for line in report.splitlines():
        match = re.match(r"\s*([\d,]+) \([ \d.]+%\)\s+(.*)$", line)
        if match:
            count = int(match[1].replace(",", ""))
            if "PROGRAM TOTALS" in match[2]:
                total = count
            elif BLAS.search(match[2]):
                blas += count
    return total, blas


def worker(engine, workload, steps):
    """Run inside valgrind: the step built, warmed up, then counted."""
    step = engines.STEPS[engine](workload, 1)
    for _ in range(WARMUP):
        step()
    _counting("on")
    for _ in range(steps):
        step()
    _counting("off")


def _counting(state):
    """Switch callgrind's counting in this process on or off."""
    subprocess.run(["callgrind_control", "-i", state, str(os.getpid())], check=True, capture_output=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", nargs="*", choices=list(engines.WORKLOADS), default=["chain"])
    parser.add_argument("--steps", type=int, default=5, help="steps counted per engine (after 3 warm-up steps)")
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker[0], args.worker[1], int(args.worker[2]))
    if args.steps < 1:
        parser.error(f"--steps must be at least 1, got {args.steps}")
    missing = [tool for tool in ("valgrind", "callgrind_annotate", "callgrind_control") if not shutil.which(tool)]
    if missing:
        sys.exit(f"instructions.py: {', '.join(missing)} not found; install valgrind (Debian: apt install valgrind)")
    print(f"machine: {engines.machine()} | 1 thread, under callgrind")
    for workload in args.workloads:
        print(f"\n{workload}: {engines.WORKLOADS[workload]}; million instructions per step ({args.steps} steps)")
        print(f"  {'engine':<10}{'all':>9}{'BLAS':>9}{'rest':>9}")
        counts = {engine: counted(engine, workload, args.steps) for engine in ("tensorlab", "pytorch")}
        for engine, (total, blas) in counts.items():
            print(f"  {engine:<10}{total / 1e6:>9.2f}{blas / 1e6:>9.2f}{(total - blas) / 1e6:>9.2f}")
        (ours, our_blas), (theirs, their_blas) = counts["tensorlab"], counts["pytorch"]
        print(
            f"  tensorlab/pytorch: all {ours / theirs:.3f}, BLAS {our_blas / max(their_blas, 1):.3f}, "
            f"rest {(ours - our_blas) / max(theirs - their_blas, 1):.3f}"
        )


if __name__ == "__main__":
    main()
