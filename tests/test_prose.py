"""A chapter's prose states no outcome it did not compute.

Outcomes ("reproduces", "confirms", "as in the paper", "behaves as", ...) belong in generated text:
a claim's verdict line, ``ch.verdict_summary``, or a cell that prints from the computed values.
The markdown cells of ``chapters/*.py`` are written before any run, so they may not contain them;
the allow-list holds the few sentences that are about exact theory, definitions or layout, each
with the reason it is not an empirical outcome.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((REPO / "chapters").glob("[0-9][0-9]_*.py"))

OUTCOME = re.compile(
    r"\b(reproduc(?:e|es|ed|ing)|confirm(?:s|ed|ing)?|as in the paper|as the paper (?:found|"
    r"reports|says)|behaves? as|matches the paper|agrees? with the paper|verif(?:y|ies|ied))\b",
    re.IGNORECASE,
)

#: (chapter prefix, text the sentence contains): why it is not an empirical outcome
ALLOWED = {
    ("01", "The figure reproduces the paper's Fig. 4a"): "Theorem 1 evaluated in closed form (exact theory)",
    ("03", "As in the paper's Fig. 1, we lay out"): "the grid's layout, not a result",
    ("04", "with their checksum verified"): "a data-integrity check that raises on failure",
    ("04", "Each claim is reproduced only when"): "the definition of a verdict",
    ("05", "What counts as reproduced"): "the definition of a verdict",
    ("05", "as in the paper's Fig. 2a: with both channels"): "the panels' layout, not a result",
}


def markdown_lines(path: Path):
    """(line number, text) of every line of the chapter's markdown cells (jupytext percent format)."""
    in_md = False
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.startswith("# %%"):
            in_md = "[markdown]" in line
            continue
        if in_md:
            yield n, line.lstrip("# ").rstrip()


def outcome_words(path: Path) -> list[str]:
    prefix = path.name[:2]
    lines = list(markdown_lines(path))
    found = []
    for i, (n, text) in enumerate(lines):
        for m in OUTCOME.finditer(text):
            # a sentence may wrap: look at the line with its neighbours
            context = " ".join(t for _, t in lines[max(0, i - 1) : i + 2])
            if any(p == prefix and snippet in context for (p, snippet) in ALLOWED):
                continue
            found.append(f"{path.name}:{n}: {m.group(0)!r} in {text!r}")
    return found


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_no_outcome_words_outside_generated_cells(path):
    found = outcome_words(path)
    assert not found, (
        "a markdown cell states an outcome; generate the sentence from the computed value or "
        "verdict instead (or, for exact theory, add it to ALLOWED with the reason):\n" + "\n".join(found)
    )


def test_the_check_catches_an_outcome(tmp_path):
    ch = tmp_path / "09_example.py"
    ch.write_text(
        "# %% [markdown]\n# Both experiments behave as published.\n# This confirms it.\n\n"
        "# %%\nprint('as in the paper')\n"
    )
    found = outcome_words(ch)
    assert len(found) == 2 and ":2:" in found[0] and ":3:" in found[1]  # markdown only; code is free


INCLUDE = re.compile(r"```\{literalinclude\} \.\./\.\./(\S+)\n# :pyobject: (\S+)")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_the_code_on_the_page_exists(path):
    """Every function a chapter shows (``literalinclude :pyobject:``) is in the file it names, and
    chapters 2-5 each show at least three of the functions that compute their figures."""
    shown = INCLUDE.findall(path.read_text())
    for file, obj in shown:
        source = (REPO / file).read_text()
        *owner, name = obj.split(".")
        assert re.search(rf"^\s*(?:def|class) {re.escape(name)}\b", source, re.M), f"{path.stem}: {obj} not in {file}"
        if owner:
            assert re.search(rf"^class {re.escape(owner[0])}\b", source, re.M), f"{path.stem}: {obj} not in {file}"
    if path.stem[:2] in ("02", "03", "04", "05"):
        assert len(shown) >= 3, f"{path.stem} shows {len(shown)} functions of nadcore; the page should show three"
