"""Any corpus: a directory of text files as one corpus, a non-UTF-8 file in one line, prompts from the corpus."""

import numpy as np
import pytest

from models.corpus import CorpusError, load_corpus
from models.prompts import corpus_prompts, read_prompts_file, run_prompts
from models.tokenizer import END_OF_TEXT, BPETokenizer

MANUAL = "".join(f"Section {i}. To delete a line type dd; to yank it type yy and paste with p.\n" for i in range(60))


def story_corpus(directory, n=40):
    """A small generated corpus: one short story per file."""
    directory.mkdir()
    names, things = ["Lily", "Tom", "Sue", "Max"], ["ball", "kite", "cat", "boat"]
    for i in range(n):
        who, what = names[i % 4], things[(i // 4) % 4]
        (directory / f"story{i:03d}.txt").write_text(
            f"Once upon a time, {who} found a {what}. {who} was happy and played with the {what} all day.\n"
        )
    return directory


def test_a_directory_is_one_corpus_with_documents_kept_apart(tmp_path):
    d = tmp_path / "docs"
    d.mkdir()
    (d / "b.txt").write_text("second document")
    (d / "a.txt").write_text("first document")
    (d / "sub").mkdir()
    (d / "sub" / "c.txt").write_text("third")
    assert load_corpus(d) == f"first document{END_OF_TEXT}second document{END_OF_TEXT}third"


def test_end_of_text_is_one_token_never_merged_with_text(tmp_path):
    text = load_corpus(story_corpus(tmp_path / "stories"))
    for pretokenizer in ("bytelevel", "whitespace"):
        tok = BPETokenizer.train(text, 300, pretokenizer)
        ids = tok.encode(f"happy{END_OF_TEXT}Once")
        labels = tok.token_strings(ids)
        assert labels.count(END_OF_TEXT) == 1, labels
        assert tok.token_bytes(tok.encode(END_OF_TEXT)) == len(END_OF_TEXT)
    assert tok.vocab_size <= 300


def test_a_file_that_is_not_utf8_gets_one_line_naming_it(tmp_path):
    d = tmp_path / "docs"
    d.mkdir()
    (d / "good.txt").write_text("fine")
    (d / "latin1.txt").write_bytes("caf\xe9 cr\xe8me".encode("latin-1"))
    with pytest.raises(CorpusError) as err:
        load_corpus(d)
    assert len(str(err.value).splitlines()) == 1
    assert "latin1.txt is not UTF-8 text (byte 3 is b'\\xe9')" in str(err.value)
    with pytest.raises(CorpusError, match="holds no files"):
        (tmp_path / "empty").mkdir()
        load_corpus(tmp_path / "empty")


def test_prompts_come_from_the_corpus_itself():
    tok = BPETokenizer.train(MANUAL, 300)
    val = tok.encode(MANUAL[len(MANUAL) // 2 :])
    prompts = corpus_prompts(val, tok)
    assert len(prompts) == 3 and len(set(prompts)) == 3
    for prompt in prompts:
        assert prompt.strip() and prompt in MANUAL
    assert prompts[0].startswith("Section")  # a passage starts after a newline
    assert run_prompts(("ROMEO:",), val, tok) == ["ROMEO:"]
    assert run_prompts((), val, tok) == prompts


def test_prompts_file_one_per_line(tmp_path):
    path = tmp_path / "p.txt"
    path.write_text("To delete\n\nFirst Citizen:\\nWe are\n")
    assert read_prompts_file(path) == ("To delete", "First Citizen:\nWe are")
    (tmp_path / "empty.txt").write_text("\n")
    with pytest.raises(ValueError, match="holds no prompt"):
        read_prompts_file(tmp_path / "empty.txt")


def test_prompts_of_random_window_validation_read_the_windows_in_order():
    tok = BPETokenizer.train(MANUAL, 300)
    windows = tok.encode(MANUAL)[:160].reshape(10, 16)
    assert all(p in MANUAL for p in corpus_prompts(windows, tok))
    assert np.ravel(windows).size == 160
