"""Every docs page is also a notebook (python docs/make_notebooks.py): its code cells are the tested snippets.

The notebooks are built, not committed (docs/notebooks/ is ignored), so these tests build them
into a temporary folder and compare them with what tests/test_docs.py runs and checks.
"""

import importlib.util
import os
import re
import subprocess
import sys

import nbformat
import pytest
from test_docs import PAGES, ROOT, blocks, page_id

DOC_PAGES = [p for p in PAGES if p.parent == ROOT / "docs"]
CHECKOUT_TAG = "find-the-checkout"


def load_tool():
    spec = importlib.util.spec_from_file_location("make_notebooks", ROOT / "docs" / "make_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def notebooks(tmp_path_factory):
    out = tmp_path_factory.mktemp("notebooks")
    paths = load_tool().make_notebooks(out)
    return {p.stem: nbformat.read(str(p), as_version=4) for p in paths}, out


def snippets_run_by_test_docs(page):
    """(code, expected output or None) for each python block test_docs runs, in page order."""
    found, lines = blocks(page), page.read_text(encoding="utf-8").splitlines()
    snippets = []
    for k, block in enumerate(found):
        words = block.info.split()
        if not words or words[0] != "python" or "no-run" in words[1:]:
            continue
        following = found[k + 1] if k + 1 < len(found) else None
        shown = None
        if (
            following
            and following.info == "output"
            and not "".join(lines[block.closing : following.opening - 1]).strip()
        ):
            shown = following.code
        snippets.append((block.code, shown))
    return snippets


def test_one_notebook_per_docs_page(notebooks):
    built, _ = notebooks
    assert sorted(built) == sorted(p.stem for p in DOC_PAGES)
    for notebook in built.values():
        nbformat.validate(notebook)


@pytest.mark.parametrize("page", DOC_PAGES, ids=page_id)
def test_code_cells_are_exactly_the_tested_snippets(notebooks, page):
    built, _ = notebooks
    cells = [c for c in built[page.stem].cells if c.cell_type == "code"]
    assert CHECKOUT_TAG in cells[0].metadata["tags"]  # the first finds the checkout; the others are the page's
    cells = cells[1:]
    expected = snippets_run_by_test_docs(page)
    assert [c.source for c in cells] == [code for code, _ in expected]
    for cell, (_, shown) in zip(cells, expected):
        printed = "".join(o.text for o in cell.outputs if o.output_type == "stream")
        assert printed == ("" if shown is None else shown + "\n")
    # nothing lost: the prose and every other fenced block sit in the Markdown cells
    text = "\n".join(c.source for c in built[page.stem].cells if c.cell_type == "markdown")
    for block in blocks(page):
        if block.info.split()[:1] != ["python"] and block.info != "output":
            assert block.code in text


def test_relative_links_work_from_the_notebooks_folder(notebooks):
    built, out = notebooks
    broken = []
    for name, notebook in built.items():
        for cell in notebook.cells[1:]:  # the first cell links to the page it was made from
            if cell.cell_type != "markdown":
                continue
            for target in re.findall(r"\]\((?![a-z][a-z0-9+.-]*:|#)([^)\s]+)\)", cell.source):
                resolved = (out / target.split("#")[0]).resolve()
                if not resolved.exists():
                    broken.append(f"{name}: {target}")
                assert not (resolved.parent == ROOT / "docs" and resolved.suffix == ".md"), (
                    f"{name}: {target} should point at the page's notebook"
                )
    assert not broken, broken
    assert "(13-vector-jacobian-products.ipynb)" in "".join(c.source for c in built["README"].cells)


def test_the_command_builds_them_and_git_ignores_the_default_folder(tmp_path):
    result = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "make_notebooks.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.startswith(f"{len(DOC_PAGES)} notebooks in ")
    assert len(list(tmp_path.glob("*.ipynb"))) == len(DOC_PAGES)
    ignored = subprocess.run(["git", "check-ignore", "-q", "docs/notebooks/01-tensor-and-graph.ipynb"], cwd=ROOT)
    assert ignored.returncode == 0, "docs/notebooks/ should be in .gitignore: the notebooks are built, not kept"


def test_only_the_blocks_test_docs_runs_become_code_cells(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n```python\nx = 1\nprint(x)\n```\n\n```output\n1\n```\n\n"
        "```python no-run\nimport cupy\n```\n\nText.\n\n"
        "```output\nnot an output of the block above\n```\n\n"
        "1. In a list:\n\n   ```python\n   print(2)\n   ```\n\n```bash\nls\n```\n"
    )
    cells = load_tool().cells_of(page.read_text())
    assert [(kind, printed) for kind, _, printed in cells] == [
        ("markdown", None),
        ("code", "1"),
        ("markdown", None),
        ("code", None),
        ("markdown", None),
    ]
    assert [text for kind, text, _ in cells if kind == "code"] == [b for b, _ in snippets_run_by_test_docs(page)]
    assert "import cupy" in cells[2][1] and "not an output" in cells[2][1] and "ls" in cells[4][1]


def kernel_env():
    """The environment of `jupyter lab` started by someone who never set PYTHONPATH (figures drawn off screen)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["MPLBACKEND"] = "Agg"
    return env


def run_in_a_fresh_kernel(notebook, folder):
    """Run a notebook top to bottom as Jupyter does: a new kernel whose working directory is the notebook's folder.

    Returns the notebook with its outputs; raises CellExecutionError at the first cell that raises."""
    import nbclient

    client = nbclient.NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(folder)}}
    )
    return client.execute(env=kernel_env())  # env: handed to the kernel's process, this process's stays as it is


@pytest.mark.slow
@pytest.mark.parametrize("page", DOC_PAGES, ids=page_id)
def test_every_notebook_runs_top_to_bottom_twice_in_a_row(page, tmp_path):
    """The page's notebook built for a folder outside the checkout, then run top to bottom twice, each time in a
    fresh kernel started in that folder without PYTHONPATH, as `jupyter lab FOLDER` runs it. The second run meets
    whatever the first left in the folder (stubs, runs, figures); no other notebook has run there."""
    tool = load_tool()
    for run in (1, 2):
        notebook = tool.notebook_of(page, tmp_path)  # what make_notebooks writes, before any run
        try:
            run_in_a_fresh_kernel(notebook, tmp_path)
        except Exception as error:  # CellExecutionError names the cell and the traceback
            last_line = re.sub(r"\x1b\[[0-9;]*m", "", str(error).strip().splitlines()[-1])  # no colours
            pytest.fail(f"run {run}: {last_line[:300]}")
        errors = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
        assert not errors, f"run {run}: {errors[0].ename}: {errors[0].evalue}"  # none unless a cell allows errors


@pytest.mark.slow
def test_in_a_kernel_without_pythonpath_models_imports_only_thanks_to_the_first_cell(tmp_path):
    """The kernel of the notebook test sees neither PYTHONPATH nor the checkout: without the first cell `import
    models` fails there (so the test above proves the cell works); with it, models and tensorlab are the checkout's,
    and running the cell again adds nothing to sys.path."""
    probe = (
        "import os, sys\n"
        "print(os.getcwd())\n"
        "print(os.environ.get('PYTHONPATH'))\n"
        "import models, tensorlab\n"
        "print(os.path.dirname(os.path.dirname(models.__file__)))\n"
        "print(os.path.dirname(os.path.dirname(tensorlab.__file__)))\n"
        "print(len(sys.path))"
    )
    tool = load_tool()

    def printed(*cells):
        """Run "first" (the first cell) and "probe" cells in a fresh kernel: what the last one printed, by line."""
        made = {"first": lambda: tool.checkout_cell(tmp_path), "probe": lambda: nbformat.v4.new_code_cell(probe)}
        notebook = nbformat.v4.new_notebook(cells=[made[c]() for c in cells])
        run_in_a_fresh_kernel(notebook, tmp_path)
        return "".join(o.text for o in notebook.cells[-1].outputs if o.output_type == "stream").splitlines()

    nbclient = pytest.importorskip("nbclient")
    with pytest.raises(nbclient.exceptions.CellExecutionError, match="No module named 'models'"):
        printed("probe")
    cwd, pythonpath, models_root, tensorlab_root, entries = printed("first", "probe", "first", "probe")
    assert (cwd, pythonpath, models_root, tensorlab_root) == (str(tmp_path), "None", str(ROOT), str(ROOT))
    assert printed("first", "probe")[-1] == entries


def test_the_first_cell_finds_the_checkout_from_any_folder(tmp_path):
    """Built in one folder, run from another: the relative path fails, the recorded one holds."""
    cell = load_tool().checkout_cell(tmp_path / "a" / "b")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code = cell.source + "\nimport models, tensorlab\nprint(Path(models.__file__).resolve().parent.parent)"
    for cwd in (tmp_path / "a" / "b", elsewhere):
        cwd.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        done = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, env=env)
        assert done.returncode == 0 and done.stdout.strip() == str(ROOT), done.stderr
