"""Saving nested state (model weights, optimizer moments, counters) without pickle, atomically.

`save(state, "run/ckpt")` writes two files:
  run/ckpt.npz   every array in `state`, under its path ("model/blocks.0.attn.qkv.weight")
  run/ckpt.json  everything else (numbers, strings, lists, dicts), with arrays replaced by
                 {"__array__": path}, plus the sha256 and size of the .npz.
Each file is written to a temporary name and renamed into place, the .json last, so a
crash leaves either the old checkpoint or the new one, never half of one. `load` checks
the .npz against the recorded sha256, so a truncated or mismatched file is reported
instead of loaded.
"""
import hashlib
import io
import json
import os
import tempfile
from pathlib import Path

import numpy as np

from tensorlab import backend


class CheckpointError(RuntimeError):
    """A checkpoint is missing, truncated, or does not match its description."""


def save(state, path):
    """Write `state` (nested dicts/lists of arrays and JSON values) to `path`.npz and `path`.json."""
    base = _base(path)
    arrays = {}
    described = _split_arrays(state, "", arrays)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    npz = buffer.getvalue()
    write_atomically(base.with_suffix(".npz"), npz)
    meta = {"npz_sha256": hashlib.sha256(npz).hexdigest(), "npz_bytes": len(npz), "state": described}
    write_atomically(base.with_suffix(".json"), json.dumps(meta, indent=1).encode("utf-8"))


def load(path):
    """Read what `save` wrote; arrays come back as NumPy arrays on the CPU."""
    base = _base(path)
    json_path, npz_path = base.with_suffix(".json"), base.with_suffix(".npz")
    for p in (json_path, npz_path):
        if not p.exists():
            raise CheckpointError(f"checkpoint file {p} does not exist")
    try:
        meta = json.loads(json_path.read_text())
        expected_sha, expected_size = meta["npz_sha256"], meta["npz_bytes"]
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise CheckpointError(f"checkpoint {json_path} is not a valid checkpoint description ({error})") from None
    size = npz_path.stat().st_size
    if size != expected_size or _sha256(npz_path) != expected_sha:
        raise CheckpointError(f"checkpoint {npz_path} is truncated or was changed: {size} bytes, "
                              f"expected {expected_size} with the sha256 recorded in {json_path.name}")
    with np.load(npz_path, allow_pickle=False) as arrays:
        return _join_arrays(meta["state"], arrays)


def _split_arrays(value, path, arrays):
    """`value` with every array moved into `arrays` and replaced by a reference to its key."""
    if isinstance(value, dict):
        return {str(k): _split_arrays(v, f"{path}/{k}" if path else str(k), arrays) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_split_arrays(v, f"{path}/{i}", arrays) for i, v in enumerate(value)]
    if hasattr(value, "dtype") and hasattr(value, "shape") and not isinstance(value, np.generic):
        arrays[path] = backend.to_device(value, "cpu")
        return {"__array__": path}
    if isinstance(value, np.generic):
        return value.item()
    return value


def _join_arrays(value, arrays):
    if isinstance(value, dict):
        if set(value) == {"__array__"}:
            return arrays[value["__array__"]]
        return {k: _join_arrays(v, arrays) for k, v in value.items()}
    if isinstance(value, list):
        return [_join_arrays(v, arrays) for v in value]
    return value


def _base(path):
    path = Path(path)
    return path.with_suffix("") if path.suffix in (".npz", ".json") else path


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def write_atomically(target, data):
    """Write the bytes `data` to a temporary file beside `target`, then rename it over `target`.

    The rename is atomic on one filesystem: a reader (or a crash) sees the old file or the
    new one, never half of one.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
