"""configs/seed_000..004.json: valid, each the model its report describes, old flat configs still load,
and seed 004 (TinyStories and GPT-2's tokenizer, both named in it) runs offline on test files."""

import ast
import json
from dataclasses import fields
from pathlib import Path

import pytest
from test_pretrained_tokenizers import gpt2_vocab, hub_layout_json

import train
from models import corpus, pretrained_tokenizer
from models.config import ModelConfig
from models.corpus import load_corpus
from models.download_cache import write_recorded
from models.pretrained_tokenizer import hub_cache_path, load_pretrained
from models.tokenizer import END_OF_TEXT, BPETokenizer
from models.train_config import ConfigError, TrainConfig

ROOT = Path(__file__).resolve().parent.parent
SEEDS = [f"seed_{i:03d}" for i in range(5)]
OLD_FLAT_DEFAULT = {  # configs/default.json before the model settings were nested
    "vocab_size": 500,
    "pretokenizer": "bytelevel",
    "val_fraction": 0.1,
    "seq_len": 128,
    "d_model": 192,
    "n_layers": 4,
    "n_heads": 6,
    "d_ff": 768,
    "dropout": 0.0,
    "pos_encoding": "rope",
    "tie_weights": True,
    "activation": "gelu",
    "bias": True,
    "norm_eps": 1e-05,
    "dtype": "float32",
    "batch_size": 32,
    "lr": 0.003,
    "min_lr": 0.0003,
    "warmup_steps": 100,
    "schedule": "warmup_cosine",
    "plateau_factor": 0.5,
    "plateau_patience": 1,
    "weight_decay": 0.1,
    "beta1": 0.9,
    "beta2": 0.99,
    "grad_clip": 1.0,
    "seed": 1337,
    "device": "cpu",
    "max_steps": 0,
    "max_minutes": 10.0,
    "eval_interval": 100,
    "eval_batches": 0,
    "early_stopping_patience": 0,
}


@pytest.mark.parametrize("name", SEEDS)
def test_seed_config_is_valid_and_says_how_it_differs(name):
    cfg = TrainConfig.from_json(ROOT / "configs" / f"{name}.json")
    assert cfg.problems() == []
    assert "Differs:" in cfg.comment or "differs" in cfg.comment.lower()


def test_seed_configs_hold_their_reports_models():
    m = {name: TrainConfig.from_json(ROOT / "configs" / f"{name}.json") for name in SEEDS}
    assert (
        m["seed_000"].model.norm,
        m["seed_000"].model.pos_encoding,
        m["seed_000"].model.n_heads,
        m["seed_000"].split,
    ) == ("none", "learned", 1, "random_windows")
    assert m["seed_001"].preprocess == ("drop_speaker_lines", "join_lines", "capitalize_allcaps")
    assert (m["seed_001"].model.context_len, m["seed_001"].model.n_heads, m["seed_001"].model.pos_encoding) == (
        50,
        1,
        "sinusoidal",
    )
    assert (
        m["seed_002"].model.norm,
        m["seed_002"].model.norm_position,
        m["seed_002"].model.activation,
        m["seed_002"].model.tie_weights,
    ) == ("layernorm", "post", "relu", True)
    assert (m["seed_003"].model.d_model, m["seed_003"].model.norm, m["seed_003"].pretokenizer) == (
        256,
        "rmsnorm",
        "whitespace",
    )
    assert (
        m["seed_004"].model.n_layers,
        m["seed_004"].model.d_model,
        m["seed_004"].model.dropout,
        m["seed_004"].data,
        m["seed_004"].documents,
        m["seed_004"].tokenizer,
        m["seed_004"].model.vocab_size,
    ) == (6, 512, 0.1, "tinystories", 12000, "gpt2", 50257)


def test_no_setting_is_declared_twice():
    run = {f.name for f in fields(TrainConfig)}
    assert run.isdisjoint(f.name for f in fields(ModelConfig))


def test_an_old_flat_config_still_loads_as_the_same_settings(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps(OLD_FLAT_DEFAULT))
    assert TrainConfig.from_json(path) == TrainConfig.from_json(ROOT / "configs" / "default.json") == TrainConfig()
    path.write_text(json.dumps({**OLD_FLAT_DEFAULT, "bias": False, "seq_len": 64}))
    model = TrainConfig.from_json(path).model
    assert (model.qkv_bias, model.proj_bias, model.ffn_bias, model.context_len) == (False, False, False, 64)


def test_a_bad_model_value_in_a_file_is_one_line_naming_the_file_and_key(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"model": {"norm": "batchnorm"}}))
    with pytest.raises(ConfigError) as err:
        TrainConfig.from_json(path)
    assert str(err.value).count("\n") == 0 and "bad.json" in str(err.value) and "norm must be one of" in str(err.value)


def test_seed_004_runs_offline_on_tinystories_and_gpt2_made_of_test_files(tmp_path, monkeypatch, capsys):
    """The config as given, with "tinystories" served from a file:// URL (60 stories in TinyStories' layout) and
    "gpt2" already in the hub cache (a tiny GPT-2-format vocabulary): no network. Its model's switches (post-norm
    LayerNorm, ReLU, biases, untied head) at a small width, 40 stories and that vocabulary's size, 2 steps."""
    monkeypatch.setenv("TENSORLAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("TENSORLAB_CORPUS", raising=False)
    names, things = ["Lily", "Tom", "Sue", "Max", "Ben"], ["ball", "kite", "cat", "boat", "tree"]
    stories = [
        f"Once upon a time, {names[i % 5]} found a {things[(i // 5) % 5]}. {names[i % 5]} was happy and "
        f"played all day with the {things[(i // 5) % 5]} and a friend.\n{END_OF_TEXT}\n"
        for i in range(60)
    ]
    (tmp_path / "TinyStories-train.txt").write_text("".join(stories), encoding="utf-8")
    monkeypatch.setenv(corpus.TINYSTORIES_URL_ENV, (tmp_path / "TinyStories-train.txt").as_uri())
    gpt2 = json.dumps(hub_layout_json(), ensure_ascii=False).encode("utf-8")
    write_recorded(hub_cache_path("gpt2"), gpt2, "the test")
    monkeypatch.setattr(pretrained_tokenizer, "fetch_from_hub", lambda name: pytest.fail("tried the hub"))
    width = ["--batch-size", "2", "--d-model", "32", "--n-heads", "2", "--d-ff", "64", "--n-layers", "2"]
    status = train.main(
        ["--config", str(ROOT / "configs" / "seed_004.json"), "--out", str(tmp_path / "run"), "--documents", "40"]
        + ["--vocab-size", str(len(gpt2_vocab())), *width]
        + ["--max-steps", "2", "--eval-interval", "2", "--eval-batches", "1"]
    )
    assert status == 0, capsys.readouterr().err[-800:]
    samples = (tmp_path / "run" / "samples.txt").read_text()
    assert "ROMEO" not in samples and "Citizen" not in samples
    prompts = [
        line[len("=== prompt ") : line.rindex(", temperature")]
        for line in samples.splitlines()
        if line.startswith("=== prompt")
    ]
    text = load_corpus("tinystories", documents=40)
    assert text.count(END_OF_TEXT) == 39 and text == "".join(stories[:40])[: -len(END_OF_TEXT) - 1]  # 40 stories
    assert prompts and all(ast.literal_eval(p) in text for p in prompts), prompts  # repr'd in samples.txt
    cfg = json.loads((tmp_path / "run" / "config.json").read_text())
    assert cfg["model"]["norm_position"] == "post" and cfg["model"]["head_bias"] and not cfg["model"]["qkv_bias"]
    assert (cfg["data"], cfg["tokenizer"]) == ("tinystories", "gpt2")
    tokenizer = BPETokenizer.load(tmp_path / "run" / "tokenizer.json")
    assert tokenizer.fingerprint() == load_pretrained("gpt2", len(gpt2_vocab())).fingerprint()
