"""Nothing lost, whoever runs it: one process per run directory, resumes that never destroy, signals that save.

Real train.py processes: a second start beside a running run (with --out or --resume), two
starts at the same instant, a resume whose latest checkpoint is gone, SIGTERM and SIGHUP, and
a run stopped before it wrote anything. Each ends in one line and a non-zero status, or in a
run that continues; no finished file is overwritten.
"""

import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from models import run_dir as run_dir_rules
from models.checkpoint import read_checkpoint

ROOT = Path(__file__).resolve().parent.parent
TINY = ["--config", ROOT / "configs" / "tiny.json", "--vocab-size", 260, "--no-report"]


def command(*args):
    return [sys.executable, str(ROOT / "train.py"), *map(str, args)]


ENV = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")


def as_in_a_terminal():
    """In the child, before train.py starts: Ctrl-C and SIGHUP as a terminal's foreground job gets them, even where
    this suite runs with them ignored (`nohup`, `cmd &` in a script): a run started with one ignored keeps ignoring
    it."""
    for number in (signal.SIGINT, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)


def run(*args, timeout=180):
    return subprocess.run(command(*args), capture_output=True, text=True, env=ENV, timeout=timeout, cwd=ROOT)


def start_in_background(out, corpus, *extra, stderr_path):
    """A training run that goes on until stopped; returns once it has written its config and begun training."""
    stderr = open(stderr_path, "w")  # closed by the caller
    process = subprocess.Popen(
        command(*TINY, "--data", corpus, "--out", out, "--max-steps", 100_000, *extra),
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        env=ENV,
        cwd=ROOT,
        preexec_fn=as_in_a_terminal,
    )
    deadline = time.monotonic() + 120
    while not (out / "checkpoints" / "latest.safetensors").is_file():  # its first evaluation is saved
        assert process.poll() is None, Path(stderr_path).read_text()
        assert time.monotonic() < deadline, "the run did not start in 120 s"
        time.sleep(0.1)
    return process, stderr


def one_line(done):
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    return lines[0]


def digests(run_dir):
    """sha256 of every file in a run directory, by relative path (the lock file left out)."""
    return {
        str(p.relative_to(run_dir)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(run_dir.rglob("*"))
        if p.is_file() and p.name != run_dir_rules.LOCK_NAME
    }


def test_a_second_process_is_refused_while_a_run_trains_and_sigterm_saves(tmp_path, corpus):
    out = tmp_path / "run"
    process, stderr = start_in_background(out, corpus, stderr_path=tmp_path / "first.err")
    try:
        for second in (["--resume", out], [*TINY, "--data", corpus, "--out", out]):
            line = one_line(run(*second))
            assert f"{out} is in use: process {process.pid} (" in line and "wait for it to end, or stop it" in line
        assert process.poll() is None  # the first run goes on
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=120) == 128 + signal.SIGTERM
    finally:
        process.kill()
        stderr.close()
    err = (tmp_path / "first.err").read_text()
    assert "SIGTERM: saving a checkpoint after this step" in err and "Traceback" not in err
    stopped_at = read_checkpoint(out / "checkpoints" / "latest")["progress"]["step"]
    assert f"interrupted at step {stopped_at}: saved" in err and stopped_at > 0
    done = run("--resume", out, "--max-steps", stopped_at + 2, "--no-report")  # the lock went with the process
    assert done.returncode == 0, done.stderr[-2000:]
    assert read_checkpoint(out / "checkpoints" / "latest")["progress"]["step"] == stopped_at + 2


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGINT])
def test_sighup_and_ctrl_c_save_latest_too(tmp_path, corpus, signum):
    out = tmp_path / "run"
    process, stderr = start_in_background(out, corpus, stderr_path=tmp_path / "err")
    try:
        process.send_signal(signum)
        assert process.wait(timeout=120) == 128 + signum
    finally:
        process.kill()
        stderr.close()
    assert "saved" in (tmp_path / "err").read_text()
    assert read_checkpoint(out / "checkpoints" / "latest")["progress"]["step"] > 0


def test_two_starts_at_the_same_instant_one_trains_one_is_refused(tmp_path, corpus):
    out = tmp_path / "run"
    args = [*TINY, "--data", corpus, "--out", out, "--max-steps", 12, "--eval-interval", 4]
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda _: run(*args), range(2)))
    assert sorted(r.returncode for r in results) == [0, 2], [r.stderr[-1000:] for r in results]
    refused = one_line(next(r for r in results if r.returncode == 2))
    assert "is in use: " in refused or "already exists and is not empty" in refused
    assert read_checkpoint(out / "checkpoints" / "latest")["progress"]["step"] == 12  # the winner's run is whole
    assert "Traceback" not in "".join(r.stderr for r in results)


@pytest.fixture(scope="module")
def finished(tmp_path_factory, corpus):
    out = tmp_path_factory.mktemp("finished") / "run"
    done = run(*TINY, "--data", corpus, "--out", out, "--max-steps", 12, "--eval-interval", 4)
    assert done.returncode == 0, done.stderr[-2000:]
    return out


@pytest.mark.parametrize("how", ["deleted", "renamed", "a directory"])
def test_resume_without_latest_is_refused_and_destroys_nothing(tmp_path, finished, how):
    out = tmp_path / "run"
    shutil.copytree(finished, out)
    latest = out / "checkpoints" / "latest.safetensors"
    if how == "renamed":
        latest.rename(latest.with_name("latest-old.safetensors"))
    else:
        latest.unlink()
    if how == "a directory":
        latest.mkdir()
    before = digests(out)
    line = one_line(run("--resume", out))
    assert f"cannot resume {out}:" in line
    assert ("is not a file" in line) if how == "a directory" else ("is missing, but the run has saved" in line)
    assert "checkpoints/best.safetensors" in line or how == "a directory"
    assert digests(out) == before  # best, metrics.jsonl and the snapshots untouched


def test_a_run_stopped_before_it_wrote_anything_starts_again_with_its_command(tmp_path, corpus):
    out = tmp_path / "run"
    out.mkdir()
    (out / run_dir_rules.LOCK_NAME).write_text("{}")  # the lock file of a process that was killed at once
    (out / ".config.json.x1y2.tmp").write_text("half")  # a temporary file it left mid-write
    line = one_line(run("--resume", out))
    assert "it has no config.json" in line and f"run the command that started it again, with --out {out}" in line
    done = run(*TINY, "--data", corpus, "--out", out, "--max-steps", 4)
    assert done.returncode == 0, done.stderr[-2000:]
    assert not list(out.glob("*.tmp")) and (out / "config.json").is_file()


def test_a_run_that_saved_nothing_yet_resumes_from_step_zero(tmp_path, corpus, finished):
    out = tmp_path / "run"
    out.mkdir()
    shutil.copy(finished / "config.json", out)
    shutil.copy(finished / "tokenizer.json", out)
    (out / "checkpoints").mkdir()
    done = run("--resume", out, "--data", corpus, "--no-report")
    assert done.returncode == 0, done.stderr[-2000:]
    assert read_checkpoint(out / "checkpoints" / "latest")["progress"]["step"] == 12


def test_the_lock_refuses_a_second_holder_and_is_released_after(tmp_path):
    out = tmp_path / "run"
    with run_dir_rules.locked(out):
        with pytest.raises(run_dir_rules.RunDirError, match=rf"is in use: process {os.getpid()} \("):
            with run_dir_rules.locked(out):
                pass
    assert not out.exists()  # made for the lock, nothing written: removed again
    out.mkdir()
    with run_dir_rules.locked(out):
        pass
    assert out.is_dir()  # a directory it did not make stays


def test_a_resume_under_another_thread_count_is_bitwise_exact(tmp_path, corpus):
    """train.py uses every core it is given (OPENBLAS_NUM_THREADS): 2 threads, stopped, resumed on 1."""
    args = [*TINY, "--data", corpus, "--d-model", 64, "--batch-size", 16, "--eval-interval", 4, "--dropout", 0]

    def train_py(threads, *extra):
        env = dict(ENV, OPENBLAS_NUM_THREADS=str(threads))
        done = subprocess.run(command(*extra), capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)
        assert done.returncode == 0, done.stderr[-2000:]

    train_py(1, *args, "--out", tmp_path / "whole", "--max-steps", 8)
    train_py(2, *args, "--out", tmp_path / "resumed", "--max-steps", 4)
    train_py(1, "--resume", tmp_path / "resumed", "--max-steps", 8, "--no-report")
    a, b = (read_checkpoint(tmp_path / name / "checkpoints" / "latest") for name in ("whole", "resumed"))
    assert [k for k in a["model"] if not np.array_equal(a["model"][k], b["model"][k])] == []


def test_a_checkpoint_refuses_another_runs_tokenizer_everywhere(tmp_path, finished):
    """Another corpus, the same vocabulary size: its tokenizer.json in place of the run's would decode other text."""
    other_corpus = tmp_path / "other.txt"  # other text: other merges
    other_corpus.write_text("\n".join(" ".join(["qzx", "vvk", "jjw"] * 20) for _ in range(200)), encoding="utf-8")
    other = tmp_path / "other"
    assert run(*TINY, "--data", other_corpus, "--out", other, "--max-steps", 1).returncode == 0
    out = tmp_path / "run"
    shutil.copytree(finished, out)
    shutil.copy(other / "tokenizer.json", out / "tokenizer.json")
    for command_line in (["eval", out], ["generate", out, "--prompt", "ROMEO:"], ["--resume", out], ["export", out]):
        done = run(*command_line)
        lines = [line for line in (done.stderr + done.stdout).splitlines() if line.strip()]
        assert done.returncode == 2 and len(lines) == 1, done.stderr + done.stdout
        assert "was trained with another tokenizer than the run's tokenizer.json" in lines[0], lines[0]


def test_a_directory_reused_after_a_kill_gets_the_new_runs_tokenizer(tmp_path, finished, corpus):
    out = tmp_path / "run"
    out.mkdir()
    (out / "tokenizer.json").write_bytes((finished / "tokenizer.json").read_bytes())  # a killed run's, other settings
    done = run(*TINY, "--data", corpus, "--out", out, "--max-steps", 4, "--vocab-size", 270)
    assert done.returncode == 0, done.stderr[-2000:]
    assert run("eval", out).returncode == 0  # the checkpoint and tokenizer.json agree
    assert json.loads((out / "tokenizer.json").read_text()) != json.loads((finished / "tokenizer.json").read_text())


def test_a_run_killed_inside_its_first_evaluation_resumes_from_step_zero(tmp_path, finished, corpus):
    """best and the first snapshot are the untrained model's, metrics' only row is step 0's: a restart redoes them."""
    out = tmp_path / "run"
    shutil.copytree(finished, out)
    for path in (out / "checkpoints").glob("*"):
        if path.name != "snapshot_step000000.safetensors":
            path.unlink()
    first_row = (out / "metrics.jsonl").read_text().splitlines()[0]
    (out / "metrics.jsonl").write_text(first_row + "\n")
    done = run("--resume", out, "--data", corpus, "--no-report")
    assert done.returncode == 0, done.stderr[-2000:]
    a, b = (read_checkpoint(run / "checkpoints" / "latest") for run in (out, finished))
    assert a["progress"]["step"] == 12 and all(np.array_equal(a["model"][k], b["model"][k]) for k in b["model"])


def test_a_signal_inside_a_print_to_a_buffered_stderr_still_says_what_it_does(tmp_path, monkeypatch):
    """Ctrl-C landing inside a print to stderr, buffered as in a user's shell: the handler's own message must not
    be a second write into the same buffer (RuntimeError: reentrant call), whatever PYTHONUNBUFFERED says."""
    from models.stop import _StopOnSignal

    stop, log = _StopOnSignal(), open(tmp_path / "stderr", "wb")

    class SignalMidWrite(io.RawIOBase):  # the file under stderr's buffer; the signal comes while it writes
        def writable(self):
            return True

        def fileno(self):
            return log.fileno()

        def write(self, data):
            if not stop.requested:
                stop._handle(signal.SIGINT, None)
            return os.write(log.fileno(), data)

    monkeypatch.setattr(sys, "stderr", io.TextIOWrapper(io.BufferedWriter(SignalMidWrite()), line_buffering=True))
    print("writing checkpoints/latest.safetensors", file=sys.stderr, flush=True)
    log.close()
    written = (tmp_path / "stderr").read_text()
    assert stop.requested and "Ctrl-C: saving a checkpoint after this step" in written, written


def test_a_second_ctrl_c_inside_a_snapshot_write_keeps_the_run_whole(tmp_path, corpus):
    """Ctrl-C twice while step 4's snapshot is being written: exit 130 at once, and a resume redoes that evaluation
    whole, so the snapshots, the metrics and the weights end as in a run never interrupted."""
    args = [*TINY, "--data", corpus, "--max-steps", 8, "--eval-interval", 2]
    reference = run(*args, "--out", tmp_path / "reference")
    assert reference.returncode == 0, reference.stderr[-2000:]
    out = tmp_path / "run"
    env = dict(ENV, TENSORLAB_TEST_WRITE_DELAY="0.3")  # each write says its file, then waits inside its window
    process = subprocess.Popen(
        command(*args, "--out", out),
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=ROOT,
        preexec_fn=as_in_a_terminal,
    )
    try:
        for line in process.stderr:
            if line.startswith("writing ") and "snapshot_step000004" in line:
                process.send_signal(signal.SIGINT)  # the first: stop after this step
                time.sleep(0.05)
                process.send_signal(signal.SIGINT)  # the second: at once, inside the write
                break
        rest = process.communicate(timeout=120)[1]
    finally:
        process.kill()
    assert process.returncode == 130 and "interrupted in the middle of a step or an evaluation" in rest, rest
    assert not (out / "checkpoints" / "snapshot_step000004.safetensors").exists()  # the write never completed
    done = run("--resume", out, "--no-report")
    assert done.returncode == 0, done.stderr[-2000:]
    names = lambda run_dir: sorted(p.name for p in (run_dir / "checkpoints").iterdir())  # noqa: E731
    assert names(out) == names(tmp_path / "reference")
    untimed = lambda run_dir: [  # noqa: E731
        {k: v for k, v in json.loads(line).items() if k not in ("tokens_per_s", "elapsed_s")}
        for line in (run_dir / "metrics.jsonl").read_text().splitlines()
    ]
    assert untimed(out) == untimed(tmp_path / "reference")
    a, b = (read_checkpoint(r / "checkpoints" / "latest") for r in (out, tmp_path / "reference"))
    assert all(np.array_equal(a["model"][k], b["model"][k]) for k in b["model"])
