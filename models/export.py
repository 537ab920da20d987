"""`train.py export RUN_DIR`: a run's model as model.safetensors + config.json, for PyTorch.

The tensor names are those of models/torch_model.py's TorchTinyLM (the same as tensorlab's, e.g.
`blocks.0.attn.qkv.weight`, `tok_emb.weight`), so `TorchTinyLM(config).load_state_dict(...)`
takes the file as it is; config.json holds the ModelConfig under "model". Writing needs only
NumPy and safetensors; reading it back into torch is models.torch_model.load_exported.
"""

import argparse
import json
from pathlib import Path

from safetensors.numpy import save_file

from models.checkpoint import load_checkpoint
from models.config import ModelConfig
from models.run_dir import RunDirError, check_tokenizer
from models.tokenizer import BPETokenizer
from models.train_config import TrainConfig
from models.transformer import TinyTransformerLM
from tensorlab.serialization import CheckpointError, write_atomically

FORMAT = "tensorlab-export"


def load_run_model(run_dir, checkpoint="best"):
    """The tensorlab model of a run directory with checkpoints/<checkpoint> loaded, and the checkpoint's dict."""
    run_dir = Path(run_dir)
    for name in ("config.json", "tokenizer.json"):
        if not (run_dir / name).is_file():
            raise ValueError(f"{run_dir} is not a run directory: it has no {name}")
    cfg = TrainConfig.from_json(run_dir / "config.json")
    tokenizer = BPETokenizer.load(run_dir / "tokenizer.json")
    model = TinyTransformerLM(cfg.model_config(tokenizer.vocab_size))
    state = load_checkpoint(run_dir / "checkpoints" / checkpoint, model)
    check_tokenizer(state, tokenizer, run_dir / "checkpoints" / checkpoint)
    return model, state


def export_run(run_dir, out_dir=None, checkpoint="best"):
    """Write out_dir/model.safetensors and out_dir/config.json (default out_dir: RUN_DIR/export); returns out_dir."""
    model, state = load_run_model(run_dir, checkpoint)
    out_dir = Path(out_dir or Path(run_dir) / "export")
    out_dir.mkdir(parents=True, exist_ok=True)
    step = state.get("progress", state).get("step")
    arrays = {name: array.copy() for name, array in model.state_dict().items()}
    tmp = out_dir / "model.safetensors.tmp"
    save_file(arrays, str(tmp), metadata={"format": FORMAT, "step": str(step)})
    tmp.replace(out_dir / "model.safetensors")
    config = {
        "format": FORMAT,
        "architecture": "TinyTransformerLM",
        "torch_module": "models.torch_model.TorchTinyLM",
        "source_run": str(run_dir),
        "checkpoint": checkpoint,
        "step": step,
        "model": model.config.to_dict(),
    }
    write_atomically(out_dir / "config.json", (json.dumps(config, indent=2) + "\n").encode("utf-8"))
    return out_dir


def read_exported_config(export_dir):
    """The ModelConfig in an export's config.json."""
    blob = json.loads((Path(export_dir) / "config.json").read_text(encoding="utf-8"))
    if blob.get("format") != FORMAT:
        raise ValueError(f"{export_dir}/config.json was not written by train.py export (format {blob.get('format')!r})")
    return ModelConfig.from_dict(blob["model"])


def cmd_export(argv):
    """train.py export RUN_DIR [--out DIR] [--checkpoint best|latest]; returns the exit status."""
    parser = argparse.ArgumentParser(prog="train.py export", description=__doc__.splitlines()[0])
    parser.add_argument("run_dir")
    parser.add_argument("--out", metavar="DIR", help="where to write (default: RUN_DIR/export)")
    parser.add_argument("--checkpoint", default="best", help="best, latest, or snapshot_stepNNNNNN [best]")
    args = parser.parse_args(argv)
    try:
        out = export_run(args.run_dir, args.out, args.checkpoint)
    except (ValueError, OSError, CheckpointError, RunDirError) as err:  # ConfigError is a ValueError
        print(f"train.py export: error: {str(err).splitlines()[0]}")
        return 2
    print(f"wrote {out / 'model.safetensors'} and {out / 'config.json'}")
    return 0
