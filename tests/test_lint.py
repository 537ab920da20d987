"""The style checks CI runs, so the README's test command covers them: `ruff check .` and `ruff format --check .`.

Settings live in pyproject.toml ([tool.ruff]). Marked `lint`: `pytest -m "not lint"` leaves them out while a
change is in progress; they run by default and in CI. To fix what they report: `ruff check --fix .` and
`ruff format .`.
"""

import shutil
import subprocess
from pathlib import Path

import pytest
from tools import installed_tool

ROOT = Path(__file__).resolve().parent.parent
RUFF = installed_tool("ruff")

pytestmark = pytest.mark.lint


def ruff(*args, cwd=ROOT):
    done = subprocess.run([RUFF, *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout + done.stderr


def test_ruff_check_is_clean():
    code, report = ruff("check", "--no-cache", ".")
    assert code == 0, report


def test_ruff_format_leaves_every_file_as_it_is():
    code, report = ruff("format", "--check", "--no-cache", ".")
    assert code == 0, report


def test_the_checks_see_a_planted_unused_import_and_a_badly_formatted_line(tmp_path):
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    (tmp_path / "planted.py").write_text("import os\nx = [1,2]\n")
    assert ruff("check", "--no-cache", ".", cwd=tmp_path)[1].count("F401") == 1
    code, report = ruff("format", "--check", "--no-cache", ".", cwd=tmp_path)
    assert code == 1 and "planted.py" in report, report
