"""TinyStories by name (models/corpus.py): downloaded on first use, only as far as the stories asked for, cached
with a record of its size and sha256, checked at every later use; and `documents` on any corpus. Offline: the
"TinyStories" here is a small file the test writes, served by file:// URLs and by a local HTTP server."""

import http.server
import threading
import urllib.request
from pathlib import Path

import pytest

from models import corpus
from models.corpus import TINYSTORIES, CorpusError, load_corpus
from models.download_cache import CacheError, record_path
from models.tokenizer import END_OF_TEXT


def story(i):
    return f"Once upon a time, story {i} had a cat named Tom-{i}. Tom-{i} was happy. The end."


def tinystories_file(path, n):
    """TinyStories-train.txt's layout: stories with <|endoftext|> lines between them."""
    path.write_text("".join(f"{story(i)}\n{END_OF_TEXT}\n" for i in range(n)), encoding="utf-8")
    return path


@pytest.fixture
def served(monkeypatch, tmp_path):
    """A 50-story TinyStories file given by its file:// URL, an empty cache, and no Tiny Shakespeare download."""
    source = tinystories_file(tmp_path / "TinyStories-train.txt", 50)
    monkeypatch.setenv(corpus.TINYSTORIES_URL_ENV, source.as_uri())
    monkeypatch.setenv("TENSORLAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("TENSORLAB_CORPUS", raising=False)
    monkeypatch.setattr(corpus, "fetch_bytes", lambda url, timeout: pytest.fail("downloaded Tiny Shakespeare"))
    return source


def the_first(n):
    """The first n stories as load_corpus gives them: the file's text before the n-th separator."""
    return END_OF_TEXT.join([f"{story(0)}\n"] + [f"\n{story(i)}\n" for i in range(1, n)])


def test_the_first_stories_are_downloaded_cached_and_recorded(served, tmp_path):
    text = load_corpus(TINYSTORIES, documents=12)
    assert text == the_first(12)
    cached = tmp_path / "cache" / "tinystories-train-first12.txt"
    assert cached.read_text(encoding="utf-8") == text  # only the first 12 stories were kept
    record = record_path(cached).read_text()
    assert f'"bytes": {len(text.encode())}' in record and served.as_uri() in record
    assert sorted(p.name for p in cached.parent.iterdir()) == [cached.name, record_path(cached).name]


def test_a_cached_copy_is_used_without_network(served, monkeypatch):
    first = load_corpus(TINYSTORIES, documents=12)
    monkeypatch.setenv(corpus.TINYSTORIES_URL_ENV, (served.parent / "gone.txt").as_uri())
    assert load_corpus(TINYSTORIES, documents=12) == first
    assert load_corpus(TINYSTORIES, documents=5) == the_first(5)  # a longer cached copy needs no new download


def test_a_cached_copy_changed_since_its_download_is_refused(served, tmp_path):
    load_corpus(TINYSTORIES, documents=12)
    cached = tmp_path / "cache" / "tinystories-train-first12.txt"
    data = cached.read_bytes()
    cached.write_bytes(data.replace(b"Tom-3", b"Tim-3", 1))  # same size, other text
    with pytest.raises(CacheError) as err:
        load_corpus(TINYSTORIES, documents=12)
    message = str(err.value)
    assert "\n" not in message and str(cached) in message and "delete" in message
    cached.write_bytes(data[:-10])  # truncated
    with pytest.raises(CacheError, match=f"has {len(data) - 10} bytes"):
        load_corpus(TINYSTORIES, documents=12)


def test_a_copy_without_its_record_is_downloaded_again(served, tmp_path):
    cached = tmp_path / "cache" / "tinystories-train-first3.txt"
    cached.parent.mkdir(parents=True)
    cached.write_text("left by a run killed before it wrote the record", encoding="utf-8")
    assert load_corpus(TINYSTORIES, documents=3) == the_first(3)
    assert record_path(cached).is_file()


def test_all_stories_download_the_whole_file_which_then_serves_any_first_n(served, tmp_path, monkeypatch):
    assert load_corpus(TINYSTORIES) == served.read_text(encoding="utf-8")
    assert (tmp_path / "cache" / "tinystories-train.txt").read_bytes() == served.read_bytes()
    monkeypatch.setenv(corpus.TINYSTORIES_URL_ENV, (served.parent / "gone.txt").as_uri())
    assert load_corpus(TINYSTORIES, documents=7) == the_first(7)


def test_the_download_stops_after_the_stories_asked_for(served, monkeypatch):
    monkeypatch.setattr(corpus, "READ_CHUNK", 7)  # separators straddle reads
    read = []
    real_urlopen = urllib.request.urlopen

    def counting_urlopen(url, timeout):
        response = real_urlopen(url, timeout=timeout)
        real_read = response.read
        response.read = lambda n: read.append(n) or real_read(n)
        return response

    monkeypatch.setattr(urllib.request, "urlopen", counting_urlopen)
    assert load_corpus(TINYSTORIES, documents=4) == the_first(4)
    through = len(the_first(4).encode()) + len(END_OF_TEXT)  # the 4th separator ends in the last read
    assert through <= 7 * len(read) < through + 7
    assert served.stat().st_size > 10 * through


def test_tinystories_over_http_from_a_local_server(served, monkeypatch):
    handler = lambda *args: http.server.SimpleHTTPRequestHandler(*args, directory=str(served.parent))  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv(corpus.TINYSTORIES_URL_ENV, f"http://127.0.0.1:{server.server_port}/{served.name}")
        assert load_corpus(TINYSTORIES, documents=20) == the_first(20)
        monkeypatch.setenv(corpus.TINYSTORIES_URL_ENV, f"http://127.0.0.1:{server.server_port}/missing.txt")
        with pytest.raises(CorpusError, match="HTTP Error 404"):
            load_corpus(TINYSTORIES, documents=21)
    finally:
        server.shutdown()
        server.server_close()


def test_a_failed_download_is_one_line_saying_how_to_give_a_copy(served, monkeypatch, tmp_path):
    monkeypatch.setenv(corpus.TINYSTORIES_URL_ENV, (tmp_path / "nowhere.txt").as_uri())
    with pytest.raises(CorpusError) as err:
        load_corpus(TINYSTORIES, documents=3)
    message = str(err.value)
    assert "\n" not in message and "nowhere.txt" in message and "--data PATH" in message
    assert corpus.TINYSTORIES_URL_ENV in message
    assert not (tmp_path / "cache").exists() or list((tmp_path / "cache").iterdir()) == []


def test_the_name_works_in_the_environment_variable_too(served, monkeypatch):
    monkeypatch.setenv("TENSORLAB_CORPUS", TINYSTORIES)
    assert load_corpus(documents=2) == the_first(2)


def test_documents_keeps_the_first_files_of_a_directory_and_refuses_too_many(tmp_path):
    d = tmp_path / "docs"
    d.mkdir()
    for name in ("c", "a", "b"):
        (d / f"{name}.txt").write_text(f"document {name}")
    assert load_corpus(d, documents=2) == f"document a{END_OF_TEXT}document b"
    assert load_corpus(d, documents=3) == load_corpus(d)
    with pytest.raises(CorpusError) as err:
        load_corpus(d, documents=4)
    assert "\n" not in str(err.value) and "holds 3 documents" in str(err.value) and "4 asked for" in str(err.value)
    single = Path(d / "a.txt")
    assert load_corpus(single, documents=1) == "document a"  # a file without separators is one document
