"""Kill test: a real training run, SIGKILLed again and again, always resumes, evaluates and samples.

A subprocess trains a tiny model with a checkpoint every step. It is killed at random
moments, and every third time while it writes latest, best or metrics.jsonl ($TENSORLAB_TEST_WRITE_DELAY makes
tensorlab.serialization.write_atomically say "writing ..." and wait inside the window between
the temporary file and the rename). After each kill `eval` and `generate` must work on
whatever checkpoints exist, and the next start (`--resume`, or `--out` again when the run
died before writing its config) must go on. The run finally ends bitwise like one that was
never killed.
"""

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import train
from models.checkpoint import read_checkpoint

ROOT = Path(__file__).resolve().parent.parent
KILLS = 21
STEPS = 60
FLAGS = [
    "--config",
    ROOT / "configs" / "tiny.json",
    "--max-steps",
    STEPS,
    "--eval-interval",
    5,
    "--eval-batches",
    1,
    "--checkpoint-interval",
    1,
    "--vocab-size",
    260,
    "--no-report",
]


def start(out, corpus, aim_at_write):
    first = not (out / "config.json").is_file()
    argv = ["--out", out] if first else ["--resume", out, "--no-report"]
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    env["TENSORLAB_TEST_WRITE_DELAY"] = "0.5" if aim_at_write else "0"  # every write is announced on stderr
    command = [
        sys.executable,
        str(ROOT / "train.py"),
        *map(str, argv),
        *(map(str, FLAGS) if first else []),
        "--data",
        str(corpus),
    ]
    return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def kill(proc, aim_at_write, rng):
    """SIGKILL `proc` inside the write of the file named `aim_at_write`, else at a random moment; its exit status.

    A random moment: during start-up, or shortly after the run began its 1st, 2nd or 3rd file write,
    so that each start makes little progress whatever the machine's speed.
    """
    writes = 0 if aim_at_write else rng.randint(0, 3)
    if aim_at_write or writes:  # (a run that ends first closes stderr, which ends the loop)
        for line in proc.stderr:
            if "writing" in line and (aim_at_write or "") in line:
                writes -= 1
                if writes <= 0:
                    break
        time.sleep(0 if aim_at_write else rng.uniform(0, 0.05))
    else:
        deadline = time.monotonic() + rng.uniform(0.0, 0.8)
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    return proc.wait()


def test_sigkill_at_any_moment_never_breaks_the_run(corpus, tmp_path, capsys):
    rng = random.Random(9)
    ref = tmp_path / "ref"  # the run as it goes when nothing happens to it
    assert train.main([*map(str, FLAGS), "--data", str(corpus), "--out", str(ref)]) == 0
    runs, kills, broken = [tmp_path / "run0"], 0, []
    started = time.monotonic()
    while kills < KILLS and not broken:
        aim = (
            None
            if kills % 3 != 2
            else "best.safetensors"
            if kills == 2
            else ("latest.safetensors", "metrics.jsonl")[kills // 3 % 2]
        )
        proc = start(runs[-1], corpus, aim)
        try:
            status = kill(proc, aim, rng)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            proc.stderr.close()
        if status == -signal.SIGKILL:
            kills += 1
            broken += usable_or_why(runs[-1], capsys)
        elif status == 0:  # a fast machine: it finished between two kills; a new run takes the next ones
            runs.append(tmp_path / f"run{len(runs)}")
        else:
            broken.append(f"a start after {kills} kills exited with {status}")
    assert not broken, broken

    latest = runs[-1] / "checkpoints" / "latest.safetensors"
    reached = read_checkpoint(latest)["progress"]["step"] if latest.is_file() else 0
    final = start(runs[-1], corpus, None)
    final.communicate()
    assert final.returncode == 0
    b = read_checkpoint(ref / "checkpoints" / "latest")
    for out in runs:  # each killed run ends bitwise like the reference
        a = read_checkpoint(out / "checkpoints" / "latest")
        assert a["progress"]["step"] == STEPS
        assert all(np.array_equal(a["model"][k], b["model"][k]) for k in b["model"])
        rows = [
            [
                {k: v for k, v in json.loads(line).items() if k not in ("tokens_per_s", "elapsed_s")}
                for line in (run / "metrics.jsonl").read_text().splitlines()
            ]
            for run in (out, ref)
        ]
        assert rows[0] == rows[1]
    print(
        f"{kills} kills ({kills // 3} inside a write) over {len(runs)} run(s), 0 broken runs, the last one at "
        f"step {reached} of {STEPS} before its final start, {time.monotonic() - started:.1f} s"
    )


def usable_or_why(out, capsys):
    """[] when eval and generate work on every checkpoint there is (or say clearly that none exists yet)."""
    problems = []
    for name, argv in (
        ("best", ["eval", out]),
        ("latest", ["generate", out, "--checkpoint", "latest", "--max-new-tokens", 5]),
    ):
        has_one = (out / "checkpoints" / f"{name}.safetensors").is_file()
        if True:
            status = train.main([str(a) for a in argv])
            err = capsys.readouterr().err
            if status != (0 if has_one else 2) or (
                not has_one
                and "no config.json" not in err
                and f"no {name} checkpoint" not in err
                and "not a run directory" not in err
            ):
                problems.append(f"{' '.join(map(str, argv[:1]))} {name}: status {status}: {err.strip()[-200:]}")
    return problems
