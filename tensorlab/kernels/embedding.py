"""Embedding's backward, the scatter-add gW[v] = the sum of gy[n] over every n with ids[n] = v
(tensorlab/ops/embedding.py), fast on the CPU.

The op's own scatter-add, backend.segment_sum, sorts the ids and sums each run of equal ids with
np.add.reduceat: the way that gives the same bits on every run on a GPU too, where a scatter-add adds
with atomics in whatever order the threads arrive. On the CPU np.add.at has no such problem: it adds
the rows in the order of the ids, the same order every run. Handed one flat index per element
(row ids[n] * C + c for element c of gy[n]), it takes NumPy's quick path for one-dimensional arrays;
for the token embedding of the seed_d128 bench config (4096 rows of 128 into a table of 500) it
takes 0.56 ms where segment_sum takes 0.88, and 0.73 against 1.20 ms inside a training step
(bench/kernel_choices.py, bench/RESULTS.md). Handed one index per row, np.add.at takes 3.4 ms.
"""

import numpy as np


def segment_sum(ids, rows, num_segments):
    """out[v] = the sum of rows[n] over every n with ids[n] = v, as backend.segment_sum gives it (in another
    order of the additions), for 1-D ids and 2-D rows."""
    width = rows.shape[1]
    sums = np.zeros(num_segments * width, rows.dtype)
    flat_index = np.add.outer(ids.astype(np.intp) * width, np.arange(width))  # of rows[n, c] in sums: ids[n] C + c
    np.add.at(sums, flat_index.reshape(-1), rows.reshape(-1))
    return sums.reshape(num_segments, width)
