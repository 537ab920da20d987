"""How the kernels cut their work: every block size, part count and threshold of tensorlab/kernels/, in one place.

The two block sizes follow the CPU's caches, read from the OS (Linux; elsewhere the sizes of the machine they were
measured on, a 2-core EPYC with 512 KiB of L2 per core and 32 MiB of L3 for both). The part counts and thresholds
follow the products' shapes alone; bench/tune.py measures, setting by setting, how far each is from the best value
on a machine, beside that machine's noise (bench/RESULTS.md). Each can be set for a process by the environment
variable TENSORLAB_<NAME>, read once at import (TENSORLAB_ROW_PARTS=4 python train.py ...). None of them depends on
the thread count, so the bits of every result do not either (tensorlab/threads.py); a different value may change
the last bits, as another BLAS kernel does. The kernels read them only through the functions below (CUTS), so a
sweep can tell from their answers whether a value changes how any work is cut.
"""

import os
from pathlib import Path

CACHES = Path("/sys/devices/system/cpu/cpu0/cache")  # Linux: one indexN folder per cache of the first CPU

CHOSEN = {}  # name -> the value chosen here, before any TENSORLAB_<NAME>


def _setting(name, chosen):
    """The chosen value, or TENSORLAB_<name>'s from the environment: a positive number of the same type."""
    CHOSEN[name] = chosen
    text = os.environ.get(f"TENSORLAB_{name}")
    if text is None:
        return chosen
    try:
        value = type(chosen)(text)
    except ValueError:
        value = None
    if value is None or not value > 0:
        kind = "a positive whole number" if isinstance(chosen, int) else "a positive number"
        raise ValueError(f"TENSORLAB_{name}={text!r}: expected {kind}, such as the chosen {chosen}")
    return value


def cache_bytes(level, measured_on):
    """Bytes of the CPU's cache of `level` (2, 3) for each logical CPU that shares it, from the OS; where the OS does
    not say, the size `measured_on` the machine the plan was measured on had."""
    for index in sorted(CACHES.glob("index*")):
        try:
            if int((index / "level").read_text()) != level or (index / "type").read_text().strip() == "Instruction":
                continue
            size = (index / "size").read_text().strip()  # "512K"
            digits = size.rstrip("KMG")
            sharing = (index / "shared_cpu_list").read_text().strip()  # "0-1,8-9"
            cpus = sum(int(r.split("-")[-1]) - int(r.split("-")[0]) + 1 for r in sharing.split(","))
            return (int(digits) << {"": 0, "K": 10, "M": 20, "G": 30}[size[len(digits) :]]) // max(cpus, 1)
        except (OSError, ValueError, KeyError):
            break
    return measured_on


L2_PER_CPU = cache_bytes(2, 1 << 19)
L3_PER_CPU = cache_bytes(3, 1 << 24)
# An op that makes many passes over a large array makes them all over one block of about this many bytes (of all
# the arrays it touches) before the next (cache_blocks): a quarter of a CPU's share of the L3, so that the block
# stays there beside the other arrays. Trades: smaller blocks stay in a smaller cache, but each costs a call per
# pass and a thread hand-off. On the EPYC (16 MiB of L3 per CPU) 4 MiB was the best of 256 KiB to 64 MiB for GELU
# (16 vs 29 ms).
CACHE_BLOCK_BYTES = _setting("CACHE_BLOCK_BYTES", L3_PER_CPU // 4)
# A large product is cut into at most this many parts, a power of two whatever the thread count, so 2, 4, 8 or 16
# threads get equal shares and the bits never depend on how many there are. Trades: more parts feed more threads,
# but each part packs its own copy of the other matrix (an MLP's batch of 256 in 16 parts of 16 rows: +25%).
ROW_PARTS = _setting("ROW_PARTS", 16)
# ... each of at least this many rows (or columns) and multiply-adds. Trades as ROW_PARTS: thin parts repack the
# other matrix more than they share out. On 2 threads the bench configs' products took 3-4% less time in 2 parts
# than in parts of 2^25 multiply-adds, and 6-8% less than in the 3 to 13 parts cut before.
MIN_PART_ROWS = _setting("MIN_PART_ROWS", 64)
MIN_PART_WORK = _setting("MIN_PART_WORK", 1 << 27)
# Linear's backward is cut by the batch's rows when the parts' partial weight gradients (parts x OUT x IN numbers,
# to add up after) are at most this share of what the parts read (N x (IN + OUT)). Trades: each part's rows stay
# in cache across its three products, against the sum of the partial gradients. The bench configs (shares 0.03 to
# 0.19): 1.5-4% less time; an MLP's and square backwards (shares 3.5 to 4) took 6-12% more.
BATCH_CUT_MAX_SHARE = _setting("BATCH_CUT_MAX_SHARE", 0.5)
# A product's part adds the bias to a block of its output right after computing it, while it is in the core's own
# cache: a block of the size of a CPU's L2. Trades: smaller blocks stay in a smaller L2, but each is one more
# product call. Linear.forward took 1-7% less time in the bench configs' steps than adding over the whole part.
BIAS_BLOCK_BYTES = _setting("BIAS_BLOCK_BYTES", L2_PER_CPU)


CUTS = ("cache_blocks", "row_parts", "batch_row_parts", "bias_block_rows")  # every cut the kernels make, made here


def in_use():
    """name -> the value this process uses (the chosen one, or the environment's)."""
    return {name: globals()[name] for name in CHOSEN}


def cache_blocks(length, bytes_per_row):
    """Slices that cut range(length) into equal blocks of at most about CACHE_BLOCK_BYTES of rows, as many as the
    next power of two (or length, if fewer), so that 2, 4, 8 or 16 threads get equal shares.

    An op that makes many passes over a large array is bound by memory speed: each pass streams the
    whole array from RAM. Making all the passes over one block before moving to the next keeps the
    block in the CPU cache (GELU's forward: 29 ms -> 16 ms where it was measured, bench/RESULTS.md).
    Equal blocks matter as much: attention's 64 batch elements cut 21 + 21 + 21 + 1 gave one of two
    threads 42 of them to do, and the step waited for it.
    """
    needed = -(-length * max(bytes_per_row, 1) // CACHE_BLOCK_BYTES)  # blocks of CACHE_BLOCK_BYTES at most
    count = min(length, power_of_two_at_least(needed))
    return [slice(length * i // count, length * (i + 1) // count) for i in range(count)]


def row_parts(length, work):
    """range(length) cut into a power of two of equal slices, at most ROW_PARTS, each of MIN_PART_ROWS or more and
    MIN_PART_WORK multiply-adds or more (of the product's `work`), except that a product of half that work is
    still cut in two (every machine this runs on has two cores): fixed by the shapes, not the threads."""
    by_work = max(work // MIN_PART_WORK, 2 if 2 * work >= MIN_PART_WORK else 1)
    parts = power_of_two_at_most(min(ROW_PARTS, length // MIN_PART_ROWS, by_work))
    edges = [length * i // parts for i in range(parts + 1)]
    return [slice(a, b) for a, b in zip(edges[:-1], edges[1:]) if b > a]


def bias_block_rows(row_bytes):
    """How many rows of a product's output (rows of row_bytes) a part makes before it adds their bias: about
    BIAS_BLOCK_BYTES of them, at least MIN_PART_ROWS."""
    return max(MIN_PART_ROWS, BIAS_BLOCK_BYTES // row_bytes)


def batch_row_parts(rows, n_out, n_in):
    """The row_parts of a batch of `rows` whose Linear backward is cut by them (BATCH_CUT_MAX_SHARE), else []."""
    parts = row_parts(rows, rows * n_out * n_in)
    small_sums = len(parts) * n_out * n_in <= BATCH_CUT_MAX_SHARE * rows * (n_in + n_out)
    return parts if len(parts) > 1 and small_sums else []


def power_of_two_at_least(n):
    """The smallest power of two >= n (1 for n <= 1)."""
    return 1 << max(n - 1, 0).bit_length()


def power_of_two_at_most(n):
    """The largest power of two <= n (1 for n <= 1)."""
    return 1 << max(n.bit_length() - 1, 0)
