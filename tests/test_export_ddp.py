"""Into PyTorch: `train.py export`, loading a run into models/torch_model.py, and continuing it with DDP on 2 ranks."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.numpy import load_file

import train
from models.checkpoint import read_checkpoint
from models.data import eval_windows, split_tokens
from models.evaluate import evaluate
from models.export import load_run_model, read_export
from models.tokenizer import BPETokenizer
from models.torch_model import load_exported, load_tensorlab_run

ROOT = Path(__file__).resolve().parent.parent
TEXT = "".join(f"Line {i}: the quick brown fox jumps over the lazy dog {i % 7} times.\n" for i in range(400))


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A finished tiny run on a generated corpus (48 steps of configs/tiny.json)."""
    base = tmp_path_factory.mktemp("export")
    (base / "corpus.txt").write_text(TEXT)
    status = train.main(
        [
            "--config",
            str(ROOT / "configs" / "tiny.json"),
            "--data",
            str(base / "corpus.txt"),
            "--out",
            str(base / "run"),
            "--max-steps",
            "48",
            "--dropout",
            "0",
            "--no-report",
        ]
    )
    assert status == 0
    return base / "run"


def ids_of(run_dir):
    tok = BPETokenizer.load(run_dir / "tokenizer.json")
    return tok, split_tokens(tok.encode(TEXT), 0.1)[1]


def test_export_writes_one_safetensors_that_describes_itself_and_pytorch_loads_to_the_same_logits(run_dir, capsys):
    assert train.main(["export", str(run_dir)]) == 0
    out = run_dir / "export"
    assert [p.name for p in out.iterdir()] == ["model.safetensors"]  # one file: nothing to come apart
    _, description = read_export(out)
    assert description["model"]["d_model"] == 32 and description["torch_module"] == "models.torch_model.TorchTinyLM"
    assert description["step"] == read_checkpoint(run_dir / "checkpoints" / "best")["step"]
    assert description["config"] == json.loads((run_dir / "config.json").read_text())
    model, _, _, tokenizer = load_run_model(run_dir)
    assert description["tokenizer_sha256"] == tokenizer.fingerprint()
    arrays = load_file(str(out / "model.safetensors"))
    assert sorted(arrays) == sorted(model.state_dict())
    for name, array in model.state_dict().items():
        assert np.array_equal(arrays[name], array), name
    twin = load_exported(out, tokenizer)
    _, val = ids_of(run_dir)
    x = val[None, :32]
    ours, _ = model(x)
    theirs, _ = twin(torch.from_numpy(x))
    # achieved ~1e-7 in float32
    np.testing.assert_allclose(theirs.detach().numpy(), ours.data, rtol=1e-4, atol=1e-5)
    assert load_tensorlab_run(run_dir).state_dict().keys() == twin.state_dict().keys()


def test_export_of_a_directory_that_is_no_run_is_one_line(tmp_path, capsys):
    assert train.main(["export", str(tmp_path)]) == 2
    out = capsys.readouterr().err.strip()
    assert len(out.splitlines()) == 1 and "is not a run directory: it has no config.json" in out


def test_ddp_on_two_cpu_ranks_continues_from_the_checkpoint_with_identical_weights(run_dir, tmp_path):
    out = tmp_path / "ddp"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc-per-node",
        "2",
        "--master-port",
        "29517",
        str(ROOT / "models" / "continue_ddp.py"),
        str(run_dir),
        "--steps",
        "5",
        "--batch-size",
        "4",
        "--out",
        str(out),
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    ranks = [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["world_size"] for r in ranks] == [2, 2]
    a, b = (load_file(str(out / f"rank{r}.safetensors")) for r in (0, 1))
    assert sorted(a) == sorted(b) and all(np.array_equal(a[k], b[k]) for k in a)  # bit for bit
    model = load_run_model(run_dir, "latest")[0]
    assert not all(np.array_equal(a[k], v) for k, v in model.state_dict().items())  # it did train
    # the loss it starts from is tensorlab's loss of the checkpoint on the same validation windows
    tok, val = ids_of(run_dir)
    T = model.config.context_len
    first = [b for b in eval_windows(val, T, 4) if b[0].shape[1] == T][:2]
    windows = np.concatenate([np.concatenate([x, y[:, -1:]], axis=1) for x, y in first])
    ours = evaluate(model, windows, tok, batch_size=4)["loss"]
    for r in ranks:
        assert abs(r["start_val_loss"] - ours) < 1e-5, (r["start_val_loss"], ours)  # achieved ~1e-7
        assert abs(r["end_val_loss"] - ours) < 0.5  # continues from there: no jump back to an untrained loss
    untrained = np.log(tok.vocab_size)
    assert ours < untrained - 1.0


def test_torch_is_imported_only_by_the_torch_modules():
    """train.py, export included, and every other models/ module run without torch: only torch_model.py and
    continue_ddp.py import it."""
    modules = [
        p.stem for p in (ROOT / "models").glob("*.py") if p.stem not in ("__init__", "torch_model", "continue_ddp")
    ]
    code = "import sys, train, " + ", ".join(f"models.{m}" for m in modules) + "; print('torch' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-1000:]
    assert done.stdout.strip() == "False"
