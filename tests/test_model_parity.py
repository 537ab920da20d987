"""TinyTransformerLM against its PyTorch twin: logits, loss and every gradient, for each positional encoding."""
import numpy as np
import pytest
import torch

import tensorlab
from models.config import ModelConfig
from models.transformer import TinyTransformerLM
from models.torch_model import twin_of

TOLERANCE = {"float64": 1e-8, "float32": 1e-4}
ENCODINGS = ["sinusoidal", "learned", "rope"]


def relative_error(ours, theirs):
    """max |ours - theirs| / max |theirs|: the error relative to the tensor's scale."""
    theirs = np.asarray(theirs, dtype=np.float64)
    return float(np.abs(np.asarray(ours, dtype=np.float64) - theirs).max() / max(np.abs(theirs).max(), 1e-30))


def small_config(**overrides):
    values = dict(vocab_size=37, context_len=12, d_model=16, n_layers=2, n_heads=4, d_ff=24, dropout=0.0)
    values.update(overrides)
    return ModelConfig(**values)


def batch(config, seed=0, B=3, T=10):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, config.vocab_size, size=(B, T + 1))
    return ids[:, :-1], ids[:, 1:]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("tie", [True, False])
@pytest.mark.parametrize("pos", ENCODINGS)
def test_logits_loss_and_every_gradient_match_pytorch(pos, tie, dtype):
    tensorlab.manual_seed(1)
    model = TinyTransformerLM(small_config(pos_encoding=pos, tie_weights=tie, dtype=dtype))
    twin = twin_of(model)
    x, y = batch(model.config)
    logits, loss = model(x, y)
    loss.backward()
    t_logits, t_loss = twin(torch.from_numpy(x), torch.from_numpy(y))
    t_loss.backward()
    tol = TOLERANCE[dtype]
    assert logits.dtype == np.dtype(dtype) and loss.dtype == np.dtype(dtype)
    assert relative_error(logits.data, t_logits.detach().numpy()) <= tol
    assert relative_error(loss.data, t_loss.detach().numpy()) <= tol
    torch_params = dict(twin.named_parameters())
    assert [n for n, _ in model.named_parameters()] == list(torch_params)
    for name, p in model.named_parameters():
        assert p.grad.dtype == np.dtype(dtype), name
        err = relative_error(p.grad, torch_params[name].grad.numpy())
        assert err <= tol, f"{name}: relative error {err:.2e} > {tol}"


@pytest.mark.parametrize("pos", ENCODINGS)
def test_causal_mask_later_positions_get_exactly_zero_gradient(pos):
    """The output at position t must not depend on any input after t: those gradients are exactly 0."""
    tensorlab.manual_seed(2)
    config = small_config(pos_encoding=pos, tie_weights=False, dtype="float64", vocab_size=40)
    model = TinyTransformerLM(config)
    T, t = 10, 4
    prefix = np.arange(t + 1)                              # ids 0..4 at positions 0..t
    future = np.arange(20, 20 + T - t - 1)                 # ids used only after position t
    ids = np.concatenate([prefix, future])[None, :]        # (1, T)
    logits, _ = model(ids)
    upstream = np.random.default_rng(0).standard_normal(logits.shape)
    upstream[:, t + 1:] = 0                                # look at outputs 0..t only
    logits.backward(upstream)
    grad_rows = model.tok_emb.weight.grad
    assert np.all(grad_rows[future] == 0.0)
    assert np.all(np.abs(grad_rows[prefix]).sum(axis=1) > 0)
    # and at the attention level: the weights above the diagonal are exactly 0
    _, _, attentions = model(ids, return_attention=True)
    for att in attentions:
        assert np.all(np.triu(att.data[0], k=1) == 0.0)
        np.testing.assert_allclose(att.data.sum(axis=-1), 1.0, rtol=1e-12)


def test_state_dict_round_trips_through_npz_and_into_pytorch(tmp_path):
    tensorlab.manual_seed(3)
    config = small_config(pos_encoding="learned", tie_weights=False, dtype="float64")
    model = TinyTransformerLM(config)
    path = tmp_path / "weights.npz"
    np.savez(path, **model.state_dict())
    tensorlab.manual_seed(4)
    restored = TinyTransformerLM(config)
    with np.load(path, allow_pickle=False) as arrays:
        restored.load_state_dict({name: arrays[name] for name in arrays.files})
    x, _ = batch(config)
    np.testing.assert_array_equal(restored(x)[0].data, model(x)[0].data)
    twin = twin_of(restored)
    back = TinyTransformerLM(config)
    back.load_state_dict({name: t.detach().numpy() for name, t in twin.state_dict().items()})
    np.testing.assert_array_equal(back(x)[0].data, model(x)[0].data)
    assert relative_error(model(x)[0].data, twin(torch.from_numpy(x))[0].detach().numpy()) <= 1e-12


def test_load_state_dict_names_missing_unexpected_and_misshaped_entries():
    model = TinyTransformerLM(small_config(tie_weights=False))
    state = dict(model.state_dict())
    state.pop("head.weight")
    state["extra.weight"] = np.zeros(3)
    state["norm.weight"] = np.zeros(5)
    with pytest.raises(ValueError, match=r"missing: head.weight.*unexpected: extra.weight.*norm.weight: got \(5,\)"):
        model.load_state_dict(state)


@pytest.mark.parametrize("dropout", [0.0, 0.3])
def test_fused_attention_equals_composed_primitives(dropout):
    """The model's fused attention op and the same steps as primitive ops: same outputs, same gradients."""
    config = small_config(pos_encoding="rope", dtype="float64", dropout=dropout)
    x, y = batch(config)
    runs = []
    for fused in (True, False):
        tensorlab.manual_seed(5)
        model = TinyTransformerLM(config)
        for block in model.blocks:
            block.attn.fused = fused
        tensorlab.manual_seed(6)  # the same dropout masks, drawn in the same order
        logits, loss, attentions = model(x, y, return_attention=True)
        loss.backward()
        runs.append((logits.data, [a.data for a in attentions], {n: p.grad for n, p in model.named_parameters()}))
    (fused_logits, fused_att, fused_grads), (comp_logits, comp_att, comp_grads) = runs
    assert relative_error(fused_logits, comp_logits) <= 1e-12
    for a, b in zip(fused_att, comp_att):
        assert relative_error(a, b) <= 1e-12
    for name in fused_grads:
        assert relative_error(fused_grads[name], comp_grads[name]) <= 1e-10, name


@pytest.mark.parametrize("pos", ENCODINGS)
def test_twenty_adamw_steps_with_clipping_and_warmup_cosine_match_pytorch(pos):
    """The whole training step: parameter groups (decay / no decay, their own lr), clipping, schedule, AdamW."""
    from tensorlab.optim import AdamW, WarmupCosine, clip_grad_norm, weight_decay_groups
    tensorlab.manual_seed(7)
    model = TinyTransformerLM(small_config(pos_encoding=pos, tie_weights=pos != "learned", dtype="float64"))
    twin = twin_of(model)
    groups = weight_decay_groups(model.named_parameters(), 0.1)
    groups[1]["lr"] = 5e-3                                          # the no-decay group gets its own lr
    optimizer = AdamW(groups, lr=1e-2, betas=(0.9, 0.95))
    schedule = WarmupCosine(max_lr=1.0, min_lr=0.1, warmup_steps=5, max_steps=20)
    twin_params = dict(twin.named_parameters())
    twin_groups = [{"params": [twin_params[n] for n, p in model.named_parameters() if any(p is q for q in g["params"])],
                    "weight_decay": g["weight_decay"], **({"lr": g["lr"]} if "lr" in g else {})} for g in groups]
    twin_optimizer = torch.optim.AdamW(twin_groups, lr=1e-2, betas=(0.9, 0.95))
    twin_schedule = torch.optim.lr_scheduler.LambdaLR(twin_optimizer, schedule.lr_at)
    norms = []
    for step in range(20):
        x, y = batch(model.config, seed=100 + step)
        schedule.apply(optimizer, step)
        optimizer.zero_grad()
        model(x, y)[1].backward()
        norm = clip_grad_norm(model.parameters(), 0.5)
        optimizer.step()
        twin_optimizer.zero_grad()
        twin(torch.from_numpy(x), torch.from_numpy(y))[1].backward()
        twin_norm = torch.nn.utils.clip_grad_norm_(twin.parameters(), 0.5)
        twin_optimizer.step()
        twin_schedule.step()
        norms.append((norm, float(twin_norm)))
    assert any(n > 0.5 for n, _ in norms)                           # clipping was really exercised
    for norm, twin_norm in norms:
        assert abs(norm - twin_norm) <= 1e-8 * twin_norm
    for name, p in model.named_parameters():
        err = relative_error(p.data, twin_params[name].detach().numpy())
        assert err <= 1e-8, f"{name}: relative error {err:.2e} after 20 steps"
