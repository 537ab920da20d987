"""Find, download and read the corpus: Tiny Shakespeare by default, TinyStories by name, or any text.

Where the corpus comes from, in order:
  1. an explicit ``path`` argument: any UTF-8 text file, or a directory whose text files (found
     recursively, in sorted order) are the documents of one corpus, kept apart by END_OF_TEXT
     (no checksum),
  2. the environment variable ``TENSORLAB_CORPUS`` (same rules),
  3. the cached copy ``$TENSORLAB_CACHE/tinyshakespeare.txt``
     (``TENSORLAB_CACHE`` defaults to ``~/.cache/tensorlab``),
  4. a download from ``CORPUS_URL``, checked against ``CORPUS_SHA256``
     and then written atomically to the cache.

The name ``tinystories`` (as the path or in ``TENSORLAB_CORPUS``; a local file of that name is given as
``./tinystories``) is TinyStories' training text, ``TINYSTORIES_URL`` (``TENSORLAB_TINYSTORIES_URL`` replaces
it, e.g. with a ``file://`` URL of a local copy). Its stories are kept apart by END_OF_TEXT lines in that file.
No checksum of it is published that could be checked here, and only its first stories are usually wanted, so:
asked for the first N documents, only the bytes before the N-th END_OF_TEXT are downloaded (12,000 stories are
about 10 MB of the 2 GB file) and cached as ``tinystories-train-first{N}.txt``; asked for all, the whole file
is, as ``tinystories-train.txt``. The first download is trusted, and its size and sha256 are recorded beside it
and checked at every later use (models/download_cache.py): a copy changed since is refused.

``documents=N`` keeps the first N documents of any corpus (the pieces between END_OF_TEXT: a directory's files,
TinyStories' stories; a file without END_OF_TEXT is one document).
"""

import os
import urllib.request
from pathlib import Path

from models.download_cache import cache_dir, is_cached, sha256_hex, write_recorded
from models.tokenizer import END_OF_TEXT
from tensorlab.serialization import write_atomically

CORPUS_URL = "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
CORPUS_SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
CORPUS_FILENAME = "tinyshakespeare.txt"
CORPUS_ENV = "TENSORLAB_CORPUS"
DOWNLOAD_TIMEOUT_S = 30
TINYSTORIES = "tinystories"
TINYSTORIES_URL = "https://huggingface.co/datasets/roneneldan/TinyStories/resolve/main/TinyStories-train.txt"
TINYSTORIES_URL_ENV = "TENSORLAB_TINYSTORIES_URL"
READ_CHUNK = 1 << 20  # bytes read at a time while looking for the end of the stories asked for

HOW_TO_GIVE_A_COPY = f"Give a local copy with --data PATH or {CORPUS_ENV}=PATH (the file is {CORPUS_URL})."


class CorpusError(RuntimeError):
    """The corpus could not be found, downloaded, verified or read."""


def fetch_bytes(url: str = CORPUS_URL, timeout: float = DOWNLOAD_TIMEOUT_S) -> bytes:
    """Download ``url`` and return its bytes (tests replace this to stay offline)."""
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read()


def corpus_path(path=None, documents=0) -> Path:
    """Where the corpus is: ``path``, $TENSORLAB_CORPUS, the cache, or a fresh download.

    ``documents`` matters to TinyStories alone: how many of its stories must be downloaded (0: all).
    """
    if str(path) == TINYSTORIES or (path is None and os.environ.get(CORPUS_ENV) == TINYSTORIES):
        return tinystories_path(documents)
    if path is not None:
        return _existing_file(Path(path), "given path")
    if os.environ.get(CORPUS_ENV):
        return _existing_file(Path(os.environ[CORPUS_ENV]), f"{CORPUS_ENV}")
    cached = cache_dir() / CORPUS_FILENAME
    if cached.is_file():
        _check_cached(cached)
        return cached
    return _download_to(cached)


def load_corpus(path=None, documents=0) -> str:
    """The corpus text, resolved as in ``corpus_path``; must be non-empty UTF-8.

    A directory gives its files' texts joined by END_OF_TEXT, each file one document. ``documents=N`` keeps
    the first N documents (0: all); a corpus with fewer is refused.
    """
    where = corpus_path(path, documents)
    if where.is_dir():
        files = sorted(p for p in where.rglob("*") if p.is_file() and not p.name.startswith("."))
        if not files:
            raise CorpusError(f"corpus directory {where} holds no files; expected UTF-8 text files.")
        text = END_OF_TEXT.join(_read_text(f) for f in files)
    else:
        text = _read_text(where)
    return _first_documents(text, documents, where) if documents else text


def tinystories_path(documents=0) -> Path:
    """The cached TinyStories text holding at least its first ``documents`` stories (0: all), downloaded if need be.

    A cached copy of the whole file, or of more first stories than asked for, serves too.
    """
    whole = cache_dir() / "tinystories-train.txt"
    longer = sorted(n for n in _cached_first_counts() if n >= documents) if documents else []
    for cached in [whole] + [cache_dir() / f"tinystories-train-first{n}.txt" for n in longer]:
        if is_cached(cached):
            return cached
    cached = cache_dir() / f"tinystories-train-first{documents}.txt" if documents else whole
    url = os.environ.get(TINYSTORIES_URL_ENV) or TINYSTORIES_URL
    try:
        data = fetch_documents(url, documents, DOWNLOAD_TIMEOUT_S)
    except (OSError, ValueError) as err:  # URLError, HTTPError, timeouts; ValueError: a malformed URL
        raise CorpusError(
            f"no cached copy of TinyStories at {cached}, and the download from {url} failed: {err}. Give a local "
            f"copy with --data PATH, or its file:// URL in {TINYSTORIES_URL_ENV}."
        ) from err
    if not data:
        raise CorpusError(f"the download of TinyStories from {url} is empty; nothing was cached.")
    return write_recorded(cached, data, url)


def _cached_first_counts() -> list[int]:
    """N of every tinystories-train-first{N}.txt in the cache."""
    names = (p.name for p in cache_dir().glob("tinystories-train-first*.txt"))
    counts = (name.removeprefix("tinystories-train-first").removesuffix(".txt") for name in names)
    return [int(n) for n in counts if n.isdecimal()]


def fetch_documents(url: str, documents: int, timeout: float = DOWNLOAD_TIMEOUT_S) -> bytes:
    """The bytes of ``url`` before its ``documents``-th END_OF_TEXT, read no further than that (0: all of it)."""
    separator = END_OF_TEXT.encode("utf-8")
    data, found, start = bytearray(), 0, 0
    with urllib.request.urlopen(url, timeout=timeout) as response:
        while chunk := response.read(READ_CHUNK):
            data += chunk
            while documents and (at := data.find(separator, start)) != -1:
                found += 1
                if found == documents:
                    return bytes(data[:at])
                start = at + len(separator)
            start = max(start, len(data) - len(separator) + 1)  # a separator may straddle two chunks
    return bytes(data)


def _first_documents(text: str, documents: int, where: Path) -> str:
    """The first ``documents`` pieces of ``text`` between END_OF_TEXT, or a CorpusError if it has fewer."""
    # at most documents + 1 pieces, the rest in the last (a text holds fewer separators than characters: a count
    # past that, 10**30, would not fit split's C integer)
    pieces = text.split(END_OF_TEXT, min(documents, len(text)))
    if len(pieces) < documents:
        raise CorpusError(
            f"corpus {where} holds {len(pieces)} documents (kept apart by {END_OF_TEXT}), fewer than the "
            f"{documents} asked for with documents (--documents); ask for at most {len(pieces)}, or 0 for all."
        )
    return END_OF_TEXT.join(pieces[:documents])


def _read_text(where: Path) -> str:
    """One file's text: non-empty UTF-8, else a one-line CorpusError naming the file and the first bad byte."""
    data = where.read_bytes()
    if not data:
        raise CorpusError(f"corpus file {where} is empty; expected UTF-8 text.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise CorpusError(
            f"corpus file {where} is not UTF-8 text "
            f"(byte {err.start} is {data[err.start : err.start + 1]!r}); expected a UTF-8 text file."
        ) from None


def _existing_file(path: Path, source: str) -> Path:
    """``path`` if it is a file or a directory, else a CorpusError saying where the path came from."""
    path = path.expanduser()
    if not (path.is_file() or path.is_dir()):
        what = "is neither a file nor a directory (a FIFO, a device)" if path.exists() else "does not exist"
        raise CorpusError(f"corpus file {path} ({source}) {what}; expected a UTF-8 text file or a directory of them.")
    return path


def _check_cached(cached: Path) -> None:
    """Refuse a cached copy whose checksum is wrong (e.g. edited or truncated by hand)."""
    got = sha256_hex(cached.read_bytes())
    if got != CORPUS_SHA256:
        raise CorpusError(
            f"cached corpus {cached} has sha256 {got}, expected {CORPUS_SHA256}; "
            f"delete it to download it again. {HOW_TO_GIVE_A_COPY}"
        )


def _download_to(cached: Path) -> Path:
    """Download the corpus, verify its checksum, and write it to ``cached`` atomically."""
    try:
        data = fetch_bytes(CORPUS_URL, DOWNLOAD_TIMEOUT_S)
    except OSError as err:  # URLError, HTTPError and timeouts are all OSErrors
        raise CorpusError(
            f"no local corpus found (no path given, {CORPUS_ENV} unset, no cached copy at "
            f"{cached}) and the download from {CORPUS_URL} failed: {err}. {HOW_TO_GIVE_A_COPY}"
        ) from err
    got = sha256_hex(data)
    if got != CORPUS_SHA256:
        raise CorpusError(
            f"downloaded corpus from {CORPUS_URL} has sha256 {got}, expected {CORPUS_SHA256}; "
            f"nothing was cached. {HOW_TO_GIVE_A_COPY}"
        )
    write_atomically(cached, data)
    return cached
