"""bench/speed.py ends with the worker's error when a worker fails, dies or stops answering; it never hangs."""

import argparse
import os
import re
import signal

import numpy as np
import pytest

from bench.speed import Worker, WorkerDied

MODEL = dict(
    vocab_size=20, context_len=8, d_model=8, n_layers=1, n_heads=2, d_ff=16, dropout=0.0, pos_encoding="learned"
)


def start_worker(framework, folder):
    from models.config import ModelConfig
    from models.transformer import TinyTransformerLM

    weights = folder / "w.npz"
    np.savez(weights, **TinyTransformerLM(ModelConfig(**MODEL)).state_dict())
    return Worker(framework, argparse.Namespace(timeout=60), MODEL, str(weights), 2, 8, "cpu", 1)


@pytest.fixture
def worker(tmp_path):
    w = start_worker("tensorlab", tmp_path)
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
    "instructions": (["--steps", "0"], 2, "--steps must be at least 1"),
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


def test_tune_tells_a_value_that_changes_no_cut_from_one_that_does(monkeypatch):
    """bench/tune.py marks a value whose cuts are the chosen value's: its cost is the machine's noise."""
    from bench.tune import cuts_of
    from tensorlab.kernels import linear, plan

    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(shape).astype(np.float32) for shape in [(2048, 64), (1024, 64), (1024,)])
    chosen = cuts_of(lambda: linear.linear_forward(x, w, b))
    assert chosen  # two row parts (the product's work is MIN_PART_WORK), each adding its bias every 128 rows
    for name, value, same in [
        ("ROW_PARTS", 32, True),  # two parts either way
        ("MIN_PART_ROWS", 2048, False),  # one part: the product whole
        ("BIAS_BLOCK_BYTES", 4096, False),  # the bias added every 64 rows, not 128
    ]:
        with monkeypatch.context() as patch:
            patch.setattr(plan, name, value)
            assert (cuts_of(lambda: linear.linear_forward(x, w, b)) == chosen) == same, name


@pytest.mark.parametrize("framework", ["tensorlab", "pytorch"])
def test_a_worker_measures_its_product_peak_and_where_a_step_goes(framework, tmp_path):
    pytest.importorskip("torch" if framework == "pytorch" else "numpy")
    worker = start_worker(framework, tmp_path)
    try:
        assert worker.ask("product_peak", 1) > 0
        where = worker.ask("profile", 2)
    finally:
        worker.stop()
    expected = {"products", "other ops", "Python and graph"} | ({"attention"} if framework == "tensorlab" else set())
    assert set(where) == expected and all(where[k] > 0 for k in expected - {"Python and graph"}), where


def test_the_model_arithmetic_counts_every_weight_that_multiplies_and_attention():
    from bench.speed import bench_configs, model_flops

    config, batch, seq = bench_configs(include_default=False)["seed_d256"]
    d, d_ff, layers, vocab = config["d_model"], config["d_ff"], config["n_layers"], config["vocab_size"]
    weights = vocab * d + layers * (3 * d * d + d * d + 2 * d * d_ff)  # the tied head; qkv, proj, fc, proj
    tokens = batch * seq
    assert model_flops(config, batch, seq) == (6 * weights * tokens + 12 * layers * d * seq * tokens, weights)


def test_a_result_prints_each_framework_s_gflops_its_share_of_the_peak_and_where_the_step_goes(capsys):
    from bench.speed import machine, print_result

    one = dict(step_ms=100.0, tokens_per_s=1.0, peak_rss_mb=1.0, block_ms=[100.0], gflops=30.0)
    one.update(product_peak_gflops=60.0, peak_share=0.5, where_ms={"products": 60.0, "Python and graph": 40.0})
    print_result(
        dict(config="c", batch=2, seq_len=8, block_ratios=[1.0], step_ratio=1.0, memory_ratio=1.0, model_gflop=3.0)
        | dict(weights=1000, tensorlab=one, pytorch=dict(one))
    )
    out = capsys.readouterr().out
    assert "model arithmetic 3.00 GFLOP per step (6 x 1,000 weights x 16 tokens, plus attention)" in out
    assert "tensorlab   30.0 GFLOP/s = 50% of NumPy's float32 product peak (60.0 GFLOP/s, 2048^2)" in out
    assert "pytorch     30.0 GFLOP/s = 50% of PyTorch's float32 product peak" in out
    assert out.count("where a profiled step's 100.0 ms go (ms): products 60.0, Python and graph 40.0") == 2
    pytest.importorskip("threadpoolctl")
    pytest.importorskip("torch")
    assert re.fullmatch(r".+ \| .*(avx|no avx).* \| .*BLAS.* \| PyTorch .+ \| 3 threads", machine(3)), machine(3)


def test_instructions_counts_blas_by_library_and_by_mkl_function_name():
    from bench.instructions import totals

    report = """
--------------------------------------------------------------------------------
Ir
--------------------------------------------------------------------------------
1,767,324,916 (100.0%)  PROGRAM TOTALS

--------------------------------------------------------------------------------
Ir                    file:function
--------------------------------------------------------------------------------
279,493,500 (15.81%)  ???:sgemm_kernel_HASWELL [/venv/numpy.libs/libscipy_openblas64_-32a4b2a6.so]
142,348,999 ( 8.05%)  Python/ceval.c:_PyEval_EvalFrameDefault'2 [/usr/lib/libpython3.11.so.1.0]
 70,800,000 ( 4.01%)  ???:mkl_blas_avx2_sgemm_kernel_nocopy_NT_b0 [/venv/torch/lib/libtorch_cpu.so]
 52,300,000 ( 2.96%)  ???:mkl_vml_kernel_sTanh_L9HAynn [/venv/torch/lib/libtorch_cpu.so]
  1,190,000 ( 0.07%)  ???:sgemm_oncopy_HASWELL [/venv/numpy.libs/libscipy_openblas64_-32a4b2a6.so]
"""
    # OpenBLAS's two functions and MKL's BLAS kernel; MKL's vector math (tanh) is no BLAS, like NumPy's tanh
    assert totals(report) == (1_767_324_916, 279_493_500 + 70_800_000 + 1_190_000)
