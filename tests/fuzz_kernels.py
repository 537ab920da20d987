"""Kernel cases nobody wrote down: each kernel against its formula on drawn shapes, layouts and plans, on 1, 2 and 3
threads.

    python -m tests.fuzz_kernels --scenarios 2000 [--seed 0] [--repeat 1]     (from the repository root)

tests/test_kernels.py checks each kernel of tensorlab/kernels/ on the shapes its table lists, at the plan's real
block sizes and at one small setting. Each scenario here draws a kernel of that table and a dtype, a shape of the
rank of one of its listed shapes with every axis drawn anew (1 to 700; an axis listed as 0 stays 0; RoPE's last
even), the inputs' memory layouts (each array's axes laid out in a drawn order, as an F-order array or a
transposed copy is: the values are the same) and every constant of tensorlab/kernels/plan.py (its chosen value or
one drawn from the range an environment variable could give it), and runs the kernel and its formula on the same
inputs on 1, 2 and 3 threads.

The property: on every thread count the kernel's outputs are the formula's, within the table's tolerance
(test_kernels.check_kernel), and bit for bit the same on all three (tensorlab/threads.py: the cuts depend on the
data, never on the thread count), and, with --repeat N, in each of N runs: a race between the threads shows as
runs that differ, or as a crash (attention's, before tensorlab/kernels/__init__.py's with_contiguous_rows: scenario
12322 with --repeat 20 ended in a segmentation fault). tests/test_fuzz_kernels.py runs 300 scenarios and the plants.
"""

import math
import random
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tensorlab import threads  # noqa: E402
from tensorlab.kernels import plan  # noqa: E402
from tests.test_kernels import KERNELS, check_kernel  # noqa: E402
from tests.tools import run_each, scenarios_main  # noqa: E402

THREADS = (1, 2, 3)
LARGEST = 1 << 22  # a scenario's work at most: its shape's product (attention's times T again), about 10 ms
# name -> (a drawn value, given random.Random): what TENSORLAB_<NAME> could set, drawn on a log scale
PLANS = {
    "CACHE_BLOCK_BYTES": lambda draw: int(2 ** draw.uniform(6, 24)),
    "ROW_PARTS": lambda draw: draw.randint(1, 40),
    "MIN_PART_ROWS": lambda draw: int(2 ** draw.uniform(0, 9)),
    "MIN_PART_WORK": lambda draw: int(2 ** draw.uniform(0, 28)),
    "BATCH_CUT_MAX_SHARE": lambda draw: 2 ** draw.uniform(-6, 3),
    "BIAS_BLOCK_BYTES": lambda draw: int(2 ** draw.uniform(0, 22)),
}


class Laid:
    """A NumPy Generator whose standard_normal arrays have their axes laid out in memory in a drawn order (as an
    F-order array, or a batch axis innermost): the same values, and astype and arithmetic keep the layout."""

    def __init__(self, seed):
        self.rng, self.draw = np.random.default_rng(seed), random.Random(seed)

    def __getattr__(self, name):
        return getattr(self.rng, name)

    def standard_normal(self, shape=None):
        a = self.rng.standard_normal(shape)
        if np.ndim(a) < 2 or self.draw.random() < 0.5:
            return a
        order = self.draw.sample(range(a.ndim), a.ndim)
        return np.ascontiguousarray(a.transpose(order)).transpose(np.argsort(order))


def draw_shape(name, listed, draw):
    """A shape of the rank of one of the kernel's `listed` shapes, every axis drawn anew."""
    shape = [0 if size == 0 else _size(draw) for size in draw.choice(listed)]
    while math.prod(shape) * (shape[-2] if name.startswith("causal_attention") else 1) > LARGEST:
        longest = shape.index(max(shape))
        shape[longest] //= 2
    if name == "rope":
        shape[-1] = 2 * max(shape[-1] // 2, 1)  # rotates pairs: an even last axis
    return tuple(shape)


def _size(draw):
    """An axis length: 1 (15%), 2 to 8 (40%), 9 to 64 (35%) or 65 to 700 (10%)."""
    r = draw.random()
    low, high = (1, 1) if r < 0.15 else (2, 8) if r < 0.55 else (9, 64) if r < 0.9 else (65, 700)
    return draw.randint(low, high)


def scenario(n, repeat=1):
    """One drawn kernel case, run `repeat` times on each thread count; (what was drawn, [problems])."""
    draw = random.Random(n)
    name = draw.choice(sorted(KERNELS))
    _, listed, tolerances, _ = KERNELS[name]
    dtype = np.dtype(draw.choice(list(tolerances)))
    shape = draw_shape(name, listed, draw)
    settings = {key: make(draw) if draw.random() < 0.7 else plan.CHOSEN[key] for key, make in PLANS.items()}
    what = f"scenario {n}: {name} {dtype.name} {shape}, plan {settings}"
    outputs, problems = {}, []
    with pytest.MonkeyPatch.context() as patch:  # the plan's constants set for this scenario, then back
        for key, value in settings.items():
            patch.setattr(plan, key, value)
        for count in THREADS:
            threads.use_threads(count)
            try:
                for run in range(repeat):
                    with np.errstate(all="ignore"):
                        outputs[count, run] = check_kernel(name, dtype.type, shape, rng=Laid(n))
            except Exception as error:  # noqa: BLE001 (an AssertionError, or what the kernel raised: a finding)
                problems.append(f"{count} thread(s): {type(error).__name__}: {str(error).splitlines()[0][:300]}")
            finally:
                threads.release()
    runs = list(outputs)  # (thread count, run), the first one's outputs the yardstick
    for count, run in runs[1:]:
        first, found = outputs[runs[0]], outputs[count, run]
        differ = [key for key in first if not np.array_equal(first[key], found[key], equal_nan=True)]
        if differ:
            again = f" (run {run + 1} of {repeat})" if repeat > 1 else ""
            problems.append(f"{count} threads{again} give other bits than {runs[0][0]} in {', '.join(differ)}")
    return what, problems


def run_scenarios(count, seed=0, report=print, repeat=1):
    """Run `count` scenarios from `seed`; [(what, problems)] of those that broke the property."""
    return run_each(lambda n: scenario(n, repeat), count, seed, report)


if __name__ == "__main__":
    sys.exit(scenarios_main(__doc__, run_scenarios, repeat=(1, "runs of each case on each thread count (races)")))
