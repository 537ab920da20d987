"""bench/speed.py ends with the worker's error when a worker fails, dies or stops answering; it never hangs."""

import argparse
import os
import signal

import numpy as np
import pytest

from bench.speed import Worker, WorkerDied

MODEL = dict(
    vocab_size=20, context_len=8, d_model=8, n_layers=1, n_heads=2, d_ff=16, dropout=0.0, pos_encoding="learned"
)


@pytest.fixture
def worker(tmp_path):
    from models.config import ModelConfig
    from models.transformer import TinyTransformerLM

    weights = tmp_path / "w.npz"
    np.savez(weights, **TinyTransformerLM(ModelConfig(**MODEL)).state_dict())
    w = Worker("tensorlab", argparse.Namespace(timeout=60), MODEL, str(weights), 2, 8, "cpu", 1)
    yield w
    w.stop()


def test_a_worker_runs_a_block_of_steps(worker):
    times = worker.ask("block", 10)
    assert len(times) == 10 and all(t > 0 for t in times)


def test_an_exception_in_the_worker_ends_the_benchmark_with_it(worker):
    expected = "(?s)tensorlab worker failed during 'fail'.*RuntimeError: worker asked to fail"
    with pytest.raises(WorkerDied, match=expected):
        worker.ask("fail")


def test_a_killed_worker_ends_the_benchmark(worker):
    os.kill(worker.process.pid, signal.SIGKILL)
    with pytest.raises(WorkerDied, match=r"tensorlab worker died \(exit code -9\) during 'block'"):
        worker.ask("block", 10)


def test_a_worker_that_stops_answering_times_out(worker):
    worker.timeout = 0.2
    with pytest.raises(WorkerDied, match="tensorlab worker: no answer to 'block' within 0 s"):
        worker.ask("block", 10**7)
    assert not worker.process.is_alive()


def test_a_worker_killed_between_commands_ends_the_benchmark(worker):
    os.kill(worker.process.pid, signal.SIGKILL)
    worker.process.join()
    with pytest.raises(WorkerDied, match=r"tensorlab worker died \(exit code -9\) during 'block'"):
        worker.ask("block", 10)


def test_it_runs_as_the_readme_prints_it_from_any_folder(tmp_path):
    """`python bench/speed.py`: the script finds models/ in the checkout itself (no PYTHONPATH, another cwd)."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parent.parent / "bench" / "speed.py"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, str(script), "--configs", "nosuch", "--tmp", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert done.returncode == 2 and "unknown config(s) ['nosuch']" in done.stderr, done.stderr[-2000:]
