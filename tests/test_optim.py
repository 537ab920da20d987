"""Tests for tensorlab.optim: every optimizer, clip and schedule matched against PyTorch.

Parameters and gradients are random arrays; gradients are set on `.grad` directly,
so these tests need no autodiff. Each tensorlab parameter has a torch twin made
from a copy of the same data, fed the same gradients. Tests that take the `backend`
fixture (tests/conftest.py) run on NumPy, and again on CuPy when there is a GPU.
"""

import math

import numpy as np
import pytest
import torch

from tensorlab.backend import array_module, to_device
from tensorlab.nn import Parameter
from tensorlab.optim import (
    SGD,
    AdamW,
    ReduceLROnPlateau,
    WarmupCosine,
    clip_grad_norm,
    clip_grad_norm_,
    global_norm,
    weight_decay_groups,
)

SHAPES = [(4, 3), (5,), (2, 3, 2), (16, 8)]
STEPS = 20
# worst error measured over every comparison in this file (assert_same's measure): float64 8.9e-16,
# float32 3.6e-07; each tolerance within 100x of that
TOL = {np.float64: 5e-14, np.float32: 1e-5}


def make_params(dtype, seed=0, xp=np):
    rng = np.random.default_rng(seed)
    return [Parameter(xp.asarray(rng.standard_normal(shape).astype(dtype))) for shape in SHAPES]


def make_grads(dtype, steps=STEPS, seed=1):
    """steps lists of one gradient per parameter, as NumPy arrays."""
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal(shape).astype(dtype) for shape in SHAPES] for _ in range(steps)]


def torch_twins(params):
    return [torch.tensor(to_device(p.data, "cpu").copy(), requires_grad=True) for p in params]


def run(optimizer, params, grads):
    """Feed each step's gradients to `params` and step `optimizer` (tensorlab or torch)."""
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            if isinstance(p, torch.Tensor):
                p.grad = torch.tensor(g.copy())
            else:
                p.grad = array_module(p.data).asarray(g.copy())
        optimizer.step()


def assert_same(params, twins, dtype):
    """Same dtype, and |ours - torch| <= tol * max(|torch|, 1) element by element.

    The floor of 1 (parameters are O(1)) keeps an element that cancels to nearly zero
    from turning float32 roundoff of the O(1) terms into a large relative error.
    """
    for p, twin, start in zip(params, twins, make_params(dtype)):
        ours, theirs = to_device(p.data, "cpu"), twin.detach().numpy()
        assert ours.dtype == dtype
        assert not np.array_equal(ours, start.data)  # the optimizer did move it
        error = np.abs(ours - theirs) / np.maximum(np.abs(theirs), 1)
        assert error.max() <= TOL[dtype], f"shape {p.shape}: relative error {error.max():.3g}"


DTYPES = [np.float64, np.float32]


# ----- SGD ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "options",
    [
        dict(lr=0.1),
        dict(lr=0.1, momentum=0.9),
        dict(lr=0.1, momentum=0.9, dampening=0.3),
        dict(lr=0.05, momentum=0.9, nesterov=True),
        dict(lr=0.1, weight_decay=0.05),
        dict(lr=0.1, momentum=0.8, nesterov=True, weight_decay=0.05),
    ],
    ids=["plain", "momentum", "dampening", "nesterov", "weight_decay", "all"],
)
def test_sgd_matches_torch(dtype, options, backend):
    params, grads = make_params(dtype, xp=backend.xp), make_grads(dtype)
    twins = torch_twins(params)
    run(SGD(params, **options), params, grads)
    run(torch.optim.SGD(twins, **options), twins, grads)
    assert_same(params, twins, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sgd_on_a_0d_parameter_matches_torch(dtype):
    # NumPy arithmetic on 0-d arrays gives scalars: an in-place momentum update would rebind, not update
    params = [Parameter(np.array(0.5, dtype))]
    twins = torch_twins(params)
    grads = [[np.array(g, dtype)] for g in (0.0, 1.0, 1.0, -0.5)]
    options = dict(lr=0.1, momentum=0.9, weight_decay=0.01)
    run(SGD(params, **options), params, grads)
    run(torch.optim.SGD(twins, **options), twins, grads)
    ours, theirs = params[0].data, twins[0].detach().numpy()
    assert ours.dtype == dtype and abs(ours - theirs) <= TOL[dtype] * max(abs(theirs), 1)


def test_sgd_parameter_groups_match_torch():
    params, grads = make_params(np.float64), make_grads(np.float64)
    twins = torch_twins(params)

    def groups(ps):
        return [
            {"params": ps[:2], "lr": 0.2, "nesterov": True},
            {"params": ps[2:], "weight_decay": 0.1, "dampening": 0.5},
        ]

    run(SGD(groups(params), lr=0.05, momentum=0.9), params, grads)
    run(torch.optim.SGD(groups(twins), lr=0.05, momentum=0.9), twins, grads)
    assert_same(params, twins, np.float64)


def test_sgd_rejects_nesterov_without_momentum():
    with pytest.raises(ValueError, match="Nesterov"):
        SGD(make_params(np.float64), lr=0.1, nesterov=True)


# ----- AdamW -------------------------------------------------------------------------------------
def adamw_groups(ps):
    """Three groups with their own lr, weight_decay and betas; the rest from the defaults."""
    return [
        {"params": ps[:1], "lr": 3e-2, "weight_decay": 0.1},
        {"params": ps[1:2], "weight_decay": 0.0},
        {"params": ps[2:], "lr": 5e-3, "betas": (0.8, 0.95)},
    ]


@pytest.mark.parametrize("dtype", DTYPES)
def test_adamw_defaults_match_torch(dtype):
    params, grads = make_params(dtype), make_grads(dtype)
    twins = torch_twins(params)
    optimizer = AdamW(params)
    assert optimizer.param_groups[0]["weight_decay"] == 0.01  # torch's default
    run(optimizer, params, grads)
    run(torch.optim.AdamW(twins), twins, grads)
    assert_same(params, twins, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_adamw_parameter_groups_match_torch(dtype, backend):
    params, grads = make_params(dtype, xp=backend.xp), make_grads(dtype)
    twins = torch_twins(params)
    optimizer = AdamW(adamw_groups(params), lr=1e-2, eps=1e-6, weight_decay=0.05)
    run(optimizer, params, grads)
    run(torch.optim.AdamW(adamw_groups(twins), lr=1e-2, eps=1e-6, weight_decay=0.05), twins, grads)
    assert_same(params, twins, dtype)
    assert [g["lr"] for g in optimizer.param_groups] == [3e-2, 1e-2, 5e-3]  # defaults fill the gaps
    assert [g["weight_decay"] for g in optimizer.param_groups] == [0.1, 0.0, 0.05]
    for state in optimizer.state.values():
        assert state["exp_avg"].dtype == state["exp_avg_sq"].dtype == dtype


def test_adamw_follows_lr_changes_like_torch():
    """A schedule sets group["lr"] between steps; both optimizers must read it afresh."""
    params, grads = make_params(np.float64), make_grads(np.float64)
    twins = torch_twins(params)
    ours, theirs = AdamW(params, lr=1e-2), torch.optim.AdamW(twins, lr=1e-2)
    for i, step_grads in enumerate(grads):
        for group in ours.param_groups + theirs.param_groups:
            group["lr"] = 1e-2 / (1 + i)
        run(ours, params, [step_grads])
        run(theirs, twins, [step_grads])
    assert_same(params, twins, np.float64)


def test_numpy_float64_hyperparameters_keep_float32():
    """np.float64 scalars would upcast float32 arithmetic (NumPy 2); the update must stay float32."""
    params, grads = make_params(np.float32), make_grads(np.float32)
    twins = torch_twins(params)
    run(AdamW(params, lr=np.float64(1e-2), weight_decay=np.float64(0.1)), params, grads)
    run(torch.optim.AdamW(twins, lr=1e-2, weight_decay=0.1), twins, grads)
    assert_same(params, twins, np.float32)


def test_parameters_without_grad_are_left_alone():
    params = make_params(np.float64)
    before = [p.data.copy() for p in params]
    optimizer = AdamW(params, lr=0.1)
    params[0].grad = np.ones(SHAPES[0])
    optimizer.step()
    assert not np.array_equal(params[0].data, before[0])
    for p, b in zip(params[1:], before[1:]):
        assert np.array_equal(p.data, b)
    assert list(optimizer.state) == [params[0]]


# ----- the optimizer base ------------------------------------------------------------------------
def test_zero_grad_sets_grads_to_none():
    params = make_params(np.float64)
    for p in params:
        p.grad = np.ones(p.shape)
    SGD(params, lr=0.1).zero_grad()
    assert all(p.grad is None for p in params)


def test_a_generator_of_parameters_is_accepted():
    params = make_params(np.float64)
    optimizer = SGD((p for p in params), lr=0.1)
    assert optimizer.param_groups[0]["params"] == params


def test_a_parameter_in_two_groups_is_an_error():
    params = make_params(np.float64)
    with pytest.raises(ValueError, match="more than once"):
        AdamW([{"params": params[:2]}, {"params": params[1:]}])


@pytest.mark.parametrize(
    "make",
    [lambda ps: SGD(ps, lr=0.1, momentum=0.9, nesterov=True), lambda ps: AdamW(adamw_groups(ps), lr=1e-2)],
    ids=["sgd", "adamw"],
)
def test_state_dict_round_trip_equals_uninterrupted_run(make, backend):
    grads = make_grads(np.float64, steps=10)
    straight = make_params(np.float64, xp=backend.xp)
    run(make(straight), straight, grads)

    params = make_params(np.float64, xp=backend.xp)
    first = make(params)
    run(first, params, grads[:5])
    saved = first.state_dict()
    run(first, params, grads[5:])  # later steps must not change what was saved
    params = make_params(np.float64, xp=backend.xp)
    run(make(params), params, grads[:5])  # the same 5 steps, then a fresh optimizer takes over
    second = make(params)
    second.load_state_dict(saved)
    run(second, params, grads[5:])

    for p, q in zip(params, straight):
        assert array_module(p.data) is backend.xp
        assert np.array_equal(to_device(p.data, "cpu"), to_device(q.data, "cpu"))


@pytest.mark.parametrize(
    "make",
    [lambda ps, lr: SGD(ps, lr=lr, momentum=0.9), lambda ps, lr: AdamW(adamw_groups(ps), lr=lr)],
    ids=["sgd", "adamw"],
)
def test_load_state_dict_restores_every_groups_settings_as_torch_does(make):
    """A plateau-reduced run resumed into an optimizer built with other settings continues with the saved ones.

    (Skipping the restore of the groups' settings makes the resumed run use lr 0.9, the constructor's.)
    """
    grads = make_grads(np.float64, steps=6)
    params = make_params(np.float64)
    first = make(params, 0.1)
    run(first, params, grads[:3])
    for i, group in enumerate(first.param_groups):  # as a schedule would, group by group
        group["lr"] *= 0.5 ** (i + 1)
        group["weight_decay"] = 0.02 * i
    saved = first.state_dict()
    twins = torch_twins(params)
    torch_first = (
        torch.optim.SGD(twins, lr=0.1, momentum=0.9)
        if isinstance(first, SGD)
        else torch.optim.AdamW(adamw_groups(twins), lr=0.1)
    )
    torch_saved = {"state": {}, "param_groups": [{**g, "params": g["params"]} for g in saved["param_groups"]]}
    torch_saved["state"] = {
        i: {k: torch.tensor(v) if hasattr(v, "shape") else torch.tensor(float(v)) for k, v in s.items()}
        for i, s in saved["state"].items()
    }
    torch_first.load_state_dict(torch_saved)

    second = make(params, 0.9)
    second.load_state_dict(saved)
    for ours, theirs, want in zip(second.param_groups, torch_first.param_groups, saved["param_groups"]):
        for name, value in want.items():
            if name != "params":
                assert ours[name] == value == theirs[name], name
    run(second, params, grads[3:])
    run(torch_first, twins, grads[3:])
    for p, twin in zip(params, twins):
        np.testing.assert_allclose(p.data, twin.detach().numpy(), rtol=TOL[np.float64], atol=TOL[np.float64])


def test_state_dict_is_plain_and_indexed_by_position():
    params = make_params(np.float32)
    optimizer = AdamW(adamw_groups(params))
    run(optimizer, params, make_grads(np.float32, steps=2))
    saved = optimizer.state_dict()
    assert [g["params"] for g in saved["param_groups"]] == [[0], [1], [2, 3]]
    assert saved["param_groups"][2]["betas"] == (0.8, 0.95)
    assert sorted(saved["state"]) == [0, 1, 2, 3]
    assert saved["state"][3]["step"] == 2
    assert saved["state"][3]["exp_avg"].shape == SHAPES[3]


def test_load_state_dict_into_a_mismatched_optimizer_raises():
    params = make_params(np.float64)
    optimizer = AdamW(adamw_groups(params))
    run(optimizer, params, make_grads(np.float64, steps=1))
    saved = optimizer.state_dict()

    with pytest.raises(ValueError, match="3 parameter groups, this optimizer has 1"):
        AdamW(make_params(np.float64)).load_state_dict(saved)
    fewer = make_params(np.float64)
    with pytest.raises(ValueError, match="group 2 has 2 parameters in the saved state and 1"):
        AdamW(adamw_groups(fewer[:3])).load_state_dict(saved)
    transposed = make_params(np.float64)
    transposed[0] = Parameter(transposed[0].data.T.copy())
    with pytest.raises(ValueError, match=r"parameter 0 has shape \(3, 4\), but its saved 'exp_avg' has shape \(4, 3\)"):
        AdamW(adamw_groups(transposed)).load_state_dict(saved)
    with pytest.raises(ValueError, match="another kind of optimizer"):
        SGD(adamw_groups(make_params(np.float64)), lr=0.1).load_state_dict(saved)


# ----- clipping ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("max_norm", [1.0, 100.0], ids=["clipped", "unclipped"])
def test_clip_grad_norm_matches_torch(dtype, max_norm, backend):
    params, (grads,) = make_params(dtype, xp=backend.xp), make_grads(dtype, steps=1)
    twins = torch_twins(params)
    for p, twin, g in zip(params, twins, grads):
        p.grad, twin.grad = backend.xp.asarray(g.copy()), torch.tensor(g.copy())
    keep = [p.grad for p in params]
    total = clip_grad_norm_(params, max_norm)
    assert all(p.grad is g for p, g in zip(params, keep))  # in place, as the underscore says
    expected = torch.nn.utils.clip_grad_norm_(twins, max_norm)
    assert isinstance(total, float)
    assert abs(total - expected.item()) <= TOL[dtype] * expected.item()
    for p, twin in zip(params, twins):
        assert p.grad.dtype == dtype
        np.testing.assert_allclose(to_device(p.grad, "cpu"), twin.grad.numpy(), rtol=TOL[dtype], atol=TOL[dtype])
    if max_norm == 100.0:
        assert all(np.array_equal(to_device(p.grad, "cpu"), g) for p, g in zip(params, grads))
    else:
        clipped = math.sqrt(sum(float((p.grad**2).sum()) for p in params))
        assert abs(clipped - 1.0) < 1e-5


def test_clip_grad_norm_skips_missing_grads():
    params = make_params(np.float64)
    params[0].grad = np.full(SHAPES[0], 2.0)  # 12 elements: norm sqrt(48)
    assert clip_grad_norm_(params, 1.0) == pytest.approx(math.sqrt(48), rel=1e-12)
    assert all(p.grad is None for p in params[1:])


def test_global_norm_is_the_norm_of_all_arrays_as_one_vector_in_float64(backend):
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal(shape).astype(np.float32) for shape in SHAPES]
    total = global_norm([backend.xp.asarray(a) for a in arrays])
    assert total.shape == () and total.dtype == np.float64 and type(total) is not float  # stays on the device
    squares = [(torch.from_numpy(a).double() ** 2).ravel() for a in arrays]  # squared in float64
    expected = torch.cat(squares).sum().sqrt().item()
    assert abs(float(total) - expected) <= 1e-14 * expected  # measured: 0 (summation order aside, the same sums)
    with pytest.raises(ValueError, match="global_norm: needs at least one array, got none"):
        global_norm([])


def test_clip_grad_norm_of_float32_gradients_whose_squares_overflow_float32():
    # a square above 3.4e38 (|g| > 1.8e19) is inf in float32: the norm squares in float64. PyTorch's one-element
    # norm is |g| (its two-or-more-element norm overflows: docs/differences-from-pytorch.md row 29)
    g = np.array([1e30], np.float32)
    p, twin = Parameter(np.zeros(1, np.float32)), torch.nn.Parameter(torch.zeros(1))
    p.grad, twin.grad = g.copy(), torch.from_numpy(g.copy())
    total, expected = clip_grad_norm_([p], 1.0), torch.nn.utils.clip_grad_norm_([twin], 1.0)
    assert abs(total - expected.item()) <= 1e-7 * expected.item()
    np.testing.assert_allclose(p.grad, twin.grad.numpy(), rtol=1e-6)
    p.grad = np.array([3e30, -4e30], np.float32)
    assert abs(clip_grad_norm_([p], 1.0) - 5e30) <= 1e-7 * 5e30
    np.testing.assert_allclose(p.grad, [0.6, -0.8], rtol=1e-6)
    p.grad = np.full(2, 3e38, np.float32)  # the norm itself beyond float32's range: inf, as PyTorch's
    assert clip_grad_norm_([p], 1.0) == math.inf and np.all(p.grad == 0)


def test_layer_stats_measures_each_group_with_global_norm():
    from models.layer_stats import grad_norms

    params = make_params(np.float32)
    params[0].grad, params[1].grad = np.full(SHAPES[0], 2.0, np.float32), np.full(SHAPES[1], -1.0, np.float32)
    norms = grad_norms({"both": params[:2], "none": params[2:]})
    assert norms["both"] == math.sqrt(4.0 * params[0].size + params[1].size) and norms["none"] == 0.0


def test_clip_grad_norm_is_an_alias_of_clip_grad_norm_():
    assert clip_grad_norm is clip_grad_norm_


# ----- schedules ---------------------------------------------------------------------------------
def test_warmup_cosine_hand_computed_points():
    s = WarmupCosine(max_lr=1.0, min_lr=0.1, warmup_steps=10, max_steps=110)
    assert s.lr_at(0) == 0.0
    assert s.lr_at(5) == pytest.approx(0.5, abs=1e-15)  # halfway up the ramp
    assert s.lr_at(10) == pytest.approx(1.0, abs=1e-15)  # end of warmup: cos(0) = 1
    assert s.lr_at(60) == pytest.approx(0.55, abs=1e-15)  # mid-decay: cos(pi/2) = 0, (1 + 0.1) / 2
    assert s.lr_at(35) == pytest.approx(0.1 + 0.9 * (1 + math.sqrt(0.5)) / 2, abs=1e-15)  # a quarter in
    assert s.lr_at(110) == pytest.approx(0.1, abs=1e-15)  # the end: cos(pi) = -1
    assert s.lr_at(500) == 0.1  # and after it


def test_warmup_cosine_matches_torch_lambda_lr_per_group():
    warmup, total, max_lr, min_lr = 5, 15, 1e-2, 1e-3
    schedule = WarmupCosine(max_lr=max_lr, min_lr=min_lr, warmup_steps=warmup, max_steps=total)

    def factor(t):  # the same curve written from the formula, relative to max_lr
        if t < warmup:
            return t / warmup
        ratio = min((t - warmup) / (total - warmup), 1.0)
        return (min_lr + 0.5 * (1 + math.cos(math.pi * ratio)) * (max_lr - min_lr)) / max_lr

    params = make_params(np.float64)
    twins = torch_twins(params)
    ours = AdamW([{"params": params[:2]}, {"params": params[2:], "lr": max_lr / 4}], lr=max_lr)
    theirs = torch.optim.AdamW([{"params": twins[:2]}, {"params": twins[2:], "lr": max_lr / 4}], lr=max_lr)
    torch_schedule = torch.optim.lr_scheduler.LambdaLR(theirs, factor)
    for t in range(STEPS):
        schedule.apply(ours, t)
        for group, twin_group in zip(ours.param_groups, theirs.param_groups):
            assert group["lr"] == pytest.approx(twin_group["lr"], rel=1e-12, abs=1e-18)
        theirs.step()
        torch_schedule.step()
    assert ours.param_groups[1]["lr"] == pytest.approx(min_lr / 4, rel=1e-12)  # each group keeps its ratio


def test_reduce_lr_on_plateau_matches_torch():
    metrics = [5.0, 4.0, 4.0, 3.9999, 4.1, 4.2, 3.0, 3.0, 3.1, 3.2, 3.3, 2.0, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5]
    options = dict(factor=0.5, patience=2, min_lr=1e-3)
    params = make_params(np.float64)
    twins = torch_twins(params)
    ours = SGD([{"params": params[:2]}, {"params": params[2:], "lr": 0.004}], lr=0.1)
    theirs = torch.optim.SGD([{"params": twins[:2]}, {"params": twins[2:], "lr": 0.004}], lr=0.1)
    our_schedule = ReduceLROnPlateau(ours, **options)
    torch_schedule = torch.optim.lr_scheduler.ReduceLROnPlateau(theirs, **options)
    lrs = []
    for metric in metrics:
        our_schedule.step(metric)
        torch_schedule.step(metric)
        lrs.append([g["lr"] for g in ours.param_groups])
        assert lrs[-1] == [g["lr"] for g in theirs.param_groups]
    assert lrs[-1][0] < 0.1 / 4 and lrs[-1][1] == 1e-3  # it did reduce, and min_lr held


def test_reduce_lr_on_plateau_max_mode_abs_threshold_and_cooldown_match_torch():
    metrics = [1.0] + [1.0] * 30 + [0.5] + [0.6] * 30
    params = make_params(np.float64)
    twins = torch_twins(params)
    ours, theirs = SGD(params, lr=1.0), torch.optim.SGD(twins, lr=1.0)
    our_schedule = ReduceLROnPlateau(ours, mode="max", cooldown=3, threshold_mode="abs", threshold=0.05)
    torch_schedule = torch.optim.lr_scheduler.ReduceLROnPlateau(
        theirs, mode="max", cooldown=3, threshold_mode="abs", threshold=0.05
    )
    for metric in metrics:
        our_schedule.step(metric)
        torch_schedule.step(metric)
        assert ours.param_groups[0]["lr"] == theirs.param_groups[0]["lr"]
    assert ours.param_groups[0]["lr"] < 1e-3


# ----- weight-decay groups -----------------------------------------------------------------------
def test_weight_decay_groups_split_by_dimension():
    weight, bias, gain, embedding = (Parameter(np.zeros(s)) for s in [(8, 4), (4,), (4,), (10, 8)])
    frozen = Parameter(np.zeros((3, 3)), requires_grad=False)
    named = [
        ("fc.weight", weight),
        ("fc.bias", bias),
        ("norm.weight", gain),
        ("wte.weight", embedding),
        ("lm_head.weight", embedding),
        ("frozen", frozen),
    ]  # lm_head tied to wte
    decay, no_decay = weight_decay_groups(named, weight_decay=0.1)
    assert decay["params"] == [weight, embedding] and decay["weight_decay"] == 0.1
    assert no_decay["params"] == [bias, gain] and no_decay["weight_decay"] == 0.0
    optimizer = AdamW(weight_decay_groups(dict(named), 0.1), lr=1e-3)
    assert [g["weight_decay"] for g in optimizer.param_groups] == [0.1, 0.0]


def test_state_dict_survives_a_checkpoint_file(tmp_path):
    """Through tensorlab.serialization (safetensors + JSON): keys become strings, betas a list; loading still works."""
    from tensorlab import serialization

    grads = make_grads(np.float32, steps=6)
    straight = make_params(np.float32)
    run(AdamW(adamw_groups(straight), lr=1e-2), straight, grads)

    params = make_params(np.float32)
    first = AdamW(adamw_groups(params), lr=1e-2)
    run(first, params, grads[:3])
    arrays = {}
    serialization.save(arrays, serialization.split_arrays(first.state_dict(), "", arrays), tmp_path / "ckpt")
    second = AdamW(adamw_groups(params), lr=1e-2)
    second.load_state_dict(serialization.join_arrays(*reversed(serialization.load(tmp_path / "ckpt"))))
    run(second, params, grads[3:])
    for p, q in zip(params, straight):
        assert p.data.dtype == np.float32 and np.array_equal(p.data, q.data)


def test_a_0d_parameters_adamw_state_survives_the_run_checkpoint(tmp_path):
    """Trained, written by models/checkpoint.py, read, loaded: each state entry keeps its type, shape and dtype
    (a 0-d moment stays 0-d, `step` stays an int), and the run goes on as if never interrupted."""
    from models.checkpoint import read_checkpoint, save_checkpoint

    def params():
        return [Parameter(np.array(1.5, np.float32)), Parameter(np.array([0.5, -2.0], np.float32))]

    def train(optimizer, ps, steps):
        for _ in range(steps):
            optimizer.zero_grad()
            for p in ps:
                p.grad = 2 * p.data  # the gradient of p ** 2
            optimizer.step()

    straight = params()
    train(AdamW(straight, lr=0.1), straight, 5)
    ps = params()
    first = AdamW(ps, lr=0.1)
    train(first, ps, 3)
    save_checkpoint(
        tmp_path / "ckpt", {"model": {"p0": ps[0].data}, "model_config": {}, "optimizer": first.state_dict()}
    )
    second = AdamW(ps, lr=0.1)
    second.load_state_dict(read_checkpoint(tmp_path / "ckpt")["optimizer"])

    def kinds(optimizer):
        return [
            {n: (type(v), np.shape(v), getattr(v, "dtype", None)) for n, v in s.items()}
            for s in optimizer.state.values()
        ]

    assert kinds(second) == kinds(first)
    assert kinds(first)[0]["step"] == (int, (), None) and kinds(first)[0]["exp_avg"][1] == ()
    train(second, ps, 2)
    for p, q in zip(ps, straight):
        assert p.data.shape == q.data.shape and np.array_equal(p.data, q.data)
