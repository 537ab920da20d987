"""The docs stay true: their code runs, their links resolve, their line anchors point at what they name.

Checked in docs/*.md and README.md:

1. Every ```python block runs. The blocks of one page run in order, in one namespace, in a
   temporary working directory (files they write land there). A block fenced ```python no-run
   is skipped; use that sparingly, never for a derivation. A block fenced ```output right
   after a python block must equal what that block printed (trailing spaces ignored).
2. Every relative link target exists (a file or a folder).
3. Every link into a .py file with a line anchor (#L12 or #L12-L20) names the symbol it points
   at, in backticks in the link text, and its lines are exactly that symbol's definition, from
   its `def`/`class` line (or first decorator) to its last line:

       [`Softmax.backward`, tensorlab/ops/softmax.py lines 36-39](../tensorlab/ops/softmax.py#L36-L39)

   If the link text says "lines A-B" as well, A-B must match the anchor. When code moves,
   `python tests/test_docs.py --fix-anchors` rewrites every such range (and its "lines A-B")
   to the symbol's current lines; read the diff, and the prose around it, before committing.
"""

import ast
import contextlib
import io
import re
import sys
import textwrap
from collections import namedtuple
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]

FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
LINK = re.compile(r"(?<!!)\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]+)\)|!\[[^\]]*\]\((?P<image>[^)\s]+)\)")
LINE_ANCHOR = re.compile(r"^L(?P<start>\d+)(?:-L(?P<end>\d+))?$")
SYMBOL = re.compile(r"`(?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)`")
LINES_TEXT = re.compile(r"\blines? (?P<start>\d+)(?:-(?P<end>\d+))?")


def page_id(path):
    return str(path.relative_to(ROOT))


# ----- reading Markdown -------------------------------------------------------------------------
Block = namedtuple("Block", "info opening closing code")  # the fence lines (1-based) and the dedented code


def blocks(path):
    """Every fenced block of the page, in order."""
    found, lines = [], path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        fence, info, start = opening["fence"], opening["info"].strip(), i
        i += 1
        while i < len(lines) and not _closes(lines[i], fence):
            i += 1
        found.append(Block(info, start + 1, i + 1, textwrap.dedent("\n".join(lines[start + 1 : i]))))
        i += 1
    return found


def _closes(line, fence):
    stripped = line.strip()
    return stripped.startswith(fence) and stripped.strip(fence[0]) == ""


def prose_lines(path):
    """(line number, text) for every line outside fenced blocks, where links live."""
    inside, fence = False, ""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        opening = FENCE.match(line)
        if opening and not inside:
            inside, fence = True, opening["fence"]
            continue
        if inside:
            if _closes(line, fence):
                inside = False
            continue
        yield number, line


def links(path):
    """(line number, link text, target) for every Markdown link and image outside code."""
    for number, line in prose_lines(path):
        without_code = re.sub(r"``[^`]*``|`[^`]*`", lambda m: m.group(0) if "](" not in m.group(0) else "", line)
        for match in LINK.finditer(without_code):
            yield number, match["text"] or "", match["target"] or match["image"]


def is_external(target):
    return re.match(r"^[a-z][a-z0-9+.-]*:", target) is not None or target.startswith("#")


# ----- Python symbols ---------------------------------------------------------------------------
def symbol_lines(py_path, dotted):
    """(first line, last line) of the class or function `dotted` ("Softmax.backward") in py_path, or None."""
    scope = ast.parse(py_path.read_text(encoding="utf-8"))
    node = None
    for part in dotted.split("."):
        children = [
            n
            for n in ast.iter_child_nodes(scope)
            if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == part
        ]
        if not children:
            return None
        node = scope = children[-1]
    start = min([node.lineno] + [d.lineno for d in node.decorator_list])
    return start, node.end_lineno


def anchored_links(path):
    """(line number, text, file path, start, end) for every link into a .py file with a line anchor."""
    for number, text, target in links(path):
        if is_external(target) or "#" not in target:
            continue
        file_part, anchor = target.split("#", 1)
        match = LINE_ANCHOR.match(anchor)
        if file_part.endswith(".py") and match:
            start = int(match["start"])
            end = int(match["end"] or start)
            yield number, text, (path.parent / file_part).resolve(), start, end


# ----- the tests --------------------------------------------------------------------------------
@pytest.fixture
def tensorlab_rng_restored():
    """The snippets seed and draw from tensorlab's generators; put them back as they were for other tests."""
    from tensorlab import random as tl_random

    state = tl_random.get_state()  # the seed, the CPU stream and the GPU draw counts
    yield
    tl_random.set_state(state)


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_python_blocks_run(page, tmp_path, monkeypatch, tensorlab_rng_restored):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.syspath_prepend(str(ROOT))
    namespace = {"__name__": "__docs__"}
    found = blocks(page)
    lines = page.read_text(encoding="utf-8").splitlines()
    for k, block in enumerate(found):
        words = block.info.split()
        if not words or words[0] != "python" or "no-run" in words[1:]:
            continue
        printed = io.StringIO()
        where = f"{page_id(page)}, the python block at line {block.opening}"
        source = "\n" * block.opening + block.code  # so tracebacks give the page's line numbers
        try:
            with contextlib.redirect_stdout(printed):
                exec(compile(source, str(page), "exec"), namespace)
        except Exception as error:
            raise AssertionError(f"{where} raised {type(error).__name__}: {error}") from error
        following = found[k + 1] if k + 1 < len(found) else None
        if (
            following
            and following.info == "output"
            and not "".join(lines[block.closing : following.opening - 1]).strip()
        ):
            shown = [s.rstrip() for s in following.code.rstrip().splitlines()]
            actual = [s.rstrip() for s in printed.getvalue().rstrip().splitlines()]
            assert actual == shown, (
                f"{where} printed something else than the ```output block below it "
                f"shows.\nprinted:\n" + "\n".join(actual) + "\nshown:\n" + "\n".join(shown)
            )


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_relative_links_exist(page):
    missing = []
    for number, _text, target in links(page):
        if is_external(target):
            continue
        file_part = target.split("#", 1)[0]
        if file_part and not (page.parent / file_part).exists():
            missing.append(f"line {number}: {target}")
    assert not missing, f"{page_id(page)} links to files that do not exist:\n" + "\n".join(missing)


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_line_anchors_point_at_the_named_symbol(page):
    problems = []
    for number, text, py_path, start, end in anchored_links(page):
        where = f"line {number} ({text!r})"
        names = SYMBOL.findall(text)
        if not names:
            problems.append(f"{where}: name the symbol in backticks in the link text, e.g. `Softmax.backward`")
            continue
        if not py_path.exists():
            problems.append(f"{where}: {py_path} does not exist")
            continue
        span = next((s for s in (symbol_lines(py_path, n) for n in names) if s), None)
        if span is None:
            problems.append(f"{where}: no class or function {' or '.join(names)} in {py_path.relative_to(ROOT)}")
        elif (start, end) != span:
            problems.append(
                f"{where}: anchor L{start}-L{end}, but {names[0]} is at lines {span[0]}-{span[1]} "
                f"(python tests/test_docs.py --fix-anchors)"
            )
        said = LINES_TEXT.search(text)
        if said and (int(said["start"]), int(said["end"] or said["start"])) != (start, end):
            problems.append(f"{where}: the text says lines {said.group(0)[6:]}, the anchor L{start}-L{end}")
    assert not problems, f"{page_id(page)}:\n" + "\n".join(problems)


def test_the_docs_have_pages():
    assert len(PAGES) > 1, "docs/ has no Markdown pages"


# ----- keeping anchors current ------------------------------------------------------------------
def fix_anchors(path):
    """Rewrite each symbol-naming line anchor in `path` to the symbol's current lines; return how many changed."""
    text, changed = path.read_text(encoding="utf-8"), 0

    def rewrite(match):
        nonlocal changed
        link_text, target = match["text"], match["target"]
        if link_text is None or "#" not in target:
            return match.group(0)
        file_part, anchor = target.split("#", 1)
        names = SYMBOL.findall(link_text)
        py_path = (path.parent / file_part).resolve()
        if not (file_part.endswith(".py") and LINE_ANCHOR.match(anchor) and names and py_path.exists()):
            return match.group(0)
        span = next((s for s in (symbol_lines(py_path, n) for n in names) if s), None)
        if span is None:
            return match.group(0)
        new_anchor = f"L{span[0]}-L{span[1]}" if span[1] != span[0] else f"L{span[0]}"
        new_lines = f"lines {span[0]}-{span[1]}" if span[1] != span[0] else f"line {span[0]}"
        new_text = LINES_TEXT.sub(new_lines, link_text)
        replacement = f"[{new_text}]({file_part}#{new_anchor})"
        changed += replacement != match.group(0)
        return replacement

    path.write_text(LINK.sub(rewrite, text), encoding="utf-8")
    return changed


if __name__ == "__main__":
    if sys.argv[1:] != ["--fix-anchors"]:
        sys.exit("usage: python tests/test_docs.py --fix-anchors   (or run it with pytest)")
    for page in PAGES:
        count = fix_anchors(page)
        if count:
            print(f"{page_id(page)}: {count} anchor(s) updated")
