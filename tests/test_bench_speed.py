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


# Each bench script with a __main__, and arguments that take it past its imports of models/ and tensorlab/ to a
# quick, known end (speed: an unknown config; quality: a config it refuses; profile_step imports both at the top).
BENCH_PROBES = {
    "speed": (["--configs", "nosuch"], 2, "unknown config(s) ['nosuch']"),
    "quality": (["configs/seed_000.json", "--data", "tests/data/small_corpus.txt"], 2, "scores the ordered split only"),
    "profile_step": (["--help"], 0, "usage: profile_step.py"),
    "engines": (["--workloads", "nosuch"], 2, "invalid choice: 'nosuch'"),
    "kernel_choices": (["--help"], 0, "usage: kernel_choices.py"),
    "tune": (["--constants", "NOSUCH"], 2, "invalid choice: 'NOSUCH'"),
}


def test_every_bench_script_with_a_main_has_a_probe():
    from pathlib import Path

    bench = Path(__file__).resolve().parent.parent / "bench"
    scripts = {p.stem for p in bench.glob("*.py") if 'if __name__ == "__main__":' in p.read_text(encoding="utf-8")}
    assert scripts == set(BENCH_PROBES)


@pytest.mark.parametrize("name", sorted(BENCH_PROBES))
def test_a_bench_script_runs_as_a_file_from_any_folder_and_as_a_module_from_the_checkout(name, tmp_path):
    """`python bench/NAME.py` (README, bench/RESULTS.md) from another folder and `python -m bench.NAME` from the
    checkout, neither with PYTHONPATH: each script puts the checkout on sys.path itself."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    args, code, says = BENCH_PROBES[name]
    args = [str(root / a) if (root / a).exists() else a for a in args]  # the paths work from any folder
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for command, cwd in (([str(root / "bench" / f"{name}.py")], tmp_path), (["-m", f"bench.{name}"], root)):
        done = subprocess.run([sys.executable, *command, *args], capture_output=True, text=True, cwd=cwd, env=env)
        assert done.returncode == code and says in done.stdout + done.stderr, (command, done.stderr[-2000:])


def test_tune_tries_the_chosen_value_first_and_keeps_whole_numbers_whole():
    from bench.tune import candidates
    from tensorlab.kernels import plan

    for name, chosen in plan.CHOSEN.items():
        values = candidates(name, quick=False)
        assert values[0] == chosen and len(set(values)) == len(values) == 5, (name, values)
        assert all(type(v) is type(chosen) and v > 0 for v in values), (name, values)
    assert candidates("ROW_PARTS", quick=True) == [16, 32]
