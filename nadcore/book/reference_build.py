"""The reference build: one committed build whose verdicts every CPU keeps.

A value trained in the build moves from one CPU to another: their kernels add in another order,
and SGD carries the rounding into every run, which then moves as a run of a new seed does. The
CPU margin (:func:`nadcore.book.evidence.cpu_margin`) keeps such a move from turning
"reproduced" into "not reproduced", but no rule that maps a moving interval to a verdict can keep
every claim in one verdict: an interval that clears its bound by about its margin is decided on
one CPU and inconclusive on the next (``results/builds/README.md`` measured one such claim in 138).

So the verdicts are anchored to one build, recorded in ``results/builds/reference.json`` by
``scripts/compare_builds.py --record``. Each claim row carries the key of its run (:func:`run_key`:
the source of nadcore and of the chapter, the profile, the seed, the settings and parameters; not
the machine). Where a row's run is the reference's and its interval's edges lie within
:data:`nadcore.book.evidence.ANCHOR_SPAN` CPU margins of the reference's, the two are one result
up to another CPU's rounding, and the row takes the reference's verdict (its note says so, and
what its own interval alone would give). Other code, other parameters, or a move larger than a
CPU's rounding makes: the row keeps its own verdict.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path

from nadcore.book.settling import KEPT
from nadcore.runtime import source_digest

__all__ = ["REFERENCE", "run_key", "reference_claim", "reference_about", "anchoring"]

_PACKAGE = Path(__file__).resolve().parents[1]
#: the committed record of the reference build (absent outside a checkout of the repository)
REFERENCE = _PACKAGE.parent / "results" / "builds" / "reference.json"
#: settings that say how a run is spread over the machine, not what it computes
_MACHINE_SETTINGS = ("workers",)


def _sources(chapter: str) -> str:
    files = [p for pattern in ("*.py", "*.c") for p in _PACKAGE.rglob(pattern)]
    page = _PACKAGE.parent / "chapters" / f"{chapter}.py"
    return source_digest(sorted(files) + ([page] if page.exists() else []))


def run_key(chapter: str, profile: str, seed: int, cfg: dict, params: dict) -> str:
    """The key of a chapter's run, the same on every machine: a digest of nadcore's source and the
    chapter's page, its profile, seed, resolved settings (less :data:`_MACHINE_SETTINGS`) and
    parameters. Two rows with one key differ only by the machine that computed them."""
    what = {
        "chapter": chapter,
        "profile": profile,
        "seed": int(seed),
        "cfg": {k: v for k, v in cfg.items() if k not in _MACHINE_SETTINGS},
        "params": params,
        "source": _sources(chapter),
    }
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=repr).encode()).hexdigest()[:16]


@lru_cache(maxsize=4)
def _load(path: str, stamp: tuple) -> dict:
    data = json.loads(Path(path).read_text())
    if "claims" not in data or "about" not in data:
        raise ValueError(
            f"{path} is not a record of a build (no 'about' or 'claims'): write it with "
            "python scripts/compare_builds.py --record book/executed/scorecard.json --out results/builds/reference.json"
        )
    return data


def _record(path: Path | None = None) -> dict | None:
    path = Path(path) if path is not None else REFERENCE
    if not path.exists():
        return None
    st = path.stat()
    return _load(str(path), (st.st_size, st.st_mtime_ns))


def reference_claim(claim_id: str, run: str, path: Path | None = None) -> dict | None:
    """The reference build's row of ``claim_id`` (its verdict, value and interval) where that
    build ran ``run`` (:func:`run_key`); None where it ran other code or parameters, or there is
    no reference."""
    rec = _record(path)
    row = (rec or {}).get("claims", {}).get(claim_id)
    return row if row and row.get("run") == run else None


def reference_about(path: Path | None = None) -> str:
    """The reference build in words: its CPU and commit."""
    about = (_record(path) or {}).get("about", {})
    return f"{about.get('cpu', 'unknown CPU')}, commit {str(about.get('commit', '?'))[:7]}"


def anchoring(claims: list[dict], path: Path | None = None) -> dict:
    """How a build's rows stand to the reference build: ``build`` (it in words, None where there
    is none), ``ran`` (how many of the ``of`` rows it ran with the same code and parameters) and
    ``kept`` (the rows that keep its verdict where their own interval alone gives another)."""
    if _record(path) is None:
        return {"build": None, "ran": 0, "of": len(claims), "kept": []}
    ran = sum(reference_claim(c["id"], c.get("run", ""), path) is not None for c in claims)
    kept = [c["id"] for c in claims if KEPT in (c.get("note") or "")]
    return {"build": reference_about(path), "ran": ran, "of": len(claims), "kept": kept}
