"""TinyTransformerLM in PyTorch: the road out of tensorlab when a model outgrows it.

`TorchTinyLM(config)` is the same model written independently with torch.nn; its state_dict has
the same names and shapes as tensorlab's, so weights copy both ways by name. The tests check the
two against each other (logits, loss, every gradient), and tensorlab itself never imports this
file: torch is needed only here.

    model = load_tensorlab_run("runs/my-run")          # a torch.nn.Module with the run's best weights
    model = load_exported("runs/my-run/export")        # or from `train.py export`'s file
"""

import math

import numpy as np
import torch
import torch.nn.functional as TF
from torch import nn


def rope_tables(T, D, dtype):
    inv_freq = 1.0 / 10000 ** (torch.arange(0, D, 2, dtype=torch.float64) / D)  # (D/2,)
    angles = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)  # (T, D/2)
    angles = torch.cat([angles, angles], dim=-1)  # (T, D)
    return angles.cos().to(dtype), angles.sin().to(dtype)


def apply_rope(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


def sinusoidal_table(T, C, dtype):
    position = torch.arange(T, dtype=torch.float64)[:, None]
    div = torch.pow(10000.0, torch.arange(0, C, 2, dtype=torch.float64) / C)
    table = torch.zeros(T, C, dtype=torch.float64)
    table[:, 0::2] = torch.sin(position / div)
    table[:, 1::2] = torch.cos(position / div[: C // 2])
    return table.to(dtype)


def make_norm(c):
    if c.norm == "none":
        return nn.Identity()
    if c.norm == "layernorm":
        return nn.LayerNorm(c.d_model, eps=c.norm_eps)
    return nn.RMSNorm(c.d_model, eps=c.norm_eps)


class TorchAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.n_heads, self.rope = c.n_heads, c.pos_encoding == "rope"
        self.qkv = nn.Linear(c.d_model, 3 * c.d_model, bias=c.qkv_bias)
        self.proj = nn.Linear(c.d_model, c.d_model, bias=c.proj_bias)
        self.attn_dropout = nn.Dropout(c.dropout)
        self.resid_dropout = nn.Dropout(c.dropout)

    def forward(self, x):
        B, T, C = x.shape
        H, D = self.n_heads, C // self.n_heads
        q, k, v = self.qkv(x).split(C, dim=-1)
        q, k, v = (t.view(B, T, H, D).transpose(1, 2) for t in (q, k, v))
        if self.rope:
            cos, sin = rope_tables(T, D, x.dtype)
            q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D))
        future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        att = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
        y = (self.attn_dropout(att) @ v).transpose(1, 2).reshape(B, T, C)
        return self.resid_dropout(self.proj(y))


class TorchFeedForward(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.activation = c.activation
        if c.activation == "swiglu":
            self.gate = nn.Linear(c.d_model, c.d_ff, bias=c.ffn_bias)
            self.up = nn.Linear(c.d_model, c.d_ff, bias=c.ffn_bias)
        else:
            self.fc = nn.Linear(c.d_model, c.d_ff, bias=c.ffn_bias)
        self.proj = nn.Linear(c.d_ff, c.d_model, bias=c.ffn_bias)
        self.dropout = nn.Dropout(c.dropout)

    def forward(self, x):
        if self.activation == "swiglu":
            h = TF.silu(self.gate(x)) * self.up(x)
        else:
            h = TF.gelu(self.fc(x)) if self.activation == "gelu" else TF.relu(self.fc(x))
        return self.dropout(self.proj(h))


class TorchBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.pre_norm = c.norm_position == "pre"
        self.norm1 = make_norm(c)
        self.attn = TorchAttention(c)
        self.norm2 = make_norm(c)
        self.ffn = TorchFeedForward(c)

    def forward(self, x):
        if self.pre_norm:
            x = x + self.attn(self.norm1(x))
            return x + self.ffn(self.norm2(x))
        x = self.norm1(x + self.attn(x))
        return self.norm2(x + self.ffn(x))


class TorchTinyLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.tok_emb = nn.Embedding(c.vocab_size, c.d_model)
        if c.pos_encoding == "learned":
            self.pos_emb = nn.Embedding(c.context_len, c.d_model)
        self.emb_dropout = nn.Dropout(c.dropout)
        self.blocks = nn.ModuleList(TorchBlock(c) for _ in range(c.n_layers))
        self.norm = make_norm(c)
        if not c.tie_weights:
            self.head = nn.Linear(c.d_model, c.vocab_size, bias=c.head_bias)

    def forward(self, ids, targets=None):
        T = ids.shape[1]
        x = self.tok_emb(ids)
        if self.c.pos_encoding == "learned":
            x = x + self.pos_emb(torch.arange(T))
        elif self.c.pos_encoding == "sinusoidal":
            x = x + sinusoidal_table(T, self.c.d_model, x.dtype)
        x = self.emb_dropout(x)
        for block in self.blocks:
            x = block(x)
        x = self.norm(x)
        logits = x @ self.tok_emb.weight.T if self.c.tie_weights else self.head(x)
        loss = None if targets is None else TF.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        return logits, loss


def adamw_for(model, cfg, lr):
    """torch.optim.AdamW grouped as tensorlab trains: weight decay on tensors of dim >= 2, none on the rest."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": rest, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=(cfg.beta1, cfg.beta2))


def train_step(forward, model, optimizer, x, y, grad_clip):
    """One step: loss of forward(x, y) (the model, or its DDP wrapper), backward, clip (0: off), AdamW; the loss."""
    _, loss = forward(torch.from_numpy(x), torch.from_numpy(y))
    optimizer.zero_grad()
    loss.backward()
    if grad_clip:
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    optimizer.step()
    return float(loss.item())


def twin_of(model):
    """A TorchTinyLM with the tensorlab model's config and a copy of its weights."""
    return from_state_dict(model.config, model.state_dict())


def from_state_dict(config, arrays):
    """A TorchTinyLM for a ModelConfig, its weights copied from a dict of name -> NumPy array."""
    twin = TorchTinyLM(config).to(getattr(torch, config.dtype))
    twin.load_state_dict({name: torch.from_numpy(np.array(array)) for name, array in arrays.items()})
    return twin


def load_tensorlab_run(run_dir, checkpoint="best"):
    """The model of a tensorlab run directory (its config.json and checkpoints/<checkpoint>) as a TorchTinyLM."""
    from models.export import load_run_model

    return twin_of(load_run_model(run_dir, checkpoint)[0])


def load_exported(path, tokenizer=None):
    """A TorchTinyLM from the model.safetensors that `train.py export` writes (the file, or its folder).

    The file's checksum binds the weights to their description; with `tokenizer` (a BPETokenizer), its
    fingerprint must be the one the model was trained with (ValueError otherwise).
    """
    from models.config import ModelConfig
    from models.export import ExportError, read_export

    arrays, description = read_export(path)
    if tokenizer is not None and tokenizer.fingerprint() != description["tokenizer_sha256"]:
        raise ExportError(
            f"{path} was trained with another tokenizer (sha256 {description['tokenizer_sha256'][:12]}...)"
        )
    return from_state_dict(ModelConfig.from_dict(description["model"]), arrays)
