"""Finding a slip nobody wrote down: the one-change edit of the student's file that makes it pass.

When a file fails and the check does not name its slip (report.Report.names_the_slip), `found(...)` tries the
edits of edits.py on the student's functions (with the engine's formulas, tensorlab/ops/ and optim/, as
ingredients: a term or an axis a file lost whole), most likely first (at most MOST), each as a quick check
(Student.quick: pass or fail, no diagnosis) in one process of the student's, on the check's
inputs and on a second draw. The first edit that passes both is the slip: its line and its kind
are named, and at hints=fix the change itself. A file with two slips, or a slip no one edit
undoes, gets nothing from here: the cases' own diagnosis stands.
"""

import ast
import functools
import re
from pathlib import Path

from tensorlab.exercises.check import check
from tensorlab.exercises.edits import distinct, edits, ingredients, unread
from tensorlab.exercises.gradient import Case
from tensorlab.exercises.report import CHANGE, FOUND
from tensorlab.exercises.student import TENSORLAB, Stopped, Student, StudentError, Wrong

MOST = 1000  # edits tried at most, in the order of _rank (a count, not a time: the same on every machine)
EACH = 2.0  # seconds of the student's code per edited file (an edit can make a loop endless)
GIVEN = {"forward", "__init__"}  # what a gradient exercise's stub gives: not the student's to get wrong
KINDS = [  # (words in an edit's description, what kind of slip it undoes), the first that fits
    ("the variable", "a variable (another one belongs there)"),
    ("the saved value put in", "a value worked out again where the one forward saved belongs"),
    ("a term dropped", "a term that does not belong there"),
    ("a power dropped", "a power that does not belong there"),
    ("a term added", "a term left out"),
    ("a term put back", "a term left out"),
    ("returned values", "the order of the returned values"),
    ("np.add.at", "repeated indices, which must add up"),
    ("minus sign", "a sign"),
    (".T -> ", "a transpose: .T reverses every axis, and a batch of matrices turns with .swapaxes(-1, -2)"),
    ("chained comparison", "a comparison chained (a <= x <= b), which asks an array for one True or False"),
    ("transpose", "a transpose"),
    ("swapaxes", "a transpose"),
    (
        "max subtracted",
        "exp of a large value, which overflows: subtract each row's max first (softmax does not change)",
    ),
    ("in place", "an array changed in place (x *= v) while another name still holds it"),
    ("out= dropped", "an array overwritten in place (out=) while it is still needed"),
    ("axis=", "an axis"),
    ("keepdims", "keepdims"),
    ("axis", "an axis"),
    ("constant", "a constant"),
    ("condition", "a condition"),
    ("if -> while", "an `if` where a loop belongs (it runs once)"),
    ("while -> if", "a loop where an `if` belongs"),
    ("statement", "a statement that does not belong there"),
    ("self.", "a saved value (another one belongs there)"),
    ("pop(", "the end of the stack a node is taken from"),
    ("= for", "= and +="),
    (" -> >", "a comparison at ties"),
    (" -> <", "a comparison at ties"),
    (" -> =", "a comparison"),
    (" -> !", "a comparison"),
    (" -> in", "a comparison"),
    (" -> not", "a comparison"),
    ("a product swapped", "a product (another kind of product belongs there)"),
    ("np.", "a function applied (or not)"),
    ("sum", "a reduction"),
    ("mean", "a reduction"),
    ("max", "a reduction"),
    ("min", "a reduction"),
    ("(...) dropped", "a function applied (or not)"),
    (" -> ", "an operator"),
    ("= dropped", "an argument that does not belong there"),
    ("", "a change"),  # every edit has a kind: one edits.py makes later and no row names is said so, never raises
]


def found(exercise, path, source, seed, first=()):
    """The lines naming the slip (FOUND, CHANGE), or [] when no one edit makes the file pass in time; the case
    numbers in `first` (those the file failed) are tried first on each edit."""
    try:
        tried = edits(source, students_part(exercise), ingredients(source, _engine_sources()))
    except SyntaxError:
        return []
    unused, lines = tuple(f" {name}" for name in unread(ast.parse(source))), source.splitlines()
    tried = distinct(sorted(tried, key=lambda edit: _rank(edit[1], unused, lines[edit[0] - 1])))
    student = None
    try:
        for line, what, text in tried[:MOST]:
            if student is None or student.ended:
                if student is not None:
                    student.__exit__(None, None, None)
                student = Student(path, text).__enter__()
                student.quick = True
            if all(_passes(exercise, student, text, each, first) for each in (seed, seed + 1)):
                return _lines(Path(path).name, line, what, source)
    finally:
        if student is not None:
            student.__exit__(None, None, None)
    return []


def students_part(exercise):
    """Which functions of a file are the student's to get wrong: all, but the stub's given forward and __init__."""
    given = GIVEN if all(isinstance(c, Case) and not c.forward_is_yours for c in exercise.cases) else set()
    return lambda function: function.name not in given


@functools.cache
def _engine_sources():
    """The text of the engine's formulas (tensorlab/ops/, tensorlab/optim/): where a term a file lost may be found."""
    return tuple(path.read_text() for folder in ("ops", "optim") for path in sorted((TENSORLAB / folder).glob("*.py")))


def _passes(exercise, student, text, seed, first):
    student.source = text
    try:
        return check(exercise, student, out=lambda line: None, time_limit=EACH, seed=seed, first=first)
    except (Wrong, StudentError, Stopped):
        return False


def _rank(what, unused, line):
    """A value the file made (or was given) and never read, put back as a term, first (`unused`: edits.unread);
    then swaps, flips and changed arguments; terms and functions dropped where they are used, a value worked out
    again replaced by the one saved; statements dropped; a term the edited line reads elsewhere; whole functions
    and reductions added, terms put back from the engine's formulas; the file's other names as terms, last."""
    if what.startswith("a term added"):
        term = what.rsplit(" ", 1)[1]
        return 0 if what.endswith(unused) else 3 if re.search(rf"(?<![\w.]){re.escape(term)}(?!\w)", line) else 5
    if what.startswith("a statement dropped") or what == "if -> while":  # a while that never ends costs EACH
        return 2
    if "added to" in what or what.startswith("a term put back"):
        return 4
    return 1 if "added around" in what or "dropped" in what or what.startswith(("the variable", "the saved")) else 0


def _kind(what):
    """The kind of slip an edit undoes, read from its description before the code it quotes."""
    head, *rest = re.split(r"( added to | added around |: )", what, maxsplit=1)
    if rest and rest[0] == " added to " and head.startswith("."):  # `.sum(...) added to gy`: a reduction or a copy
        return "a copy" if head == ".copy()" else "a reduction left out"
    return next(words for key, words in KINDS if key in head)


def _lines(name, line, what, source):
    kind = _kind(what)
    code = source.splitlines()[line - 1].strip()
    return [
        f"{FOUND}{line} of {name}: {kind} (found by trying one-change edits of your "
        f"file: this one makes every case pass).",
        f"{CHANGE}{what}, in `{code}`.",
    ]
