"""Token ids to training batches, evaluation windows, and the numbers we report.

Shapes: B batch size, T sequence length (the context the model sees).
NumPy only, so this file can be read and tested without the autodiff engine.
"""

import math

import numpy as np


def split_tokens(ids, val_fraction: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """Split ids in order: the first (1 - val_fraction) trains, the rest validates."""
    ids = _as_ids(ids)
    if not 0 < val_fraction < 1:
        raise ValueError(f"val_fraction must be strictly between 0 and 1, got {val_fraction!r}.")
    n_val = int(len(ids) * val_fraction)
    n_train = len(ids) - n_val
    if n_val == 0 or n_train == 0:
        raise ValueError(
            f"cannot split {len(ids)} tokens with val_fraction={val_fraction}: "
            f"that leaves {n_train} train and {n_val} validation tokens; both must be > 0."
        )
    return ids[:n_train], ids[n_train:]


def random_window_split(ids, seq_len: int, val_fraction: float, seed: int = 0):
    """The random split of overlapping windows, kept to show why it misleads: (train ids, leaky val, ordered val).

    As report 000 did it: every window ids[i : i + T + 1] (stride 1) is an example, and a random
    val_fraction of the examples validates. Neighbouring windows share T of their T + 1 tokens,
    so nearly every validation token was also trained on, and the validation loss comes out
    optimistic. To say by how much, the last val_fraction of the tokens is held out first
    (`ordered val`, as split_tokens makes it); the leaky windows, shape (n, T + 1) with n as many
    as the ordered part has windows, are drawn from the training part, on which training runs.
    """
    train, ordered_val = split_tokens(ids, val_fraction)
    _check_positive(seq_len=seq_len)
    _check_fits(train, seq_len, "training ids")
    n = max(1, len(ordered_val) // seq_len)
    starts = np.random.default_rng([seed, 2]).integers(0, len(train) - seq_len, size=n)
    return train, train[starts[:, None] + np.arange(seq_len + 1)], ordered_val


def random_windows(ids, batch_size: int, seq_len: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A batch of B windows of T+1 tokens drawn uniformly from ids: x = w[:, :-1], y = w[:, 1:]."""
    ids = _as_ids(ids)
    _check_positive(batch_size=batch_size, seq_len=seq_len)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"rng must be a numpy.random.Generator (np.random.default_rng(seed)), got {type(rng).__name__}."
        )
    _check_fits(ids, seq_len, "token ids")
    starts = rng.integers(0, len(ids) - seq_len, size=batch_size)  # last start leaves room for T+1 tokens
    windows = ids[starts[:, None] + np.arange(seq_len + 1)]  # (B, T+1)
    return windows[:, :-1], windows[:, 1:]  # (B, T), (B, T): y is x shifted left by one


def eval_windows(ids, seq_len: int, batch_size: int = 1):
    """Yield non-overlapping (x, y) batches in which every token after the first is predicted once.

    Full windows come as int64 arrays of shape (b, T) with b <= batch_size; the
    tokens left over at the end come last as one shorter (1, t) window, t < T.
    Each window starts with no earlier context, as in nanoGPT's evaluation.
    A 2-D ids array (n, T + 1) is taken as n windows already cut (random_window_split's).
    """
    if np.ndim(ids) == 2:
        windows = np.asarray(ids, dtype=np.int64)
        if windows.shape[1] != seq_len + 1:
            raise ValueError(
                f"validation windows have {windows.shape[1]} tokens each; seq_len={seq_len} "
                f"needs seq_len + 1 = {seq_len + 1}."
            )
        for first in range(0, len(windows), batch_size):
            yield windows[first : first + batch_size, :-1], windows[first : first + batch_size, 1:]
        return
    ids = _as_ids(ids)
    _check_positive(batch_size=batch_size, seq_len=seq_len)
    _check_fits(ids, seq_len, "validation ids")
    n_targets = len(ids) - 1  # the first token is never a target
    n_full = n_targets // seq_len
    offsets = np.arange(seq_len + 1)
    for first in range(0, n_full, batch_size):
        starts = np.arange(first, min(first + batch_size, n_full)) * seq_len
        windows = ids[starts[:, None] + offsets]  # (b, T+1), neighbours share one boundary token
        yield windows[:, :-1], windows[:, 1:]
    start = n_full * seq_len
    if start < n_targets:  # the shorter last window
        yield ids[None, start:-1], ids[None, start + 1 :]


def bits_per_byte(total_nll_nats: float, n_bytes: int) -> float:
    """Bits per byte = total_nll_nats / (ln 2 * n_bytes).

    total_nll_nats is the summed negative log-likelihood (natural log) of the
    predicted tokens; n_bytes is how many UTF-8 bytes those tokens decode to
    (``BPETokenizer.token_bytes(y)``). Unlike loss per token, this does not
    depend on the vocabulary, so tokenizers can be compared.
    """
    if n_bytes <= 0:
        raise ValueError(f"n_bytes must be > 0, got {n_bytes!r}.")
    return float(total_nll_nats) / (math.log(2) * n_bytes)


def perplexity(mean_nll_nats: float) -> float:
    """Perplexity = exp(mean negative log-likelihood per token, in nats); inf once that overflows a float."""
    return math.exp(mean_nll_nats) if mean_nll_nats < 709.78 else math.inf


def _as_ids(ids) -> np.ndarray:
    """ids as a 1-D int64 array, or a ValueError saying what was given."""
    ids = np.asarray(ids)
    if ids.ndim != 1 or not (np.issubdtype(ids.dtype, np.integer) or ids.size == 0):
        raise ValueError(f"expected a 1-D array of integer token ids, got shape {ids.shape} dtype {ids.dtype}.")
    return ids.astype(np.int64, copy=False)


def _check_positive(**sizes) -> None:
    """Raise ValueError unless every given size is a positive int."""
    for name, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}.")


def _check_fits(ids: np.ndarray, seq_len: int, what: str) -> None:
    """Raise ValueError unless ids hold at least one window of seq_len + 1 tokens."""
    if len(ids) < seq_len + 1:
        raise ValueError(
            f"{what} are too short: {len(ids)} tokens, but seq_len={seq_len} needs at least "
            f"seq_len + 1 = {seq_len + 1}; use a shorter seq_len or more data."
        )
