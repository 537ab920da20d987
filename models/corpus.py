"""Find, download and read the Tiny Shakespeare corpus.

Where the corpus comes from, in order:
  1. an explicit ``path`` argument: any UTF-8 text file, or a directory whose text files (found
     recursively, in sorted order) are the documents of one corpus, kept apart by END_OF_TEXT
     (no checksum),
  2. the environment variable ``TENSORLAB_CORPUS`` (same rules),
  3. the cached copy ``$TENSORLAB_CACHE/tinyshakespeare.txt``
     (``TENSORLAB_CACHE`` defaults to ``~/.cache/tensorlab``),
  4. a download from ``CORPUS_URL``, checked against ``CORPUS_SHA256``
     and then written atomically to the cache.
"""

import hashlib
import os
import urllib.request
from pathlib import Path

from models.tokenizer import END_OF_TEXT
from tensorlab.serialization import write_atomically

CORPUS_URL = "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
CORPUS_SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
CORPUS_FILENAME = "tinyshakespeare.txt"
CORPUS_ENV = "TENSORLAB_CORPUS"
CACHE_ENV = "TENSORLAB_CACHE"
DOWNLOAD_TIMEOUT_S = 30

HOW_TO_GIVE_A_COPY = f"Give a local copy with --data PATH or {CORPUS_ENV}=PATH (the file is {CORPUS_URL})."


class CorpusError(RuntimeError):
    """The corpus could not be found, downloaded, verified or read."""


def cache_dir() -> Path:
    """The directory holding the downloaded corpus: $TENSORLAB_CACHE or ~/.cache/tensorlab."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "tensorlab")


def fetch_bytes(url: str = CORPUS_URL, timeout: float = DOWNLOAD_TIMEOUT_S) -> bytes:
    """Download ``url`` and return its bytes (tests replace this to stay offline)."""
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read()


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of ``data`` as 64 hex digits."""
    return hashlib.sha256(data).hexdigest()


def corpus_path(path=None) -> Path:
    """Where the corpus is: ``path``, $TENSORLAB_CORPUS, the cache, or a fresh download."""
    if path is not None:
        return _existing_file(Path(path), "given path")
    if os.environ.get(CORPUS_ENV):
        return _existing_file(Path(os.environ[CORPUS_ENV]), f"{CORPUS_ENV}")
    cached = cache_dir() / CORPUS_FILENAME
    if cached.is_file():
        _check_cached(cached)
        return cached
    return _download_to(cached)


def load_corpus(path=None) -> str:
    """The corpus text, resolved as in ``corpus_path``; must be non-empty UTF-8.

    A directory gives its files' texts joined by END_OF_TEXT, each file one document.
    """
    where = corpus_path(path)
    if where.is_dir():
        files = sorted(p for p in where.rglob("*") if p.is_file() and not p.name.startswith("."))
        if not files:
            raise CorpusError(f"corpus directory {where} holds no files; expected UTF-8 text files.")
        return END_OF_TEXT.join(_read_text(f) for f in files)
    return _read_text(where)


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
        raise CorpusError(
            f"corpus file {path} ({source}) does not exist; expected a UTF-8 text file or a directory of them."
        )
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
