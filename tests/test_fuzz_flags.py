"""Fifty seeded command lines of train.py and `check` with drawn flags (tests/fuzz_flags.py): each ends with status
0 or with the command's own error lines, takes no nan or inf, judges no right file and loses no finished work. A
longer run is one command: `python -m tests.fuzz_flags --scenarios 1000`.

Planted to see it fail, each found within 300 scenarios: export's parser back to a plain ArgumentParser (usage text
and "train.py export: error:"); --prompts read by argparse's type= alone ("invalid read_prompts_file value", its
reason lost); the model config's rule that a number be finite removed (a dropout of nan raised out of train.main);
`check`'s --seed and --time-limit back to int and float (--seed -1 "The checker itself failed", a limit of -1
failed the right file).
"""

from fuzz_flags import parsers, run_scenarios


def test_fifty_drawn_command_lines_end_in_train_pys_own_words():
    seen = []
    failures = run_scenarios(50, seed=0, report=lambda line: None, seen=seen.append)
    assert not failures, "\n".join(f"{what}: {'; '.join(problems)}" for what, problems in failures)
    kinds = {what.split(": ")[1] for what in seen}
    assert kinds == set(parsers()), kinds  # every command of train.py was drawn
