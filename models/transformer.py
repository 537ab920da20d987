"""TinyTransformerLM: a small GPT-style language model built only from tensorlab.

Shape letters, used in every comment: B batch, T time (tokens), C = d_model channels,
H heads, V vocabulary. Data flows top to bottom:
    ids (B, T) -> token embedding (+ position) -> n_layers blocks -> final norm
    -> LM head -> logits (B, T, V) -> cross-entropy against the next tokens.
The defaults (models/config.py) make it GPT-2-like: pre-norm RMSNorm blocks, RoPE, GELU, a tied head;
the config switches each of those to what the reference reports use.
"""
from contextlib import contextmanager

import numpy as np

from tensorlab import backend, no_grad
from tensorlab import functional as F
from tensorlab.nn import Dropout, Embedding, Linear, Module, ModuleList, TransformerBlock
from tensorlab.nn.positional import sinusoidal_table
from tensorlab.nn.transformer import make_norm
from tensorlab.tensor import Tensor


class TinyTransformerLM(Module):
    def __init__(self, config):
        super().__init__()
        self.config = c = config
        dtype = np.dtype(c.dtype)
        self.tok_emb = Embedding(c.vocab_size, c.d_model, dtype)                        # (V, C)
        if c.pos_encoding == "learned":
            self.pos_emb = Embedding(c.context_len, c.d_model, dtype)                   # (T_max, C)
        self.emb_dropout = Dropout(c.dropout)
        self.blocks = ModuleList(
            TransformerBlock(c.d_model, c.n_heads, c.d_ff, c.dropout, c.activation, c.qkv_bias,
                             rope=c.pos_encoding == "rope", norm_eps=c.norm_eps, n_layers=c.n_layers, dtype=dtype,
                             norm=c.norm, norm_position=c.norm_position, proj_bias=c.proj_bias, ffn_bias=c.ffn_bias)
            for _ in range(c.n_layers))
        self.norm = make_norm(c.norm, c.d_model, c.norm_eps, dtype)
        if not c.tie_weights:
            self.head = Linear(c.d_model, c.vocab_size, bias=c.head_bias, dtype=dtype)   # (V, C)
        self._sinusoids = {}  # (device, dtype) -> (T_max, C) constant table

    def forward(self, ids, targets=None, return_attention=False):
        """logits (B, T, V) and the mean cross-entropy against `targets` (None without targets).

        With return_attention=True also returns each layer's attention weights, a list of (B, H, T, T).
        """
        ids = ids.data if isinstance(ids, Tensor) else ids
        B, T = ids.shape
        if T > self.config.context_len:
            raise ValueError(f"TinyTransformerLM: got {T} tokens but the context length is "
                             f"{self.config.context_len}; crop the input to its last {self.config.context_len}")
        x = self.tok_emb(ids)                                           # (B, T, C)
        if self.config.pos_encoding == "learned":
            x = x + self.pos_emb.weight[:T]                             # rows 0..T-1 (T, C), broadcast over B
        elif self.config.pos_encoding == "sinusoidal":
            x = x + self._sinusoid_table(x)[:T]                         # (T, C) broadcast over B
        x = self.emb_dropout(x)
        attentions = []
        for block in self.blocks:
            x, att = block(x, return_attention=True)                    # (B, T, C), (B, H, T, T)
            attentions.append(att)
        x = self.norm(x)                                                # (B, T, C)
        logits = F.linear(x, self.tok_emb.weight) if self.config.tie_weights else self.head(x)  # (B, T, V)
        loss = None if targets is None else F.cross_entropy(logits, targets)
        return (logits, loss, attentions) if return_attention else (logits, loss)

    def _sinusoid_table(self, like):
        key = (like.device, like.dtype)
        if key not in self._sinusoids:
            table = sinusoidal_table(self.config.context_len, self.config.d_model).astype(like.dtype)
            self._sinusoids[key] = Tensor(backend.to_device(table, like.device))
        return self._sinusoids[key]

    def generate(self, ids, max_new_tokens, temperature=1.0, top_k=None, rng=None):
        """Extend `ids` (B, T0) by sampling `max_new_tokens` tokens, one at a time.

        Each step feeds at most the last context_len tokens (older ones fall out of the
        window), divides the last position's logits by `temperature` (0 means greedy),
        keeps only the `top_k` most likely tokens if given, and samples from the softmax.
        """
        if temperature < 0:
            raise ValueError(f"generate: temperature must be >= 0, got {temperature}")
        if top_k is not None and not 1 <= top_k <= self.config.vocab_size:
            raise ValueError(f"generate: top_k must be in [1, {self.config.vocab_size}], got {top_k}")
        rng = rng if rng is not None else np.random.default_rng()
        ids = np.array(ids, dtype=np.int64, ndmin=2)
        with inference(self):
            for _ in range(max_new_tokens):
                logits, _ = self(ids[:, -self.config.context_len:])
                last = backend.to_device(logits.data[:, -1, :], "cpu").astype(np.float64)  # (B, V)
                ids = np.concatenate([ids, sample_next(last, temperature, top_k, rng)[:, None]], axis=1)
        return ids


@contextmanager
def inference(model):
    """Evaluation mode (no dropout) and no graph while inside; the model's previous mode comes back after."""
    was_training = model.training
    model.eval()
    try:
        with no_grad():
            yield model
    finally:
        model.train(was_training)


def sample_next(logits, temperature, top_k, rng):
    """One token id per row of `logits` (B, V): greedy at temperature 0, else sampled after top-k filtering."""
    if temperature == 0:
        return logits.argmax(axis=-1)
    logits = logits / temperature
    if top_k is not None:
        kth_largest = np.sort(logits, axis=-1)[:, -top_k][:, None]     # (B, 1)
        logits = np.where(logits < kth_largest, -np.inf, logits)
    probs = np.exp(logits - logits.max(axis=-1, keepdims=True))
    probs /= probs.sum(axis=-1, keepdims=True)
    return (probs.cumsum(axis=-1) > rng.random((len(probs), 1))).argmax(axis=-1)
