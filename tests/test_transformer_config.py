"""The model's configuration passed once: TransformerConfig declares each block switch, every part reads it.

test_nn.py and test_model_options.py check the numbers against PyTorch; this file checks the wiring
those cannot see (dropout while training, the initial std, the dtype), that ModelConfig declares no
block switch a second time, and the one-line refusals.
"""

from dataclasses import fields

import numpy as np
import pytest

import tensorlab
from models.config import ModelConfig
from tensorlab import nn
from tensorlab.nn.transformer import Identity, make_norm


def small(**overrides):
    return nn.TransformerConfig(**{**dict(d_model=64, n_heads=4, d_ff=96, n_layers=2), **overrides})


def test_model_config_is_the_block_config_plus_the_model_around_it():
    """A block switch declared again in ModelConfig could drift from the engine's: each is declared once."""
    assert issubclass(ModelConfig, nn.TransformerConfig)
    declared_by_the_model = set(ModelConfig.__annotations__)
    assert declared_by_the_model == {"vocab_size", "context_len", "tie_weights", "head_bias", "embedding_std"}
    block = {f.name: f.default for f in fields(nn.TransformerConfig)}
    assert {f.name: f.default for f in fields(ModelConfig) if f.name in block} == block


def dropouts(module):
    return [m.p for _, m in module.named_modules() if isinstance(m, nn.Dropout)]


def biases(module):
    return sorted(name for name, _ in module.named_parameters() if name.endswith("bias"))


WIRING = {  # switch: (its value, what the block must show)
    "dropout": (0.3, lambda b: dropouts(b) == [0.3, 0.3, 0.3]),  # attention weights, both residual branches
    "pos_encoding": ("learned", lambda b: b.attn.rope is False),
    "activation": ("relu", lambda b: b.ffn.activation == "relu" and type(b.ffn) is nn.FeedForward),
    "norm": ("layernorm", lambda b: type(b.norm1) is type(b.norm2) is nn.LayerNorm),
    "norm_position": ("post", lambda b: b.norm_position == "post"),
    "norm_eps": (0.25, lambda b: b.norm1.eps == b.norm2.eps == 0.25),
    "qkv_bias": (False, lambda b: biases(b) == ["attn.proj.bias", "ffn.fc.bias", "ffn.proj.bias"]),
    "proj_bias": (False, lambda b: biases(b) == ["attn.qkv.bias", "ffn.fc.bias", "ffn.proj.bias"]),
    "ffn_bias": (False, lambda b: biases(b) == ["attn.proj.bias", "attn.qkv.bias"]),
    "dtype": ("float64", lambda b: {p.dtype for p in b.parameters()} == {np.dtype(np.float64)}),
}


@pytest.mark.parametrize("switch", WIRING)
def test_every_switch_reaches_the_block(switch):
    value, shows = WIRING[switch]
    default_block = nn.TransformerBlock(small())
    block = nn.TransformerBlock(small(**{switch: value}))
    assert shows(block) and not shows(default_block), switch


def test_the_swiglu_and_normless_block():
    block = nn.TransformerBlock(small(activation="swiglu", norm="none", ffn_bias=False))
    assert type(block.ffn) is nn.SwiGLUFeedForward and type(block.norm1) is type(block.norm2) is Identity
    assert block.ffn.gate.weight.shape == block.ffn.up.weight.shape == (96, 64) and block.ffn.gate.bias is None


def test_sizes_and_depth_set_the_shapes_and_the_initial_spread():
    """The projections into the residual stream start at std 0.02 / sqrt(2 n_layers); the others at 0.02."""
    tensorlab.manual_seed(0)
    block = nn.TransformerBlock(small(d_model=128, n_heads=8, d_ff=256, n_layers=8))
    assert block.attn.n_heads == 8 and block.attn.qkv.weight.shape == (384, 128)
    assert block.ffn.fc.weight.shape == (256, 128) and block.ffn.proj.weight.shape == (128, 256)
    # 16,384+ samples each: the sample std is within 2% of the true one (measured within 0.7%)
    np.testing.assert_allclose(block.attn.proj.weight.data.std(), 0.02 / 4, rtol=0.02)
    np.testing.assert_allclose(block.ffn.proj.weight.data.std(), 0.02 / 4, rtol=0.02)
    np.testing.assert_allclose(block.attn.qkv.weight.data.std(), 0.02, rtol=0.02)


def test_a_model_config_builds_the_same_block_as_its_block_settings():
    """The model's blocks read ModelConfig directly: the same parameters as from the block settings alone."""
    model = ModelConfig(vocab_size=7, d_model=32, n_heads=2, d_ff=48, n_layers=3, norm="layernorm", qkv_bias=False)
    alone = nn.TransformerConfig(**{f.name: getattr(model, f.name) for f in fields(nn.TransformerConfig)})
    tensorlab.manual_seed(1)
    ours = nn.TransformerBlock(model).state_dict()
    tensorlab.manual_seed(1)
    theirs = nn.TransformerBlock(alone).state_dict()
    assert list(ours) == list(theirs) and all(np.array_equal(ours[k], theirs[k]) for k in ours)


@pytest.mark.parametrize(
    "build",
    [nn.TransformerBlock, nn.CausalSelfAttention, nn.FeedForward, nn.SwiGLUFeedForward, make_norm],
    ids=lambda build: build.__name__,
)
@pytest.mark.parametrize("wrong", [16, {"d_model": 16, "n_heads": 4}])
def test_what_is_not_a_config_is_refused_in_one_line(build, wrong):
    with pytest.raises(TypeError) as err:
        build(wrong)
    message = str(err.value)
    assert message.startswith(f"{build.__name__} takes a TransformerConfig") and "\n" not in message
    assert type(wrong).__name__ in message


def test_fused_is_a_keyword_so_old_positional_calls_fail_at_once():
    with pytest.raises(TypeError):
        nn.CausalSelfAttention(small(), False)
    assert nn.CausalSelfAttention(small(), fused=False).fused is False


def test_feed_forward_refuses_the_gated_activation():
    with pytest.raises(ValueError, match=r"^FeedForward: activation must be one of gelu, relu, got 'swiglu'"):
        nn.FeedForward(small(activation="swiglu"))


@pytest.mark.parametrize(
    "bad, message",
    [
        (dict(n_heads=5), "d_model=64 must be divisible by n_heads=5"),
        (dict(d_model=12, n_heads=4), "rope needs an even head size, got d_model/n_heads = 3"),
        (dict(n_heads=0), "n_heads must be a positive integer, got 0"),  # and no ZeroDivisionError
        (dict(d_ff=True), "d_ff must be a positive integer, got True"),
        (dict(activation="tanh"), "activation must be one of gelu, relu, swiglu; got 'tanh'"),
        (dict(pos_encoding="alibi"), "pos_encoding must be one of sinusoidal, learned, rope; got 'alibi'"),
        (dict(dtype="float16"), "dtype must be one of float32, float64; got 'float16'"),
        (dict(dropout=1.0), r"dropout must be in \[0, 1\), got 1.0"),
        (dict(norm_eps=0.0), "norm_eps must be > 0, got 0.0"),
    ],
)
def test_bad_block_settings_are_refused_naming_the_key(bad, message):
    with pytest.raises(ValueError, match=f"^model config: {message}$"):
        small(**bad)


def test_odd_heads_are_fine_without_rope():
    assert small(d_model=12, n_heads=4, pos_encoding="learned").d_model == 12


def test_model_config_lists_its_own_problems_and_the_blocks():
    with pytest.raises(ValueError) as err:
        ModelConfig(vocab_size=0, n_heads=0)
    assert str(err.value).splitlines() == [
        "model config: vocab_size must be a positive integer, got 0",
        "model config: n_heads must be a positive integer, got 0",
    ]
