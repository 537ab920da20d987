"""Kill test: a real training run, SIGKILLed again and again, always resumes, evaluates and samples.

A subprocess trains a tiny model with a checkpoint every step. It is killed at random
moments, and every third time while it writes `latest` ($TENSORLAB_TEST_WRITE_DELAY makes
tensorlab.serialization.write_atomically say "writing ..." and wait inside the window between
the temporary file and the rename). After each kill `eval` and `generate` must work on
whatever checkpoints exist, and the next start (`--resume`, or `--out` again when the run
died before writing its config) must go on. The run finally ends bitwise like one that was
never killed.
"""
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import train
from models.checkpoint import read_checkpoint

ROOT = Path(__file__).resolve().parent.parent
KILLS = 21
STEPS = 60
FLAGS = ["--config", ROOT / "configs" / "tiny.json", "--max-steps", STEPS, "--eval-interval", 5,
         "--eval-batches", 1, "--checkpoint-interval", 1, "--vocab-size", 260, "--no-report"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, corpus_file):
    path = tmp_path_factory.mktemp("data") / "small.txt"
    path.write_bytes(corpus_file.read_bytes()[:30_000])
    return path


def start(out, corpus, aim_at_write):
    first = not (out / "config.json").is_file()
    argv = ["--out", out] if first else ["--resume", out, "--no-report"]
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    if aim_at_write:
        env["TENSORLAB_TEST_WRITE_DELAY"] = "0.5"
    command = [sys.executable, str(ROOT / "train.py"), *map(str, argv), *(map(str, FLAGS) if first else []),
               "--data", str(corpus)]
    return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE if aim_at_write else subprocess.DEVNULL, text=True)


def kill(proc, aim_at_write, rng):
    """SIGKILL `proc` inside a write of latest, or after a random delay; its exit status if it ended first."""
    if aim_at_write:
        for line in proc.stderr:
            if "writing" in line and "latest" in line:
                break
    else:
        deadline = time.monotonic() + rng.uniform(0.1, 1.2)
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    return proc.wait()


def test_sigkill_at_any_moment_never_breaks_the_run(corpus, tmp_path, capsys):
    rng = random.Random(9)
    out, kills, broken = tmp_path / "run", 0, []
    started = time.monotonic()
    while kills < KILLS:
        aim = kills % 3 == 2
        proc = start(out, corpus, aim)
        try:
            status = kill(proc, aim, rng)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            if proc.stderr:
                proc.stderr.close()
        if status == -signal.SIGKILL:
            kills += 1
        elif status == 0:
            break  # it finished before the kill: nothing left to kill
        else:
            broken.append(f"a start after {kills} kills exited with {status}")
            break
        broken += usable_or_why(out, capsys)
    assert not broken, broken
    assert kills >= 20, f"the run finished after only {kills} kills"
    print(f"kill loop: {time.monotonic() - started:.1f} s")

    assert start(out, corpus, False).wait() == 0
    ref = tmp_path / "ref"
    assert train.main([*map(str, FLAGS), "--data", str(corpus), "--out", str(ref)]) == 0
    a, b = read_checkpoint(out / "checkpoints" / "latest"), read_checkpoint(ref / "checkpoints" / "latest")
    assert a["progress"]["step"] == STEPS
    assert all(np.array_equal(a["model"][k], b["model"][k]) for k in b["model"])
    print(f"timing: {time.monotonic() - started:.1f} s with the reference run")
    print(f"{kills} kills ({kills // 3} inside a write), 0 broken runs, {time.monotonic() - started:.1f} s")


def usable_or_why(out, capsys):
    """[] when eval and generate work on every checkpoint there is (or say clearly that none exists yet)."""
    problems = []
    for name, argv in (("best", ["eval", out]), ("latest", ["generate", out, "--checkpoint", "latest",
                                                             "--max-new-tokens", 5])):
        has_one = (out / "checkpoints" / f"{name}.safetensors").is_file()
        if True:
            status = train.main([str(a) for a in argv])
            err = capsys.readouterr().err
            if status != (0 if has_one else 2) or (not has_one and "no config.json" not in err
                                                    and f"no {name} checkpoint" not in err
                                                    and "not a run directory" not in err):
                problems.append(f"{' '.join(map(str, argv[:1]))} {name}: status {status}: {err.strip()[-200:]}")
    return problems
