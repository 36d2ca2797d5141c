"""The committed campaign bundles, as the chapters and the scorecard read them.

A bundle is ``results/<campaign>/<chapter>/<figure>.csv`` with ``results/<campaign>/provenance.json``
(written by :mod:`nadcore.book.campaign`). :func:`load` gives a :class:`Bundle`, or None where a
campaign has none (one file-existence check: a build without bundles costs nothing).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from nadcore.book.campaign import PROVENANCE, read_rows, results_root

__all__ = ["Bundle", "load"]


@dataclass
class Bundle:
    """One campaign's committed results: ``frame(chapter, figure)`` and their provenance."""

    name: str
    root: Path
    provenance: dict

    def frame(self, chapter: str, figure: str) -> pd.DataFrame | None:
        """The figure's rows, or None if the bundle has none."""
        df = read_rows(self.root / chapter / f"{figure}.csv")
        return None if df is None or df.empty else df

    def machines(self) -> list[str]:
        """The machines that computed the bundle's jobs: the GPU, else the CPU model."""
        used = {int(j["session"]) for j in self.provenance.get("jobs", {}).values()}
        sessions = [s for i, s in enumerate(self.provenance.get("sessions", [])) if i in used]
        return sorted({s.get("gpu") or s.get("cpu") or s.get("device", "?") for s in sessions}) or ["?"]

    def commits(self) -> list[str]:
        """The commits whose code computed the bundle's jobs, in the order their sessions ran."""
        used = {int(j["session"]) for j in self.provenance.get("jobs", {}).values()}
        out = [str(s.get("commit", "?"))[:8] for i, s in enumerate(self.provenance.get("sessions", [])) if i in used]
        return list(dict.fromkeys(out)) or ["?"]

    def cpu_hours(self, figure: str | None = None) -> float:
        """Wall hours of the bundle's jobs (of ``figure``), summed over jobs as they ran."""
        return (
            sum(
                float(j.get("seconds", 0.0))
                for j in self.provenance.get("jobs", {}).values()
                if figure is None or j.get("figure") == figure
            )
            / 3600
        )

    def title(self) -> str:
        """Provenance in one line, short enough for a figure's title: the campaign, its machines'
        models, its commits (their number, the first and the last) and its last job's date; every
        session with its machine and commit is in the bundle's provenance file."""
        dates = [str(j.get("date", "")) for j in self.provenance.get("jobs", {}).values()]
        last = max(dates, default="")[:10]
        commits = self.commits()
        code = (
            f"commit {commits[0]}"
            if len(commits) == 1
            else f"{len(commits)} commits from {commits[0]} to {commits[-1]}"
        )
        models = ", ".join(dict.fromkeys(m.split(" (")[0] for m in self.machines()))
        return f"campaign {self.name!r}: {models}; {code}; last job {last or 'none'}"


def load(name: str, root=None) -> Bundle | None:
    """The bundle of campaign ``name`` under ``root`` (default ``results/``), or None."""
    folder = Path(root if root is not None else results_root()) / name
    p = folder / PROVENANCE
    if not p.is_file():
        return None
    return Bundle(name, folder, json.loads(p.read_text()))
