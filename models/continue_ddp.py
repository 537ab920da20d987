"""Continue a tensorlab run in PyTorch with DistributedDataParallel: the road past one machine.

tensorlab trains in one process. When a model outgrows that, this script takes a run's
checkpoint into PyTorch (models/torch_model.py: the same model, the same parameter names) and
continues training it with torch.distributed over the gloo backend, one process per rank,
each on its own random windows of the run's training split; DDP averages the gradients, so
every rank holds the same weights after every step. Start it with torchrun:

    torchrun --nproc-per-node 2 models/continue_ddp.py RUN_DIR --steps 100 --out OUT_DIR

(add --nnodes, --node-rank and --master-addr to torchrun to span machines). The corpus is the
run's own (its config's data, or --data); tokenizer and split are the run's. The optimizer is
torch.optim.AdamW with the run's betas and weight decay (matrices and embeddings only), started
fresh at --lr (default: the run's min_lr). Before the first step each rank prints the loss of the
checkpoint on the first validation windows, the number tensorlab's evaluation gives there.
OUT_DIR gets, per rank, rank<r>.json (those losses) and rank<r>.safetensors (its weights at the end,
the same on every rank; load one with TorchTinyLM(config).load_state_dict).
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
from safetensors.torch import save_file
from torch.nn.parallel import DistributedDataParallel

if __package__ in (None, ""):  # run as a script by torchrun: put the repository root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.corpus import load_corpus  # noqa: E402
from models.data import eval_windows, random_windows, split_tokens  # noqa: E402
from models.preprocess import preprocess  # noqa: E402
from models.tokenizer import BPETokenizer  # noqa: E402
from models.torch_model import adamw_for, load_tensorlab_run, train_step  # noqa: E402
from models.train_config import TrainConfig  # noqa: E402

VAL_BATCHES = 2  # validation batches for the loss before and after


def run_data(run_dir, data=None):
    """The run's config and its training and validation token ids (same corpus, preprocessing, tokenizer, split)."""
    cfg = TrainConfig.from_json(Path(run_dir) / "config.json")
    tokenizer = BPETokenizer.load(Path(run_dir) / "tokenizer.json")
    text = preprocess(load_corpus(data or cfg.data, cfg.documents), cfg.preprocess)
    train_ids, val_ids = split_tokens(tokenizer.encode(text), cfg.val_fraction)
    return cfg, train_ids, val_ids


def val_loss(model, val_ids, batch_size):
    """Mean loss over the first VAL_BATCHES batches of full evaluation windows."""
    T = model.c.context_len
    batches = [b for b in eval_windows(val_ids, T, batch_size) if b[0].shape[1] == T][:VAL_BATCHES]
    model.eval()
    with torch.no_grad():
        losses = [float(model(torch.from_numpy(x), torch.from_numpy(y))[1]) * y.size for x, y in batches]
    model.train()
    return sum(losses) / sum(y.size for _, y in batches)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=None, help="windows per step on each rank [the run's]")
    parser.add_argument("--lr", type=float, default=None, help="AdamW learning rate [the run's min_lr]")
    parser.add_argument("--checkpoint", default="latest", help="best or latest [latest]")
    parser.add_argument("--data", help="the corpus, if not where the run found it")
    parser.add_argument("--out", required=True, help="directory for rank<r>.json and rank<r>.safetensors")
    args = parser.parse_args(argv)

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    cfg, train_ids, val_ids = run_data(args.run_dir, args.data)
    batch_size = args.batch_size or cfg.batch_size
    model = load_tensorlab_run(args.run_dir, args.checkpoint)
    start = val_loss(model, val_ids, batch_size)
    ddp = DistributedDataParallel(model)  # broadcasts rank 0's weights, then averages every gradient
    optimizer = adamw_for(model, cfg, lr=args.lr or cfg.min_lr or cfg.lr)
    rng = np.random.default_rng([cfg.seed, 100 + rank])  # each rank its own windows
    losses = []
    for _ in range(args.steps):
        x, y = random_windows(train_ids, batch_size, model.c.context_len, rng)
        losses.append(train_step(ddp, model, optimizer, x, y, cfg.grad_clip))
    end = val_loss(model, val_ids, batch_size)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    record = {"rank": rank, "world_size": world, "start_val_loss": start, "end_val_loss": end, "train_losses": losses}
    (out / f"rank{rank}.json").write_text(json.dumps(record))
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(out / f"rank{rank}.safetensors"))
    print(
        f"rank {rank}/{world}: val loss {start:.4f} at the checkpoint, {end:.4f} after {args.steps} steps",
        file=sys.stderr,
    )
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
