"""How much of each chapter's code is science: lines that compute, draw or print a paper quantity.

    python scripts/chapter_lines.py [chapters/03_linear_separability.py ...] [--max-share]

Counts the code lines of every code cell but the parameters cell (blank lines and comments
left out) and sorts them into *plumbing* and *science*. Plumbing is what a reader of the paper
does not need to see: imports, the chapter's ``setup(...)`` and ``ch.finish()``, writing a
figure's data file (``ch.figure_data``), settings read into a name (``x = ch.cfg[...]``), and
function or class definitions with their bodies, and any statement longer than three lines (data
wrangling, claims assembled from dicts of preconditions and settings: a paper quantity is one
short call). Every other line is science; a loop or condition's header is plumbing, its body is
counted the same way. Prints one row per chapter with its share of science lines, the longest
code line and whether the chapter defines functions; ``tests/test_layout.py`` holds the
chapters to at least 70%, 88 characters and none.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the longest statement that counts as science: a paper quantity is one short call
MAX_STATEMENT = 3
_SETTING = re.compile(r"^\s*[\w, ()]+=\s*(ch\.cfg|cfg|ch\.paper_cfg)\[[^\]]+\]\s*$")


def code_cells(path: Path) -> list[tuple[int, list[str]]]:
    """``(first line number, lines)`` of every code cell but the parameters cell."""
    cells, cur, start, kind = [], [], 0, None
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        if line.startswith("# %%"):
            if kind == "code":
                cells.append((start, cur))
            kind = "markdown" if "[markdown]" in line else "parameters" if '"parameters"' in line else "code"
            cur, start = [], n + 1
            continue
        if kind == "code":
            cur.append(line)
    if kind == "code":
        cells.append((start, cur))
    return cells


def _is_plumbing(node) -> bool:
    if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)):
        return True
    if isinstance(node, (ast.Expr, ast.Assign)):
        text = ast.unparse(node)
        return bool(
            re.match(r"^(\w+ = )?setup\(", text)
            or text.startswith(("ch.finish(", "ch.figure_data("))
            or _SETTING.match(text)
            or "lambda" in text
        )
    return False


def _classify(body) -> tuple[int, int]:
    """(science, plumbing) lines of a list of statements: a plumbing statement counts all its
    lines as plumbing; any other simple statement is science if it takes at most
    ``MAX_STATEMENT`` lines (a quantity computed, drawn or printed in one short call) and
    plumbing if longer (data wrangling, claim assembly); a compound statement's header is
    plumbing and its body is counted the same way."""
    science = plumbing = 0
    for node in body:
        lines = (node.end_lineno or node.lineno) - node.lineno + 1
        if _is_plumbing(node):
            plumbing += lines
        elif isinstance(node, (ast.For, ast.If, ast.With, ast.While, ast.Try)):
            inner = [*getattr(node, "body", []), *getattr(node, "orelse", []), *getattr(node, "finalbody", [])]
            s, p = _classify(inner)
            science, plumbing = (
                science + s,
                plumbing + p + (lines - sum((n.end_lineno or n.lineno) - n.lineno + 1 for n in inner)),
            )
        elif lines <= MAX_STATEMENT:
            science += lines
        else:
            plumbing += lines
    return science, plumbing


def count(path: Path) -> dict:
    science = plumbing = longest = 0
    defines = False
    for _, lines in code_cells(path):
        src = "\n".join(lines)
        longest = max([longest] + [len(x) for x in lines])
        defines |= bool(re.search(r"^\s*def |\blambda\b", src, re.M))
        try:
            tree = ast.parse(src)
        except SyntaxError:
            continue
        s, p = _classify(tree.body)
        science, plumbing = science + s, plumbing + p
    total = science + plumbing
    return {
        "chapter": Path(path).stem,
        "code lines": total,
        "science": science,
        "plumbing": plumbing,
        "science share": science / total if total else 1.0,
        "longest line": longest,
        "defines functions": defines,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", type=Path)
    a = ap.parse_args(argv)
    paths = a.paths or sorted((ROOT / "chapters").glob("[0-9][0-9]_*.py"))
    print("| chapter | code lines | science | plumbing | science share | longest line | defines functions |")
    print("|---|---|---|---|---|---|---|")
    for p in paths:
        r = count(p)
        print(
            f"| {r['chapter']} | {r['code lines']} | {r['science']} | {r['plumbing']} | {r['science share']:.0%} | "
            f"{r['longest line']} | {'yes' if r['defines functions'] else 'no'} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
