"""Tests for models/corpus.py: where the corpus comes from, and the download's checksum."""

import os
import runpy
import urllib.error
from pathlib import Path

import pytest

from models import corpus
from models.corpus import CORPUS_SHA256, CorpusError, corpus_path, load_corpus

SMALL_CORPUS_BYTES = 64_052  # tests/data/small_corpus.txt


@pytest.fixture
def stand_in_sha(monkeypatch, corpus_file):
    """The small corpus plays Tiny Shakespeare: CORPUS_SHA256 becomes its checksum (the real one is checked below)."""
    data = corpus_file.read_bytes()
    monkeypatch.setattr(corpus, "CORPUS_SHA256", corpus.sha256_hex(data))
    return data


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """No env var, an empty cache in tmp_path, and a download that fails the test if called."""
    monkeypatch.delenv("TENSORLAB_CORPUS", raising=False)
    monkeypatch.setenv("TENSORLAB_CACHE", str(tmp_path / "cache"))

    def no_network(url, timeout):
        raise AssertionError("the test tried to download")

    monkeypatch.setattr(corpus, "fetch_bytes", no_network)
    return tmp_path / "cache"


def test_explicit_path_wins_over_env(offline, monkeypatch, tmp_path):
    mine = tmp_path / "mine.txt"
    mine.write_text("to be or not to be\n", encoding="utf-8")
    monkeypatch.setenv("TENSORLAB_CORPUS", str(tmp_path / "elsewhere.txt"))
    assert corpus_path(mine) == mine
    assert load_corpus(str(mine)) == "to be or not to be\n"


def test_env_var_is_used_without_checksum(offline, monkeypatch, tmp_path):
    other = tmp_path / "other.txt"
    other.write_text("héllo wörld", encoding="utf-8")  # any UTF-8 text will do
    monkeypatch.setenv("TENSORLAB_CORPUS", str(other))
    assert corpus_path() == other
    assert load_corpus() == "héllo wörld"


def test_the_small_test_corpus_loads_and_is_what_its_script_makes(corpus_file):
    text = load_corpus(corpus_file)
    assert len(text.encode("utf-8")) == SMALL_CORPUS_BYTES
    assert text.startswith("First Citizen:\n") and text.endswith(".\n") and text.isascii()
    make = runpy.run_path(str(corpus_file.parent / "make_small_corpus.py"))["make_corpus"]
    assert make() == text  # the shipped file is reproducible from its script


def test_the_real_checksum_is_tiny_shakespeare_s():
    assert CORPUS_SHA256 == "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"  # of 1,115,394 bytes
    assert corpus.sha256_hex(b"abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"  # FIPS 180-2


def test_cached_copy_is_used_without_network(offline, stand_in_sha):
    offline.mkdir(parents=True)
    (offline / "tinyshakespeare.txt").write_bytes(stand_in_sha)
    assert corpus_path() == offline / "tinyshakespeare.txt"
    assert len(load_corpus()) == SMALL_CORPUS_BYTES  # ASCII: one char per byte


def test_tampered_cache_is_refused(offline):
    offline.mkdir(parents=True)
    (offline / "tinyshakespeare.txt").write_text("truncated", encoding="utf-8")
    with pytest.raises(CorpusError, match="delete it"):
        corpus_path()


def test_download_with_right_bytes_is_cached_atomically(offline, monkeypatch, stand_in_sha):
    data = stand_in_sha
    calls, replaced = [], []
    monkeypatch.setattr(corpus, "fetch_bytes", lambda url, timeout: calls.append(url) or data)
    real_replace = os.replace

    def spy_replace(src, dst):
        replaced.append((Path(src), Path(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy_replace)

    path = corpus_path()

    assert calls == [corpus.CORPUS_URL]
    assert path == offline / "tinyshakespeare.txt"
    assert path.read_bytes() == data and corpus.sha256_hex(data) == corpus.CORPUS_SHA256
    ((tmp, dst),) = replaced  # written to a temp file in the same directory, then renamed
    assert tmp.parent == dst.parent == offline and tmp != dst
    assert sorted(p.name for p in offline.iterdir()) == ["tinyshakespeare.txt"]  # no temp file left
    corpus_path()  # now cached: no second download
    assert len(calls) == 1


def test_download_with_wrong_bytes_is_refused_and_not_cached(offline, monkeypatch):
    monkeypatch.setattr(corpus, "fetch_bytes", lambda url, timeout: b"not shakespeare")
    with pytest.raises(CorpusError, match=f"expected {CORPUS_SHA256}.*nothing was cached"):
        corpus_path()
    assert not offline.exists() or list(offline.iterdir()) == []


def test_no_network_and_no_copy_says_how_to_give_one(offline, monkeypatch):
    def unreachable(url, timeout):
        raise urllib.error.URLError("Name or service not known")

    monkeypatch.setattr(corpus, "fetch_bytes", unreachable)
    with pytest.raises(CorpusError) as err:
        load_corpus()
    message = str(err.value)
    assert "--data PATH" in message and "TENSORLAB_CORPUS=PATH" in message
    assert "Name or service not known" in message
    assert not offline.exists() or list(offline.iterdir()) == []


def test_timeout_is_a_corpus_error(offline, monkeypatch):
    def slow(url, timeout):
        raise TimeoutError("timed out")

    monkeypatch.setattr(corpus, "fetch_bytes", slow)
    with pytest.raises(CorpusError, match="timed out"):
        corpus_path()


def test_missing_file_names_the_path(offline, tmp_path):
    missing = tmp_path / "nope.txt"
    with pytest.raises(CorpusError, match="nope.txt.*does not exist"):
        load_corpus(missing)


def test_missing_env_file_names_the_variable(offline, monkeypatch, tmp_path):
    monkeypatch.setenv("TENSORLAB_CORPUS", str(tmp_path / "gone.txt"))
    with pytest.raises(CorpusError, match="gone.txt.*TENSORLAB_CORPUS"):
        load_corpus()


def test_non_utf8_file_names_the_path(offline, tmp_path):
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("café".encode("latin-1"))
    with pytest.raises(CorpusError, match="latin1.txt is not UTF-8.*byte 3"):
        load_corpus(latin1)


def test_empty_file_names_the_path(offline, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    with pytest.raises(CorpusError, match="empty.txt is empty"):
        load_corpus(empty)


def test_corpus_error_is_a_runtime_error():
    assert issubclass(CorpusError, RuntimeError)
