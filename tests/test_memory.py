"""tensorlab keeps freed memory for reuse, so a training step does not page-fault its arrays back in."""
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc malloc settings are Linux-only")

STEP_LIKE_ALLOCATIONS = textwrap.dedent("""
    import resource, numpy as np
    {setup}
    def step():  # arrays of a training step's sizes, written to, then all freed
        arrays = [np.ones((n, 64, 128), np.float32) for n in (16, 48, 64, 96, 192, 320, 500, 64, 16)]
        return sum(float(a[-1, -1, -1]) for a in arrays)
    for _ in range(3):
        step()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(10):
        step()
    print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) // 10)
""")


def faults_per_step(setup):
    code = STEP_LIKE_ALLOCATIONS.format(setup=setup)
    return int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


def test_import_tensorlab_makes_repeated_steps_fault_free():
    from tensorlab import memory
    if not memory.keep_freed_memory():
        pytest.skip("this C library is not glibc")
    # about 55 MB are written per step: 13,000 fresh pages if malloc gave them back each time
    assert faults_per_step("import tensorlab") < 100


def test_the_setting_can_be_turned_off(monkeypatch):
    from tensorlab import memory
    calls = []
    monkeypatch.setattr(memory, "keep_freed_memory", lambda: calls.append("kept"))
    monkeypatch.setenv("TENSORLAB_KEEP_FREED_MEMORY", "0")
    memory.apply_default()
    monkeypatch.setenv("TENSORLAB_KEEP_FREED_MEMORY", "1")
    memory.apply_default()
    assert calls == ["kept"]
