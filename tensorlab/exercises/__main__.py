"""The command line: `python -m tensorlab.exercises list | stub NAME [DEST] | check NAME FILE | assignment DIR`.

Exit codes: 0 the check passed (or list/stub/assignment worked), 1 the check failed, 2 a usage
error (an unknown exercise, a missing file, a stub that would overwrite a file), 130 Ctrl-C.
"""

import argparse
import difflib
import shutil
import sys
from pathlib import Path

from tensorlab.exercises import adamw_check, assignment, check, engine_check
from tensorlab.exercises.catalog import BY_NAME, EXERCISES
from tensorlab.exercises.student import StudentError
from tensorlab.exercises.watch import Stopped

TIME_LIMIT = 5.0  # seconds per case: a backward that loops forever is stopped, and the case named

PROG = "python -m tensorlab.exercises"
STUBS = Path(__file__).resolve().parent / "stubs"


def main(argv=None):
    """Run the command line on `argv` (default sys.argv[1:]); return the exit code."""
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
    checker.add_argument(
        "--time-limit",
        type=float,
        default=TIME_LIMIT,
        metavar="SECONDS",
        help=f"stop a case that runs longer than this (default {TIME_LIMIT:g}; 0: no limit)",
    )
    folder = commands.add_parser("assignment", help="write a students' folder DIR: every stub, a README, no solutions")
    folder.add_argument("dir", metavar="DIR")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse exits 2 on a usage error, 0 after --help
        return exit_.code
    if args.command == "list":
        return _list()
    if args.command == "assignment":
        return assignment.write(Path(args.dir), PROG)
    exercise = BY_NAME.get(args.name)
    if exercise is None:
        close = difflib.get_close_matches(args.name, BY_NAME, n=1)
        maybe = f" Did you mean {close[0]!r}?" if close else ""
        print(f"There is no exercise {args.name!r}.{maybe} `{PROG} list` shows them all.", file=sys.stderr)
        return 2
    if args.command == "stub":
        return _stub(exercise, args.dest)
    return _check(exercise, Path(args.file), args.time_limit)


def _list():
    width = max(len(e.name) for e in EXERCISES)
    print("Exercises, in order (write the missing code, then check it):")
    for exercise in EXERCISES:
        print(f"  {exercise.name:<{width}}  {exercise.title}")
    print(f"\nCopy a stub to edit:  {PROG} stub NAME my_NAME.py")
    print(f"Check your file:      {PROG} check NAME my_NAME.py")
    return 0


def _stub(exercise, dest):
    dest = Path(dest) if dest else Path(f"{exercise.name}.py")
    if dest.is_dir():
        dest = dest / f"{exercise.name}.py"
    if dest.exists():
        print(f"{dest} already exists; not overwriting it. Give another DEST, or remove it first.", file=sys.stderr)
        return 2
    shutil.copyfile(STUBS / f"{exercise.name}.py", dest)
    print(f"Wrote {dest}. Read its docstring, write the missing code, then run:")
    print(f"  {PROG} check {exercise.name} {dest}")
    return 0


def _check(exercise, path, time_limit):
    if not path.is_file():
        print(f"{path}: no such file. Make one with `{PROG} stub {exercise.name} {path}`.", file=sys.stderr)
        return 2
    print(f"Exercise {exercise.name!r}: {exercise.title}")
    runner = RUNNERS[exercise.kind]
    try:
        passed = runner.check(exercise, path, time_limit=time_limit)
    except Stopped as stop:
        print(stop.line)
        return stop.code
    except KeyboardInterrupt:
        print("Interrupted (Ctrl-C) before any case ran.")
        return 130
    except StudentError as error:
        print("\n".join(error.lines))
        print("FAILED: the file could not be checked.")
        return 1
    return 0 if passed else 1


RUNNERS = {"gradient": check, "adamw": adamw_check, "engine": engine_check}


if __name__ == "__main__":
    sys.exit(main())
