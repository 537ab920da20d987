"""TrainConfig: one dataclass for every setting, read from JSON and from flags, checked line by line."""

import argparse
import json
from dataclasses import fields
from pathlib import Path

import pytest

from models.config import ModelConfig
from models.train_config import ConfigError, TrainConfig, add_flags, flag_values

CONFIGS = Path(__file__).resolve().parent.parent / "configs"


def parse(argv):
    parser = argparse.ArgumentParser()
    add_flags(parser)
    return flag_values(parser.parse_args(argv))


def test_configs_default_json_holds_the_dataclass_defaults():
    assert TrainConfig.from_json(CONFIGS / "default.json") == TrainConfig()


@pytest.mark.parametrize("name", ["default", "tiny", "seed_d128", "seed_d256"])
def test_every_named_config_loads_and_is_valid(name):
    assert TrainConfig.from_json(CONFIGS / f"{name}.json").problems() == []


@pytest.mark.parametrize("name, d_model, n_heads, d_ff", [("seed_d128", 128, 4, 256), ("seed_d256", 256, 8, 512)])
def test_seed_configs_are_the_seed_report_setups(name, d_model, n_heads, d_ff):
    cfg = TrainConfig.from_json(CONFIGS / f"{name}.json")
    m = cfg.model
    assert (cfg.pretokenizer, m.vocab_size, m.context_len, cfg.val_fraction, m.n_layers) == (
        "whitespace",
        500,
        64,
        0.2,
        2,
    )
    assert (m.d_model, m.n_heads, m.d_ff) == (d_model, n_heads, d_ff)
    assert (cfg.batch_size, cfg.schedule, m.dropout, cfg.max_minutes) == (64, "warmup_cosine", 0.2, 10.0)


def test_json_round_trip(tmp_path):
    cfg = TrainConfig(data="x.txt", preprocess=("lowercase",)).replace(d_model=64, n_heads=2, tie_weights=False)
    path = tmp_path / "c.json"
    path.write_text(cfg.to_json())
    assert TrainConfig.from_json(path) == cfg


def test_a_file_may_give_only_some_keys_and_ints_count_as_floats(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"d_model": 96, "lr": 1}))
    cfg = TrainConfig.from_json(path)
    assert cfg.model.d_model == 96 and cfg.lr == 1.0 and isinstance(cfg.lr, float)
    assert cfg.model.n_layers == TrainConfig().model.n_layers


def test_unknown_key_is_named_with_the_known_ones(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"d_modle": 64}))
    with pytest.raises(ConfigError) as err:
        TrainConfig.from_json(path)
    message = str(err.value)
    assert "'d_modle'" in message and "d_model" in message and "max_minutes" in message
    assert len(message.splitlines()) == 1


@pytest.mark.parametrize(
    "key, value",
    [("d_model", "128"), ("d_model", 1.5), ("tie_weights", 1), ("lr", "fast"), ("n_layers", True), ("d_model", None)],
)
def test_wrong_json_types_are_refused(key, value):
    with pytest.raises(ConfigError, match=key):
        TrainConfig.from_dict({key: value})


def test_broken_json_and_missing_file_are_config_errors(tmp_path):
    path = tmp_path / "c.json"
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        TrainConfig.from_json(path)
    with pytest.raises(ConfigError, match="cannot read"):
        TrainConfig.from_json(tmp_path / "missing.json")


def test_one_line_per_problem_naming_key_and_flag():
    cfg = TrainConfig(val_fraction=1.5, lr=-1.0, schedule="linear", batch_size=0)
    problems = cfg.problems()
    assert len(problems) == 5  # min_lr > lr is the fifth
    assert any("val_fraction (--val-fraction)" in p and "1.5" in p for p in problems)
    assert any("schedule (--schedule)" in p and "warmup_cosine" in p for p in problems)
    with pytest.raises(ConfigError) as err:
        cfg.check()
    assert str(err.value).splitlines() == problems


def test_shape_rules_come_from_the_model_config():
    with pytest.raises(ConfigError, match="divisible"):
        TrainConfig().replace(d_model=100, n_heads=6)
    with pytest.raises(ConfigError, match="even head size"):
        TrainConfig().replace(d_model=60, n_heads=4)  # rope, head size 15


def test_a_run_needs_some_bound():
    assert "never end" in TrainConfig(max_steps=0, max_minutes=0).problems()[0]
    assert TrainConfig(max_steps=10, max_minutes=0).problems() == []


def test_bytelevel_needs_at_least_260_tokens():
    assert "vocab_size" in TrainConfig().replace(vocab_size=100).problems()[0]
    assert TrainConfig(pretokenizer="whitespace").replace(vocab_size=100).problems() == []


def test_every_field_is_a_flag_and_only_given_flags_come_back():
    parser = argparse.ArgumentParser()
    add_flags(parser)
    options = {opt for action in parser._actions for opt in action.option_strings}
    for f in [*fields(TrainConfig), *fields(ModelConfig)]:
        assert f.name == "model" or "--" + f.name.replace("_", "-") in options
    assert parse([]) == {}
    assert parse(["--d-model", "64", "--lr", "1e-3", "--no-tie-weights", "--data", "a.txt"]) == {
        "d_model": 64,
        "lr": 1e-3,
        "tie_weights": False,
        "data": "a.txt",
    }


def test_flags_override_the_file(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"d_model": 64, "n_heads": 2}))
    cfg = TrainConfig.from_json(path).replace(**parse(["--n-heads", "4"]))
    assert (cfg.model.d_model, cfg.model.n_heads) == (64, 4)


def test_model_config_takes_the_tokenizers_vocab_size_and_seq_len_is_context_len():
    model = TrainConfig().replace(**parse(["--seq-len", "64", "--d-model", "64", "--n-heads", "2"])).model_config(321)
    assert (model.context_len, model.d_model, model.vocab_size) == (64, 64, 321)
