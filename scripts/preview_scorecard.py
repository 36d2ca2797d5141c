#!/usr/bin/env python
"""Render the Scorecard page alone, from a scorecard JSON, without executing any chapter.

    python scripts/preview_scorecard.py                                   # tests/fixtures/scorecard.json
    python scripts/preview_scorecard.py book/executed/scorecard.json --out /tmp/card
    python scripts/preview_scorecard.py --missing "Fig. 6: ResNet-18" --missing "Fig. 7: ResNet-18"

Writes a minimal book into ``--out`` (default ``_build/scorecard-preview``): this repository's
``_config.yml`` and ``book/`` pages, one stub page per chapter that holds the ``(claim-<id>)=``
labels the scorecard links to (each with the claim's verdict line), and the Scorecard page
written by :func:`nadcore.book.scorecard.write_page`; then builds it with ``jupyter-book build -W``
(seconds) and prints where ``scorecard.html`` is. tests/test_browser.py uses it to check the page
in a browser without the smoke book.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nadcore.book import build  # noqa: E402
from nadcore.book.scorecard import write_page  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "scorecard.json"


def stub_chapter(path: Path, stem: str, claims: list[dict]) -> None:
    """A notebook with the chapter's title and one labelled verdict line per claim."""
    import nbformat

    title = stem.split("_", 1)[-1].replace("_", " ").capitalize()
    cells = [
        nbformat.v4.new_markdown_cell(
            f"# {title} (preview stub)\n\nThe chapter as the scorecard links to it: only its claims' verdict lines."
        )
    ]
    for c in claims:
        cells.append(
            nbformat.v4.new_markdown_cell(f"(claim-{c['id']})=\n**{c.get('verdict', 'inconclusive')}** - {c['id']}")
        )
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(path))


def build_preview(
    card_path: Path = FIXTURE, out: Path = ROOT / "_build" / "scorecard-preview", coverage=None, quiet: bool = False
) -> tuple[Path, int]:
    """(the built ``scorecard.html``, jupyter-book's exit status); ``coverage``: (have, missing)
    lines of the section on the papers' networks."""

    out = Path(out).resolve()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    shutil.copy2(ROOT / "_config.yml", out / "_config.yml")
    shutil.copytree(ROOT / "book", out / "book", ignore=shutil.ignore_patterns("executed", "static"))
    (out / "book" / "static").symlink_to(ROOT / "book" / "static", target_is_directory=True)
    executed = out / "book" / "executed"
    executed.mkdir()
    card = json.loads(Path(card_path).read_text())
    stems = list(dict.fromkeys(c["chapter"] for c in card["claims"]))
    for stem in stems:
        stub_chapter(executed / f"{stem}.ipynb", stem, [c for c in card["claims"] if c["chapter"] == stem])
    (executed / "scorecard.json").write_text(json.dumps(card, indent=1))
    write_page(card, executed, build.SCORECARD, profile="preview", coverage=coverage)
    toc = out / "_toc.yml"
    toc.write_text(build.toc_text(stems))
    if quiet:
        import contextlib
        import os

        with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
            rc = subprocess.call(
                [
                    sys.executable,
                    "-c",
                    "import sys; from jupyter_book.cli.main import main; sys.exit(main())",
                    "build",
                    str(out),
                    "--builder",
                    "html",
                    "-W",
                    "--keep-going",
                    "--all",
                    "--toc",
                    str(toc),
                ],
                cwd=str(out),
                stdout=subprocess.DEVNULL,
            )
    else:
        rc = build.build_html(out, toc)
    return out / "_build" / "html" / "book" / "executed" / f"{build.SCORECARD}.html", rc


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("card", nargs="?", type=Path, default=FIXTURE, help="scorecard JSON (default: the test fixture)")
    p.add_argument("--out", type=Path, default=ROOT / "_build" / "scorecard-preview")
    p.add_argument(
        "--missing",
        action="append",
        default=[],
        metavar="LINE",
        help="a figure's networks not yet computed, for the section on the papers' networks (repeatable)",
    )
    a = p.parse_args(argv)
    page, rc = build_preview(a.card, a.out, ([], a.missing))
    print(f"jupyter-book exit status {rc}; open {page}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
