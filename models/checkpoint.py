"""Training checkpoints on top of tensorlab.serialization (atomic, pickle-free, checksummed).

A training checkpoint holds everything a run needs to continue exactly where it stopped:

    model            the parameters, by name
    model_config     the ModelConfig they belong to (checked before loading)
    optimizer        AdamW's state_dict (moments, step counts, each group's lr)
    batch_rng        the numpy Generator state that draws training windows
    tensorlab_rng    tensorlab.random's state (dropout masks)
    config           the TrainConfig of the run
    progress         step, elapsed seconds, best val loss, ... (a dict of plain numbers)

A snapshot is the model part alone, kept to show how attention changes during training.
"""
from tensorlab import random as tl_random
from tensorlab import serialization
from tensorlab.serialization import CheckpointError


def save_checkpoint(path, model, optimizer, batch_rng, config, progress):
    """Write a full training checkpoint to `path`.npz/.json (atomically, replacing any old one)."""
    serialization.save({
        "model": model.state_dict(),
        "model_config": model.config.to_dict(),
        "optimizer": optimizer.state_dict(),
        "batch_rng": batch_rng.bit_generator.state,
        "tensorlab_rng": tl_random.get_state(),
        "config": config.to_dict(),
        "progress": dict(progress),
    }, path)


def save_snapshot(path, model, step):
    """Write the model's parameters alone (no optimizer), tagged with the step."""
    serialization.save({"model": model.state_dict(), "model_config": model.config.to_dict(), "step": step}, path)


def load_checkpoint(path, model):
    """Read a checkpoint or snapshot from `path` and copy its parameters into `model`; returns the whole dict.

    Raises CheckpointError when the file is missing or truncated, or when it was saved
    by a model of another shape; the message names the fields that differ.
    """
    state = serialization.load(path)
    if not isinstance(state, dict) or "model" not in state or "model_config" not in state:
        raise CheckpointError(f"{path} is not a tensorlab training checkpoint (no model or model_config in it)")
    ours, theirs = model.config.to_dict(), state["model_config"]
    differ = [f"{key}={theirs.get(key)!r} (here {ours[key]!r})" for key in ours
              if key != "dropout" and theirs.get(key) != ours[key]]
    if differ:
        raise CheckpointError(f"checkpoint {path} is from another model config: it has {', '.join(differ)}")
    try:
        model.load_state_dict(state["model"])
    except ValueError as err:
        raise CheckpointError(f"checkpoint {path} does not fit the model: {err}") from None
    return state


def restore_training_state(state, optimizer, batch_rng):
    """Put the optimizer and both random generators back as they were when `state` was saved."""
    optimizer.load_state_dict(state["optimizer"])
    batch_rng.bit_generator.state = state["batch_rng"]
    tl_random.set_state(state["tensorlab_rng"])
    return state["progress"]
