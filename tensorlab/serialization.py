"""Saving named arrays and their description in one file, without pickle, atomically.

`save(tensors, metadata, "run/ckpt.safetensors")` writes one safetensors file: the arrays
under their names (any reader of the format - PyTorch, JAX, Hugging Face - opens it) and,
in the file's own metadata, `metadata` as JSON plus a sha256 over the JSON and every
array, so that `load` reports a changed or damaged file instead of returning it.

The file is written to a temporary name in the same directory, flushed to disk (fsync),
renamed over the old file, and the directory is flushed too, so that the rename itself
survives a power cut. Until that rename the old file stays complete: a crash at any
instant leaves the old file or the new one. A crash can leave a temporary file behind;
`remove_temporary_files` deletes those at the next start.

`split_arrays` / `join_arrays` turn nested state (an optimizer's state_dict) into flat
named arrays plus JSON and back.
"""

import hashlib
import json
import os
import struct
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from tensorlab import backend

SUFFIX = ".safetensors"
TEMP_SUFFIX = ".tmp"
WRITE_DELAY_ENV = "TENSORLAB_TEST_WRITE_DELAY"  # tests: seconds to pause inside the write window


class CheckpointError(RuntimeError):
    """A checkpoint is missing, damaged, or does not match what reads it."""


def save(tensors, metadata, path):
    """Write the named arrays `tensors` and the JSON-able dict `metadata` to `path` atomically."""
    import safetensors.numpy

    arrays = {name: np.asarray(backend.to_device(a, "cpu"), order="C") for name, a in tensors.items()}  # 0-d stays 0-d
    text = json.dumps(metadata)
    header = {"tensorlab": text, "sha256": _checksum(arrays, text)}
    write_atomically(Path(path), safetensors.numpy.save(arrays, metadata=header))


def load(path):
    """(tensors, metadata) from a file written by `save`; CheckpointError naming the file when it is not one."""
    import safetensors.numpy

    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise CheckpointError(f"checkpoint file {path} does not exist") from None
    try:
        header = _header(data)
        text, expected = header["tensorlab"], header["sha256"]
        arrays = safetensors.numpy.load(data)
        metadata = json.loads(text)
    except Exception as err:  # whatever the bytes are, the answer is one line naming the file
        raise CheckpointError(
            f"{path} is truncated, damaged or not a tensorlab checkpoint (a safetensors file "
            f"with tensorlab metadata): {type(err).__name__}: {str(err)[:80]}"
        ) from None
    if _checksum(arrays, text) != expected:
        raise CheckpointError(f"{path} is damaged or was changed: its sha256 does not match the one inside it")
    return arrays, metadata


def _header(data):
    """The __metadata__ of safetensors bytes: an 8-byte little-endian length, then a JSON header."""
    (length,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8 : 8 + length])["__metadata__"]


def _checksum(arrays, text):
    digest = hashlib.sha256(text.encode("utf-8"))
    for name in sorted(arrays):
        a = arrays[name]
        digest.update(f"{name}|{a.dtype.str}|{a.shape}".encode())
        digest.update(np.ascontiguousarray(a).tobytes())
    return digest.hexdigest()


def split_arrays(value, path, arrays):
    """`value` with every array moved into `arrays` (under its path, "/"-joined) and replaced by a reference."""
    if isinstance(value, dict):
        return {str(k): split_arrays(v, f"{path}/{k}" if path else str(k), arrays) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [split_arrays(v, f"{path}/{i}" if path else str(i), arrays) for i, v in enumerate(value)]
    if isinstance(value, np.generic):
        return value.item()
    if hasattr(value, "dtype") and hasattr(value, "shape"):
        arrays[path] = value
        return {"__array__": path}
    return value


def join_arrays(value, arrays):
    """The inverse of split_arrays."""
    if isinstance(value, dict):
        if set(value) == {"__array__"}:
            return arrays[value["__array__"]]
        return {k: join_arrays(v, arrays) for k, v in value.items()}
    if isinstance(value, list):
        return [join_arrays(v, arrays) for v in value]
    return value


def write_atomically(target, data):
    """Write the bytes `data` to `target` so that a crash at any instant leaves the old file or the new one.

    A temporary file beside `target` gets the bytes and an fsync; a rename puts it in
    place (atomic on one filesystem); an fsync of the directory makes the rename durable.
    The file gets ordinary permissions (0666 less the umask), as open() would give it.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=TEMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        _pause_for_tests(target)
        os.replace(tmp, target)
    except BaseException as err:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(err, OSError) and err.filename is None:  # a full disk fails in write or fsync: name the file
            raise OSError(err.errno, err.strerror, str(target)) from None
        raise
    _fsync_directory(target.parent)


def _fsync_directory(directory):
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _pause_for_tests(target):
    """With $TENSORLAB_TEST_WRITE_DELAY set, say which file is being written and wait (the kill test aims here)."""
    delay = os.environ.get(WRITE_DELAY_ENV)
    if delay:
        print(f"writing {target}", file=sys.stderr, flush=True)
        time.sleep(float(delay))


def remove_temporary_files(directory):
    """Delete the temporary files that a crash inside write_atomically left in `directory`; returns their paths."""
    directory = Path(directory)
    leftovers = sorted(directory.glob(f".*{TEMP_SUFFIX}")) if directory.is_dir() else []
    for path in leftovers:
        path.unlink(missing_ok=True)
    return leftovers
