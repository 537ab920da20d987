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


def test_ids_cut_inside_a_character_decode_without_a_replacement_char():
    """A sample may stop after any byte-level token: the unfinished character is held back, not shown as U+FFFD."""
    text = "naïve café — 東京 ok"
    tok = BPETokenizer.train("the quick brown fox jumps over the lazy dog\n" * 50, 262)  # ASCII merges only
    ids = tok.encode(text)
    inside = 0
    for k in range(len(ids) + 1):
        decoded = tok.decode(ids[:k])
        inside += tok._tok.decode(ids[:k].tolist()).endswith("\ufffd")  # what the library alone shows
        assert "\ufffd" not in decoded, (k, decoded)
        assert text.startswith(decoded), (k, decoded)  # a prefix of the text: nothing lost, nothing invented
    assert inside >= 5 and tok.decode(ids) == text  # five cuts fell inside ï, é, —, 東 or 京


def test_bytes_that_form_no_character_still_show_as_replacement_chars():
    tok = BPETokenizer.train("abc é" * 50, 262)
    lone_continuation = tok._tok.token_to_id(chr(0xA9))  # byte 0xA9 (é's second byte) alone, as byte-level shows it
    assert tok.decode(np.concatenate([[lone_continuation], tok.encode("abc")])) == "\ufffdabc"
