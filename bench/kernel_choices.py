"""The measurements behind the choices in tensorlab/kernels/, each one against the alternative it replaced.

    python bench/kernel_choices.py

1. Reductions along short rows (attention's (16, 4, 64, 64) block of scores, cross-entropy's rows of 500):
   NumPy's max against np.fmax.reduce, sum against a product with a vector of ones, (a * b).sum against einsum;
   and down the columns of a Linear part's gy (2048 x 384): NumPy's sum against ones^T gy.
2. GELU's sign step on one cache block (131,072 float32): np.copysign against a multiply by (x >= 0).
3. Linear's products cut into 2, 4, 8 or 16 parts over the thread pool (tensorlab.threads), for the shapes
   of the three bench configs (4096 rows): the time of x W^T, gy W and gy^T x.
4. Embedding's scatter-add for the bench configs' token embeddings (4096 rows into a table of 500):
   backend.segment_sum (sorted runs, add.reduceat) against np.add.at with one index per row and with one
   flat index per element (tensorlab/kernels/embedding.py).

Single runs, median of many repeats; print the machine with them (bench/RESULTS.md keeps what we measured).
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `python bench/NAME.py` puts bench/ on the path; tensorlab lives in the checkout

import tensorlab.threads  # noqa: E402
from bench.engines import machine  # noqa: E402
from tensorlab import backend, kernels  # noqa: E402
from tensorlab.kernels import embedding  # noqa: E402
from tensorlab.memory import keep_freed_memory  # noqa: E402


def median_us(repeats, fn, *args, **kwargs):
    """Median microseconds of fn(*args, **kwargs) over `repeats` calls, after a few untimed ones."""
    for _ in range(max(repeats // 10, 3)):
        fn(*args, **kwargs)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args, **kwargs)
        times.append(time.perf_counter() - start)
    return 1e6 * float(np.median(times))


def row_dots(a, b):
    return np.einsum("...i,...i->...", a, b)


def row_dots_by_product(a, b):
    return (a * b).sum(axis=-1)


def reductions(repeats):
    rng = np.random.default_rng(0)
    for shape in [(16, 4, 64, 64), (699, 500)]:
        s, p = rng.random(shape, dtype=np.float32), rng.random(shape, dtype=np.float32)
        ones, rows = np.ones(shape[-1], np.float32), s.reshape(-1, shape[-1])
        print(f"rows of {shape[-1]}, {shape}:")
        print(
            f"  max {median_us(repeats, np.max, s, axis=-1):8.1f} us   "
            f"fmax.reduce {median_us(repeats, np.fmax.reduce, s, axis=-1):8.1f} us"
        )
        print(
            f"  sum {median_us(repeats, np.sum, s, axis=-1):8.1f} us   "
            f"rows @ ones {median_us(repeats, np.matmul, rows, ones):8.1f} us"
        )
        print(
            f"  (s * p).sum {median_us(repeats, row_dots_by_product, s, p):8.1f} us   "
            f"einsum {median_us(repeats, row_dots, s, p):8.1f} us"
        )


def column_sums(repeats):
    gy = np.random.default_rng(4).random((2048, 384), dtype=np.float32)
    print("column sums of (2048, 384):")
    print(
        f"  sum(axis=0) {median_us(repeats, np.sum, gy, axis=0):8.1f} us   "
        f"ones^T gy {median_us(repeats, kernels.column_sums, gy):8.1f} us"
    )


def sign_step(repeats):
    x = np.random.default_rng(1).standard_normal(131072).astype(np.float32)
    a, step = x.copy(), np.empty_like(x)

    def by_step():
        np.multiply(a, np.greater_equal(x, 0, out=step), out=a)

    print("GELU's sign step on 131,072 float32:")
    print(
        f"  copysign {median_us(repeats, np.copysign, a, x, out=a):8.1f} us   "
        f"(x >= 0) then multiply {median_us(repeats, by_step):8.1f} us"
    )


def product_in_parts(a, b, parts, by_rows):
    out = np.empty((a.shape[0], b.shape[1]), np.float32)
    length = a.shape[0] if by_rows else b.shape[1]
    slices = [slice(length * i // parts, length * (i + 1) // parts) for i in range(parts)]
    if by_rows:
        tensorlab.threads.for_each_block(lambda rows: np.matmul(a[rows], b, out=out[rows]), slices)
    else:
        tensorlab.threads.for_each_block(lambda cols: np.matmul(a, b[:, cols], out=out[:, cols]), slices)


def linear_parts(repeats, threads):
    rng = np.random.default_rng(2)
    print(f"Linear's products in parts, {threads} threads (ms: x W^T / gy W / gy^T x):")
    for n, n_in, n_out in [(4096, 128, 384), (4096, 128, 500), (4096, 256, 768), (4096, 192, 576), (4096, 768, 192)]:
        x, w = rng.random((n, n_in), dtype=np.float32), rng.random((n_out, n_in), dtype=np.float32)
        gy = rng.random((n, n_out), dtype=np.float32)
        products = [(x, w.T, True), (gy, w, True), (gy.T, x, n_out >= n_in)]  # gy^T x: by rows when it has more
        cells = []
        for parts in (2, 4, 8, 16):
            times = [median_us(repeats, product_in_parts, a, b, parts, by_rows) / 1e3 for a, b, by_rows in products]
            cells.append(f"{parts}: " + "/".join(f"{t:.2f}" for t in times))
        print(f"  ({n}, {n_in}, {n_out})  " + "   ".join(cells))


def rows_added_at(ids, rows, num_segments):
    sums = np.zeros((num_segments, rows.shape[1]), rows.dtype)
    np.add.at(sums, ids, rows)
    return sums


def scatter_add(repeats):
    rng = np.random.default_rng(3)
    print("Embedding's scatter-add, 4096 rows into 500 (us):")
    for width in (128, 192, 256):
        ids, rows = rng.integers(0, 500, 4096), rng.standard_normal((4096, width)).astype(np.float32)
        print(
            f"  width {width}: segment_sum {median_us(repeats, backend.segment_sum, ids, rows, 500):8.1f}   "
            f"add.at by rows {median_us(repeats, rows_added_at, ids, rows, 500):8.1f}   "
            f"add.at by elements {median_us(repeats, embedding.segment_sum, ids, rows, 500):8.1f}"
        )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    keep_freed_memory()  # as train.py does: products write into reused memory, not fresh pages
    # as train.py does too: the pool's threads, and OpenBLAS held to one thread, as each kernel block runs it (a
    # product with a vector of ones measured on OpenBLAS's own two threads would not be the kernels' time)
    tensorlab.threads.use_threads(args.threads)
    print(f"{machine()} | {args.threads} threads")
    reductions(args.repeats)
    column_sums(args.repeats)
    sign_step(args.repeats)
    linear_parts(max(args.repeats // 4, 5), args.threads)
    scatter_add(args.repeats)
    tensorlab.threads.release()


if __name__ == "__main__":
    main()
