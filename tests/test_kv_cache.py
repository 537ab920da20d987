"""Generation with the key/value cache gives what recomputing the whole window gives."""

import numpy as np
import pytest

import tensorlab
from models.config import ModelConfig
from models.transformer import TinyTransformerLM
from tensorlab.nn.attention import KVCache

CONTEXT = 12


def make_model(pos_encoding):
    tensorlab.manual_seed(3)
    config = ModelConfig(
        vocab_size=40,
        context_len=CONTEXT,
        d_model=32,
        n_layers=2,
        n_heads=4,
        d_ff=48,
        dropout=0.1,
        pos_encoding=pos_encoding,
    )
    return TinyTransformerLM(config)


@pytest.mark.parametrize("pos_encoding", ["rope", "learned", "sinusoidal"])
def test_cached_logits_match_the_full_forward_position_by_position(pos_encoding):
    # Feeding 4 tokens, then 1 at a time, must give the logits of one forward over all of them.
    model = make_model(pos_encoding).eval()
    ids = np.random.default_rng(0).integers(0, 40, (2, CONTEXT))
    with tensorlab.no_grad():
        full = model(ids)[0].data  # (2, CONTEXT, V)
        caches = [KVCache() for _ in model.blocks]
        pieces = [model(ids[:, :4], kv_caches=caches)[0].data]
        pieces += [model(ids[:, t : t + 1], kv_caches=caches)[0].data for t in range(4, CONTEXT)]
    error = np.abs(np.concatenate(pieces, axis=1) - full).max()
    assert error < 2e-6, error  # achieved: 4e-8 to 1.8e-7 in float32
    assert caches[0].length == CONTEXT


@pytest.mark.parametrize("pos_encoding", ["rope", "learned"])
@pytest.mark.parametrize("temperature, top_k", [(0, None), (1.0, 10)])
def test_cached_and_uncached_generation_give_the_same_tokens_past_the_context(pos_encoding, temperature, top_k):
    model = make_model(pos_encoding)
    prompt = np.random.default_rng(1).integers(0, 40, (3, 5))
    new = 3 * CONTEXT  # the window slides 29 times
    cached = model.generate(prompt, new, temperature, top_k, np.random.default_rng(7), kv_cache=True)
    uncached = model.generate(prompt, new, temperature, top_k, np.random.default_rng(7), kv_cache=False)
    assert cached.shape == (3, 5 + new)
    np.testing.assert_array_equal(cached, uncached)
    assert model.training  # generate restored the mode


def test_the_cache_refuses_to_build_a_graph():
    model = make_model("rope")
    with pytest.raises(RuntimeError, match="attention: the key/value cache is for inference"):
        model(np.zeros((1, 2), dtype=np.int64), kv_caches=[KVCache() for _ in model.blocks])


def test_the_cache_may_not_grow_past_the_context():
    model = make_model("learned").eval()
    caches = [KVCache() for _ in model.blocks]
    with tensorlab.no_grad():
        model(np.zeros((1, CONTEXT), dtype=np.int64), kv_caches=caches)
        with pytest.raises(ValueError, match=f"got {CONTEXT + 1} tokens but the context length is {CONTEXT}"):
            model(np.zeros((1, 1), dtype=np.int64), kv_caches=caches)
