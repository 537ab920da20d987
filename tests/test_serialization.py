"""Checkpoint files: round trip without pickle, atomic writes, truncation detected."""
import numpy as np
import pytest

from tensorlab import serialization
from tensorlab.serialization import CheckpointError


def nested_state():
    rng = np.random.default_rng(0)
    return {"model": {"w": rng.standard_normal((3, 4)).astype(np.float32), "b": np.arange(4)},
            "optim": {"state": [{"m": rng.standard_normal(2), "step": 3}], "lr": 0.1},
            "step": 7, "name": "run", "rng": {"state": {"state": 2**100, "inc": 5}}}


def test_round_trip_keeps_values_dtypes_and_structure(tmp_path):
    state = nested_state()
    serialization.save(state, tmp_path / "ckpt")
    back = serialization.load(tmp_path / "ckpt")
    np.testing.assert_array_equal(back["model"]["w"], state["model"]["w"])
    assert back["model"]["w"].dtype == np.float32 and back["model"]["b"].dtype == state["model"]["b"].dtype
    np.testing.assert_array_equal(back["optim"]["state"][0]["m"], state["optim"]["state"][0]["m"])
    assert back["optim"]["state"][0]["step"] == 3 and back["optim"]["lr"] == 0.1
    assert back["step"] == 7 and back["name"] == "run" and back["rng"]["state"]["state"] == 2**100
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.json", "ckpt.npz"]  # no temporary files left


def test_truncated_or_missing_checkpoint_is_a_clear_error(tmp_path):
    serialization.save(nested_state(), tmp_path / "ckpt")
    npz = tmp_path / "ckpt.npz"
    npz.write_bytes(npz.read_bytes()[:-100])
    with pytest.raises(CheckpointError, match="truncated"):
        serialization.load(tmp_path / "ckpt")
    with pytest.raises(CheckpointError, match="does not exist"):
        serialization.load(tmp_path / "other")
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "bad.npz").write_bytes(b"")
    with pytest.raises(CheckpointError, match="not a valid checkpoint"):
        serialization.load(tmp_path / "bad")


def test_overwriting_replaces_both_files(tmp_path):
    serialization.save({"x": np.zeros(2)}, tmp_path / "latest")
    serialization.save({"x": np.ones(3)}, tmp_path / "latest")
    np.testing.assert_array_equal(serialization.load(tmp_path / "latest.npz")["x"], np.ones(3))
