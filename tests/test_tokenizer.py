"""Tests for models/tokenizer.py: exact round trips, vocabulary size, saving, byte counts."""

import numpy as np
import pytest
from tokenizers import pre_tokenizers

from models.tokenizer import BPETokenizer, byte_level_chars

TRICKY = "Hello  \n  world\n\n\n   x y\t\n\tz  \nend  "  # runs of spaces around newlines


def first_difference(a: str, b: str):
    """None if a == b, else (index, a's and b's next few characters): a short failure message for 1 MB strings."""
    if a == b:
        return None
    i = next((k for k, (ca, cb) in enumerate(zip(a, b)) if ca != cb), min(len(a), len(b)))
    return i, a[i : i + 20], b[i : i + 20]


@pytest.fixture(scope="module")
def text(corpus_file) -> str:
    """The test corpus (64 KB in Tiny Shakespeare's layout)."""
    return corpus_file.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def tok(text) -> BPETokenizer:
    """A 500-token byte-level tokenizer trained once on the whole corpus."""
    return BPETokenizer.train(text, vocab_size=500)


@pytest.fixture(scope="module")
def ids(tok, text) -> np.ndarray:
    """The whole corpus encoded once."""
    return tok.encode(text)


def test_byte_level_map_covers_every_byte_once():
    chars = byte_level_chars()
    assert sorted(chars.values()) == list(range(256))
    assert set(chars) == set(pre_tokenizers.ByteLevel.alphabet())
    assert chars["Ġ"] == ord(" ") and chars["Ċ"] == ord("\n")


def test_vocab_is_exactly_the_size_asked_for(tok):
    assert tok.vocab_size == 500
    assert BPETokenizer.train("abc abd " * 50, vocab_size=300).vocab_size <= 300


def test_whole_corpus_round_trips(tok, text, ids):
    assert ids.dtype == np.int64 and ids.ndim == 1
    assert 2 < len(text) / len(ids) < 8  # merges learned: several bytes per token at 500 tokens
    assert ids.min() >= 0 and ids.max() < tok.vocab_size
    assert first_difference(tok.decode(ids), text) is None


def test_chunked_encode_equals_encoding_the_whole_string(tok, text, ids):
    assert np.array_equal(ids, tok._tok.encode(text).ids)
    assert tok.encode(TRICKY).tolist() == tok._tok.encode(TRICKY).ids


def test_chunked_encode_is_exact_when_merges_span_a_newline():
    indented = "def f():\n    return 1\n\n    \n  x  \n\tpass\n" * 50  # merges like "\n    " get learned
    small = BPETokenizer.train(indented, vocab_size=300)
    assert any("↵␣" in label for label in small.token_strings(range(small.vocab_size)))
    assert small.encode(indented).tolist() == small._tok.encode(indented).ids  # cutting at plain lines would differ
    assert small.decode(small.encode(indented)) == indented


def test_tricky_whitespace_and_unseen_characters_round_trip(tok):
    for s in [TRICKY, " leading space", "trailing\n", "naïve café ☃ 😀", "\n\n", "a"]:
        assert tok.decode(tok.encode(s)) == s
    assert tok.encode("").shape == (0,) and tok.decode([]) == ""


def test_save_and_load_give_identical_encodings(tok, text, ids, tmp_path):
    path = tmp_path / "tok.json"
    tok.save(path)
    assert [p.name for p in tmp_path.iterdir()] == ["tok.json"]  # no temp file left behind
    again = BPETokenizer.load(path)
    assert again.pretokenizer == "bytelevel" and again.vocab_size == 500
    assert np.array_equal(again.encode(text), ids)


def test_load_refuses_other_json(tmp_path):
    path = tmp_path / "other.json"
    path.write_text('{"hello": 1}', encoding="utf-8")
    with pytest.raises(ValueError, match="other.json is not a saved tokenizer"):
        BPETokenizer.load(path)


def test_token_bytes_is_exact_and_additive(tok, text, ids):
    assert tok.token_bytes(ids) == len(text.encode("utf-8")) == 64_052
    cut = 12_345
    assert tok.token_bytes(ids[:cut]) + tok.token_bytes(ids[cut:]) == tok.token_bytes(ids)
    for i in ids[:200]:
        assert tok.token_bytes([i]) == len(tok.decode([i]).encode("utf-8"))
    snowman = tok.encode("☃")  # 3 bytes, likely split mid-character into several tokens
    assert tok.token_bytes(snowman) == 3


def test_token_strings_are_readable(tok):
    ids = tok.encode("First Citizen:\nBefore  we")
    labels = tok.token_strings(ids)
    assert "".join(labels) == "First␣Citizen:↵Before␣␣we"
    assert len(labels) == len(ids)
    assert all(len(label) > 0 for label in tok.token_strings(np.arange(tok.vocab_size)))


def test_decode_refuses_out_of_range_ids(tok):
    with pytest.raises(ValueError, match=r"token id 500 is out of range.*\[0, 500\)"):
        tok.decode([1, 500])
    with pytest.raises(ValueError, match="token id -1"):
        tok.token_bytes([-1])


def test_whitespace_mode_trains_and_is_lossy(text):
    ws = BPETokenizer.train(text, vocab_size=300, pretokenizer="whitespace")  # < the 431 of all words merged
    assert ws.vocab_size == 300  # [UNK] counts
    ids = ws.encode("First Citizen:\nBefore we")
    assert ids.dtype == np.int64 and len(ids) > 0
    decoded = ws.decode(ids)
    assert decoded == " ".join(ws.token_strings(ids))  # every token, even part of a word, gets a space
    assert decoded.replace(" ", "") == "FirstCitizen:Beforewe"
    assert "\n" not in ws.decode(ws.encode("a\nb"))
    assert ws.token_strings(ws.encode("é")) == ["[UNK]"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"vocab_size": 259}, "vocab_size must be an int >= 260 for pretokenizer='bytelevel', got 259"),
        ({"vocab_size": 500.0}, "got 500.0"),
        ({"pretokenizer": "chars"}, "unknown pretokenizer 'chars'; expected one of"),
        ({"vocab_size": 10, "pretokenizer": "whitespace"}, "vocab_size=10 is too small"),
    ],
)
def test_bad_arguments_say_what_is_allowed(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        BPETokenizer.train("to be or not to be, that is the question", **kwargs)
