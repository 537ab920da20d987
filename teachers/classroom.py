"""The teachers' command line, from a checkout (never in the students' wheel): `python -m teachers.classroom`.

    assignment DIR [--wheel] [--gradescope]            a students' folder: every stub, a README, GUIDE.md;
                                                       the engine's wheel; a Gradescope autograder zip
    grade SUBMISSIONS_DIR [--out PATH] [--hints L]     check every student's files into a gradebook

Run from the checkout's root. Exit codes: 0 written, 1 a wheel or the gradebook could not be written (an earlier
gradebook is left as it was), 2 a usage error, 130 Ctrl-C or SIGTERM (grade then writes no gradebook).
The students' own commands (list, stub, check) are `python -m tensorlab.exercises`.
"""

import argparse
import sys
from pathlib import Path

from teachers import assignment, grade
from tensorlab.exercises.__main__ import PROG, hints_option, time_limit_option


def main(argv=None):
    """Run the command line on `argv` (default sys.argv[1:]); return the exit code."""
    parser = argparse.ArgumentParser(prog="python -m teachers.classroom", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    folder = commands.add_parser("assignment", help="write a students' folder DIR: every stub, a README, no solutions")
    folder.add_argument("dir", metavar="DIR")
    folder.add_argument("--wheel", action="store_true", help="also build a wheel of the engine into DIR to install")
    folder.add_argument("--gradescope", action="store_true", help="also write DIR/autograder.zip for Gradescope")
    grader = commands.add_parser("grade", help="check every student's files: one subfolder per student, NAME.py each")
    grader.add_argument("submissions", metavar="SUBMISSIONS_DIR")
    grader.add_argument("--out", default="gradebook", metavar="PATH", help="write PATH.csv, PATH-grid.csv, PATH.md")
    time_limit_option(grader, "more than 0")
    hints_option(grader)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse exits 2 on a usage error, 0 after --help
        return exit_.code
    if args.command == "assignment":
        return assignment.write(Path(args.dir), PROG, wheel=args.wheel, gradescope=args.gradescope)
    return grade.grade(Path(args.submissions), Path(args.out), args.hints, args.time_limit)


if __name__ == "__main__":
    sys.exit(main())
