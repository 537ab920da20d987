"""The one causal-mask builder of the engine (tensorlab.ops.attention.causal_mask) and its users."""

import numpy as np
import torch

import tensorlab
from tensorlab import nn
from tensorlab.ops.attention import causal_bias, causal_mask


def test_a_square_mask_hides_exactly_the_keys_after_each_query_as_torch_tril():
    for T in (1, 2, 5):
        allowed = torch.ones(T, T, dtype=torch.bool).tril().numpy()  # PyTorch's is_causal: j <= i
        np.testing.assert_array_equal(causal_mask(T), ~allowed)


def test_after_a_cache_the_queries_are_the_last_positions():
    # 2 new queries after 3 cached positions: they sit at positions 3 and 4 and see keys 0..3 and 0..4
    expected = np.array([[0, 0, 0, 0, 1], [0, 0, 0, 0, 0]], dtype=bool)
    np.testing.assert_array_equal(causal_mask(2, 5), expected)


def test_the_additive_bias_is_minus_inf_exactly_where_the_mask_is_true():
    bias = causal_bias(4, np.float32, "cpu")
    assert bias.dtype == np.float32
    np.testing.assert_array_equal(np.isneginf(bias), causal_mask(4))
    np.testing.assert_array_equal(bias[~causal_mask(4)], 0)


def test_the_composed_attention_uses_the_same_mask_as_the_fused_op():
    rng = np.random.default_rng(0)
    x = tensorlab.tensor(rng.standard_normal((2, 5, 8)))
    config = nn.TransformerConfig(d_model=8, n_heads=2, pos_encoding="learned", dtype="float64")
    fused = nn.CausalSelfAttention(config)
    composed = nn.CausalSelfAttention(config, fused=False)
    composed.load_state_dict(fused.state_dict())
    _, att_fused = fused(x, return_attention=True)
    _, att_composed = composed(x, return_attention=True)
    np.testing.assert_array_equal(att_fused.numpy() == 0, np.broadcast_to(causal_mask(5), (2, 2, 5, 5)))
    np.testing.assert_allclose(att_composed.numpy(), att_fused.numpy(), rtol=0, atol=1e-15)  # measured: 5.6e-17
