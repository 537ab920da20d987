"""TinyTransformerLM against its PyTorch twin: logits, loss and every gradient, for each positional encoding."""

import math

import numpy as np
import pytest
import torch

import tensorlab
from models.config import ModelConfig
from models.torch_model import twin_of
from models.transformer import TinyTransformerLM

# Relative error, worst over the 12 cases of test_logits_loss_and_every_gradient_match_pytorch (and the
# norm_eps=0.1 ones), measured: float64 logits 3.5e-16, loss 2.5e-16, gradients 1.0e-15;
# float32 logits 2.4e-07, loss 1.3e-07, gradients 6.0e-07. Each tolerance is within 100x of that.
TOLERANCE = {"float64": 1e-13, "float32": 5e-5}
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
@pytest.mark.parametrize(
    "pos, tie, norm_eps",
    [(pos, tie, 1e-5) for pos in ENCODINGS for tie in (True, False)] + [("rope", True, 0.1), ("learned", False, 0.1)],
)
def test_logits_loss_and_every_gradient_match_pytorch(pos, tie, norm_eps, dtype):
    tensorlab.manual_seed(1)
    model = TinyTransformerLM(small_config(pos_encoding=pos, tie_weights=tie, dtype=dtype, norm_eps=norm_eps))
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
    prefix = np.arange(t + 1)  # ids 0..4 at positions 0..t
    future = np.arange(20, 20 + T - t - 1)  # ids used only after position t
    ids = np.concatenate([prefix, future])[None, :]  # (1, T)
    logits, _ = model(ids)
    upstream = np.random.default_rng(0).standard_normal(logits.shape)
    upstream[:, t + 1 :] = 0  # look at outputs 0..t only
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
    # measured 3.2e-16
    assert relative_error(model(x)[0].data, twin(torch.from_numpy(x))[0].detach().numpy()) <= 3e-14


def test_load_state_dict_names_missing_unexpected_and_misshaped_entries():
    model = TinyTransformerLM(small_config(tie_weights=False))
    state = dict(model.state_dict())
    state.pop("head.weight")
    state["extra.weight"] = np.zeros(3)
    state["norm.weight"] = np.zeros(5)
    with pytest.raises(ValueError, match=r"missing: head.weight.*unexpected: extra.weight.*norm.weight: got \(5,\)"):
        model.load_state_dict(state)


@pytest.mark.gpu
@pytest.mark.parametrize(("source", "target"), [("cuda", "cuda"), ("cpu", "cuda"), ("cuda", "cpu")])
def test_load_state_dict_takes_arrays_from_either_device(cuda, source, target):
    """A device state dict loads without a host conversion of its own (np.asarray of a CuPy array raises)."""
    config = small_config(tie_weights=False)
    tensorlab.manual_seed(5)
    model = TinyTransformerLM(config).to(source)
    tensorlab.manual_seed(6)
    other = TinyTransformerLM(config).to(target)
    other.load_state_dict(model.state_dict())
    for name, array in other.state_dict().items():
        assert tensorlab.backend.device_of(array) == target
        assert np.array_equal(
            tensorlab.backend.to_device(array, "cpu"), tensorlab.backend.to_device(model.state_dict()[name], "cpu")
        )
    broken = dict(model.state_dict(), **{"norm.weight": model.state_dict()["norm.weight"][:3]})
    with pytest.raises(ValueError, match=r"wrong shape: norm.weight: got \(3,\)"):
        other.load_state_dict(broken)


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
    # measured worst relative error (dropout 0 and 0.3): logits 4.5e-16, attention 5.6e-17, gradients 4.4e-16
    assert relative_error(fused_logits, comp_logits) <= 3e-14
    for a, b in zip(fused_att, comp_att):
        assert relative_error(a, b) <= 3e-14
    for name in fused_grads:
        assert relative_error(fused_grads[name], comp_grads[name]) <= 3e-14, name


PARAMETERS_AFTER_20_STEPS = 1e-11  # measured worst relative error 2.8e-13 (over the three encodings)
WARMUP, TOTAL, MIN_RATIO = 5, 20, 0.1  # schedule: 5 warmup steps, cosine to 0.1 x base lr at step 20


def torch_warmup_cosine_factor(step):
    """The schedule's factor on each group's base lr, written here from its formula for the PyTorch side."""
    if step < WARMUP:
        return step / WARMUP
    progress = min(step, TOTAL) - WARMUP
    return MIN_RATIO + (1 - MIN_RATIO) * (1 + math.cos(math.pi * progress / (TOTAL - WARMUP))) / 2


def tensorlab_schedule(optimizer):
    """tensorlab's warmup-cosine on `optimizer`: a function of the step that sets every group's lr (the one
    place that knows tensorlab's schedule API)."""
    from tensorlab.optim import WarmupCosine

    schedule = WarmupCosine(max_lr=1.0, min_lr=MIN_RATIO, warmup_steps=WARMUP, max_steps=TOTAL)
    return lambda step: schedule.apply(optimizer, step)


def torch_optimizer_by_its_own_rule(twin):
    """AdamW over PyTorch's parameters, grouped here: matrices and tables decay, vectors (biases, gains) do not."""
    params = list(twin.parameters())  # a tied weight once
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0, "lr": 5e-3}],
        lr=1e-2,
        betas=(0.9, 0.95),
    )


@pytest.mark.parametrize("pos", ENCODINGS)
def test_twenty_adamw_steps_with_clipping_and_warmup_cosine_match_pytorch(pos):
    """The whole training step: parameter groups (decay / no decay, their own lr), clipping, schedule, AdamW.

    The PyTorch side groups its parameters, and schedules its lr with torch.optim.lr_scheduler.LambdaLR,
    by its own code: a bug in tensorlab's grouping or schedule shows as a difference.
    """
    from tensorlab.optim import AdamW, clip_grad_norm_, weight_decay_groups

    tensorlab.manual_seed(7)
    model = TinyTransformerLM(small_config(pos_encoding=pos, tie_weights=pos != "learned", dtype="float64"))
    twin = twin_of(model)
    groups = weight_decay_groups(model.named_parameters(), 0.1)
    groups[1]["lr"] = 5e-3  # the no-decay group gets its own lr
    optimizer = AdamW(groups, lr=1e-2, betas=(0.9, 0.95))
    set_lr = tensorlab_schedule(optimizer)
    twin_optimizer = torch_optimizer_by_its_own_rule(twin)
    twin_schedule = torch.optim.lr_scheduler.LambdaLR(twin_optimizer, torch_warmup_cosine_factor)
    norms, lrs = [], []
    for step in range(TOTAL):
        x, y = batch(model.config, seed=100 + step)
        set_lr(step)
        lrs.append(([g["lr"] for g in optimizer.param_groups], [g["lr"] for g in twin_optimizer.param_groups]))
        optimizer.zero_grad()
        model(x, y)[1].backward()
        norm = clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()
        twin_optimizer.zero_grad()
        twin(torch.from_numpy(x), torch.from_numpy(y))[1].backward()
        twin_norm = torch.nn.utils.clip_grad_norm_(twin.parameters(), 0.5)
        twin_optimizer.step()
        twin_schedule.step()
        norms.append((norm, float(twin_norm)))
    assert any(n > 0.5 for n, _ in norms)  # clipping was really exercised
    for ours, theirs in lrs:  # measured: equal to the last bit or 1 ulp
        np.testing.assert_allclose(ours, theirs, rtol=1e-15, atol=0)
    for norm, twin_norm in norms:  # measured worst relative error 1.3e-15
        assert abs(norm - twin_norm) <= 1e-13 * twin_norm
    twin_params = dict(twin.named_parameters())
    for name, p in model.named_parameters():
        err = relative_error(p.data, twin_params[name].detach().numpy())
        assert err <= PARAMETERS_AFTER_20_STEPS, f"{name}: relative error {err:.2e} after 20 steps"
