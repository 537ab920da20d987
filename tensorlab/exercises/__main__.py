"""The students' command line: `python -m tensorlab.exercises list | stub | check`.

    list                                               the exercises, in order
    stub NAME [DEST]                                   copy an exercise's stub out to edit
    check NAME FILE [--seed N] [--json] [--hints L]    check a file

Exit codes: 0 the check passed (or list/stub worked), 1 the check failed, 2 a usage error (an
unknown exercise, a missing file, a stub that would overwrite a file), 3 the checker itself could not
run (a full disk, say: no verdict on the file), 130 Ctrl-C. The teachers'
tools (assignment, grade) are in the checkout's teachers/classroom.py, never in the wheel.
"""

import argparse
import difflib
import json
import math
import os
import shutil
import sys
from pathlib import Path

from tensorlab.command_line import exit_with
from tensorlab.exercises import runner
from tensorlab.exercises.catalog import BY_NAME, EXERCISES, stub
from tensorlab.exercises.report import LEVELS, Report

TIME_LIMIT = 5.0  # seconds per case: a backward that loops forever is stopped, and the case named

PROG = "python -m tensorlab.exercises"


def main(argv=None):
    """Run the command line on `argv` (default sys.argv[1:]); return the exit code."""
    try:
        args = parser().parse_args(argv)
    except SystemExit as exit_:  # argparse exits 2 on a usage error, 0 after --help
        return exit_.code
    if args.command == "list":
        return _list()
    exercise = BY_NAME.get(args.name)
    if exercise is None:
        close = difflib.get_close_matches(args.name, BY_NAME, n=1)
        maybe = f" Did you mean {close[0]!r}?" if close else ""
        print(f"There is no exercise {args.name!r}.{maybe} `{PROG} list` shows them all.", file=sys.stderr)
        return 2
    if args.command == "stub":
        return _stub(exercise, args.dest)
    return _check(exercise, Path(args.file), args.time_limit, args.seed, args.hints, args.json)


def parser():
    """The command line's parser: list, stub and check."""
    parser = argparse.ArgumentParser(
        prog=PROG, description="Gradient-check exercises: fill in a backward, check it, read the diagnosis."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser("list", help="list the exercises")
    stub = commands.add_parser("stub", help="copy an exercise's stub to DEST (default: ./NAME.py) to edit")
    stub.add_argument("name", metavar="NAME")
    stub.add_argument("dest", metavar="DEST", nargs="?", help="a file, or a folder to put NAME.py in")
    checker = commands.add_parser("check", help="check your solution FILE to exercise NAME")
    checker.add_argument("name", metavar="NAME")
    checker.add_argument("file", metavar="FILE")
    time_limit_option(checker, "0: no limit")
    checker.add_argument(
        "--seed",
        type=whole_number,
        metavar="N",
        help="draw the cases' inputs from seed N (default: a fresh one, printed)",
    )
    checker.add_argument("--json", action="store_true", help="print one JSON object (the student's prints: stderr)")
    hints_option(checker)
    return parser


def time_limit_option(command, zero):
    command.add_argument(
        "--time-limit",
        type=seconds,
        default=TIME_LIMIT,
        metavar="SECONDS",
        help=f"stop a case that runs longer than this (default {TIME_LIMIT:g}; {zero})",
    )


def seconds(text):
    """--time-limit's value: a finite number of seconds >= 0, or a usage error (never a verdict on the file)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds >= 0, got {text!r}")
    return value


def whole_number(text):
    """--seed's value: a whole number >= 0 (a random generator takes no other), or a usage error."""
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return int(text)


def hints_option(command):
    command.add_argument(
        "--hints",
        choices=LEVELS,
        default="fix",
        help="how much the diagnosis says: fix (default) the mistake and the right formula or code; "
        "name the mistake only; none only which cases failed",
    )


def _list():
    width = max(len(e.name) for e in EXERCISES)
    print("Exercises, in order (write the missing code, then check it):")
    for exercise in EXERCISES:
        print(f"  {exercise.name:<{width}}  {exercise.title}")
    print(f"\nCopy a stub to edit:  {PROG} stub NAME        (writes NAME.py: hand it in under that name)")
    print(f"Check your file:      {PROG} check NAME NAME.py")
    return 0


def _stub(exercise, dest):
    dest = Path(dest) if dest else Path(f"{exercise.name}.py")
    if dest.is_dir():
        dest = dest / f"{exercise.name}.py"
    if os.path.lexists(dest):  # a dangling link too: copying would write where it points
        print(f"{dest} already exists; not overwriting it. Give another DEST, or remove it first.", file=sys.stderr)
        return 2
    try:
        shutil.copyfile(stub(exercise.name), dest)
    except OSError as error:
        print(
            f"Cannot write {dest} ({error.strerror or error}). Give a DEST in a folder you can write.", file=sys.stderr
        )
        return 2
    print(f"Wrote {dest}. Read its docstring, write the missing code, then run:")
    print(f"  {PROG} check {exercise.name} {dest}")
    return 0


def _check(exercise, path, time_limit, seed, hints, as_json):
    if not path.is_file():
        why = f"{path}: no such file. Make one with `{PROG} stub {exercise.name} {path}`."
        why = f"{path} is not a file (a folder, a FIFO): give the .py file you wrote." if path.exists() else why
        print(why, file=sys.stderr)
        if as_json:  # a record all the same, for the program that reads it
            report = Report(exercise, path, hints, show=None)
            report.cannot_check([why])
            print(json.dumps(report.record(2)))
        return 2
    report = Report(exercise, path, hints, show=None if as_json else print)
    code = runner.run(exercise, path, time_limit, seed, report, echo=sys.stderr.write if as_json else sys.stdout.write)
    if as_json:
        print(json.dumps(report.record(code)))
    return code


if __name__ == "__main__":
    exit_with(main)  # quietly with 141 when the reader goes away (`... | head`), as a Unix tool does
