#!/usr/bin/env python
"""Print README's results table from the last book build (markdown).

    python scripts/book_summary.py [--executed book/executed]

Reads the scorecard (``scorecard.json``) and the executed notebooks that
``python scripts/build_book.py`` left in ``book/executed/``: per chapter its profile, papermill's
execution time and its verdict counts, then the claims that did not reproduce or were
inconclusive, with their measured value and interval. Nothing here is typed by hand.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VERDICTS = ("reproduced", "not reproduced", "inconclusive")


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--executed", type=Path, default=ROOT / "book" / "executed")
    a = ap.parse_args(argv)
    card_path = a.executed / "scorecard.json"
    if not card_path.exists():
        print(f"error: {card_path} not found; run `python scripts/build_book.py` first", file=sys.stderr)
        return 2
    claims = json.loads(card_path.read_text())["claims"]
    chapters = sorted({c["chapter"] for c in claims} | {p.stem for p in a.executed.glob("[0-9][0-9]_*.ipynb")})
    lines = ["| chapter | profile | execution time | claims | reproduced | not reproduced | inconclusive |",
             "|---|---|---|---|---|---|---|"]
    total_s, dates = 0.0, []
    for stem in chapters:
        nb_path = a.executed / f"{stem}.ipynb"
        meta = json.loads(nb_path.read_text()).get("metadata", {}).get("papermill", {}) if nb_path.exists() else {}
        secs = float(meta.get("duration") or 0.0)
        total_s += secs
        if meta.get("end_time"):
            dates.append(meta["end_time"][:10])
        mine = [c for c in claims if c["chapter"] == stem]
        counts = [sum(c["verdict"] == v for c in mine) for v in VERDICTS]
        lines.append(f"| {stem} | {meta.get('parameters', {}).get('profile', '?')} | {_minutes(secs)} | "
                     f"{len(mine)} | " + " | ".join(map(str, counts)) + " |")
    counts = [sum(c["verdict"] == v for c in claims) for v in VERDICTS]
    lines.append(f"| **all** | | **{_minutes(total_s)}** | **{len(claims)}** | "
                 + " | ".join(f"**{n}**" for n in counts) + " |")
    lines += ["", f"Build finished {max(dates) if dates else 'unknown'}; execution times are papermill's."]
    others = [c for c in claims if c["verdict"] != "reproduced"]
    if others:
        lines += ["", "Not reproduced or inconclusive at this budget:", ""]
        for c in others:
            iv = f"{c['value']:.3g}" if c["value"] is not None else "n/a"
            if c["ci_low"] is not None and c["ci_high"] is not None and c["ci_low"] != c["ci_high"]:
                iv += f" [{c['ci_low']:.3g}, {c['ci_high']:.3g}]"
            budget = f", budget {c['budget_fraction']:.2g}" if c.get("budget_fraction") is not None else ""
            lines.append(f"- `{c['id']}` ({c['verdict']}): {c['criterion']}; measured {iv}{budget}")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
