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
