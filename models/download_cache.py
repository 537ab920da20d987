"""The cache of downloads (corpora, pretrained tokenizers) and the record that checks a cached copy.

Everything lands in ``$TENSORLAB_CACHE`` (default ``~/.cache/tensorlab``). A download whose checksum is
published is checked against it (Tiny Shakespeare, models/corpus.py). Where none is known (TinyStories' first
stories, a tokenizer from the Hugging Face hub), the first download is trusted: ``write_recorded`` puts its size
and sha256 in a record beside it, and ``is_cached`` checks the copy against that record at every later use, so a
copy truncated or edited after it was downloaded is refused instead of being trained on.
"""

import hashlib
import json
import os
from pathlib import Path

from tensorlab.serialization import write_atomically

CACHE_ENV = "TENSORLAB_CACHE"
RECORD_SUFFIX = ".record.json"


class CacheError(ValueError):
    """A cached download differs from what was recorded when it was downloaded."""


def cache_dir() -> Path:
    """The directory holding downloads: $TENSORLAB_CACHE or ~/.cache/tensorlab."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "tensorlab")


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of ``data`` as 64 hex digits."""
    return hashlib.sha256(data).hexdigest()


def record_path(path) -> Path:
    """Where the size and sha256 of the cached copy ``path`` are recorded."""
    path = Path(path)
    return path.with_name(path.name + RECORD_SUFFIX)


def write_recorded(path, data: bytes, source: str) -> Path:
    """Write ``data`` to ``path`` atomically, then its record (where from, bytes, sha256); returns ``path``.

    The record is written last: a copy without one (a kill between the two writes) counts as not cached.
    """
    path = Path(path)
    write_atomically(path, data)
    record = {"source": source, "bytes": len(data), "sha256": sha256_hex(data)}
    write_atomically(record_path(path), json.dumps(record, indent=1).encode("utf-8"))
    return path


def is_cached(path) -> bool:
    """True when ``path`` holds the bytes its record describes; False when the copy or its record is missing.

    Raises CacheError naming the file when the bytes differ from the record (or the record is unreadable).
    """
    path, record_file = Path(path), record_path(path)
    if not (path.is_file() and record_file.is_file()):
        return False
    delete = f"delete {path} and {record_file.name} to download it again"
    try:
        record = json.loads(record_file.read_text(encoding="utf-8"))
        size, sha256 = int(record["bytes"]), str(record["sha256"])
    except (ValueError, KeyError, TypeError):
        raise CacheError(f"{record_file} is not a download record; {delete}") from None
    data = path.read_bytes()
    if len(data) != size or sha256_hex(data) != sha256:
        raise CacheError(
            f"cached {path} has {len(data)} bytes with sha256 {sha256_hex(data)[:16]}..., but it was downloaded "
            f"with {size} bytes and sha256 {sha256[:16]}... (edited or truncated since); {delete}"
        )
    return True
