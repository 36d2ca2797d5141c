"""The committed paper-scale results: bundles made on a GPU by ``scripts/run_paper.py``
(:mod:`nadcore.book.paper_runs`), read by the chapters and the scorecard.

A bundle is ``results/paper/<chapter>/<figure>.csv`` (the columns of the cpu build's figure data)
with ``results/paper/provenance.json``. ``$NADBOOK_PAPER_RESULTS`` points elsewhere (tests).

* :func:`load_bundle`: the provenance and the figures, or None when there is no bundle (one
  file-existence check: a build without bundles costs nothing);
* :func:`not_yet_run`: the figures of the campaign not yet (completely) run at paper scale, for
  the scorecard page and the intro;
* :func:`record_claims`: a figure's claims with ``profile="paper"``, through the chapter's
  :meth:`nadcore.book.Chapter.claim` (the claims are registered in ``claims/paper_scale.py``),
  computed with the same summaries as the cpu claims (:func:`nadcore.experiments.separability.band_means`,
  :func:`~nadcore.experiments.separability.nad_index_summary`). With two or more seeds an
  interval is over seeds, as for the cpu rows; with one seed (the campaign's first pass) it is
  over the independent runs that make up the quantity (cells or NAD indices, each its own data and
  initialisation), and says so.

Drawing is in :mod:`nadcore.plots.paper_scale` (plots sit above this layer).
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import t as student_t

from nadcore.book import evidence
from nadcore.book.claims.paper_scale import claim_id
from nadcore.book.paper_runs import CHAPTERS, NOT_WIRED, PROVENANCE, mirror
from nadcore.experiments import separability as sep
from nadcore.nads.published import FIG6_COLUMNS

__all__ = ["bundle_root", "Bundle", "load_bundle", "not_yet_run", "record_claims", "fig1_maps", "CAMPAIGN"]

#: the campaign's figures and what a complete bundle holds (issue 27, item 4)
CAMPAIGN = {"fig1": "Fig. 1 (ResNet-18, VGG-11, DenseNet-121 on the 16x16 grid)",
            "fig6": "Fig. 6 (VGG-11, ResNet-18, DenseNet-121 on their 10,000-network secant NADs)",
            "fig3": "Fig. 3 (ResNet-18 without pooling)", "fig2": "Fig. 2 (ResNet-18)",
            "fig7": "Fig. 7 (ResNet-18, CIFAR-10 poisoning)", "fig8": "Fig. 8 (NAD-flipped CIFAR-10)",
            "us-fig2": "follow-up Fig. 2 (ResNet-18)", "us-fig3": "follow-up Fig. 3 (ResNet-18)"}
_ALL_CHAPTERS = {**CHAPTERS, **NOT_WIRED}


def bundle_root() -> Path:
    env = os.environ.get("NADBOOK_PAPER_RESULTS")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "results" / "paper"


@dataclass
class Bundle:
    root: Path
    provenance: dict

    def frame(self, figure: str) -> pd.DataFrame | None:
        """The figure's rows, or None if the bundle has none."""
        p = self.root / _ALL_CHAPTERS[figure] / f"{figure}.csv"
        if not p.is_file():
            return None
        df = pd.read_csv(p)
        return None if df.empty else df

    def status(self, figure: str) -> dict:
        return self.provenance.get("figures", {}).get(figure, {})

    def title(self, figure: str) -> str:
        """Provenance in one line: GPU, commit, date, how complete."""
        sessions = [s for s in self.provenance.get("sessions", []) if s.get("jobs_computed")]
        gpus = sorted({s.get("gpu") or s.get("device", "?") for s in sessions}) or ["?"]
        commits = sorted({str(s.get("commit", "?"))[:8] for s in sessions}) or ["?"]
        last = max((s.get("finished") or s.get("started") or "" for s in sessions), default="")[:10]
        st = self.status(figure)
        done, planned = st.get("runs_done", 0), st.get("runs_planned", 0)
        tiny = "TINY TEST BUNDLE, not results; " if self.provenance.get("tiny") else ""
        return (f"{tiny}paper scale: {', '.join(gpus)}, commit {', '.join(commits)}, {last}, "
                f"{done}/{planned} runs" + ("" if st.get("complete") else " (incomplete)"))


def load_bundle(root=None) -> Bundle | None:
    """The bundle at ``root`` (default :func:`bundle_root`), or None when there is none."""
    root = Path(root) if root is not None else bundle_root()
    p = root / PROVENANCE
    if not p.is_file():
        return None
    return Bundle(root, json.loads(p.read_text()))


def not_yet_run(root=None) -> list[str]:
    """One line per campaign figure not completely run at paper scale (all of them without a
    bundle), saying how far it got."""
    b = load_bundle(root)
    lines = []
    for fig, what in CAMPAIGN.items():
        st = b.status(fig) if b else {}
        if st.get("complete"):
            continue
        how = ("not wired yet" if fig in NOT_WIRED else
               f"{st.get('runs_done', 0)}/{st.get('runs_planned', 0)} runs so far" if st else "not run")
        lines.append(f"{what}: {how}")
    return lines


# --------------------------------------------------------------------------------------------
# Claims
# --------------------------------------------------------------------------------------------
def _over_runs(values, bounds, what: str) -> evidence.Interval:
    """Mean of independent runs' values and its t-interval (one seed: the runs are the cells
    or NAD indices), labelled by what they are."""
    a = np.asarray(values, dtype=float)
    a = a[np.isfinite(a)]
    iv = evidence.t_interval(a, bounds=bounds)
    return evidence.Interval(iv.value, iv.low, iv.high, iv.n, f"t-interval over {a.size} {what} (1 seed)",
                             "groups").clipped(bounds)


def _difference_over_runs(a, b, bounds, what: str) -> evidence.Interval:
    """mean(a) - mean(b) of two sets of independent runs, Welch's t-interval."""
    a, b = (np.asarray(x, dtype=float) for x in (a, b))
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if a.size < 2 or b.size < 2:
        return evidence.Interval(float(a.mean() - b.mean()) if a.size and b.size else float("nan"),
                                 float("nan"), float("nan"), int(a.size + b.size), "too few runs", "groups")
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    se = math.sqrt(va + vb)
    dof = (va + vb) ** 2 / (va ** 2 / (a.size - 1) + vb ** 2 / (b.size - 1)) if se > 0 else a.size + b.size - 2
    d = float(a.mean() - b.mean())
    half = float(student_t.ppf(0.975, dof)) * se
    return evidence.Interval(d, d - half, d + half, int(a.size + b.size),
                             f"Welch t-interval over {a.size} + {b.size} {what} (1 seed)", "groups").clipped(bounds)


def _spearman_interval(rho: float, n: int) -> evidence.Interval:
    """One Spearman correlation over ``n`` indices: Fisher-z interval with the standard error
    1.03 / sqrt(n - 3) (Fieller et al. 1957)."""
    if n <= 3 or not np.isfinite(rho):
        return evidence.Interval(float(rho), float("nan"), float("nan"), n, "too few indices", "groups")
    z, se = math.atanh(min(max(rho, -0.999999), 0.999999)), 1.03 / math.sqrt(n - 3)
    return evidence.Interval(float(rho), math.tanh(z - 1.96 * se), math.tanh(z + 1.96 * se), n,
                             f"Fisher-z interval over {n} NAD indices (1 seed)", "groups")


def fig1_maps(frame: pd.DataFrame, grid, key: str = "test_acc") -> dict:
    """Per architecture, the seed-mean ``key`` over ``grid`` (g, g), each trained cell also
    filling its mirror (k2, k1) (the same problem in distribution, see :mod:`nadcore.book.paper_runs`); NaN
    where neither was run."""
    out = {}
    for arch, g in frame.groupby("model", sort=False):
        m = g.groupby(["k1", "k2"])[key].mean()
        a = np.full(grid.shape, np.nan)
        for i, j in grid.cells:
            k = (int(grid.k1[i, j]), int(grid.k2[i, j]))
            for c in (k, mirror(*k, grid.size)):
                if c in m.index:
                    a[i, j] = float(m.loc[c])
                    break
        out[arch] = a
    return out


def record_claims(ch, figure: str, frame: pd.DataFrame, bundle: Bundle) -> list[str]:
    """Record ``figure``'s paper-scale claims on ``ch`` (``profile="paper"``); returns their ids."""
    ids = []
    cfg = bundle.provenance.get("settings", {}).get(_ALL_CHAPTERS[figure], {})
    low, high = int(cfg.get("low", 4)), int(cfg.get("high", 8))
    settings = {"bundle": bundle.title(figure)}
    if figure == "fig1":
        for arch, g in frame.groupby("model", sort=False):
            seeds = sorted(g["seed"].unique())
            cells = g[["k1", "k2"]].to_numpy()
            r = sep.cell_radius(cells)
            if len(seeds) >= 2:
                per = [g[g["seed"] == s] for s in seeds]
                gap = [sep.band_means(p["test_acc"].to_numpy()[None], p[["k1", "k2"]].to_numpy(), low, high)["gap"][0]
                       for p in per]
                gap_iv = evidence.t_interval(gap, bounds=(-1, 1))
                fit_iv = evidence.t_interval([p["train_acc"].mean() for p in per], bounds=(0, 1))
            else:
                acc = g["test_acc"].to_numpy()
                gap_iv = _difference_over_runs(acc[r <= low], acc[r >= high], (-1, 1), "cells")
                fit_iv = _over_runs(g["train_acc"], (0, 1), "cells")
            cid = claim_id("fig1-frequency-gap", arch)
            ch.claim(cid, interval=gap_iv, profile="paper", low=low, high=high, settings=settings)
            ids.append(cid)
            if arch != "lenet":
                cid = claim_id("fig1-train-fit", arch)
                ch.claim(cid, interval=fit_iv, profile="paper", settings=settings)
                ids.append(cid)
    elif figure == "fig6":
        published = sep.published_fig6_table(None)
        for arch, g in frame.groupby("model", sort=False):
            g = g[g["estimator"] == "secant"]
            if g.empty:
                continue
            seeds = sorted(g["seed"].unique())
            idx = np.sort(g["nad_index"].unique())
            ev = g.groupby("nad_index")["eigenvalue"].first().reindex(idx).to_numpy()
            pub = published[published["model"] == arch].set_index("nad_index") if arch in FIG6_COLUMNS else None
            pv_gap = pv_rho = None
            if pub is not None:
                sel = pub.reindex(idx)
                pv_gap = float(sel["test_acc"][idx < 10].mean() - sel["test_acc"][idx > 700].mean())
                pv_rho = float(sep.rank_correlations(sel["test_acc"].to_numpy(), sel["eigenvalue"].to_numpy())[0])
            per = [sep.nad_index_summary(idx, g[g["seed"] == s].set_index("nad_index")["test_acc"].reindex(idx).to_numpy(),
                                         _eigen_by_index(idx, ev)) for s in seeds]
            if len(seeds) >= 2:
                gap_iv = evidence.t_interval([p["first_mean"] - p["beyond_mean"] for p in per], bounds=(-1, 1))
                rho_iv = evidence.fisher_interval([p["spearman"] for p in per])
            else:
                acc = g.set_index("nad_index")["test_acc"].reindex(idx).to_numpy()
                gap_iv = _difference_over_runs(acc[idx < 10], acc[idx > 700], (-1, 1), "NAD indices")
                rho_iv = _spearman_interval(per[0]["spearman"], len(idx))
            cid = claim_id("fig6-first-vs-beyond", arch)
            ch.claim(cid, interval=gap_iv, profile="paper", published=pv_gap, settings=settings)
            ids.append(cid)
            cid = claim_id("fig6-eigenvalue-ranks-accuracy", arch)
            ch.claim(cid, interval=rho_iv, profile="paper", published=pv_rho, settings=settings)
            ids.append(cid)
    return ids


def _eigen_by_index(idx, ev) -> np.ndarray:
    """Eigenvalues indexed by NAD index (NaN where not trained), for nad_index_summary."""
    full = np.full(int(np.max(idx)) + 1, np.nan)
    full[np.asarray(idx, dtype=int)] = ev
    return full
