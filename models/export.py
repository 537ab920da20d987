"""`train.py export RUN_DIR`: a run's model as one self-describing model.safetensors, for PyTorch.

The tensor names are those of models/torch_model.py's TorchTinyLM (the same as tensorlab's, e.g.
`blocks.0.attn.qkv.weight`, `tok_emb.weight`), so `TorchTinyLM(config).load_state_dict(...)`
takes the arrays as they are. The file's metadata says what they are: the source run, the
checkpoint and its step, the run's config (the ModelConfig under "model") and the fingerprint of
the tokenizer that reads text into its ids, with a sha256 over that description and every array
(tensorlab.serialization), so weights and description cannot come apart: `read_export` checks them.

The file is written under a unique temporary name and renamed into place, so two exports into one
folder, or one killed half way, leave a whole file of one of them. An export never writes into a run:
an --out that holds a run's files (a run, or one being trained into) is refused.
"""

from pathlib import Path

from models.checkpoint import in_run, load_checkpoint
from models.run import Parser, UsageError
from models.run_dir import check_tokenizer, check_writable, checked_path, holds_a_run
from models.tokenizer import BPETokenizer
from models.train_config import TrainConfig
from models.transformer import TinyTransformerLM
from tensorlab import serialization
from tensorlab.serialization import CheckpointError

FORMAT = "tensorlab-export"
FILE_NAME = "model.safetensors"


class ExportError(ValueError):
    """An export cannot be written or read: one line naming the file and what to do."""


def load_run_model(run_dir, checkpoint="best"):
    """The tensorlab model of a run directory with checkpoints/<checkpoint> loaded, the checkpoint's dict, and the
    run's TrainConfig and tokenizer."""
    run_dir = Path(run_dir)
    for name in ("config.json", "tokenizer.json"):
        if not (run_dir / name).is_file():
            raise ExportError(f"{run_dir} is not a run directory: it has no {name}")
    cfg = TrainConfig.from_json(run_dir / "config.json")
    try:
        tokenizer = BPETokenizer.load(run_dir / "tokenizer.json")
    except Exception as err:  # tokenizers raises plain Exceptions on a JSON of the wrong shape
        raise ExportError(f"{run_dir / 'tokenizer.json'} is not a usable tokenizer file ({err})") from None
    model = TinyTransformerLM(cfg.model_config(tokenizer.vocab_size))
    path = in_run(run_dir, checkpoint)
    state = load_checkpoint(path, model)
    check_tokenizer(state, tokenizer, path)
    return model, state, cfg, tokenizer


def export_run(run_dir, out_dir=None, checkpoint="best"):
    """Write out_dir/model.safetensors (default out_dir: RUN_DIR/export); returns its path and description."""
    out_dir = checked_path(out_dir, "--out") if out_dir is not None else Path(run_dir) / "export"
    if holds_a_run(out_dir):
        raise ExportError(
            f"--out {out_dir} holds a run (or is being trained into); an export never writes into a run: "
            f"choose another folder"
        )
    check_writable(out_dir)
    model, state, cfg, tokenizer = load_run_model(checked_path(run_dir, "RUN_DIR"), checkpoint)
    description = {
        "format": FORMAT,
        "architecture": "TinyTransformerLM",
        "torch_module": "models.torch_model.TorchTinyLM",
        "source_run": str(Path(run_dir).resolve()),
        "checkpoint": checkpoint,
        "step": state.get("progress", state).get("step"),
        "config": cfg.to_dict(),
        "model": model.config.to_dict(),
        "tokenizer_sha256": tokenizer.fingerprint(),
    }
    path = out_dir / FILE_NAME
    try:
        serialization.save(model.state_dict(), description, path)  # a unique temporary name, then a rename
    except OSError as err:  # a full disk, a read-only or forbidden folder: nothing is left half-written
        raise ExportError(f"cannot write {path}: {err.strerror or err}; free space or choose another --out") from None
    return path, description


def read_export(path):
    """(arrays, description) of an export (its file, or the folder holding model.safetensors), checked whole."""
    path = Path(path)
    path = path / FILE_NAME if path.is_dir() else path
    try:
        arrays, description = serialization.load(path)
    except CheckpointError as err:
        raise ExportError(str(err)) from None
    if not isinstance(description, dict) or description.get("format") != FORMAT:
        raise ExportError(f"{path} was not written by train.py export (no format {FORMAT!r} in its metadata)")
    return arrays, description


def export_parser():
    parser = Parser(prog="train.py export", description=__doc__.splitlines()[0])
    parser.add_argument("run_dir")
    parser.add_argument("--out", metavar="DIR", help="where to write model.safetensors (default: RUN_DIR/export)")
    parser.add_argument("--checkpoint", default="best", help="best, latest, or snapshot_stepNNNNNN [best]")
    return parser


def cmd_export(argv):
    """train.py export RUN_DIR [--out DIR] [--checkpoint best|latest]; returns the exit status."""
    args = export_parser().parse_args(argv)
    try:
        path, description = export_run(args.run_dir, args.out, args.checkpoint)
    except (ValueError, CheckpointError) as err:  # an ExportError, a bad --checkpoint: train.main prints them
        raise UsageError(str(err)) from None
    print(f"wrote {path} (step {description['step']} of {args.run_dir}; its config and tokenizer fingerprint inside)")
    return 0
