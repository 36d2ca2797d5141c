#!/usr/bin/env python
"""Regenerate the committed reference outputs of the chapters' checked cells (smoke profile).

    python scripts/update_references.py                  # every chapter
    python scripts/update_references.py --chapters 03    # some chapters

Runs each chapter on the smoke profile with papermill, in a fresh cache and output folder (so
nothing cached is read back), and writes tests/reference/<stem>.json: the text that every cell
tagged ``nbval-check-output`` printed. The nbval tests compare fresh runs against these files;
commit the regenerated files together with the change that explains why the numbers moved.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from reference_outputs import differences, load_reference, write_reference  # noqa: E402

from nadcore.book import build as bb  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chapters", metavar="LIST", help="comma-separated stems or prefixes (default: all)")
    args = ap.parse_args(argv)
    try:
        chapters = bb.select_chapters(bb.list_chapters(), args.chapters)
    except bb.ChapterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="nadbook-refs-") as tmp:
        tmp = Path(tmp)
        for path in chapters:
            out = tmp / "executed" / f"{path.stem}.ipynb"
            with bb.chapter_environment(tmp / "cache", tmp / "executed"):
                secs = bb.execute_chapter(path, out, {"profile": "smoke"}, work_dir=tmp / "running", progress_bar=False)
            nb = json.loads(out.read_text())
            had = load_reference(path.stem) is not None
            changed = differences(path.stem, nb) if had else ["new"]
            target = write_reference(path.stem, nb)
            what = "unchanged" if not changed else ("created" if not had else f"{len(changed)} cell(s) changed")
            print(f"{path.stem}: {what} ({secs:.0f} s) -> {target.relative_to(ROOT)}")
            for line in changed if had else []:
                print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
