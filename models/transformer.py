"""TinyTransformerLM: a small GPT-style language model built only from tensorlab.

Shape letters, used in every comment: B batch, T time (tokens), C = d_model channels,
H heads, V vocabulary. Data flows top to bottom:
    ids (B, T) -> token embedding (+ position) -> n_layers blocks -> final norm
    -> LM head -> logits (B, T, V) -> cross-entropy against the next tokens.
"""

from contextlib import contextmanager

import numpy as np

from tensorlab import backend, no_grad
from tensorlab import functional as F
from tensorlab.nn import Dropout, Embedding, Linear, Module, ModuleList, TransformerBlock
from tensorlab.nn.attention import KVCache
from tensorlab.nn.positional import sinusoidal_table
from tensorlab.nn.transformer import make_norm
from tensorlab.tensor import Tensor


class TinyTransformerLM(Module):
    def __init__(self, config):
        super().__init__()
        self.config = c = config
        self.tok_emb = Embedding(c.vocab_size, c.d_model, c.embedding_std, c.dtype)  # (V, C)
        if c.pos_encoding == "learned":
            self.pos_emb = Embedding(c.context_len, c.d_model, c.embedding_std, c.dtype)  # (T_max, C)
        self.emb_dropout = Dropout(c.dropout)
        self.blocks = ModuleList(TransformerBlock(c) for _ in range(c.n_layers))
        self.norm = make_norm(c)
        if not c.tie_weights:
            self.head = Linear(c.d_model, c.vocab_size, bias=c.head_bias, dtype=c.dtype)  # (V, C)
        self._sinusoids = {}  # (device, dtype) -> (T_max, C) constant table

    def forward(self, ids, targets=None, return_attention=False, kv_caches=None):
        """logits (B, T, V) and the mean cross-entropy against `targets` (None without targets).

        With return_attention=True also returns each layer's attention weights, a list of (B, H, T, T).
        With kv_caches (one KVCache per layer, under no_grad) `ids` are the positions after those
        already cached: they attend to the cached keys and values, which then include them too.
        """
        ids = ids.data if isinstance(ids, Tensor) else ids
        B, T = ids.shape
        start = 0 if kv_caches is None else kv_caches[0].length  # absolute position of ids[:, 0]
        if start + T > self.config.context_len:
            raise ValueError(
                f"TinyTransformerLM: got {start + T} tokens but the context length is "
                f"{self.config.context_len}; crop the input to its last {self.config.context_len}"
            )
        x = self.tok_emb(ids)  # (B, T, C)
        if self.config.pos_encoding == "learned":
            x = x + self.pos_emb.weight[start : start + T]  # rows start..start+T-1 (T, C), broadcast over B
        elif self.config.pos_encoding == "sinusoidal":
            positions = self._sinusoid_table(x)[start : start + T]  # (T, C)
            positions.name, positions.constant = "sinusoids", True  # tensorlab.graph: a constant, not an input
            x = x + positions  # broadcast over B
        x = self.emb_dropout(x)
        attentions = []
        for i, block in enumerate(self.blocks):
            cache = None if kv_caches is None else kv_caches[i]
            x, att = block(x, return_attention=True, kv_cache=cache)  # (B, T, C), (B, H, T, start + T)
            attentions.append(att)
        x = self.norm(x)  # (B, T, C)
        logits = F.linear(x, self.tok_emb.weight) if self.config.tie_weights else self.head(x)  # (B, T, V)
        loss = None if targets is None else F.cross_entropy(logits, targets)
        return (logits, loss, attentions) if return_attention else (logits, loss)

    def _sinusoid_table(self, like):
        key = (like.device, like.dtype)
        if key not in self._sinusoids:
            table = sinusoidal_table(self.config.context_len, self.config.d_model).astype(like.dtype)
            self._sinusoids[key] = Tensor(backend.to_device(table, like.device))
        return self._sinusoids[key]

    def generate(self, ids, max_new_tokens, temperature=1.0, top_k=None, rng=None, kv_cache=True):
        """Extend `ids` (B, T0) by sampling `max_new_tokens` tokens, one at a time.

        Each step looks at most at the last context_len tokens (older ones fall out of the
        window), divides the last position's logits by `temperature` (0 means greedy),
        keeps only the `top_k` most likely tokens if given, and samples from the softmax.
        With kv_cache (the default) each layer keeps its keys and values, so a step feeds only
        the newest token. Once the window slides, every position's hidden state changes (the
        oldest token drops out of what all later ones attended to), so from then on each step
        recomputes the window and the cache, exactly as without the cache.
        """
        if temperature < 0:
            raise ValueError(f"generate: temperature must be >= 0, got {temperature}")
        if top_k is not None and not 1 <= top_k <= self.config.vocab_size:
            raise ValueError(f"generate: top_k must be in [1, {self.config.vocab_size}], got {top_k}")
        rng = rng if rng is not None else np.random.default_rng()
        ids = np.array(ids, dtype=np.int64, ndmin=2)
        context_len = self.config.context_len
        caches = None
        with inference(self):
            for _ in range(max_new_tokens):
                if not kv_cache:
                    logits, _ = self(ids[:, -context_len:])
                elif caches is not None and caches[0].length < context_len:  # the window still grows
                    logits, _ = self(ids[:, -1:], kv_caches=caches)
                else:  # first step, or the window slid
                    caches = [KVCache() for _ in self.blocks]
                    logits, _ = self(ids[:, -context_len:], kv_caches=caches)
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
    """One token id per row of `logits` (B, V): greedy at temperature 0, else sampled after top-k filtering.

    A temperature so small that logits / temperature overflows is sampled greedily, its limit as T -> 0.
    """
    if temperature == 0:
        return logits.argmax(axis=-1)
    with np.errstate(over="ignore"):
        scaled = logits / temperature
    if not np.isfinite(scaled[np.isfinite(logits)]).all():  # 1 / temperature overflowed: its limit, greedy
        return logits.argmax(axis=-1)
    logits = scaled
    if top_k is not None:
        kth_largest = np.sort(logits, axis=-1)[:, -top_k][:, None]  # (B, 1)
        logits = np.where(logits < kth_largest, -np.inf, logits)
    probs = F.softmax(Tensor(logits), axis=-1).data  # (B, V), the engine's softmax
    return (probs.cumsum(axis=-1) > rng.random((len(probs), 1))).argmax(axis=-1)
