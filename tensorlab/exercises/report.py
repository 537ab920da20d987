"""What a check says, at a hint level, and the same as one JSON object.

The checkers write their report line by line (`out`): a line per case, `case 2/3  MatMul: ...: FAILED`
(or `ok`), the diagnosis of a failed case under it, indented, and a last line saying PASSED or
FAILED. `Report` takes those lines, keeps them by case, and shows them at one of three levels:

    fix    everything the checker says: the mistake, why, and the right formula or line of code
    name   each diagnosis cut before the part that gives the fix (see `named`); facts stay whole
           (which input, which elements, where the backward first goes wrong, the table of wrong
           elements, what the student's code raised)
    none   passed or failed, case by case, and nothing about why (for a file that cannot be
           checked at all, the first line of why)

`record` is the JSON form (`check --json`, read back by `grade`).
"""

import re

from tensorlab.exercises.child import WHY

LEVELS = ("none", "name", "fix")
INDENT = "    "
CASE_LINE = re.compile(r"^(?P<header>\S.*): (?P<result>ok|FAILED)$")
# A clause gives the fix, not the name of the mistake, when outside brackets it holds a formula or
# code (an equation, a transpose, a division, a power, a call, self. or np., a code span, "instead of"),
# states the right gradient ("the gradient is ...") or starts with an imperative ("divide by ...",
# "use self.r"): `named` stops before it.
FIX = re.compile(
    r" = |[+-]=|\^T|/|\*\*|\w\(|\bself\.|\bnp\.|\binstead of\b|`[^`]*[^\w`][^`]*`|^the gradient is\b"
    r"|^(add|apply|build|compute|divide|fix|give|keep|leave|make|multiply|put|return|start|subtract|sum|take|use|write)\b",
    re.IGNORECASE,
)
WHO = re.compile(rf"^('[^']+'(?: and '[^']+')*: |{WHY})")  # "'q' and 'k': ", the inputs a slip explains; "Why: "
NOTE = "Note: "  # a hint under the cases (keepdims ignored): named at `name`, left out at `none`
KEEPDIMS_NOTE = NOTE + (  # check.py's note that names the slip: a file that fails exactly where keepdims=True
    "your backward fails only with keepdims=True. Then gy already has the reduced axes, as size 1: put them "
    "back (np.expand_dims) only when self.keepdims is False."
)
FIX_ONLY = ("Changed that way, your gradient passes this case.",)  # says only that the fix works
FACTS = re.compile(  # what is wrong, no slip named: how many elements, a gradient's wrong shape, a constant
    # factor, a NaN, a gradient right only to 1e-8 or summed over other axes (their causes guesses), which pair
    # breaks an order or which nodes it leaves out (topo's), which step of the backward first goes wrong (where, not
    # what); names_the_slip leaves those to the search
    r"^(input '[^']+' (\(shape \([^)]*\)\): .*elements? (is|are) wrong|has shape .*, but your gradient for it has "
    r"shape )|Your gradient is -?[\d.]+(/\d+|e[+-]\d+)? times the right one|In your order |Your order leaves out "
    r"|Your gradient for '[^']+' (has (NaN|inf) |is close to the right one everywhere, but only to about |is summed "
    r"over )|Step by step against the reference: |Your g\w+ is right, so )"
)
SEED = re.compile(r"\bseed (?P<seed>\d+)\b")
FOUND, CHANGE = "The slip is on line ", "The change: "  # search.py's lines: the slip it found, and its fix


def named(text):
    """The part of a diagnosis that names the mistake, without the fix.

    A diagnosis says what is wrong first, then why, then how to fix it: its first clause is kept,
    then each clause (split at ': ', '; ' and '. ') until the first that gives the fix (FIX).
    Brackets and code spans are read as one piece. A line saying what the student's code raised
    is a fact, kept whole.
    """
    if " raised " in text:
        return text
    who = WHO.match(text)
    who = who.group() if who else ""
    clauses = _clauses(text[len(who) :])
    kept = clauses[0][1]
    for boundary, clause in clauses[1:]:
        if FIX.search(_outside_brackets(clause)):
            return who + kept.rstrip(".") + "."
        kept += boundary + clause
    return who + kept


def _outside_brackets(text):
    """text without what is inside (...), [...] and {...}, the brackets kept: an aside does not decide."""
    kept, depth = [], 0
    for char in text:
        depth -= char in ")]}"
        if depth <= 0:
            kept.append(char)
            depth = 0
        depth += char in "([{"
    return "".join(kept)


def _clauses(text):
    """[(boundary before, clause)]: text split at ': ', '; ' and '. ' outside brackets and backticks."""
    found, depth, code, start = [("", None)], 0, False, 0
    for i, char in enumerate(text):
        if char == "`":
            code = not code
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(depth - 1, 0)
        elif char in ":;." and text[i + 1 : i + 2] == " " and not depth and not code:
            found[-1] = (found[-1][0], text[start:i])
            found.append((char + " ", None))
            start = i + 2
    found[-1] = (found[-1][0], text[start:])
    return found


def specific(lines):
    """How precisely a failed case's lines say what is wrong: 2 a slip named, 1 only facts in numbers (FACTS),
    0 only that the code raised (no Why: line explains it) or that no slip fits."""
    text = " ".join(lines)
    if any(line.startswith(WHY) for line in lines):  # what the code raised, explained: the slip is named
        return 2
    if not lines or " raised " in text or "None of the usual slips fits" in text:
        return 0
    return 1 if all(FACTS.match(line) for line in lines) else 2


def detail(line, hints):
    """A line of a failed case's diagnosis as `hints` shows it; None: not shown."""
    if hints == "none" or (hints == "name" and (line in FIX_ONLY or line.startswith(CHANGE))):
        return None
    if hints == "name" and line and not line.startswith(INDENT):  # indented deeper: a table, the student's code
        return named(line)
    return line


class Case:
    def __init__(self, header, passed):
        self.header, self.passed, self.lines = header, passed, []


class Report:
    """The lines of one check, by case; `show` prints each line at the hint level as it comes."""

    def __init__(self, exercise, path, hints="fix", show=print):
        self.exercise, self.path, self.hints, self.show = exercise, path, hints, show
        self.cases, self.general, self.not_checked, self.found = [], [], [], []

    def __call__(self, line):
        """The checkers' `out`: one line of their report."""
        case = CASE_LINE.match(line)
        if case:
            self.cases.append(Case(case["header"], case["result"] == "ok"))
            self._show(line)
        elif self.cases and (line.startswith(INDENT) or not line) and not self.cases[-1].passed:
            self.cases[-1].lines.append(line[len(INDENT) :])
            self._show_detail(line[len(INDENT) :])
        elif line.startswith((FOUND, CHANGE)):
            self.found.append(line)
            self._show_detail(line)
        else:
            self.general.append(line)
            if not line.startswith(NOTE) or self.hints == "fix":
                self._show(line)
            elif self.hints == "name":
                self._show(named(line))

    def stopped(self, line):
        """The one line the run ended with: a case past its time limit (that case failed), or Ctrl-C."""
        header, stopped, why = line.partition(": STOPPED: ")
        if stopped:
            self.cases.append(Case(header, False))
            self.cases[-1].lines.append(f"STOPPED: {why}")
        else:
            self.general.append(line)
        self._show(line)

    def cannot_check(self, lines, verdict="FAILED: the file could not be checked."):
        """The file could not be checked at all (a syntax error, nothing written yet): lines say why."""
        self.not_checked = list(lines)
        for line in lines if self.hints != "none" else lines[:1]:
            self._show(line)
        self._show(verdict)

    def _show_detail(self, line):
        line = detail(line, self.hints)
        if line is not None:
            self._show(INDENT + line if line else "")

    def _show(self, line):
        if self.show is not None:
            self.show(line)

    def diagnosis(self):
        """One line for a gradebook: the most specific failed case (`specific`; the first of them) and what is wrong
        there, at the hint level ('' passed)."""
        if self.not_checked:
            return " ".join(self.not_checked if self.hints != "none" else self.not_checked[:1])
        failed = [case for case in self.cases if not case.passed]
        if not failed:
            return ""
        if self.hints == "none":
            return f"{failed[0].header}: failed"
        explained = [_explained(case) for case in failed]
        lines, case = max(zip(explained, failed), key=lambda pair: specific(pair[0]))  # the first of the most specific
        said = f"{case.header}: " + " ".join(line.strip() for line in self._detail(lines))
        return " ".join([said, *self._detail(self.found)])  # and the slip the search found (search.py)

    def names_the_slip(self):
        """True when the check says what the slip is: every failed case names it (`specific`, its table aside; a
        Why: line explaining what the code raised), the cases fail exactly where keepdims=True, or the search found
        the one edit that fixes the file. A slip named in one case while another has only facts or nothing that
        explains it (a sum that fixes one case's shape, while another raised) is what that case shows, not yet the
        slip of the file."""
        levels = {specific(_explained(case)) for case in self.cases if not case.passed}
        return bool(self.found) or KEEPDIMS_NOTE in self.general or levels == {2}

    def record(self, code):
        """The check as one JSON-ready dict; `code` is its exit code."""
        seeds = [match["seed"] for line in self.general for match in [SEED.search(line)] if match]
        return {
            "exercise": self.exercise.name,
            "file": str(self.path),
            "passed": code == 0,
            "exit_code": code,
            "hints": self.hints,
            "seed": int(seeds[0]) if seeds else None,
            "diagnosis": self.diagnosis(),
            "cases": [
                {"case": case.header, "passed": case.passed, "lines": self._detail(case.lines)} for case in self.cases
            ],
        }

    def _detail(self, lines):
        return [shown for shown in (detail(line, self.hints) for line in lines) if shown is not None]


def _explained(case):
    """A failed case's lines up to its table of elements."""
    return case.lines[: case.lines.index("")] if "" in case.lines else case.lines
