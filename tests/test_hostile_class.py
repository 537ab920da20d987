"""A class with a hostile student (tests/hostile_class.py): 33 seeded scenarios, in which every attack runs at least
once, keep the property. A longer run is one command: `python -m tests.hostile_class --scenarios 500`.

Planted to see it fail (the scenario numbers are those of the draws before the checks' temporary folder and a linked
file were drawn too): without the stop of the processes a check leaves behind (student.Student._stop), daemons
outlive their checks (scenarios 103, 115, 122 ...); with the student's process keeping root's right to trace
(student._cannot_trace), the checker's memory is opened (scenarios 103, 114, 121, 129); without the request numbers
their answers carry back (Student.call), a file that forks is the checker's failure, "not graded" (scenario 103);
without grade's snapshot, 17 of the 33 scenarios break it (rows of files that changed the teacher's folders read
"failed", or grade's line after a SIGINT does not name what changed); without the tampering named in that line,
scenarios 121, 126 and 130 fail; with SIGTERM left to end grade, the run itself ends (143). Graded as root with a
Python the user nobody can run (a container's, Gradescope's), the student's code runs as nobody and every attack must
be refused: with it run as root there, 13 of the 20 scenarios change files or stop grade.
"""

import os
import re
import subprocess
from pathlib import Path

from hostile_class import ATTACKS, run_scenarios

ROOT = Path(__file__).resolve().parent.parent


def test_hostile_classes_keep_the_property_under_every_attack():
    seen = []
    failures = run_scenarios(33, seed=102, report=lambda line: None, seen=seen.append)
    assert not failures, "\n".join(f"{what}: {'; '.join(problems)}" for what, problems in failures)
    ran = {name for what in seen for name in re.search(r"\(ran: ([^)]*)\)", what)[1].split(", ")}
    assert ran >= set(ATTACKS), set(ATTACKS) - ran


def test_graded_as_root_every_attack_is_refused(python_nobody_can_run):
    _, python = python_nobody_can_run
    env = dict(os.environ, TENSORLAB_STUDENT_USER="nobody")
    run = [python, "-c", "from tensorlab.exercises.student import student_user; assert student_user()"]
    subprocess.run(run, cwd=ROOT, env=env, check=True, timeout=120)  # this Python runs the student's code as nobody
    done = subprocess.run(
        [python, "-m", "tests.hostile_class", "--scenarios", "20", "--seed", "1000"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0 and "0 broke the property" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]
