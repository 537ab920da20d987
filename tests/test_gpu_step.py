"""A training step on the GPU path waits for the GPU as little as possible: transfers counted by the stand-in.

Every device-to-host transfer (float(), .item(), bool(), .get(), ...) makes the host wait
until the GPU has finished all queued work, and so does a boolean mask or nonzero (the host
must read how many elements the result has). The stand-in counts them all: one training step
(forward, backward, clip_grad_norm_, AdamW) makes exactly one, the clipping's returned norm;
the logged loss (.item()) is a second; at most 2 are allowed. A generated token makes one, the
sampler's read of the logits.
"""

import numpy as np
import pytest
from strict_cupy import cupy_standin

import tensorlab
from models.config import ModelConfig
from models.transformer import TinyTransformerLM
from tensorlab import functional as F
from tensorlab.optim import AdamW, clip_grad_norm_

pytestmark = pytest.mark.gpu
V, T, B = 50, 16, 4


@pytest.fixture
def counted(cuda):
    """The stand-in, with its transfer counters zeroed (they count only on the stand-in)."""
    if cuda.xp is not cupy_standin:
        pytest.skip("transfers are counted by the CuPy stand-in; this machine has a real GPU")
    cupy_standin.reset_counts()
    return cupy_standin


def one_step(model, optimizer, rng):
    ids = rng.integers(0, V, size=(B, T + 1))  # token ids on the host, as the batch sampler makes them
    _, loss = model(ids[:, :-1], ids[:, 1:])
    optimizer.zero_grad()
    loss.backward()
    clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss


@pytest.mark.parametrize("pos_encoding", ["rope", "learned", "sinusoidal"])
def test_a_training_step_makes_one_transfer_and_two_uploads(counted, pos_encoding):
    tensorlab.manual_seed(0)
    config = ModelConfig(
        vocab_size=V, context_len=T, d_model=16, n_layers=2, n_heads=2, d_ff=32, dropout=0.1, pos_encoding=pos_encoding
    )
    model = TinyTransformerLM(config).to("cuda")
    optimizer = AdamW(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)
    one_step(model, optimizer, rng)  # the first step fills the per-device constant tables
    counted.reset_counts()

    loss = one_step(model, optimizer, rng)
    assert dict(counted.transfers) == {"float": 1}  # clip_grad_norm_'s total (was 22 + 4 before)
    assert dict(counted.uploads) == {"asarray": 2}  # the batch's inputs and targets; tables are cached
    loss.item()  # the logged loss
    assert sum(counted.transfers.values()) == 2


def test_host_ids_are_checked_before_they_move(counted):
    weight = tensorlab.tensor(np.ones((5, 2)), device="cuda", requires_grad=True)
    with pytest.raises(ValueError, match=r"embedding: id 7 is out of range for a table of 5 rows"):
        F.embedding(np.array([0, 7]), weight)
    logits = tensorlab.tensor(np.zeros((2, 5)), device="cuda")
    with pytest.raises(ValueError, match=r"cross_entropy: target 5 at position \(1,\) is out of range"):
        F.cross_entropy(logits, np.array([0, 5]))
    assert sum(counted.transfers.values()) == 0  # refused without asking the GPU


def test_ids_already_on_the_device_are_checked_there(counted):
    weight = tensorlab.tensor(np.ones((5, 2)), device="cuda")
    ids = tensorlab.tensor(np.array([[0, 1], [9, 2]]), device="cuda")
    with pytest.raises(ValueError, match=r"embedding: id 9 is out of range for a table of 5 rows"):
        F.embedding(ids, weight)  # CuPy would wrap 9 to row 4 without the check
    logits = tensorlab.tensor(np.zeros((2, 5)), device="cuda")
    with pytest.raises(ValueError, match=r"cross_entropy: target -3 at position \(0,\) is out of range"):
        F.cross_entropy(logits, tensorlab.tensor(np.array([-3, 1]), device="cuda"))


def test_host_and_device_ids_give_the_same_loss_and_gradients(counted):
    rng = np.random.default_rng(1)
    ids, targets = rng.integers(0, 6, size=(3, 4)), rng.integers(0, 6, size=(3, 4))
    targets[0, 0] = -100  # one ignored target
    table, results = rng.standard_normal((6, 6)), []
    for move in (np.asarray, lambda a: tensorlab.tensor(a, device="cuda")):
        weight = tensorlab.tensor(table, device="cuda", requires_grad=True)
        loss = F.cross_entropy(F.embedding(move(ids), weight), move(targets))
        loss.backward()
        results.append((loss.item(), weight.grad.get()))
    (loss_host, grad_host), (loss_device, grad_device) = results
    assert loss_host == loss_device and np.array_equal(grad_host, grad_device)


def test_every_target_ignored_gives_nan_and_a_zero_gradient_on_the_device(counted):
    logits = tensorlab.tensor(np.ones((2, 3)), device="cuda", requires_grad=True)
    loss = F.cross_entropy(logits, np.array([-100, -100]))
    loss.backward()
    assert np.isnan(loss.item()) and np.array_equal(logits.grad.get(), np.zeros((2, 3)))


@pytest.mark.parametrize("kv_cache", [True, False])
def test_a_generated_token_makes_one_transfer(counted, kv_cache):
    """The sampler reads the last position's logits on the host: one transfer a token, and no other wait."""
    tensorlab.manual_seed(0)
    config = ModelConfig(vocab_size=V, context_len=T, d_model=16, n_layers=2, n_heads=2, d_ff=32, pos_encoding="rope")
    model = TinyTransformerLM(config).to("cuda")
    model.generate(np.array([[1, 2, 3]]), 2, rng=np.random.default_rng(0), kv_cache=kv_cache)  # fills the tables
    counted.reset_counts()
    model.generate(np.array([[1, 2, 3]]), 5, temperature=0.8, top_k=10, rng=np.random.default_rng(0), kv_cache=kv_cache)
    assert dict(counted.transfers) == {"get": 5}  # one per token; a boolean mask or nonzero would add "mask"/"nonzero"
