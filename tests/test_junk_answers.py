"""Answers of every type and shape (tests/junk_answers.py): 20 seeded files whose backward returns the right gradients
twisted are each checked to a verdict, and none passes that is not right. A longer run is one command:
`python -m tests.junk_answers --scenarios 500`.

Planted to see it fail: without the type check of what backward returned (diagnose.type_problem), a dict or a
generator ends the check with the checker's own failure (exit 3) in 6 of the 20 scenarios.
"""

from junk_answers import run_scenarios


def test_every_twisted_answer_gets_a_verdict_and_none_but_the_right_one_passes():
    failures = run_scenarios(20, seed=0, report=lambda line: None)
    assert not failures, "\n".join(f"{what}: {'; '.join(problems)}" for what, problems in failures)
