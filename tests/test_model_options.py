"""Each model option (norm choice, norm position, biases per layer type, positions, activation, heads, tied
head) against the PyTorch twin in models/torch_model.py: logits, loss and every gradient, in float64.

Achieved: relative errors about 1e-15 for every combination; the tolerance is 1e-9.
"""

import numpy as np
import pytest
import torch

import tensorlab
from models.config import ModelConfig
from models.torch_model import twin_of
from models.transformer import TinyTransformerLM

TOL = 1e-9

OPTIONS = [  # each row is one reference report's model, plus single switches
    dict(
        norm="none",
        pos_encoding="learned",
        n_heads=1,
        qkv_bias=False,
        ffn_bias=True,
        tie_weights=False,
        head_bias=True,
        activation="relu",
    ),  # seed 000
    dict(norm="rmsnorm", pos_encoding="sinusoidal", n_heads=1, tie_weights=False, activation="gelu"),  # 001
    dict(norm="layernorm", norm_position="post", activation="relu", tie_weights=True),  # 002
    dict(norm="rmsnorm", pos_encoding="sinusoidal", qkv_bias=False, proj_bias=False, tie_weights=False),  # 003
    dict(
        norm="layernorm",
        norm_position="post",
        qkv_bias=False,
        proj_bias=True,
        tie_weights=False,
        head_bias=True,
        activation="relu",
        pos_encoding="sinusoidal",
    ),  # 004
    dict(norm="layernorm", norm_position="pre", pos_encoding="rope"),
    dict(norm="rmsnorm", norm_position="post", ffn_bias=False),
    dict(activation="swiglu"),  # the gated feed-forward of PaLM and LLaMA
    dict(activation="swiglu", ffn_bias=False, norm_position="post"),
]


def config(**overrides):
    values = dict(vocab_size=29, context_len=12, d_model=16, n_layers=2, n_heads=4, d_ff=24, dtype="float64")
    return ModelConfig(**{**values, **overrides})


def relative_error(ours, theirs):
    theirs = np.asarray(theirs, dtype=np.float64)
    return float(np.abs(np.asarray(ours, dtype=np.float64) - theirs).max() / max(np.abs(theirs).max(), 1e-30))


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
def test_option_matches_pytorch_twin(options):
    tensorlab.manual_seed(3)
    model = TinyTransformerLM(config(**options))
    for p in model.parameters():  # off the init values (ones, zeros), so a misplaced norm or bias shows
        p.data[...] += np.random.default_rng(p.size).normal(0, 0.1, p.shape)
    twin = twin_of(model)
    ids = np.random.default_rng(0).integers(0, 29, size=(3, 11))
    x, y = ids[:, :-1], ids[:, 1:]
    logits, loss = model(x, y)
    loss.backward()
    t_logits, t_loss = twin(torch.from_numpy(x), torch.from_numpy(y))
    t_loss.backward()
    assert relative_error(logits.data, t_logits.detach().numpy()) <= TOL
    assert relative_error(loss.data, t_loss.detach().numpy()) <= TOL
    theirs = dict(twin.named_parameters())
    assert [n for n, _ in model.named_parameters()] == list(theirs)
    for name, p in model.named_parameters():
        assert relative_error(p.grad, theirs[name].grad.numpy()) <= TOL, name


def test_bias_switches_add_and_remove_exactly_the_named_parameters():
    names = lambda **o: {n for n, _ in TinyTransformerLM(config(**o)).named_parameters()}  # noqa: E731
    everything = names(tie_weights=False, head_bias=True, norm="layernorm")
    assert names(tie_weights=False, head_bias=True, norm="layernorm", qkv_bias=False) == everything - {
        "blocks.0.attn.qkv.bias",
        "blocks.1.attn.qkv.bias",
    }
    assert names(tie_weights=False, head_bias=True, norm="layernorm", proj_bias=False) == everything - {
        "blocks.0.attn.proj.bias",
        "blocks.1.attn.proj.bias",
    }
    assert names(tie_weights=False, head_bias=True, norm="layernorm", ffn_bias=False) == everything - {
        f"blocks.{i}.ffn.{layer}.bias" for i in (0, 1) for layer in ("fc", "proj")
    }
    assert names(tie_weights=False, norm="layernorm") == everything - {"head.bias"}
    assert not any("norm" in n for n in names(norm="none"))
    assert not any(n.endswith("norm.bias") or ".norm1.bias" in n for n in names(norm="rmsnorm"))


def test_post_norm_output_of_every_block_is_normalised():
    """Post-norm ends each block with the norm: with LayerNorm (weight 1, bias 0) every position has mean 0, var 1."""
    tensorlab.manual_seed(4)
    model = TinyTransformerLM(config(norm="layernorm", norm_position="post"))
    x = model.tok_emb(np.arange(10)[None, :])
    out = model.blocks[0](x).data[0]
    np.testing.assert_allclose(out.mean(axis=-1), 0.0, atol=1e-12)  # achieved ~1e-17
    np.testing.assert_allclose(out.var(axis=-1), 1.0, rtol=1e-4)  # var / (var + eps), eps = 1e-5


@pytest.mark.parametrize("std", [0.02, 1.0])
def test_embedding_std_sets_the_spread_of_both_tables(std):
    """1.0 is torch.nn.Embedding's N(0, 1), which report 003 relies on to be heard over its sinusoids."""
    tensorlab.manual_seed(5)
    model = TinyTransformerLM(config(embedding_std=std, pos_encoding="learned", d_model=64, context_len=64))
    for table in (model.tok_emb.weight.data, model.pos_emb.weight.data):
        assert abs(table.mean()) < 0.1 * std  # sampled ~0.02 std
        np.testing.assert_allclose(table.std(), std, rtol=0.06)  # 4,096+ samples: achieved within 3%


@pytest.mark.parametrize(
    "bad, message",
    [
        (dict(norm="batchnorm"), "norm must be one of rmsnorm, layernorm, none"),
        (dict(norm_position="middle"), "norm_position must be one of pre, post"),
        (dict(head_bias=True, tie_weights=True), "head_bias needs tie_weights false"),
        (dict(embedding_std=0.0), "embedding_std must be > 0, got 0.0"),
    ],
)
def test_bad_options_are_refused_with_one_line(bad, message):
    with pytest.raises(ValueError, match=message):
        config(**bad)
