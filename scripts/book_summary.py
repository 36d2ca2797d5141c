#!/usr/bin/env python
"""Print README's results table from the last book build (markdown).

    python scripts/book_summary.py [--brief] [--executed book/executed] [--scorecard FILE.json]

Reads the scorecard (``scorecard.json``) and the executed notebooks that
``python scripts/build_book.py`` left in ``book/executed/``: per chapter its profile, papermill's
execution time and its verdict counts, then the kernel path that made the results and the claims
that did not reproduce or were inconclusive, with their measured value and interval (``--brief``,
README's form: their names only, and no table per kind). Nothing here is typed by hand.
``--scorecard`` reads a scorecard JSON kept elsewhere (a copy of an earlier build's); the execution
times, which only the notebooks hold, are then printed as "-" unless ``--executed`` names that
build's folder too.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nadcore.book.claim_rows import headline, kind_of, limits, settled_text  # noqa: E402
from nadcore.book.evidence import KINDS, VERDICTS  # noqa: E402


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def _claims_profile(claims: list) -> str:
    profiles = {(c.get("settings") or {}).get("profile") for c in claims} - {None}
    return profiles.pop() if len(profiles) == 1 else "?"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all", action="store_true", help="list every claim not reproduced, not only the papers'")
    ap.add_argument(
        "--brief",
        action="store_true",
        help="no table per kind, and the claims not reproduced by name only (README's form)",
    )
    ap.add_argument(
        "--no-coverage",
        dest="coverage",
        action="store_false",
        help="leave out the paper's figures and the networks computed for each",
    )
    ap.add_argument(
        "--executed",
        type=Path,
        default=None,
        help="the build's folder: scorecard.json and the executed notebooks (default book/executed)",
    )
    ap.add_argument(
        "--scorecard", type=Path, default=None, help="a scorecard JSON to read instead of EXECUTED/scorecard.json"
    )
    a = ap.parse_args(argv)
    if a.executed is None and a.scorecard is None:
        a.executed = ROOT / "book" / "executed"
    card_path = a.scorecard or a.executed / "scorecard.json"
    if not card_path.exists():
        print(f"error: {card_path} not found; run `python scripts/build_book.py` first", file=sys.stderr)
        return 2
    claims = json.loads(card_path.read_text())["claims"]
    chapters = sorted({c["chapter"] for c in claims})
    if a.scorecard is None:  # chapters that made no claim still show their time
        chapters = sorted(set(chapters) | {p.stem for p in a.executed.glob("[0-9][0-9]_*.ipynb")})
    lines = [
        "| chapter | profile | execution time | claims | reproduced | not reproduced | inconclusive |",
        "|---|---|---|---|---|---|---|",
    ]
    total_s, dates, timed = 0.0, [], True
    for stem in chapters:
        mine = [c for c in claims if c["chapter"] == stem]
        nb_path = a.executed / f"{stem}.ipynb" if a.executed else None
        meta = (
            json.loads(nb_path.read_text()).get("metadata", {}).get("papermill", {})
            if nb_path and nb_path.exists()
            else {}
        )
        profile = meta.get("parameters", {}).get("profile") or _claims_profile(mine)
        if meta.get("duration") is None:
            timed, secs = False, None
        else:
            secs = float(meta["duration"])
            total_s += secs
            if meta.get("end_time"):
                dates.append(meta["end_time"][:10])
        counts = [sum(c["verdict"] == v for c in mine) for v in VERDICTS]
        lines.append(
            f"| {stem} | {profile} | {_minutes(secs) if secs is not None else '-'} | "
            f"{len(mine)} | " + " | ".join(map(str, counts)) + " |"
        )
    counts = [sum(c["verdict"] == v for c in claims) for v in VERDICTS]
    lines.append(
        f"| **all** | | **{_minutes(total_s) if timed else '-'}** | **{len(claims)}** | "
        + " | ".join(f"**{n}**" for n in counts)
        + " |"
    )
    paths = sorted({c.get("kernel_path") or "unrecorded" for c in claims})
    when = (
        f"Build finished {max(dates)}; execution times are papermill's."
        if dates
        else "Execution times: not in the scorecard (they are in the build's notebooks: --executed)."
    )
    lines += ["", f"{when} Kernel path: {', '.join(paths)}."]
    kinds = list(dict.fromkeys([k for k in KINDS if any((c.get("kind") or "paper") == k for c in claims)]))
    lines += ["", f"{headline(claims)}.", ""]
    lines += [f"- {settled_text(claims, k)}." for k in ("paper", "follow-up") if any(kind_of(c) == k for c in claims)]
    lines += ["", limits(claims)]
    if a.coverage:
        from nadcore.chapters.campaigns import coverage_lines

        have, missing = coverage_lines(_claims_profile(claims) if _claims_profile(claims) != "?" else "cpu")
        lines += ["", "The paper's figures, networks computed (this build or a committed campaign bundle):", ""]
        lines += [f"- {h}" for h in have]
    if not a.brief:
        lines += ["", "| kind | claims | reproduced | not reproduced | inconclusive |", "|---|---|---|---|---|"]
        for k in kinds:
            mine = [c for c in claims if (c.get("kind") or "paper") == k]
            lines.append(
                f"| {k} | {len(mine)} | "
                + " | ".join(str(sum(c["verdict"] == v for c in mine)) for v in VERDICTS)
                + " |"
            )
    shown = KINDS if a.all else ("paper", "follow-up")
    others = [c for c in claims if c["verdict"] != "reproduced" and (c.get("kind") or "paper") in shown]
    if others and a.brief:
        by = {v: ", ".join(f"`{c['id']}`" for c in others if c["verdict"] == v) for v in VERDICTS[1:]}
        lines += [
            "",
            "Of the papers' claims, "
            + "; ".join(f"{v}: {ids}" for v, ids in by.items() if ids)
            + " (values, intervals and criteria on the Scorecard page).",
        ]
    elif others:
        what = "Claims" if a.all else "Claims of the papers"
        lines += ["", f"{what} not reproduced or inconclusive (criteria on the Scorecard page):", ""]
        for c in others:
            iv = f"{c['value']:.3g}" if c["value"] is not None else "n/a"
            if c["ci_low"] is not None and c["ci_high"] is not None and c["ci_low"] != c["ci_high"]:
                iv += f" [{c['ci_low']:.3g}, {c['ci_high']:.3g}]"
            budget = f", budget {c['budget_fraction']:.2g}" if c.get("budget_fraction") is not None else ""
            lines.append(f"- `{c['id']}` ({c['verdict']}): {iv}{budget}")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
