"""Tests for models/data.py: splits, batches, evaluation windows, bits per byte."""

import math

import numpy as np
import pytest

from models.data import bits_per_byte, eval_windows, perplexity, random_windows, split_tokens
from models.tokenizer import BPETokenizer


@pytest.fixture(scope="module")
def corpus_ids(corpus_file) -> tuple[BPETokenizer, np.ndarray]:
    """A 500-token tokenizer trained once, and the whole corpus encoded with it."""
    text = corpus_file.read_text(encoding="utf-8")
    tok = BPETokenizer.train(text, vocab_size=500)
    return tok, tok.encode(text)


def test_split_is_in_order_without_overlap():
    ids = np.arange(1000)
    train, val = split_tokens(ids, val_fraction=0.1)
    assert (len(train), len(val)) == (900, 100)
    assert train.dtype == val.dtype == np.int64
    assert np.array_equal(np.concatenate([train, val]), ids)  # in order, nothing lost or repeated
    assert train[-1] == 899 and val[0] == 900


def test_split_of_the_test_corpus(corpus_ids, corpus_file):
    tok, ids = corpus_ids
    train, val = split_tokens(ids)
    assert len(val) == int(len(ids) * 0.1) and len(train) + len(val) == len(ids)
    assert tok.token_bytes(train) + tok.token_bytes(val) == corpus_file.stat().st_size


@pytest.mark.parametrize("fraction", [0, 1, -0.1, 1.5])
def test_split_refuses_fractions_outside_0_1(fraction):
    with pytest.raises(ValueError, match=f"strictly between 0 and 1, got {fraction}"):
        split_tokens(np.arange(100), val_fraction=fraction)


def test_split_refuses_an_empty_part():
    with pytest.raises(ValueError, match="5 tokens.*5 train and 0 validation"):
        split_tokens(np.arange(5), val_fraction=0.1)


def test_random_windows_are_shifted_and_inside_train():
    ids = np.arange(100, 300)  # the value of a token says where it sits
    x, y = random_windows(ids, batch_size=64, seq_len=16, rng=np.random.default_rng(0))
    assert x.shape == y.shape == (64, 16) and x.dtype == y.dtype == np.int64
    assert np.array_equal(y[:, :-1], x[:, 1:])  # y is x shifted by one
    assert np.all(y == x + 1)  # consecutive tokens of ids
    assert x.min() >= 100 and y.max() <= 299


def test_random_windows_reach_both_ends_and_repeat_with_a_seed():
    ids = np.arange(20)
    x, y = random_windows(ids, batch_size=2000, seq_len=4, rng=np.random.default_rng(1))
    assert set(x[:, 0]) == set(range(16))  # every start 0..len-T-1 is drawn
    assert y.max() == 19
    x2, _ = random_windows(ids, batch_size=2000, seq_len=4, rng=np.random.default_rng(1))
    assert np.array_equal(x, x2)


def test_eval_windows_predict_every_token_once():
    ids = np.arange(1, 24)  # 23 tokens: 22 targets = 5 full windows of 4, then 2
    batches = list(eval_windows(ids, seq_len=4, batch_size=2))
    assert [x.shape for x, _ in batches] == [(2, 4), (2, 4), (1, 4), (1, 2)]
    targets = np.concatenate([y.ravel() for _, y in batches])
    assert np.array_equal(np.sort(targets), ids[1:])  # each token after the first, exactly once
    for x, y in batches:
        assert np.all(y == x + 1)


def test_eval_windows_when_len_is_a_multiple_of_seq_len():
    ids = np.arange(8)  # 7 targets = 1 window of 4, then 3
    assert [(x.tolist(), y.tolist()) for x, y in eval_windows(ids, seq_len=4)] == [
        ([[0, 1, 2, 3]], [[1, 2, 3, 4]]),
        ([[4, 5, 6]], [[5, 6, 7]]),
    ]


def test_eval_windows_with_no_remainder():
    ids = np.arange(9)  # 8 targets = 2 windows of 4
    assert [(x.tolist(), y.tolist()) for x, y in eval_windows(ids, seq_len=4)] == [
        ([[0, 1, 2, 3]], [[1, 2, 3, 4]]),
        ([[4, 5, 6, 7]], [[5, 6, 7, 8]]),
    ]


def test_eval_windows_cover_the_validation_split(corpus_ids):
    _, ids = corpus_ids
    _, val = split_tokens(ids)
    n_targets = sum(y.size for _, y in eval_windows(val, seq_len=128, batch_size=32))
    assert n_targets == len(val) - 1


def test_too_short_for_a_window_says_sizes_and_seq_len():
    with pytest.raises(ValueError, match=r"10 tokens, but seq_len=10 needs at least seq_len \+ 1 = 11"):
        random_windows(np.arange(10), batch_size=1, seq_len=10, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="validation ids are too short: 3 tokens, but seq_len=8"):
        next(eval_windows(np.arange(3), seq_len=8))


def test_bad_batch_arguments():
    with pytest.raises(ValueError, match="batch_size must be a positive int, got 0"):
        random_windows(np.arange(100), batch_size=0, seq_len=4, rng=np.random.default_rng(0))
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        random_windows(np.arange(100), batch_size=2, seq_len=4, rng=0)


def test_bits_per_byte_by_hand():
    assert bits_per_byte(8 * math.log(2), 4) == pytest.approx(2.0)  # 8 bits over 4 bytes
    assert bits_per_byte(0.0, 10) == 0.0
    with pytest.raises(ValueError, match="n_bytes must be > 0, got 0"):
        bits_per_byte(1.0, 0)


def test_perplexity_by_hand():
    assert perplexity(math.log(65)) == pytest.approx(65.0)  # uniform over 65 symbols
    assert perplexity(0.0) == 1.0
