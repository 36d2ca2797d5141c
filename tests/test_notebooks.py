"""Static checks of the chapters (cheap, no kernel).

This file is also the anchor of the nbval notebook tests: tests/conftest.py attaches to it one
collector that runs every chapters/*.py on the smoke profile, cell by cell
(``chapters/<stem>.py::Cell N`` items). ``pytest tests/test_notebooks.py`` runs both.
"""

from __future__ import annotations

import ast
import re

import pytest
from conftest import REPO, _load_build_book, book_root, chapter_sources

bb = _load_build_book()
CHAPTERS = chapter_sources()
IDS = [c.stem for c in CHAPTERS]


def test_toc_lists_every_chapter_and_the_scorecard():
    """The hand-written _toc.yml lists exactly chapters/*.py, in order, and the Scorecard page."""
    toc = book_root() / "_toc.yml"
    listed = bb.toc_stems(toc)
    expected = [c.stem for c in CHAPTERS]
    assert listed == expected, f"_toc.yml lists {listed} but chapters/ holds {expected}: edit _toc.yml"
    assert f"book/executed/{bb.SCORECARD}" in toc.read_text()
    intro = (book_root() / "book" / "intro.md").read_text()
    assert "executed/scorecard" in intro, "the landing page must link to the Scorecard page"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=IDS)
def test_chapter_parameters_cell(chapter):
    nb = bb.read_chapter(chapter)
    idx, cell = bb.parameters_cell(nb, chapter.name)
    defaults = bb.parameter_defaults(nb, chapter.name)
    for name in ("profile", "seed", "device"):
        assert name in defaults, f"{chapter.name}: the parameters cell must define `{name}`"
    assert defaults["profile"] in bb.PROFILES, (
        f"{chapter.name}: profile default {defaults['profile']!r} is not one of {bb.PROFILES}"
    )
    tree = ast.parse(cell.source)
    for node in tree.body:
        assert isinstance(node, (ast.Assign, ast.AnnAssign)), (
            f"{chapter.name}: the parameters cell should only assign literals (line {node.lineno})"
        )
        try:
            ast.literal_eval(node.value)
        except ValueError:
            pytest.fail(
                f"{chapter.name}: parameter on line {node.lineno} of the parameters cell "
                "is not a literal (papermill can only override literals)"
            )
    first_code = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    assert idx == first_code, f"{chapter.name}: the parameters cell must be the first code cell"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=IDS)
def test_chapter_title_and_hygiene(chapter):
    nb = bb.read_chapter(chapter)
    first = nb.cells[0]
    assert first.cell_type == "markdown" and first.source.lstrip().startswith("# "), (
        f"{chapter.name}: start with a markdown cell whose first line is the chapter title "
        "(`# %% [markdown]` then `# # Title`)"
    )
    h1 = [
        line for c in nb.cells if c.cell_type == "markdown" for line in c.source.splitlines() if re.match(r"#\s", line)
    ]
    assert len(h1) == 1, f"{chapter.name}: exactly one level-1 heading (the title); found {h1}"
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert not re.search(r"matplotlib\.use\(|\.use\(['\"]agg", code, re.I), (
        f"{chapter.name}: do not call matplotlib.use(...) in a chapter (the kernel then stores no PNG)"
    )


def test_readme_commands_exist():
    """The README's install/build/test commands point at files that exist."""
    readme = (REPO / "README.md").read_text()
    for needle in ("bash scripts/install.sh", "python scripts/build_book.py", "pytest"):
        assert needle in readme
    assert (REPO / "scripts" / "install.sh").exists() and (REPO / "scripts" / "build_book.py").exists()
