"""Validation perplexity after the same wall time of training: tensorlab against the PyTorch twin.

Both train the same model config on the same recipe (tokenizer and split, batches from the
same seeded generator, AdamW with the config's betas and weight decay on matrices only,
gradient clipping, the warmup-cosine learning rate whose horizon is the steps that fit in
the time at the speed so far, as train.py does it) for --minutes of training each, one
after the other, each in its own process with the same thread count. Then each is scored
on every validation window (time not counted). PyTorch's twin starts from tensorlab's
initial weights.

    python bench/quality.py configs/seed_d256.json --minutes 10 --data ../shared/data/tinyshakespeare.txt
"""

import argparse
import math
import multiprocessing as mp
import os
import queue
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `python bench/NAME.py` puts bench/ on the path; models/ lives in the checkout


def train_for(framework, cfg_dict, data_path, minutes, threads, results):
    """Train one framework for `minutes` of wall time, score it on all validation windows, report to `results`."""
    try:
        results.put(("ok", _train_for(framework, cfg_dict, data_path, minutes, threads)))
    except BaseException:
        import traceback

        results.put(("error", traceback.format_exc()))


def _train_for(framework, cfg_dict, data_path, minutes, threads):
    from models.data import eval_windows, random_windows
    from models.train_config import TrainConfig
    from models.trainer import horizon
    from tensorlab.optim import WarmupCosine

    cfg = TrainConfig.from_dict(cfg_dict)
    with np.load(data_path) as data:
        train_ids, val_ids, weights = data["train"], data["val"], {k[2:]: data[k] for k in data.files if k[:2] == "w/"}
    model_step, score = (_tensorlab if framework == "tensorlab" else _torch)(cfg, weights, threads)
    rng = np.random.default_rng(cfg.seed)
    step, start = 0, time.perf_counter()
    while time.perf_counter() - start < 60 * minutes:
        elapsed = time.perf_counter() - start
        cfg_minutes = cfg.replace(max_minutes=minutes, max_steps=0)
        end = max(horizon(cfg_minutes, step, elapsed), cfg.warmup_steps)  # train.py's time-bounded cosine
        lr = WarmupCosine(cfg.lr, cfg.min_lr, cfg.warmup_steps, end).lr_at(step)
        x, y = random_windows(train_ids, cfg.batch_size, cfg.model.context_len, rng)
        loss = model_step(x, y, lr)
        step += 1
    seconds = time.perf_counter() - start
    total_nll, n = 0.0, 0
    for x, y in eval_windows(val_ids, cfg.model.context_len, cfg.batch_size):
        total_nll += score(x, y) * y.size
        n += y.size
    return dict(
        steps=step,
        seconds=seconds,
        tokens_per_s=step * cfg.batch_size * cfg.model.context_len / seconds,
        last_train_loss=loss,
        val_loss=total_nll / n,
        val_perplexity=math.exp(total_nll / n),
        val_tokens=n,
    )


def _tensorlab(cfg, weights, threads):
    from models.transformer import TinyTransformerLM, inference
    from tensorlab.memory import keep_freed_memory
    from tensorlab.optim import AdamW, clip_grad_norm_, weight_decay_groups
    from tensorlab.threads import use_threads

    keep_freed_memory()  # as train.py does
    use_threads(threads)

    model = TinyTransformerLM(cfg.model)
    model.load_state_dict(weights)
    optimizer = AdamW(
        weight_decay_groups(model.named_parameters(), cfg.weight_decay), lr=cfg.lr, betas=(cfg.beta1, cfg.beta2)
    )

    def step(x, y, lr):
        for group in optimizer.param_groups:
            group["lr"] = lr
        _, loss = model(x, y)
        optimizer.zero_grad()
        loss.backward()
        if cfg.grad_clip:
            clip_grad_norm_(model.parameters(), cfg.grad_clip)
        optimizer.step()
        return float(loss.item())

    def score(x, y):
        with inference(model):
            return float(model(x, y)[1].item())

    return step, score


def _torch(cfg, weights, threads):
    import torch

    from models.torch_model import TorchTinyLM, adamw_for, train_step

    torch.set_num_threads(threads)
    torch.manual_seed(cfg.seed)
    model = TorchTinyLM(cfg.model)
    model.load_state_dict({k: torch.from_numpy(v) for k, v in weights.items()})
    optimizer = adamw_for(model, cfg, lr=cfg.lr)

    def step(x, y, lr):
        for group in optimizer.param_groups:
            group["lr"] = lr
        model.train()
        return train_step(model, model, optimizer, x, y, cfg.grad_clip)

    @torch.no_grad()
    def score(x, y):
        model.eval()
        return float(model(torch.from_numpy(x), torch.from_numpy(y))[1].item())

    return step, score


def prepare(cfg, data_path):
    """Tokenizer, split and initial weights, shared by both runs: written to one .npz."""
    import tensorlab
    import train
    from models.transformer import TinyTransformerLM

    tokenizer, train_ids, val_ids, _ = train.load_data(cfg)
    tensorlab.manual_seed(cfg.seed)  # the initial weights train.py's Trainer would make
    model = TinyTransformerLM(cfg.model_config(tokenizer.vocab_size))
    np.savez(data_path, train=train_ids, val=val_ids, **{f"w/{k}": v for k, v in model.state_dict().items()})
    return tokenizer.vocab_size


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config", help="a training config, e.g. configs/seed_d256.json")
    parser.add_argument("--minutes", type=float, default=10.0, help="training wall time per framework")
    parser.add_argument("--data", default=os.environ.get("TENSORLAB_CORPUS"), help="the corpus text file")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--tmp", default="/tmp", help="folder for the shared data file (created if missing)")
    args = parser.parse_args(argv)
    if not args.data:
        parser.error("give --data or set TENSORLAB_CORPUS")
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    from models.train_config import TrainConfig

    cfg = TrainConfig.from_json(args.config).replace(data=args.data, device="cpu")
    if cfg.split != "ordered":
        parser.error(f"{args.config} has split {cfg.split!r}: quality.py scores the ordered split only (set it there)")
    Path(args.tmp).mkdir(parents=True, exist_ok=True)
    data_path = Path(args.tmp) / f"quality_{Path(args.config).stem}_{os.getpid()}.npz"
    cfg = cfg.replace(vocab_size=prepare(cfg, data_path))
    print(
        f"{args.config}: {args.minutes:g} minutes of training each, {args.threads} threads, "
        f"batch {cfg.batch_size} x {cfg.model.context_len}, lr {cfg.lr} -> {cfg.min_lr}, dropout {cfg.model.dropout}",
        flush=True,
    )
    results = {}
    context = mp.get_context("spawn")
    for framework in ("tensorlab", "pytorch"):
        answers = context.Queue()
        process = context.Process(
            target=train_for,
            args=(framework, cfg.to_dict(), str(data_path), args.minutes, args.threads, answers),
            daemon=True,
        )
        process.start()
        status, value = _wait(process, answers, framework, timeout=60 * args.minutes + 900)
        if status == "error":
            sys.exit(f"quality.py: the {framework} run failed:\n{value}")
        results[framework] = value
        print(
            f"{framework:10} {value['steps']:6d} steps in {value['seconds']:.0f} s, {value['tokens_per_s']:,.0f} "
            f"tokens/s, last train loss {value['last_train_loss']:.3f}, validation loss {value['val_loss']:.4f}, "
            f"perplexity {value['val_perplexity']:.2f} ({value['val_tokens']:,} tokens)",
            flush=True,
        )
    data_path.unlink()
    tl, pt = results["tensorlab"]["val_perplexity"], results["pytorch"]["val_perplexity"]
    print(f"validation perplexity after {args.minutes:g} minutes: tensorlab {tl:.2f}, pytorch {pt:.2f}")


def _wait(process, answers, framework, timeout):
    """The worker's ("ok" | "error", value); a worker that dies or overruns is an error, never a hang."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            return answers.get(timeout=5)
        except queue.Empty:
            if not process.is_alive():
                return "error", f"the {framework} process died (exit code {process.exitcode})"
    process.kill()
    return "error", f"the {framework} process gave no result within {timeout:.0f} s"


if __name__ == "__main__":
    main()
