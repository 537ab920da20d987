"""A run written before safetensors (tests/data/old_run, made by commit f762345's train.py) still works today.

Its checkpoints are `.npz` + `.json`, its config.json is flat (seq_len, bias) and lacks every setting
added since (norm, the three bias switches, embedding_std, ...): those take their defaults, which is
what the old version did. eval, generate, export and --resume refused it before ("another model config").
"""

import json
import shutil
from pathlib import Path

import pytest
from test_bad_inputs import run_main

from models.checkpoint import read_checkpoint

OLD_RUN = Path(__file__).resolve().parent / "data" / "old_run"


@pytest.fixture
def old_run(tmp_path):
    out = tmp_path / "old_run"
    shutil.copytree(OLD_RUN, out)
    return out


def final_row(run):
    return json.loads((run / "metrics.jsonl").read_text().splitlines()[-1])


def test_eval_gives_the_old_runs_own_final_validation_loss(old_run, corpus_file, capsys):
    status, out, err = run_main(["eval", old_run, "--data", corpus_file, "--force"], capsys)
    assert status == 0, err
    assert f"val loss {final_row(old_run)['val_loss']:.4f}" in out  # the same weights, the same model


def test_generate_and_export_work(old_run, corpus_file, tmp_path, capsys):
    argv = ["generate", old_run, "--prompt", "ROMEO:", "--max-new-tokens", 4, "--data", corpus_file]  # the run's
    status, out, err = run_main(argv, capsys)
    assert status == 0 and out.startswith("ROMEO:"), err
    status, out, err = run_main(["export", old_run, "--out", tmp_path / "export"], capsys)
    assert status == 0 and (tmp_path / "export" / "model.safetensors").is_file(), out + err


def test_resume_continues_it_in_todays_layout(old_run, corpus_file, capsys):
    status, _, err = run_main(["--resume", old_run, "--data", corpus_file, "--max-steps", 6, "--no-report"], capsys)
    assert status == 0, err
    assert "changed settings" not in err  # the old flat config is the same settings in today's layout
    state = read_checkpoint(old_run / "checkpoints" / "latest")  # now latest.safetensors, beside the old files
    assert state["progress"]["step"] == 6 and (old_run / "checkpoints" / "latest.safetensors").is_file()


def test_an_edited_step_in_the_old_sidecar_is_refused_in_one_line(old_run, corpus_file, capsys):
    sidecar = old_run / "checkpoints" / "latest.json"
    meta = json.loads(sidecar.read_text())
    meta["state"]["progress"]["step"] = 2  # the .npz's checksum cannot see this; AdamW counted 4 steps
    sidecar.write_text(json.dumps(meta))
    status, _, err = run_main(["--resume", old_run, "--data", corpus_file, "--max-steps", 6, "--no-report"], capsys)
    assert status != 0 and "it says step 2, its optimizer counted [4] steps" in err
    assert len(err.strip().splitlines()) == 1, err
