"""A hundred seeded fault-injection scenarios (tests/fault_injector.py): each command afterwards works or refuses in
one line, and no finished checkpoint, metrics row, config or tokenizer is lost. A longer run is one command:
`python -m tests.fault_injector --scenarios 1000`.

Planted to see it fail: with export's check of --out removed, the "beside" scenarios that export into the run
report "status 0, expected 2"; before train.main caught a ConfigError, a bit flipped in config.json escaped it on
--resume (scenario 96). With the injector's kill back at renames alone, as it first was, the second half fails.
"""

import re

from fault_injector import KILL_STAGES, run_scenarios


def test_a_hundred_scenarios_keep_the_property_with_faults_at_every_kind_of_write():
    seen = []
    failures = run_scenarios(100, seed=0, report=lambda line: None, seen=seen.append)
    assert not failures, "\n".join(f"{what}: {'; '.join(problems)}" for what, problems in failures)
    fault = re.compile(r"(killed [a-z ]+|ENOSPC|EROFS) at write \d+ \(([^)]+)\)")
    struck = {m.groups() for what in seen for m in fault.finditer(what)}
    assert {how for how, _ in struck} >= {*(f"killed {stage}" for stage in KILL_STAGES), "ENOSPC", "EROFS"}
    files = {re.sub(r"_step\d+", "", name) for _, name in struck}  # a kill at any write, not one kind of file
    assert files >= {".lock", "metrics.jsonl", "latest.safetensors", "best.safetensors", "model.safetensors"}, files
