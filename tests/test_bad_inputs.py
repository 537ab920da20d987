"""Every bad input is one line naming the file or value and what to do, exit status 2, nothing half-written.

Also the non-finite guard: a diverging run stops at once with one line (exit status 3),
and its checkpoints keep the last finite weights.
"""

import dataclasses
import json
import math
import os
import pickle
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from tools import run_into_a_closed_pipe

import tensorlab
import train
from models.checkpoint import read_checkpoint
from models.data import perplexity
from models.run_dir import LOCK_NAME  # the lock's holder note is rewritten by every start
from models.trainer import Progress, is_evaluation
from tensorlab import backend, serialization

ROOT = Path(__file__).resolve().parent.parent
TINY = str(ROOT / "configs" / "tiny.json")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, corpus_file):
    path = tmp_path_factory.mktemp("data") / "small.txt"
    path.write_bytes(corpus_file.read_bytes()[:60_000])
    return path


def run_main(argv, capsys):
    status = train.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def tiny_args(corpus, out, *extra):
    return ["--config", TINY, "--data", corpus, "--out", out, "--max-steps", 12, "--no-report", *extra]


@pytest.fixture(scope="module")
def run_dir(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "tiny"
    assert train.main([str(a) for a in tiny_args(corpus, out)]) == 0
    return out


@pytest.fixture
def copy(run_dir, tmp_path):
    out = tmp_path / "copy"
    shutil.copytree(run_dir, out)
    return out


def files(directory):
    return {p: p.read_bytes() for p in Path(directory).rglob("*") if p.is_file() and p.name != LOCK_NAME}


def assert_one_line(status, err, *fragments, code=2):
    """Bad input: stderr is one line. A stopped run (code 3): its progress lines, then one line saying why."""
    lines = [line for line in err.splitlines() if line.strip() and (code == 2 or line.startswith("train.py:"))]
    assert status == code and len(lines) == 1, err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


# ----- the run directory ---------------------------------------------------------------------------------


def test_out_in_a_directory_that_cannot_be_written(corpus, capsys):
    target = Path("/sys/tensorlab-run")
    try:
        Path(tempfile.mkstemp(dir="/sys")[1]).unlink()
        pytest.skip("/sys is writable here: no read-only directory to try")
    except OSError:
        pass
    status, _, err = run_main(tiny_args(corpus, target), capsys)
    assert_one_line(status, err, "--out /sys/tensorlab-run: cannot write in /sys", "choose another --out")


def test_out_naming_an_existing_file(corpus, tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    status, _, err = run_main(tiny_args(corpus, tmp_path / "notes.txt"), capsys)
    assert_one_line(status, err, "notes.txt is an existing file")
    assert "--resume" not in err and (tmp_path / "notes.txt").read_text() == "mine"
    status, _, err = run_main(tiny_args(corpus, tmp_path / "notes.txt" / "run"), capsys)
    assert_one_line(status, err, "notes.txt is a file, not a directory")


def test_a_run_killed_before_its_first_checkpoint_can_be_resumed_or_reused(corpus, tmp_path, capsys):
    out = tmp_path / "run"
    (out / "checkpoints").mkdir(parents=True)
    (out / "config.json").write_text(json.loads(json.dumps((ROOT / "configs" / "tiny.json").read_text())))
    status, _, _ = run_main(tiny_args(corpus, out), capsys)  # --out again
    assert status == 0 and read_checkpoint(out / "checkpoints" / "latest")["progress"]["step"] == 12
    out2 = tmp_path / "run2"
    (out2 / "checkpoints").mkdir(parents=True)
    shutil.copy(out / "config.json", out2 / "config.json")
    status, _, _ = run_main(["--resume", out2, "--data", corpus, "--no-report"], capsys)  # or --resume from step 0
    assert status == 0 and read_checkpoint(out2 / "checkpoints" / "latest")["progress"]["step"] == 12


# ----- files that parse but are wrong, or do not parse -----------------------------------------------------


@pytest.mark.parametrize("content", [b"\x93\xff\x00garbage\x01", b'{"format": 1, "tokenizer": {"model": 3}}'])
def test_a_broken_tokenizer_file(copy, content, capsys):
    (copy / "tokenizer.json").write_bytes(content)
    before = files(copy)
    for argv in (["--resume", copy], ["eval", copy], ["generate", copy]):
        status, _, err = run_main(argv, capsys)
        assert_one_line(status, err, f"{copy / 'tokenizer.json'}")
    assert files(copy) == before


@pytest.mark.parametrize(
    "content, fragment", [(b"\x93\xff\x00\x01", "is not text"), (b'{"step": 0}\nnot json\n', "line 2 is not JSON")]
)
def test_random_bytes_in_metrics_jsonl(copy, content, fragment, capsys):
    (copy / "metrics.jsonl").write_bytes(content)
    status, _, err = run_main(["--resume", copy, "--max-steps", 20], capsys)
    assert_one_line(status, err, f"{copy / 'metrics.jsonl'}", fragment)


def test_random_bytes_in_the_config_file(copy, capsys):
    (copy / "config.json").write_bytes(b"\x00\x93\xffnot json")
    status, _, err = run_main(["eval", copy], capsys)
    assert_one_line(status, err, f"{copy / 'config.json'}")


def test_a_checkpoint_whose_metadata_lacks_keys(copy, capsys):
    path = copy / "checkpoints" / "latest.safetensors"
    tensors, meta = serialization.load(path)
    del meta["progress"]
    serialization.save(tensors, meta, path)
    before = files(copy)
    status, _, err = run_main(["--resume", copy, "--max-steps", 20], capsys)
    assert_one_line(status, err, "latest.safetensors does not hold a training state", "progress")
    assert files(copy) == before


def test_a_checkpoint_whose_progress_has_the_wrong_types(copy, capsys):
    path = copy / "checkpoints" / "latest.safetensors"
    tensors, meta = serialization.load(path)
    meta["progress"].update(step="12", train_losses=None)
    serialization.save(tensors, meta, path)
    status, _, err = run_main(["--resume", copy, "--max-steps", 20], capsys)
    assert_one_line(status, err, "latest.safetensors does not hold a training state", "step='12'", "train_losses=None")


@pytest.mark.parametrize("field", dataclasses.fields(Progress), ids=lambda field: field.name)
def test_every_counter_of_progress_is_checked_against_its_field(field):
    """The check is the dataclass's own fields: a counter added to Progress cannot go unchecked."""
    saved = dataclasses.asdict(Progress(corpus_sha256="ab"))
    for wrong in (True, "7" if field.type != str | None else 7):
        with pytest.raises(ValueError, match=f"wrong type: {field.name}={wrong!r}"):
            Progress.from_dict({**saved, field.name: wrong})
    assert Progress.from_dict({**saved, "counter_of_an_older_version": 1}) == Progress(corpus_sha256="ab")


@pytest.mark.parametrize("name", ["latest", "best"])
def test_a_pickle_in_place_of_a_checkpoint(copy, name, capsys):
    (copy / "checkpoints" / f"{name}.safetensors").write_bytes(pickle.dumps({"model": np.zeros(3)}))
    argv = ["--resume", copy] if name == "latest" else ["eval", copy]
    status, _, err = run_main(argv, capsys)
    assert_one_line(status, err, f"{name}.safetensors is truncated, damaged or not a tensorlab checkpoint")


def test_non_finite_weights_are_refused_by_eval_generate_and_resume(copy, capsys):
    for name in ("latest", "best"):
        path = copy / "checkpoints" / f"{name}.safetensors"
        tensors, meta = serialization.load(path)
        tensors["norm.weight"] = tensors["norm.weight"].copy()
        tensors["norm.weight"][1] = np.inf
        serialization.save(tensors, meta, path)
    for argv in (["eval", copy], ["generate", copy], ["--resume", copy, "--max-steps", 20]):
        status, _, err = run_main(argv, capsys)
        assert_one_line(status, err, "safetensors cannot be used: parameter norm.weight holds non-finite values")


def test_eval_on_another_corpus_needs_force(run_dir, tmp_path, capsys):
    other = tmp_path / "other.txt"
    other.write_text("Another text entirely, of some length.\n" * 800)
    status, _, err = run_main(["eval", run_dir, "--data", other], capsys)
    assert_one_line(status, err, f"--data {other} is not the corpus", "--force")
    status, out, _ = run_main(["eval", run_dir, "--data", other, "--force"], capsys)
    assert status == 0 and "val loss" in out


# ----- generate, the engine ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "flags, fragment",
    [
        (["--temperature", "nan"], "--temperature must be a finite number >= 0"),
        (["--temperature", "inf"], "--temperature must be a finite number >= 0"),
        (["--temperature", "-1"], "--temperature must be a finite number >= 0"),
        (["--top-k", "0"], "--top-k must be in [1, 300]"),
        (["--top-k", "100000"], "--top-k must be in [1, 300]"),
    ],
)
def test_generate_with_a_bad_sampling_setting(run_dir, flags, fragment, capsys):
    status, _, err = run_main(["generate", run_dir, *flags], capsys)
    assert_one_line(status, err, fragment)


# ----- what tests/fuzz_flags.py found ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["../config", "", "nope", "best.safetensors"])
@pytest.mark.parametrize("command", ["eval", "generate", "export"])
def test_a_checkpoint_that_is_none_of_the_runs_is_refused_by_name(run_dir, tmp_path, command, name, capsys):
    """Before: `../config` was read as an old-format checkpoint (run/config.json), '' as run/checkpoints.safetensors."""
    out = ["--out", tmp_path / "export"] if command == "export" else []
    status, _, err = run_main([command, run_dir, "--checkpoint", name, *out], capsys)
    assert_one_line(
        status, err, f"--checkpoint must be best, latest or snapshot_stepNNNNNN (one of the run's), got {name!r}"
    )


def test_export_takes_usage_errors_and_an_out_that_is_a_file_as_train_py_does(run_dir, tmp_path, capsys):
    """Before: argparse's usage text and "train.py export: error:"; an --out file was "File exists; free space"."""
    status, _, err = run_main(["export", run_dir, "--outs", tmp_path], capsys)
    assert_one_line(status, err, "train.py: error: unrecognized arguments: --outs")
    (tmp_path / "a_file").write_text("x")
    status, _, err = run_main(["export", run_dir, "--out", tmp_path / "a_file"], capsys)
    assert_one_line(status, err, "is an existing file; choose a directory name")


@pytest.mark.parametrize("kind", ["fifo", "missing"])
def test_a_corpus_path_that_is_no_text_file_says_what_it_is(run_dir, tmp_path, kind, capsys):
    """Before: a FIFO "does not exist"."""
    path = tmp_path / kind
    if kind == "fifo":
        os.mkfifo(path)
    status, _, err = run_main(["eval", run_dir, "--data", path, "--force"], capsys)
    said = {"fifo": "is neither a file nor a directory", "missing": "does not exist"}[kind]
    assert_one_line(status, err, str(path), said)


def test_a_prompts_file_that_cannot_be_read_keeps_its_reason(corpus, tmp_path, capsys):
    """Before: argparse's own words, "invalid read_prompts_file value", for a folder, a FIFO or a missing file."""
    status, _, err = run_main(tiny_args(corpus, tmp_path / "run", "--prompts", tmp_path), capsys)
    assert_one_line(status, err, f"argument --prompts: {tmp_path}: cannot read it as UTF-8 text", "Is a directory")


def test_more_documents_than_any_corpus_holds_is_one_line(corpus, tmp_path, capsys):
    """Before: --documents 10**30 raised OverflowError out of train.main (str.split's count is a C integer)."""
    status, _, err = run_main(tiny_args(corpus, tmp_path / "run", "--documents", 10**30), capsys)
    assert_one_line(status, err, "holds 1 documents", f"fewer than the {10**30} asked for")


@pytest.mark.parametrize("flag", ["--norm-eps", "--embedding-std", "--dropout"])
@pytest.mark.parametrize("value", ["inf", "nan", "-inf"])
def test_no_model_setting_takes_a_number_that_is_not_finite(corpus, tmp_path, flag, value, capsys):
    """Before: --norm-eps inf trained a model whose every output was 0 (perplexity = the vocabulary size), and
    --embedding-std inf stopped at a nan loss advising a lower --lr."""
    status, _, err = run_main(tiny_args(corpus, tmp_path / "run", f"{flag}={value}"), capsys)
    assert_one_line(status, err, f"{flag[2:].replace('-', '_')} must be a finite number, got {value}")
    assert not (tmp_path / "run").exists()


def test_a_gpu_run_is_evaluated_and_sampled_on_the_cpu(copy, capsys):
    if backend.gpu_available():
        pytest.skip("this machine has a GPU: the CPU-only case cannot be shown here")
    config = json.loads((copy / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps(dict(config, device="cuda")))  # as a GPU run saves it
    status, _, err = run_main(["eval", copy], capsys)
    assert_one_line(status, err, "device cuda", "--device cpu")
    status, out, _ = run_main(["eval", copy, "--device", "cpu"], capsys)
    assert status == 0 and "val loss" in out
    status, out, _ = run_main(["generate", copy, "--device", "cpu", "--max-new-tokens", 5], capsys)
    assert status == 0 and out.strip()


def test_eval_and_generate_take_a_device(run_dir, capsys):
    status, out, _ = run_main(["eval", run_dir, "--device", "cpu"], capsys)
    assert status == 0 and "val loss" in out
    status, _, err = run_main(["generate", run_dir, "--device", "tpu"], capsys)
    assert_one_line(status, err, "--device", "cpu", "cuda")


@pytest.mark.parametrize(
    "data, error, fragment",
    [
        ("abc", TypeError, "tensorlab.tensor: expected numbers (a number, a list of numbers or an array), got str"),
        (None, TypeError, "got NoneType"),
        ([[1, 2], [3]], ValueError, "the nested lists are ragged"),
    ],
)
def test_tensor_of_something_that_is_not_numbers(data, error, fragment):
    with pytest.raises(error) as info:
        tensorlab.tensor(data)
    assert fragment in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    "value, fragment",
    [
        (np.array(["a", "b"]), "dtype <U1"),
        (np.zeros(2, dtype=np.complex64), "dtype complex64"),
    ],
)
def test_load_state_dict_of_strings_or_complex_numbers(value, fragment):
    layer = tensorlab.nn.Linear(2, 1, bias=False)
    before = layer.weight.data.copy()
    with pytest.raises(ValueError) as info:
        layer.load_state_dict({"weight": value.reshape(1, 2)})
    message = str(info.value)
    assert "not real numbers: weight: got " + fragment in message and "\n" not in message
    assert np.array_equal(layer.weight.data, before)


def test_a_sequence_length_that_cannot_fit_in_memory(corpus, tmp_path, capsys):
    status, _, err = run_main(tiny_args(corpus, tmp_path / "run", "--seq-len", 1_000_000), capsys)
    assert_one_line(status, err, "--seq-len 1000000 at --batch-size", "GiB for attention alone", "up to about")
    assert not (tmp_path / "run").exists()


def test_attention_too_large_at_any_sequence_length_names_the_other_factors(corpus, tmp_path, capsys):
    """Where not even a window of one token fits, the line names the other factors instead of a length of 0."""
    status, _, err = run_main(tiny_args(corpus, tmp_path / "run", "--n-layers", 10**12), capsys)
    assert_one_line(status, err, "--n-layers 1000000000000 needs about", "make --batch-size, --n-heads or --n-layers")
    assert "up to about 0" not in err and not (tmp_path / "run").exists()


def test_running_out_of_memory_is_one_line(corpus, tmp_path, capsys):
    def no_memory(step):
        raise MemoryError

    status = train.main([str(a) for a in tiny_args(corpus, tmp_path / "run")], on_step=no_memory)
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("train.py")]  # after the run's progress lines
    assert status == 2 and len(errors) == 1 and "Traceback" not in err
    assert "out of memory" in errors[0] and "--batch-size" in errors[0] and "--seq-len" in errors[0]


# ----- non-finite training ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "flags, what",
    [
        (["--lr", "1e30", "--grad-clip", "0"], "is nan"),
        (["--lr", "100"], "is nan"),
    ],
)
def test_a_diverging_run_stops_at_once_and_keeps_finite_checkpoints(corpus, tmp_path, flags, what, capsys):
    out = tmp_path / "run"
    status, _, err = run_main(tiny_args(corpus, out, "--max-steps", 40, "--eval-interval", 2, *flags), capsys)
    assert_one_line(status, err, what, "try a lower --lr", code=3)
    assert not (out / "report.md").exists() and not (out / "samples.txt").exists()
    for name in ("latest", "best"):
        state = read_checkpoint(out / "checkpoints" / name)
        assert all(np.isfinite(a).all() for a in state["model"].values())
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert all(math.isfinite(r["val_loss"] if is_evaluation(r) else r["train_loss"]) for r in rows)
    status, _, err = run_main(["--resume", out, "--no-report"], capsys)  # resume meets the same line, no traceback
    assert_one_line(status, err, what, code=3)


def test_perplexity_of_a_huge_loss_is_inf():
    assert perplexity(1000.0) == math.inf and perplexity(2.0) == pytest.approx(math.exp(2.0), rel=1e-15)


@pytest.mark.parametrize("buffering", ["buffered", "unbuffered"])
def test_generate_into_a_pipe_whose_reader_stopped_ends_quietly(run_dir, buffering):
    """`train.py generate RUN | head -1`: no 'cannot use a file: Broken pipe', no traceback; exit 141."""
    argv = [sys.executable, "train.py", "generate", str(run_dir), "--prompt", "ROMEO:", "--max-new-tokens", "20"]
    done = run_into_a_closed_pipe(argv, cwd=ROOT, buffering=buffering)
    assert done.returncode == 141 and done.stderr == "", done.stderr[-2000:]
