"""Checkpoint files: one safetensors file, pickle-free, checksummed, written atomically and durably."""

import json
import os
import pickle
import stat

import numpy as np
import pytest

import tensorlab
from models.checkpoint import load_checkpoint, read_checkpoint, save_checkpoint
from models.config import ModelConfig
from models.transformer import TinyTransformerLM
from tensorlab import serialization
from tensorlab.optim import AdamW
from tensorlab.serialization import CheckpointError


def nested_state():
    rng = np.random.default_rng(0)
    return {
        "model": {"w": rng.standard_normal((3, 4)).astype(np.float32), "b": np.arange(4)},
        "model_config": {"d_model": 4},
        "optim": {"state": [{"m": rng.standard_normal(2), "step": 3}], "lr": 0.1},
        "step": 7,
        "name": "run",
        "rng": {"state": {"state": 2**100, "inc": 5}},
    }


def small_model(**overrides):
    tensorlab.manual_seed(0)
    values = dict(vocab_size=37, context_len=12, d_model=16, n_layers=2, n_heads=4, d_ff=24, dropout=0.0)
    return TinyTransformerLM(ModelConfig(**dict(values, **overrides)))


def test_round_trip_keeps_values_dtypes_and_structure(tmp_path):
    state = nested_state()
    save_checkpoint(tmp_path / "ckpt", state)
    back = read_checkpoint(tmp_path / "ckpt")
    np.testing.assert_array_equal(back["model"]["w"], state["model"]["w"])
    assert back["model"]["w"].dtype == np.float32 and back["model"]["b"].dtype == state["model"]["b"].dtype
    np.testing.assert_array_equal(back["optim"]["state"][0]["m"], state["optim"]["state"][0]["m"])
    assert back["optim"]["state"][0]["step"] == 3 and back["optim"]["lr"] == 0.1
    assert back["step"] == 7 and back["name"] == "run" and back["rng"]["state"]["state"] == 2**100
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.safetensors"]  # one file, no temporary ones


def test_a_checkpoint_loads_into_the_pytorch_twin_with_safetensors_torch(tmp_path):
    import safetensors.torch
    import torch

    from models.torch_model import TorchTinyLM

    model = small_model(dtype="float64")
    optimizer = AdamW(model.parameters(), lr=0.1)
    x = np.random.default_rng(1).integers(0, 37, size=(2, 8))
    model(x, x)[1].backward()
    optimizer.step()
    save_checkpoint(
        tmp_path / "latest",
        {"model": model.state_dict(), "model_config": model.config.to_dict(), "optimizer": optimizer.state_dict()},
    )
    twin = TorchTinyLM(model.config).to(torch.float64)
    tensors = safetensors.torch.load_file(tmp_path / "latest.safetensors")
    result = twin.load_state_dict(tensors, strict=False)
    assert result.missing_keys == []  # every twin weight is in the file, by name
    assert all(k.startswith("optimizer/") for k in result.unexpected_keys) and result.unexpected_keys
    logits = twin(torch.from_numpy(x))[0].detach().numpy()
    np.testing.assert_allclose(logits, model(x)[0].numpy(), rtol=0, atol=1e-12)  # achieved: ~1e-15
    save_checkpoint(tmp_path / "best", {"model": model.state_dict(), "model_config": model.config.to_dict(), "step": 1})
    strict = TorchTinyLM(model.config).to(torch.float64)
    strict.load_state_dict(safetensors.torch.load_file(tmp_path / "best.safetensors"))  # best: the weights alone
    assert all(torch.equal(strict.state_dict()[k], twin.state_dict()[k]) for k in twin.state_dict())


def test_a_changed_byte_or_a_truncated_file_is_reported_with_its_name(tmp_path):
    save_checkpoint(tmp_path / "ckpt", nested_state())
    path = tmp_path / "ckpt.safetensors"
    data = bytearray(path.read_bytes())
    data[-3] ^= 1  # one bit of one weight
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="ckpt.safetensors is damaged"):
        read_checkpoint(tmp_path / "ckpt")
    path.write_bytes(bytes(data[:-100]))
    with pytest.raises(CheckpointError, match="ckpt.safetensors is truncated"):
        read_checkpoint(tmp_path / "ckpt")
    with pytest.raises(CheckpointError, match="does not exist"):
        read_checkpoint(tmp_path / "other")


def test_a_pickle_or_an_object_array_is_refused_naming_the_file(tmp_path):
    (tmp_path / "evil.safetensors").write_bytes(pickle.dumps({"model": [1, 2]}))
    with pytest.raises(CheckpointError, match="evil.safetensors is truncated, damaged or not a tensorlab"):
        read_checkpoint(tmp_path / "evil")
    import hashlib
    import io

    buffer = io.BytesIO()
    np.savez(buffer, **{"model/w": np.array([{"a": 1}], dtype=object)})  # the old format, with an object array
    (tmp_path / "old.npz").write_bytes(buffer.getvalue())
    (tmp_path / "old.json").write_text(
        json.dumps(
            {
                "npz_sha256": hashlib.sha256(buffer.getvalue()).hexdigest(),
                "state": {"model": {"w": {"__array__": "model/w"}}},
            }
        )
    )
    with pytest.raises(CheckpointError, match="old.npz holds something other than plain arrays"):
        read_checkpoint(tmp_path / "old")


def test_old_npz_and_json_checkpoints_still_load(tmp_path):
    import hashlib
    import io

    model = small_model()
    arrays = {f"model/{k}": v for k, v in model.state_dict().items()}
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    (tmp_path / "latest.npz").write_bytes(buffer.getvalue())
    meta = {
        "npz_sha256": hashlib.sha256(buffer.getvalue()).hexdigest(),
        "npz_bytes": len(buffer.getvalue()),
        "state": {
            "model": {k: {"__array__": f"model/{k}"} for k in model.state_dict()},
            "model_config": model.config.to_dict(),
        },
    }
    (tmp_path / "latest.json").write_text(json.dumps(meta))
    other = small_model()
    for p in other.parameters():
        p.data[...] = 0
    load_checkpoint(tmp_path / "latest", other)
    assert all(np.array_equal(a, b) for a, b in zip(model.state_dict().values(), other.state_dict().values()))


def test_non_finite_weights_are_never_written_and_never_loaded(tmp_path):
    model = small_model()
    state = {"model": model.state_dict(), "model_config": model.config.to_dict()}
    save_checkpoint(tmp_path / "good", state)
    bad = dict(state["model"])
    name = list(bad)[3]
    bad[name] = bad[name].copy()
    bad[name].flat[2] = np.nan
    with pytest.raises(
        CheckpointError, match=f"refusing to write .*bad.safetensors: parameter {name} holds non-finite values"
    ):
        save_checkpoint(tmp_path / "bad", dict(state, model=bad))
    assert not (tmp_path / "bad.safetensors").exists()
    tensors, meta = serialization.load(tmp_path / "good.safetensors")  # forge one past the writer's guard
    tensors[name] = bad[name]
    serialization.save(tensors, meta, tmp_path / "forged.safetensors")
    with pytest.raises(CheckpointError, match=f"forged.safetensors cannot be used: parameter {name} holds"):
        load_checkpoint(tmp_path / "forged", small_model())


def test_write_is_fsynced_renamed_then_the_directory_fsynced(tmp_path, monkeypatch):
    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(
        os, "fsync", lambda fd: (events.append(("fsync", stat.S_ISDIR(os.fstat(fd).st_mode))), real_fsync(fd))
    )
    monkeypatch.setattr(os, "replace", lambda a, b: (events.append(("replace", None)), real_replace(a, b)))
    serialization.write_atomically(tmp_path / "f.txt", b"hello")
    assert events == [("fsync", False), ("replace", None), ("fsync", True)]


def test_output_files_get_ordinary_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        serialization.write_atomically(tmp_path / "f.txt", b"hello")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "f.txt").stat().st_mode) == 0o644


def test_a_crash_mid_write_keeps_the_old_file_and_the_leftover_is_cleaned_up(tmp_path, monkeypatch):
    serialization.write_atomically(tmp_path / "latest", b"old")

    def crash(a, b):
        raise SystemExit("killed")  # stands for a kill between the temporary file and the rename

    monkeypatch.setattr(os, "replace", crash)
    monkeypatch.setattr(os, "unlink", lambda *a, **k: None)  # a kill runs no cleanup
    monkeypatch.setattr(type(tmp_path), "unlink", lambda *a, **k: None)
    with pytest.raises(SystemExit):
        serialization.write_atomically(tmp_path / "latest", b"new")
    monkeypatch.undo()
    assert (tmp_path / "latest").read_bytes() == b"old"
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "latest"]
    assert len(leftovers) == 1 and leftovers[0].endswith(".tmp")
    assert [p.name for p in serialization.remove_temporary_files(tmp_path)] == leftovers
    assert [p.name for p in tmp_path.iterdir()] == ["latest"]
