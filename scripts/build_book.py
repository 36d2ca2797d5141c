#!/usr/bin/env python
"""Build the NAD book: execute every chapter with papermill, write the scorecard, render the HTML.

    python scripts/build_book.py                          # all chapters, `cpu` profile
    python scripts/build_book.py --profile smoke          # seconds per chapter (what CI runs)
    python scripts/build_book.py --chapters 02 -p model resnet18 -p seed 1
    python scripts/build_book.py --no-execute             # re-render what book/executed/ holds

See nadcore/book/build.py, which does the work.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nadcore.book.build import main  # noqa: E402
from nadcore.chapters.campaigns import coverage_lines  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(coverage=coverage_lines))
