"""`python -m teachers.classroom grade SUBMISSIONS_DIR`: check a whole class into a gradebook.

SUBMISSIONS_DIR holds one folder per student, named after the student, with their exercise files
in it under the stubs' names (matmul.py, softmax.py, ...). Every exercise that some student handed
in is graded for every student (a missing file is a row "not handed in"; a file that is a symbolic link fails its
row: it is no file of the student's own, and may point at a solution). Every file is read
before the first check runs, and each check gets its file's text from that copy, so what one
student's code does to the files on disk changes no other row. Each check runs here, in this
process (tensorlab.exercises.runner), and the student's code in a process of its own (an empty
working folder, its own HOME, only the engine importable; as the user nobody when this process is
root and nobody can run its Python), with the time limit per case: a loop
that never ends, a crash or an exit fails that row and the grading goes on. The verdict is
computed here from the arrays that process sends back; nothing it prints is read.

Around each check the files of the submissions folder, the gradebook's folder, the working
folder and the teachers' folders (the engine package, teachers/, NumPy's package) are listed with their
sizes and change times (`snapshot`): when any of them changed, the row is marked TAMPERED (but for the temporary
folder's own entry, where each check makes and removes its folder: a file made or changed in it still shows). Every
check runs the engine and NumPy, so once their files differ from what they were when grading began, no later row is
checked: each reads NOT GRADED.
The gradebook: PATH.csv, a row per student and exercise (student, exercise, status, diagnosis at
the hint level, seed); PATH-grid.csv, a row per student (score, out of, each exercise's status);
PATH.md, both as Markdown tables.
"""

import contextlib
import csv
import io
import os
import signal
import sys
import tempfile
from pathlib import Path

import numpy as np

from tensorlab.exercises.catalog import BY_NAME, EXERCISES
from tensorlab.exercises.report import Report
from tensorlab.exercises.runner import NOT_CHECKED, handed_in_file, run
from tensorlab.exercises.student import NOT_GRADED, TENSORLAB, engine_files, snapshot

COLUMNS = ("student", "exercise", "status", "diagnosis", "seed")
STATUSES = ("passed", "failed", "not handed in", "tampered", "not graded")


def grade(folder, out, hints, time_limit):
    """Check every student's files, write out.csv and out.md; 0 when written, 1 when they cannot be written, 2 on a
    usage error, 130 on Ctrl-C or SIGTERM."""
    if not folder.is_dir():
        print(f"{folder}: no such folder. Give the folder that holds one folder per student.", file=sys.stderr)
        return 2
    if not time_limit > 0:
        print("grade needs a time limit per case: give --time-limit SECONDS above 0.", file=sys.stderr)
        return 2
    students = sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    names = [e.name for e in EXERCISES if any((student / f"{e.name}.py").is_file() for student in students)]
    if not names:
        print(
            f"{folder} has no student folder with an exercise file in it (alice/matmul.py, say): nothing to grade.",
            file=sys.stderr,
        )
        return 2
    handed_in = {  # read before any student's code runs
        (student.name, name): handed_in_file(student / f"{name}.py")
        for student in students
        for name in names
        if os.path.lexists(student / f"{name}.py")
    }
    watched = teachers_folders(folder, out)
    trusted = engine_files()
    rows = []
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)  # `kill`, or a check's code: as Ctrl-C
    try:
        for student in students:
            for name in names:
                source = handed_in.get((student.name, name))
                if source is not None and engine_files() != trusted:  # an earlier check changed them
                    rows.append(_row(student, name, "not graded", NOT_GRADED))
                else:
                    rows.append(row(student, name, source, hints, time_limit, watched))
    except KeyboardInterrupt as stop:
        why = "".join(f" {line}: if you did not stop it, its code did that too." for line in stop.args if line)
        print(
            f"Interrupted (Ctrl-C or SIGTERM) at {student.name}/{name}.py, after {len(rows)} of "
            f"{len(students) * len(names)} checks: no gradebook written (an earlier one is left as it was). Grade "
            f"again to grade them all.{why}",
            file=sys.stderr,
        )
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    table = grid(rows, names)
    paths = [out.with_name(out.name + end) for end in (".csv", "-grid.csv", ".md")]
    texts = [csv_text(rows, COLUMNS), csv_text(table, list(table[0])), markdown(rows, table, hints)]
    partials = [path.with_name(path.name + ".partial") for path in paths]
    try:  # all three written whole before any replaces an earlier gradebook's file
        out.parent.mkdir(parents=True, exist_ok=True)
        for partial, text in zip(partials, texts):
            partial.write_text(text, newline="")
        for partial, path in zip(partials, paths):
            os.replace(partial, path)
    except OSError as error:
        for partial in partials:
            with contextlib.suppress(OSError):
                partial.unlink()
        print(f"Could not write the gradebook {paths[0]} ({error}); an earlier one is left as it was.", file=sys.stderr)
        return 1
    print(f"Graded {len(students)} students on {len(names)} exercises ({', '.join(names)}): {summary(rows)}.")
    print(f"Gradebook: {paths[0]} (a row per check), {paths[1]} (a row per student, with the score) and {paths[2]}.")
    return 0


def summary(rows):
    """'3 of 5 files handed in passed; 4 not handed in; 0 tampered' (and '; 2 not graded', if any)."""
    count = {status: sum(r["status"] == status for r in rows) for status in STATUSES}
    handed_in = len(rows) - count["not handed in"]
    return (
        f"{count['passed']} of {handed_in} files handed in passed; {count['not handed in']} not handed in; "
        f"{count['tampered']} tampered" + (f"; {count['not graded']} not graded" if count["not graded"] else "")
    )


def grid(rows, names):
    """A row per student: the score (exercises passed), out of how many, then each exercise's status."""
    students = list(dict.fromkeys(r["student"] for r in rows))
    status = {(r["student"], r["exercise"]): r["status"] for r in rows}
    return [
        {
            "student": student,
            "score": sum(status[student, name] == "passed" for name in names),
            "out of": len(names),
            **{name: status[student, name] for name in names},
        }
        for student in students
    ]


def row(student, name, source, hints, time_limit, watched=()):
    """The gradebook row of one student's exercise, checked from `source` (None: not handed in; a str: why the file
    handed in is refused, handed_in_file)."""
    if source is None:
        return _row(student, name, "not handed in", f"there is no {name}.py in {student.name}/")
    if isinstance(source, str):
        return _row(student, name, "failed", source)
    report = Report(BY_NAME[name], student / f"{name}.py", hints, show=None)
    before = snapshot(watched)
    code = run(BY_NAME[name], student / f"{name}.py", time_limit, None, report, source=source)
    differ = sorted(set(before.items()) ^ set(snapshot(watched).items()))
    checks_folder = os.path.abspath(tempfile.gettempdir())  # its own entry changes as each check makes its folder there
    changed = [path for path in dict.fromkeys(p for p, _ in differ) if os.path.normpath(path) != checks_folder]
    tampered = (
        f"TAMPERED: while {name}.py was checked, {len(changed)} files or folders outside its own folder changed "
        f"({', '.join(changed[:3])}{', ...' if len(changed) > 3 else ''})"
    )
    if code == 130:  # Ctrl-C (or SIGINT sent by the code checked): no verdict, and the grading stops (grade)
        raise KeyboardInterrupt(tampered if changed else "")  # grade's one line says what the check's code changed
    if changed:
        return _row(
            student,
            name,
            "tampered",
            f"{tampered}: its result does not count. The other rows were checked from copies read before grading "
            f"began.",
        )
    if code == NOT_CHECKED:  # the checker could not run (a full disk): no verdict on the file
        return _row(student, name, "not graded", report.diagnosis())
    record = report.record(code)
    return _row(student, name, "passed" if record["passed"] else "failed", record["diagnosis"], record["seed"])


def teachers_folders(submissions, out):
    """The folders no check may change: the submissions, the gradebook's, the working folder, the teachers', the
    engine's and NumPy's (the student's process imports them from there)."""
    teachers = Path(__file__).resolve().parent
    folders = [submissions, out.parent, Path.cwd(), TENSORLAB, teachers, Path(np.__file__).parent]  # NumPy: shared
    folders = sorted({Path(os.path.abspath(f)) for f in folders if Path(f).is_dir()})
    return [f for f in folders if not any(f != g and f.is_relative_to(g) for g in folders)]


def _row(student, name, status, diagnosis, seed=None):
    seed = "" if seed is None else str(seed)
    return {"student": student.name, "exercise": name, "status": status, "diagnosis": diagnosis, "seed": seed}


def csv_text(rows, columns):
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=columns)
    writer.writeheader()
    writer.writerows(rows)
    return text.getvalue()


def markdown(rows, table, hints):
    """The gradebook in Markdown: the students' scores, then a row per check (a `|` in a diagnosis escaped)."""
    return (
        "\n".join(
            [f"# Gradebook ({summary(rows)}; hints: {hints})", "", "## Scores", "", *_table(table), "", "## Checks", ""]
            + _table(rows)
        )
        + "\n"
    )


def _table(rows):
    columns = list(rows[0])
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    return lines + ["| " + " | ".join(str(r[c]).replace("|", "\\|") for c in columns) + " |" for r in rows]
