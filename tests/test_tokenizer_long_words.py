"""Tokenizer training stays linear in the corpus: pre-tokens longer than MAX_PRETOKEN characters are cut.

BPE training counts the pairs inside every pre-token after every merge, so one 2 MB run of letters
without a space was quadratic (minutes, printing nothing). Cut into pieces, it trains like any text;
natural text, whose words are far shorter, gets the same merges and the same ids as without the cut.
"""

import numpy as np
import pytest

from models import tokenizer as tokenizer_module
from models.tokenizer import MAX_PRETOKEN, BPETokenizer


@pytest.mark.parametrize("pretokenizer", ["bytelevel", "whitespace"])
def test_a_long_run_of_letters_is_cut_and_still_round_trips(pretokenizer):
    run = "".join(np.random.default_rng(0).choice(list("abcdefgh"), size=20_000))
    text = "some words before " + run + " and after\n"
    tok = BPETokenizer.train(text * 2, 300, pretokenizer)
    pieces = tok._tok.pre_tokenizer.pre_tokenize_str(run)
    assert len(pieces) == -(-len(run) // MAX_PRETOKEN) and max(len(p) for p, _ in pieces) == MAX_PRETOKEN
    decoded = tok.decode(tok.encode(text))
    if pretokenizer == "bytelevel":
        assert decoded == text  # lossless
    else:  # whitespace mode drops the whitespace, and keeps every other character
        assert "".join(decoded.split()) == "".join(text.split())


@pytest.mark.parametrize("pretokenizer", ["bytelevel", "whitespace"])
def test_natural_text_gets_the_same_merges_and_ids_as_without_the_cut(corpus_file, monkeypatch, pretokenizer):
    text = corpus_file.read_text(encoding="utf-8")
    capped = BPETokenizer.train(text, 400, pretokenizer)
    monkeypatch.setattr(tokenizer_module, "_capped", lambda pre_tokenizer: pre_tokenizer)
    plain = BPETokenizer.train(text, 400, pretokenizer)
    assert np.array_equal(capped.encode(text), plain.encode(text))
    assert capped._tok.get_vocab() == plain._tok.get_vocab()
