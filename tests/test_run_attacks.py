"""Issue 33's attacks on a run, each planted: work lost, silent wrongs and tracebacks that a team sharing runs met.

Each test failed on the code before the fix (an export replacing a run's config.json, a deleted .lock
admitting a second trainer, an eval on a changed corpus, a moved run re-created at its old path, ...).
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from test_bad_inputs import TINY, assert_one_line, tiny_args
from tools import tmpfs

import train
from models import run_dir as run_dir_rules
from models.checkpoint import read_checkpoint

OLD_RUN = Path(__file__).resolve().parent / "data" / "old_run"


@pytest.fixture(scope="module")
def finished(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "run"
    assert train.main([str(a) for a in tiny_args(corpus, out, "--no-report")]) == 0  # 12 steps, evaluated at 10, 12
    return out


@pytest.fixture
def run(finished, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(finished, out)
    return out


def run_main(argv, capsys, on_step=None):
    status = train.main([str(a) for a in argv], on_step=on_step)
    out, err = capsys.readouterr()
    return status, out, err


def files(directory):
    return {p: p.read_bytes() for p in Path(directory).rglob("*") if p.is_file() and p.name != run_dir_rules.LOCK_NAME}


# ----- work lost --------------------------------------------------------------------------------------------


def test_an_export_into_a_run_is_refused_and_the_run_is_untouched(run, finished, tmp_path, capsys):
    before = files(run)
    for source in (run, finished):  # export RUN --out RUN; export OTHER --out RUN
        status, _, err = run_main(["export", source, "--out", run], capsys)
        assert_one_line(status, err, f"--out {run} holds a run", "choose another folder")
    with run_dir_rules.locked(tmp_path / "live"):  # a run being trained into, before it wrote anything but its note
        status, _, err = run_main(["export", finished, "--out", tmp_path / "live"], capsys)
        assert_one_line(status, err, "holds a run")
    status, _, err = run_main(["export", finished, "--out", run / "checkpoints"], capsys)
    assert_one_line(status, err, "holds a run")
    assert files(run) == before
    assert run_main(["eval", run], capsys)[0] == 0
    assert run_main(["--resume", run, "--max-steps", 14, "--no-report"], capsys)[0] == 0


def test_a_run_without_config_json_resumes_from_the_config_in_latest(run, capsys):
    saved = json.loads((run / "config.json").read_text())
    (run / "config.json").unlink()
    status, _, err = run_main(["--resume", run, "--max-steps", 14, "--no-report"], capsys)
    assert status == 0, err
    assert f"{run / 'config.json'} is missing: rebuilt from the config" in err
    assert json.loads((run / "config.json").read_text()) == {**saved, "max_steps": 14}
    assert read_checkpoint(run / "checkpoints" / "latest")["progress"]["step"] == 14


def test_deleting_the_lock_file_admits_no_second_trainer(run, capsys):
    with run_dir_rules.locked(run):  # the run trains ...
        (run / run_dir_rules.LOCK_NAME).unlink()  # ... and a cleanup script (git clean) deletes .lock
        before = files(run)
        status, _, err = run_main(["--resume", run, "--lr", "0.001", "--max-steps", 14], capsys)
        assert_one_line(status, err, f"{run} is in use")
        assert files(run) == before


# ----- silent wrongs ------------------------------------------------------------------------------------------


def test_eval_and_generate_refuse_a_corpus_that_changed_since_training(corpus, tmp_path, capsys):
    """Both read a run through models/run.load_run, which checks the corpus always (generate once did not)."""
    data = tmp_path / "corpus.txt"
    data.write_bytes(corpus.read_bytes())
    out = tmp_path / "run"
    assert run_main(tiny_args(data, out), capsys)[0] == 0
    data.write_bytes(corpus.read_bytes()[:20_000])  # edited in place: the config still names this file
    for command in (["eval", out], ["generate", out, "--max-new-tokens", 2]):
        status, _, err = run_main(command, capsys)
        assert_one_line(status, err, f"the corpus at {data} is not the corpus {out} was trained on", "--force")
        assert run_main([*command, "--force"], capsys)[0] == 0  # asked for, it uses the new text
        assert run_main([*command, "--data", tmp_path / "nowhere.txt"], capsys)[0] == 2  # a corpus it cannot read


def test_an_export_is_whole_however_it_ends(run, tmp_path, capsys, monkeypatch):
    out = tmp_path / "export"
    assert run_main(["export", run, "--out", out, "--checkpoint", "snapshot_step000010"], capsys)[0] == 0
    real_replace = os.replace

    def killed_at_a_rename(src, dst, *args, **kwargs):
        raise KeyboardInterrupt  # a kill between the export's writes

    monkeypatch.setattr(os, "replace", killed_at_a_rename)
    assert train.main(["export", str(run), "--out", str(out)]) == 130
    monkeypatch.setattr(os, "replace", real_replace)
    from models.export import read_export  # (imported here: the code before the fix had no read_export)

    arrays, description = read_export(out)  # the first export, whole: weights and description together
    assert description["step"] == 10 and description["checkpoint"] == "snapshot_step000010"
    snapshot = read_checkpoint(run / "checkpoints" / "snapshot_step000010")["model"]
    assert all((arrays[name] == array).all() for name, array in snapshot.items())
    assert [p.name for p in out.iterdir()] == ["model.safetensors"]  # no temporary file left, no second file


def two_configs(tmp_path, lr=None):
    paths = []
    for name, d_model in (("narrow", 32), ("wide", 48)):
        config = json.loads(Path(TINY).read_text())
        config["model"]["d_model"] = d_model
        if lr is not None:
            config["lr"] = lr
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(config))
    return paths


def test_a_sweep_rerun_after_its_config_changed_is_refused(corpus, tmp_path, capsys):
    configs, out = two_configs(tmp_path), tmp_path / "sweep"
    argv = ["sweep", *configs, "--out", out, "--data", corpus, "--max-steps", 6, "--eval-interval", 3]
    assert run_main(argv, capsys)[0] == 0
    table = (out / "sweep.md").read_text()
    two_configs(tmp_path, lr=0.001)  # the sweep's configs edited
    status, _, err = run_main(argv, capsys)
    assert_one_line(status, err, f"{out / 'narrow'} was trained with another lr", "new --out")
    assert (out / "sweep.md").read_text() == table


def test_two_sweeps_into_one_out_at_once_one_is_refused(corpus, tmp_path, capsys, monkeypatch):
    ours, out = two_configs(tmp_path), tmp_path / "sweep"
    theirs = [tmp_path / "other" / p.name.replace(".json", "2.json") for p in ours]
    theirs[0].parent.mkdir()
    for mine, other in zip(ours, theirs):
        other.write_bytes(mine.read_bytes())
    real_locked, answers = run_dir_rules.locked, []

    def the_other_sweep_starts_now(path):
        if Path(path) == out / "narrow" and not answers:  # both sweeps have checked --out; neither wrote yet
            answers.append(run_main(["sweep", *theirs, "--out", out, "--data", corpus, "--max-steps", 3], capsys))
        return real_locked(path)

    monkeypatch.setattr(run_dir_rules, "locked", the_other_sweep_starts_now)
    status, _, err = run_main(["sweep", *ours, "--out", out, "--data", corpus, "--max-steps", 3], capsys)
    assert status == 0, err
    status, _, err = answers[0]
    assert_one_line(status, err, f"{out} is in use")
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["narrow", "wide"]


def test_a_run_moved_while_it_trains_stops_and_is_not_recreated(corpus, tmp_path, capsys):
    out, moved = tmp_path / "run", tmp_path / "moved"

    def mv_at_step_5(step):
        if step == 5:
            os.rename(out, moved)

    status, _, err = run_main(tiny_args(corpus, out), capsys, on_step=mv_at_step_5)
    errors = [line for line in err.splitlines() if line.startswith("train.py:")]  # after the progress lines
    assert status == 2 and len(errors) == 1 and "Traceback" not in err, err
    assert f"{out} was moved or deleted while this process trained into it" in errors[0]
    assert not out.exists()  # nothing re-created at the old path
    assert (moved / "config.json").is_file() and (moved / "tokenizer.json").is_file()
    assert read_checkpoint(moved / "checkpoints" / "latest")["progress"]["step"] == 0  # the last save, whole
    assert run_main(["--resume", moved, "--no-report"], capsys)[0] == 0


@pytest.mark.parametrize(
    "argv",
    [
        ["--resume", "", "--max-steps", 3],
        ["--config", TINY, "--out", "", "--max-steps", 3],
        ["--config", TINY, "--data", "", "--max-steps", 3],
        ["--config", "", "--max-steps", 3],
        ["eval", ""],
        ["generate", ""],
        ["export", ""],
        ["sweep", TINY, "--out", ""],
    ],
    ids=lambda argv: " ".join(map(str, argv[:2])),
)
def test_an_empty_path_is_refused(argv, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status, _, err = run_main(argv, capsys)
    assert_one_line(status, err, "empty")
    assert list(tmp_path.iterdir()) == []  # no runs/ with a default run in it


def test_max_steps_below_the_step_reached_is_refused(run, capsys):
    before = files(run)
    status, _, err = run_main(["--resume", run, "--max-steps", 10], capsys)
    assert_one_line(status, err, "--max-steps 10: it has reached step 12", "--max-steps 12 or more")
    assert files(run) == before


# ----- tracebacks -------------------------------------------------------------------------------------------


def test_a_prompt_that_is_not_utf8_is_one_line(run, capsys):
    prompt = b"ROMEO \xff:".decode("utf-8", "surrogateescape")  # what Python makes of such bytes in argv
    status, _, err = run_main(["generate", run, "--prompt", prompt], capsys)
    assert_one_line(status, err, "--prompt is not valid UTF-8")


@pytest.fixture
def disk(tmp_path):
    """A 200 KiB tmpfs, where this user may mount one (root, as CI runs the suite)."""
    for mount in tmpfs(tmp_path, "200k"):
        if mount is None:
            pytest.skip("this user cannot mount a tmpfs (root can, as CI runs the suite)")
        yield mount


def test_an_export_onto_a_full_disk_or_a_read_only_folder_is_one_line(run, disk, capsys):
    (disk / "filler").write_bytes(b"\0" * 150_000)  # the export needs about 110 KB: it does not fit
    status, _, err = run_main(["export", run, "--out", disk / "export"], capsys)
    assert_one_line(status, err, f"cannot write {disk / 'export' / 'model.safetensors'}", "free space")
    assert list((disk / "export").iterdir()) == []  # no half-written file
    (disk / "filler").unlink()
    subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
    status, _, err = run_main(["export", run, "--out", disk / "export"], capsys)
    assert_one_line(status, err, "Read-only file system", "choose another --out")


def old_run_with(tmp_path, name, change):
    out = tmp_path / "old_run"
    shutil.copytree(OLD_RUN, out)
    sidecar = out / "checkpoints" / f"{name}.json"
    meta = json.loads(sidecar.read_text())
    change(meta["state"])
    sidecar.write_text(json.dumps(meta))
    return out


@pytest.mark.parametrize(
    "name, change",
    [
        ("latest", lambda state: state.update(tensorlab_rng={"bit_generator": "PCG64", "state": 5})),
        ("latest", lambda state: state["batch_rng"].update(state="x")),
        ("latest", lambda state: state["optimizer"]["state"]["0"].update(exp_avg={"__array__": "gone"})),
        ("best", lambda state: state["model"].update({"norm.weight": {"__array__": "gone"}})),
        ("best", lambda state: state.update(model=[])),
    ],
    ids=["tensorlab_rng", "batch_rng", "optimizer array", "model array", "model list"],
)
def test_an_old_checkpoint_with_a_malformed_sidecar_is_one_line(tmp_path, corpus_file, capsys, name, change):
    old = old_run_with(tmp_path, name, change)
    argv = ["eval", old, "--checkpoint", name, "--data", corpus_file, "--force"]
    if name == "latest":
        argv = ["--resume", old, "--data", corpus_file, "--max-steps", 6, "--no-report"]
    status, _, err = run_main(argv, capsys)
    assert_one_line(status, err, f"{old / 'checkpoints' / name}")
