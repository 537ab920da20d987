"""Make a Jupyter notebook of every docs page: python docs/make_notebooks.py [OUT_DIR]

The Markdown pages stay the source of truth; the notebooks are built from them, not kept in
git (docs/notebooks/ is ignored), so there is nothing to keep in step by hand. Each page
becomes one notebook in OUT_DIR (default docs/notebooks/):

- every ```python block (the ones tests/test_docs.py runs) becomes a code cell, word for word,
  and the ```output block under it becomes that cell's printed output, so a notebook opened
  without running shows what the page shows;
- everything else (prose, maths, ```python no-run and other fenced blocks) becomes Markdown
  cells; relative links are rewritten to work from OUT_DIR, and links to other pages point at
  their notebooks;
- a first code cell, before the page's, puts the checkout on sys.path (see checkout_cell), so
  `jupyter lab OUT_DIR` needs no PYTHONPATH for the pages that import models/.

Needs nbformat (pip install -e ".[docs]").
"""

import os
import re
import sys
import textwrap
from pathlib import Path

import nbformat

DOCS = Path(__file__).resolve().parent
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")
RELATIVE_LINK = re.compile(r"(\]\()(?![a-z][a-z0-9+.-]*:|#)([^)\s]+)(\))")


def cells_of(text):
    """[(kind, source, printed)] for a page: kind 'code' or 'markdown'; printed is the output block or None."""
    cells, prose, lines, i = [], [], text.splitlines(), 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            prose.append(lines[i])
            i += 1
            continue
        fence, info, start = opening[2], opening[3].strip(), i
        i += 1
        while i < len(lines) and not (lines[i].strip().startswith(fence) and not lines[i].strip().strip(fence[0])):
            i += 1
        body, raw = textwrap.dedent("\n".join(lines[start + 1 : i])), lines[start : i + 1]
        i += 1
        words = info.split()
        if words[:1] == ["python"] and "no-run" not in words[1:]:
            _flush(prose, cells)
            cells.append(["code", body, None])
        elif info == "output" and cells and cells[-1][0] == "code" and cells[-1][2] is None and not prose_since(prose):
            prose.clear()
            cells[-1][2] = body
        else:
            prose.extend(raw)
    _flush(prose, cells)
    return [tuple(cell) for cell in cells]


def prose_since(prose):
    return any(line.strip() for line in prose)


def _flush(prose, cells):
    text = "\n".join(prose).strip("\n")
    if text.strip():
        cells.append(["markdown", text, None])
    prose.clear()


def relink(markdown, page_dir, out_dir):
    """Rewrite relative links of a page in `page_dir` so they work from `out_dir`; pages become notebooks."""

    def rewrite(match):
        target = match[2]
        path, _, anchor = target.partition("#")
        if not path:
            return match[0]
        resolved = (page_dir / path).resolve()
        if resolved.parent == DOCS and resolved.suffix == ".md":
            resolved = out_dir / (resolved.stem + ".ipynb")
            anchor = ""
        new = Path(os.path.relpath(resolved, out_dir)).as_posix() + (f"#{anchor}" if anchor else "")
        return f"{match[1]}{new}{match[3]}"

    return RELATIVE_LINK.sub(rewrite, markdown)


def notebook_of(page, out_dir):
    """The notebook (an nbformat NotebookNode) for one docs page."""
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.metadata["language_info"] = {"name": "python"}
    source, link = Path(page).relative_to(DOCS.parent).as_posix(), Path(os.path.relpath(page, out_dir)).as_posix()
    notebook.cells.append(
        nbformat.v4.new_markdown_cell(
            f"*Made from [{source}]({link}) by `python docs/make_notebooks.py`: edit the page, not this notebook. "
            f"The first code cell finds the checkout, so `import tensorlab` and `import models` work however "
            f"Jupyter was started.*"
        )
    )
    notebook.cells.append(checkout_cell(out_dir))
    for kind, text, printed in cells_of(Path(page).read_text(encoding="utf-8")):
        if kind == "code":
            cell = nbformat.v4.new_code_cell(text)
            if printed is not None:
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed + "\n")]
            notebook.cells.append(cell)
        else:
            notebook.cells.append(nbformat.v4.new_markdown_cell(relink(text, Path(page).parent, out_dir)))
    return notebook


CHECKOUT_TAG = "find-the-checkout"  # the metadata tag of the first code cell, which no page holds


def checkout_cell(out_dir):
    """The code cell that puts the checkout on sys.path: relative to the notebook's folder (Jupyter's working
    directory), so the checkout and its notebooks can move together; else where it was when they were built."""
    relative = Path(os.path.relpath(DOCS.parent, out_dir)).as_posix()
    source = (
        "# Find the checkout these notebooks were made from: tensorlab/ and models/ are imported from it.\n"
        "# Jupyter runs a notebook in the notebook's folder: the first path is the checkout relative to it (so\n"
        "# the two can move together), the second where the checkout was when the notebooks were built.\n"
        "import sys\n"
        "from pathlib import Path\n"
        "\n"
        f"for checkout in (Path.cwd() / {relative!r}, Path({DOCS.parent.as_posix()!r})):\n"
        '    if (checkout / "models").is_dir() and (checkout / "tensorlab").is_dir():\n'
        "        if str(checkout.resolve()) not in sys.path:  # once, however often the cell runs\n"
        "            sys.path.insert(0, str(checkout.resolve()))\n"
        "        break\n"
        "else:\n"
        '    print("the checkout was not found: run `python docs/make_notebooks.py` in it again")'
    )
    return nbformat.v4.new_code_cell(source, metadata={"tags": [CHECKOUT_TAG]})


def make_notebooks(out_dir=DOCS / "notebooks"):
    """Write one notebook per docs/*.md page into out_dir; returns their paths."""
    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for page in sorted(DOCS.glob("*.md")):
        notebook = notebook_of(page, out_dir)
        nbformat.validate(notebook)
        path = out_dir / (page.stem + ".ipynb")
        nbformat.write(notebook, str(path))
        written.append(path)
    return written


if __name__ == "__main__":
    if len(sys.argv) > 2 or sys.argv[1:2] in (["-h"], ["--help"]):
        sys.exit(__doc__)
    paths = make_notebooks(*sys.argv[1:])
    print(f"{len(paths)} notebooks in {paths[0].parent}; open them with `jupyter lab {paths[0].parent}`")
