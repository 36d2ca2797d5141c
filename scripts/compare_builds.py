#!/usr/bin/env python
"""Compare two builds' verdicts claim by claim: does the same code give the same verdicts on
another CPU?

    python scripts/compare_builds.py A B                 # A, B: scorecard.json files or records
    python scripts/compare_builds.py --record book/executed/scorecard.json --out results/builds/X.json

``--record`` keeps a build's verdicts as a small committed file (each claim's kind, verdict,
value and interval, with the commit, CPU, kernel path, instruction set and date of the build that made them), so
that a build on another machine can be compared with it later. A comparison prints each build's
verdict counts, every claim whose verdict differs (with both values and intervals), the claims
that only one build has, and how far the values moved where the verdicts agree; it exits with 1
where a claim both builds have changed its verdict.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nadcore import runtime  # noqa: E402
from nadcore.book.evidence import ROUNDING, VERDICTS  # noqa: E402

FIELDS = ("kind", "verdict", "value", "ci_low", "ci_high", "run")


def load(path: Path) -> dict:
    """A build's verdicts, ``{"about": {...}, "claims": {id: {kind, verdict, value, ci_low,
    ci_high}}}``, from a scorecard or a record."""
    data = json.loads(Path(path).read_text())
    return data if "about" in data else _verdicts(data, path)


def _verdicts(card: dict, path: Path) -> dict:
    if "claims" not in card:
        raise SystemExit(f"error: {path} is neither a scorecard nor a record of one (no 'claims')")
    claims = {c["id"]: {k: c.get(k) for k in FIELDS} for c in card["claims"]}
    return {"about": {"source": str(path)}, "claims": claims}


def record(scorecard: Path) -> dict:
    """A scorecard's verdicts with what made them: the commit, the CPU, the kernel path, the date."""
    card = json.loads(Path(scorecard).read_text())
    rec = _verdicts(card, scorecard)
    build = card.get("build")
    if not build:
        raise SystemExit(f"error: {scorecard} does not say what made it; record a scorecard of this version's build")
    if build.get("dirty"):
        raise SystemExit(f"error: {scorecard} was built from uncommitted changes; commit, build, then record")
    paths = {c.get("kernel_path") for c in card["claims"]} - {None}
    rec["about"] = {
        "commit": build["commit"],
        "cpu": build["cpu"],
        "kernels": build.get("kernels", "not recorded"),
        "kernel_path": ", ".join(sorted(paths)),
        "built": build["written"],
    }
    return rec


def _iv(c: dict) -> str:
    v, lo, hi = (c.get(k) for k in ("value", "ci_low", "ci_high"))
    if v is None:
        return "-"
    if lo is None or hi is None or lo == hi:
        return f"{v:.4g}"
    return f"{v:.4g} [{lo:.4g}, {hi:.4g}]"


def compare(a: dict, b: dict) -> tuple[list[str], int]:
    """The lines of the comparison of builds ``a`` and ``b``, and how many shared claims changed
    verdict."""
    ca, cb = a["claims"], b["claims"]
    out = []
    for name, build in (("A", a), ("B", b)):
        counts = Counter(c["verdict"] for c in build["claims"].values())
        about = ", ".join(f"{k} {v}" for k, v in build["about"].items())
        out.append(f"{name}: {about}")
        out.append("   " + ", ".join(f"{counts.get(v, 0)} {v}" for v in VERDICTS) + f" of {len(build['claims'])}")
    shared = sorted(set(ca) & set(cb))
    changed = [i for i in shared if ca[i]["verdict"] != cb[i]["verdict"]]
    out.append(f"{len(shared)} claims in both builds; {len(changed)} changed verdict")
    for i in changed:
        out.append(f"  {i} ({ca[i]['kind']}): {ca[i]['verdict']} {_iv(ca[i])} -> {cb[i]['verdict']} {_iv(cb[i])}")
    other = [i for i in shared if ca[i].get("run") and cb[i].get("run") and ca[i]["run"] != cb[i]["run"]]
    if other:
        out.append(f"claims whose runs differ (other code or parameters, not only another CPU): {len(other)}")
    for name, only in (("A", sorted(set(ca) - set(cb))), ("B", sorted(set(cb) - set(ca)))):
        if only:
            out.append(f"only in {name}: " + ", ".join(only))
    moved = []
    for i in shared:
        va, vb = ca[i]["value"], cb[i]["value"]
        if isinstance(va, (int, float)) and isinstance(vb, (int, float)) and math.isfinite(va) and math.isfinite(vb):
            moved.append((abs(va - vb), i))
    same = sum(d == 0 for d, _ in moved)
    out.append(f"values: {same} of {len(moved)} identical" + ("; largest moves:" if same < len(moved) else ""))
    for d, i in sorted(moved, reverse=True)[: min(8, len(moved) - same)]:
        out.append(f"  {i}: {_iv(ca[i])} vs {_iv(cb[i])} (|diff| {d:.3g})")
    edges = sorted((e, i) for i in shared if (e := edge_move(ca[i], cb[i])) is not None and e > 0)
    tiny = sum(e <= ROUNDING for e, _ in edges)
    edges = [(e, i) for e, i in edges if e > ROUNDING]
    if edges:
        out.append(
            f"interval edges that moved ({len(edges)}), in half-widths of A's interval: median "
            f"{edges[len(edges) // 2][0]:.2f}, largest {edges[-1][0]:.2f} ({edges[-1][1]})"
        )
    if tiny:
        out.append(f"interval edges that moved by float rounding only (under {ROUNDING:g} of a half-width): {tiny}")
    return out, len(changed)


def edge_move(a: dict, b: dict) -> float | None:
    """How far the farther-moving edge of a claim's interval moved between two builds, in
    half-widths of the first build's interval (None where either has no interval): what a CPU
    margin must cover."""
    lo_a, hi_a, lo_b, hi_b = (c.get(k) for c in (a, b) for k in ("ci_low", "ci_high"))
    if None in (lo_a, hi_a, lo_b, hi_b) or not all(map(math.isfinite, (lo_a, hi_a, lo_b, hi_b))) or hi_a <= lo_a:
        return None
    return max(abs(lo_a - lo_b), abs(hi_a - hi_b)) / ((hi_a - lo_a) / 2)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("builds", nargs="*", type=Path, help="two scorecards or records to compare")
    ap.add_argument("--record", type=Path, help="a scorecard to keep as a record (with --out)")
    ap.add_argument("--out", type=Path, help="where --record writes")
    a = ap.parse_args(argv)
    if a.record:
        if not a.out:
            ap.error("--record needs --out")
        runtime.write_json_atomic(a.out, record(a.record))
        print(f"wrote {a.out}")
        return 0
    if len(a.builds) != 2:
        ap.error("give two builds to compare, or --record SCORECARD --out FILE")
    lines, changed = compare(load(a.builds[0]), load(a.builds[1]))
    print("\n".join(lines))
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
