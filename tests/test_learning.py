"""The model learns: trained from scratch on reversing random digit strings, it gets them right."""

import numpy as np
import pytest

import tensorlab
from models.config import ModelConfig
from models.transformer import TinyTransformerLM
from tensorlab.optim import AdamW, clip_grad_norm_

N_DIGITS, BASE = 6, 8
SEP = BASE  # the separator token, after the digits 0..7
IGNORE = -100


def reversal_batch(rng, batch_size=64):
    """ids "d1 .. d6 SEP d6 .. d1"; only the reversed half is scored (the rest is ignore_index)."""
    digits = rng.integers(0, BASE, (batch_size, N_DIGITS))
    seq = np.concatenate([digits, np.full((batch_size, 1), SEP), digits[:, ::-1]], axis=1)  # (B, 13)
    x, y = seq[:, :-1], seq[:, 1:].copy()
    y[:, :N_DIGITS] = IGNORE
    return x, y


@pytest.fixture(scope="module")
def trained():
    tensorlab.manual_seed(0)
    config = ModelConfig(
        vocab_size=BASE + 1,
        context_len=2 * N_DIGITS + 1,
        d_model=32,
        n_layers=2,
        n_heads=2,
        d_ff=64,
        dropout=0.0,
        pos_encoding="learned",
    )
    model = TinyTransformerLM(config)
    optimizer = AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(150):
        x, y = reversal_batch(rng)
        _, loss = model(x, y)
        optimizer.zero_grad()
        loss.backward()
        clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
    return model, losses


def test_training_reaches_near_zero_loss(trained):
    _, losses = trained
    assert losses[0] > 1.5  # chance level is ln 8 = 2.08
    assert np.mean(losses[-10:]) < 0.02


def test_greedy_generation_reverses_unseen_strings(trained):
    model, _ = trained
    x, _ = reversal_batch(np.random.default_rng(123), batch_size=200)
    prompts = x[:, : N_DIGITS + 1]  # digits and SEP
    out = model.generate(prompts, max_new_tokens=N_DIGITS, temperature=0)
    answers = out[:, N_DIGITS + 1 :]
    assert answers.shape == (200, N_DIGITS)
    assert np.mean(answers == prompts[:, :N_DIGITS][:, ::-1]) >= 0.99


def test_generation_slides_its_window_past_the_context_length(trained):
    """Generating beyond context_len feeds only the last context_len tokens (learned positions would fail otherwise)."""
    model, _ = trained
    T = model.config.context_len
    prompt = np.arange(T)[None, :] % BASE
    out = model.generate(prompt, max_new_tokens=T + 3, temperature=0)
    assert out.shape == (1, 2 * T + 3)
    np.testing.assert_array_equal(out[:, :T], prompt)
    window = out[:, -T - 1 : -1]  # the context of the last sampled token
    logits, _ = model.eval()(window)
    assert out[0, -1] == int(np.argmax(logits.data[0, -1]))


def test_sampling_respects_top_k_and_temperature():
    from models.transformer import sample_next

    rng = np.random.default_rng(0)
    logits = np.log(np.array([[0.5, 0.3, 0.15, 0.05]] * 4000))
    top2 = sample_next(logits, 1.0, 2, rng)
    assert set(np.unique(top2)) == {0, 1}
    assert abs(np.mean(top2 == 0) - 0.5 / 0.8) < 0.03  # renormalised over the top 2
    assert np.all(sample_next(logits, 0, None, rng) == 0)  # temperature 0 is greedy
    with pytest.raises(ValueError, match="temperature"):
        TinyTransformerLM(ModelConfig(vocab_size=5, context_len=4, d_model=8, n_layers=1, n_heads=2, d_ff=8)).generate(
            [[1]], 1, temperature=-1
        )
