"""Training checkpoints: one safetensors file each, on top of tensorlab.serialization (atomic, pickle-free).

The arrays of the model sit under exactly the model's state_dict names, so
`safetensors.torch.load_file("run/checkpoints/best.safetensors")` loads straight into
the PyTorch twin (models/torch_model.py). A full checkpoint (`latest`) adds the optimizer's
moments under "optimizer/state/<index>/<name>" and, as JSON metadata, what
models.trainer.Trainer.state_dict() holds besides arrays: the model and train configs,
the optimizer's scalars and groups, the lr schedules, both random generators, progress.
`best` and the snapshots hold the model alone, with the step (and val loss) they were taken at.

Runs written by older tensorlab versions (`latest.npz` + `latest.json`) still load.
"""

import hashlib
import io
import json
import re
from pathlib import Path

import numpy as np

from models.config import as_today
from tensorlab import serialization
from tensorlab.serialization import SUFFIX, CheckpointError

NAME = re.compile(r"best|latest|snapshot_step\d+")  # what the trainer saves in a run's checkpoints/ (trainer.py)


def in_run(run_dir, name):
    """run_dir/checkpoints/<name> for a checkpoint's name (--checkpoint: best, latest or snapshot_stepNNNNNN), else a
    ValueError: no other name is a checkpoint of the run (`../config` is not one)."""
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ValueError(f"--checkpoint must be best, latest or snapshot_stepNNNNNN (one of the run's), got {name!r}")
    return Path(run_dir) / "checkpoints" / name


def checkpoint_path(path):
    """run/checkpoints/latest -> run/checkpoints/latest.safetensors."""
    path = Path(path)
    return path if path.suffix == SUFFIX else path.with_name(path.name + SUFFIX)


def exists(path):
    """True when a checkpoint (new or old format) is at `path`."""
    path = checkpoint_path(path)
    return path.is_file() or path.with_suffix(".json").is_file()


def save_checkpoint(path, state):
    """Write `state` ({"model": state_dict, ... nested JSON and arrays}) to `path`.safetensors atomically.

    Refuses (CheckpointError) to write a model with a non-finite parameter.
    """
    first_non_finite(state["model"], f"refusing to write {checkpoint_path(path)}")
    tensors = dict(state["model"])
    rest = serialization.split_arrays({k: v for k, v in state.items() if k != "model"}, "", tensors)
    serialization.save(tensors, rest, checkpoint_path(path))


def read_checkpoint(path):
    """The nested state `save_checkpoint` wrote (arrays as NumPy arrays); old .npz + .json runs too."""
    path = checkpoint_path(path)
    if not path.is_file() and path.with_suffix(".json").is_file():
        return _read_old_format(path.with_suffix(""))
    tensors, rest = serialization.load(path)
    state = serialization.join_arrays(rest, tensors)
    if not isinstance(state, dict) or "model_config" not in state:
        raise CheckpointError(f"{path} is not a tensorlab training checkpoint (no model_config in it)")
    referenced = {v["__array__"] for v in _references(rest)}
    state["model"] = {name: a for name, a in tensors.items() if name not in referenced}
    return state


def _references(value):
    if isinstance(value, dict):
        if set(value) == {"__array__"}:
            yield value
        else:
            for v in value.values():
                yield from _references(v)
    elif isinstance(value, list):
        for v in value:
            yield from _references(v)


def load_checkpoint(path, model):
    """Read a checkpoint or snapshot from `path` and copy its parameters into `model`; returns the whole state.

    Raises CheckpointError, naming the file, when it is missing, damaged, from a model of
    another shape (naming the fields that differ) or holds a non-finite parameter.
    """
    path = checkpoint_path(path)
    state = read_checkpoint(path)
    ours, theirs = model.config.to_dict(), state["model_config"]
    if not isinstance(theirs, dict):
        raise CheckpointError(f"{path} is not a tensorlab training checkpoint (its model_config is not a dict)")
    theirs = as_today(theirs)  # a run of an older version: its keys renamed, the ones added since at their defaults
    differ = [
        f"{key}={theirs.get(key)!r} (here {ours[key]!r})"
        for key in ours
        if key != "dropout" and theirs.get(key) != ours[key]
    ]
    if differ:
        raise CheckpointError(f"checkpoint {path} is from another model config: it has {', '.join(differ)}")
    first_non_finite(state["model"], f"{path} cannot be used")
    try:
        model.load_state_dict(state["model"])
    except (ValueError, TypeError) as err:
        raise CheckpointError(f"checkpoint {path} does not fit the model: {err}") from None
    return state


class NonFiniteParameter(CheckpointError):
    """A parameter holds a NaN or an infinity: such weights are never written, and never loaded."""

    def __init__(self, what, detail):
        super().__init__(f"{what}: {detail}")
        self.detail = detail  # "parameter NAME holds non-finite values (e.g. inf)"


def first_non_finite(arrays, what):
    """NonFiniteParameter naming the first array of `arrays` (name -> array) with a NaN or inf, if there is one."""
    for name, a in arrays.items():
        a = np.asarray(a) if not hasattr(a, "get") else a.get()
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            bad = a[~np.isfinite(a)].ravel()[0]
            raise NonFiniteParameter(what, f"parameter {name} holds non-finite values (e.g. {bad})")


def _read_old_format(base):
    """A checkpoint of the old two-file format: base.json (description, sha256 of the .npz) and base.npz."""
    json_path, npz_path = base.with_suffix(".json"), base.with_suffix(".npz")
    try:
        meta = json.loads(json_path.read_text())
        expected = meta["npz_sha256"]
        data = npz_path.read_bytes()
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise CheckpointError(
            f"old-format checkpoint {json_path} cannot be read ({type(err).__name__}: {err})"
        ) from None
    if hashlib.sha256(data).hexdigest() != expected:
        raise CheckpointError(f"old-format checkpoint {npz_path} is truncated or was changed (sha256 differs)")
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
            state = serialization.join_arrays(meta["state"], {k: arrays[k] for k in arrays.files})
    except ValueError as err:
        raise CheckpointError(f"{npz_path} holds something other than plain arrays ({err})") from None
    except (KeyError, TypeError, AttributeError) as err:  # the sidecar names an array the .npz lacks, or is no state
        raise CheckpointError(
            f"old-format checkpoint {json_path} does not fit {npz_path} ({type(err).__name__}: {err})"
        ) from None
    if not isinstance(state, dict) or not isinstance(state.get("model"), dict):
        raise CheckpointError(f"old-format checkpoint {json_path} holds no model")
    _check_old_step(state, json_path)
    return state


def _check_old_step(state, json_path):
    """The old sidecar is outside the .npz's checksum; its step must at least agree with the optimizer's.

    AdamW counts its own steps per parameter, so a step edited in one place is refused in one line; an
    edit made consistently everywhere cannot be seen without a checksum (docs/12-reading-a-run.md).
    """
    step = state.get("progress", {}).get("step")
    counted = {s.get("step") for s in state.get("optimizer", {}).get("state", {}).values() if isinstance(s, dict)}
    if counted and counted != {step}:
        raise CheckpointError(
            f"old-format checkpoint {json_path} was changed: it says step {step}, its optimizer counted "
            f"{sorted(counted, key=str)} steps (the JSON beside the .npz is not covered by its checksum)"
        )
