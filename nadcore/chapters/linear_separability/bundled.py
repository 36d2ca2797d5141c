"""Chapter 3's quantities from the committed campaign bundles: the paper's big networks.

The campaigns (:mod:`nadcore.chapters.campaigns`) train ResNet-18, VGG-11 and DenseNet-121 off
the build, at a reduced width on the CPU, and commit one row per run (``model``, ``width``,
``recipe``, the cell or NAD index, ``seed``, accuracies). These functions turn a bundle's rows
into the figures' maps and curves and into the evidence of the claims (an
:class:`nadcore.book.evidence.Interval` and the settings it was computed with), with the same
summaries as the chapter's own runs (:mod:`nadcore.chapters.linear_separability.quantities`).

With two or more seeds an interval is over seeds; with one seed (a campaign's first pass) it is
over the independent runs that make up the quantity (the cells of a map, the NAD indices of a
curve: each its own data and initialisation), and says so. A one-seed gap between two bands of
cells or indices, which the claims compare with the published gap on the same points, gets its
interval from the paired differences to the published values
(:func:`nadcore.book.evidence.paired_gap_interval`): the cells are fixed, so their spread within
a band is no noise of the gap.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from nadcore.book import evidence
from nadcore.book.campaign import equal_to
from nadcore.chapters.linear_separability import quantities as q
from nadcore.chapters.linear_separability.claims import BIG, LEARNED
from nadcore.data import fourier_grid
from nadcore.nets import width_name

__all__ = [
    "BIG",
    "RUN",
    "select",
    "precision_check",
    "precision_gap",
    "fig1_map",
    "width_label",
    "map_distance",
    "map_strata",
    "map_shares",
    "map_coverage",
    "cells_distance",
    "MAP_BANDS",
    "map_pearson",
    "train_fit",
    "frequency_gap",
    "published_gap",
    "seeds_balanced",
    "seeds_per_cell",
    "recipe_check",
    "recipe_text",
    "recipe_preference",
    "recipes_that_learn",
    "on_cells",
    "cell_accuracy",
    "share_interval",
    "diagnostic_table",
    "fig6_curves",
    "fig6_summary",
    "cell_runs",
    "sigma_preference",
]


def width_label(name: str, arch: str, width) -> str:
    """``"ResNet-18 at width 16"``: ``name`` at its width (DenseNet-121: its growth rate); ``name``
    alone for a network without a width (None)."""
    return name if pd.isna(width) else f"{name} at {width_name(arch)} {int(width)}"


#: the paper's Fig. 1 grid (16x16 frequencies of a 32x32 image)
GRID = fourier_grid()
#: the columns that identify a run in a bundle, besides its precision
RUN = ("model", "width", "recipe", "sigma", "nad_index", "k1", "k2", "seed")


def select(
    frame: pd.DataFrame | None, arch: str, width: int | None = None, recipe: str = "authors", **where
) -> pd.DataFrame:
    """The rows of ``arch`` at ``width`` (any width if None) and ``recipe`` (and ``where``
    column values, e.g. ``sigma=3.0``); an empty frame where there are none. One row per run:
    a run trained in both precisions (``precision`` "fp32" and "bf16", the check of
    :func:`precision_check`) gives its float32 row, unless ``where`` names a precision."""
    if frame is None:
        return pd.DataFrame()
    sel = (frame["model"] == arch) & (frame["recipe"] == recipe)
    if width is not None:
        sel &= equal_to(frame["width"], int(width))
    for k, v in where.items():
        sel &= equal_to(frame[k], v)
    rows = frame[sel]
    if "precision" in rows and rows["precision"].nunique() > 1:
        fp32_first = rows.sort_values("precision", key=lambda p: p.ne("fp32"), kind="stable")
        rows = fp32_first[~fp32_first.duplicated([c for c in RUN if c in rows])].sort_index()
    return rows


def precision_check(frame: pd.DataFrame | None, arch: str, width: int, recipe: str = "authors") -> pd.DataFrame:
    """The runs of ``arch`` at ``width`` trained both in float32 and in bf16 autocast, with the
    same seed (the same data, initialisation and batch order): one row per run, its test
    accuracy in each precision and the published map's (Fig. 1 cells)."""
    if frame is None or "precision" not in frame:
        return pd.DataFrame()
    one, other = (select(frame, arch, width, recipe, precision=p) for p in ("fp32", "bf16"))
    ident = [c for c in RUN if c in frame and c not in ("model", "width", "recipe")]
    t = one[ident + ["test_acc"]].merge(other[ident + ["test_acc"]], on=ident, suffixes=(" fp32", " bf16"))
    if "k1" in t and len(t):
        t["published"] = q.published_fig1_map(arch, t[["k1", "k2"]].to_numpy())
    return t.set_index(ident)


def precision_gap(table: pd.DataFrame) -> evidence.Interval:
    """Mean over :func:`precision_check`'s runs of |bf16 - float32| test accuracy, with its
    t-interval over them."""
    return evidence.runs_interval((table["test_acc bf16"] - table["test_acc fp32"]).abs(), (0, 1), "cells")


def recipe_check(frame: pd.DataFrame | None, arch: str, width: int, cells, recipes) -> pd.DataFrame:
    """The ``cells`` of ``arch`` at ``width`` trained with each of ``recipes`` (test accuracy, one
    column per recipe) beside the published map; only the cells every recipe has, and on them
    the seeds every recipe has (the recipes compared on the same data and initialisations; the
    mean where those are several)."""
    if frame is None:
        return pd.DataFrame()
    rows = {r: on_cells(select(frame, arch, width, r), cells) for r in recipes}
    seeds = set.intersection(*(set(v["seed"]) for v in rows.values())) if rows else set()
    cols = {r: v[v["seed"].isin(seeds)].groupby(["k1", "k2"])["test_acc"].mean() for r, v in rows.items()}
    t = pd.DataFrame(cols).dropna()
    if len(t):
        t["published"] = q.published_fig1_map(arch, list(t.index))
    return t


def recipe_text(recipe: dict) -> str:
    """A training recipe of the chapter's ``recipes`` in words, for a claim's statement."""
    return (
        f"{recipe['epochs']} epochs, max_lr {recipe['max_lr']:g}, momentum {recipe['momentum']:g}, "
        f"weight decay {recipe['weight_decay']:g}"
    )


def recipe_preference(table: pd.DataFrame, recipes) -> evidence.Interval:
    """How much closer :func:`recipe_check`'s ``recipes[0]`` lands to the published map than
    ``recipes[1]``: mean over the cells of |acc(recipes[1]) - published| - |acc(recipes[0]) -
    published| (positive: the first recipe fits better), paired per cell."""
    pub = table["published"]
    return evidence.runs_interval((table[recipes[1]] - pub).abs() - (table[recipes[0]] - pub).abs(), (-1, 1), "cells")


def recipes_that_learn(table: pd.DataFrame) -> list[str]:
    """The recipes (columns of a :func:`recipe_check` table without its ``published`` column)
    whose test accuracy reaches ``LEARNED`` on every cell of the table."""
    return [r for r in table.columns if bool((table[r] >= LEARNED).all())]


def on_cells(rows: pd.DataFrame, cells) -> pd.DataFrame:
    """The rows of ``rows`` trained on one of ``cells`` (pairs [k1, k2]; the cell itself, not
    its transpose)."""
    want = {(int(a), int(b)) for a, b in cells}
    return rows[np.array([(int(a), int(b)) in want for a, b in zip(rows["k1"], rows["k2"])], dtype=bool)]


def cell_accuracy(rows: pd.DataFrame, cells, key: str = "test_acc") -> np.ndarray:
    """The seed-mean ``key`` of each of ``cells``: its own runs where it has them, else its
    transpose's (the same problem in distribution); NaN where neither was run."""
    m = rows.groupby(["k1", "k2"])[key].mean() if len(rows) else pd.Series(dtype=float)
    out = np.full(len(cells), np.nan)
    for n, (a, b) in enumerate(cells):
        for c in ((int(a), int(b)), (int(b), int(a))):
            if c in m.index:
                out[n] = float(m.loc[c])
                break
    return out


def fig1_map(rows: pd.DataFrame, grid, key: str = "test_acc") -> np.ndarray:
    """:func:`cell_accuracy` over ``grid`` (g, g)."""
    out = np.full(grid.shape, np.nan)
    ij = list(grid.cells)
    for (i, j), v in zip(ij, cell_accuracy(rows, [(grid.k1[i, j], grid.k2[i, j]) for i, j in ij], key)):
        out[i, j] = v
    return out


def _cells(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per trained cell: its seed-mean accuracies."""
    return rows.groupby(["k1", "k2"], as_index=False)[["test_acc", "train_acc"]].mean()


def _problem(rows: pd.DataFrame) -> list[str]:
    """The columns that name a run's problem: its cell (Fig. 1) or its NAD index and sigma."""
    return [c for c in ("k1", "k2", "nad_index", "sigma") if c in rows and rows[c].notna().any()]


def seeds_balanced(rows: pd.DataFrame) -> bool:
    """Whether the rows hold two or more seeds that each trained the same cells: then a quantity
    over the cells has one value per seed, and its interval is over the seeds. A campaign adds
    seeds to a few cells first (the width study's), and a mean over seeds that trained different
    cells would compare different problems; the interval is then over the cells, each at its
    seed mean."""
    keys = _problem(rows)
    cells = [frozenset(map(tuple, g[keys].to_numpy().tolist())) for _, g in rows.groupby("seed")]
    return len(cells) >= 2 and len(set(cells)) == 1


def seeds_per_cell(rows: pd.DataFrame) -> int | str:
    """How many seeds the rows hold per problem (cell, or NAD index and sigma): a number, or its
    range where problems differ."""
    n = rows.groupby(_problem(rows))["seed"].nunique()
    return int(n.min()) if n.min() == n.max() else f"{int(n.min())}-{int(n.max())} per cell"


#: the published accuracies that split Fig. 1's grid into strata: at chance (below q.BLIND), partly
#: learned, learned (0.9 and above)
MAP_BANDS = (q.BLIND, 0.9)


def map_strata(arch: str, cells) -> np.ndarray:
    """Each cell's stratum of Fig. 1's grid for a sample of cells: the band of ``arch``'s published
    accuracy there (:data:`MAP_BANDS`), and whether the cell is on the coarse grid (both
    frequencies multiples of 4, :meth:`FourierGrid.subgrid` (2)), which a campaign trains first
    (its stages go coarse to fine) and which the narrow networks learn more easily."""
    strata = _grid_strata(arch)
    return np.array([strata[int(a), int(c)] for a, c in np.asarray(cells, dtype=int).reshape(-1, 2)])


def map_shares(arch: str) -> dict[str, float]:
    """Each stratum's share of Fig. 1's grid (:func:`map_strata`)."""
    return pd.Series(list(_grid_strata(arch).values())).value_counts(normalize=True).to_dict()


@functools.lru_cache(maxsize=None)
def _grid_strata(arch: str) -> dict[tuple[int, int], str]:
    cells = np.asarray(GRID.frequencies, dtype=int)
    band = np.digitize(q.published_fig1_map(arch, cells), MAP_BANDS)
    coarse = set(GRID.subgrid(2).frequencies)
    names = ("published below {0}", "published {0}-{1}", "published {1} and above")
    return {
        (int(a), int(c)): names[b].format(*MAP_BANDS) + (", coarse grid" if (int(a), int(c)) in coarse else ", off it")
        for b, (a, c) in zip(band, cells)
    }


def map_coverage(rows: pd.DataFrame, arch: str) -> dict:
    """The precondition of a comparison with the published map over the grid: the trained cells
    hold at least 2 cells of every stratum of the grid (:func:`map_strata`)."""
    have = pd.Series(map_strata(arch, _cells(rows)[["k1", "k2"]].to_numpy())).value_counts()
    short = sorted(h for h in map_shares(arch) if have.get(h, 0) < 2)
    text = (
        "the trained cells hold at least 2 cells of each stratum of the grid (published accuracy "
        "band, on the coarse grid or off it)"
    )
    return {text + (f"; too few in: {'; '.join(short)}" if short else ""): not short}


def cells_distance(rows: pd.DataFrame, arch: str) -> evidence.Interval:
    """Mean over a fixed set of trained cells (the width study's) of |our accuracy - the published
    accuracy| (per seed, a t-interval over seeds where every seed trained the same cells
    (:func:`seeds_balanced`); else over the cells, each at its seed mean)."""
    pub = lambda r: q.published_fig1_map(arch, r[["k1", "k2"]].to_numpy())  # noqa: E731
    if seeds_balanced(rows):
        per = [np.abs(g["test_acc"].to_numpy() - pub(g)).mean() for _, g in rows.groupby("seed")]
        return evidence.t_interval(per, bounds=(0, 1))
    c = _cells(rows)
    return evidence.runs_interval(np.abs(c["test_acc"].to_numpy() - pub(c)), (0, 1), "cells")


def map_distance(rows: pd.DataFrame, arch: str) -> evidence.Interval:
    """Mean over Fig. 1's grid of |our accuracy - the published accuracy|, from the trained cells
    (each at its seed mean) weighted by their strata's shares of the grid (:func:`map_strata`,
    :func:`nadcore.book.evidence.stratified_interval`): a campaign that trained the grid's easy
    cells first would otherwise speak for the whole map with them."""
    c = _cells(rows)
    cells = c[["k1", "k2"]].to_numpy()
    err = np.abs(c["test_acc"].to_numpy() - q.published_fig1_map(arch, cells))
    return evidence.stratified_interval(err, map_strata(arch, cells), map_shares(arch), (0, 1), "cells")


def map_pearson(rows: pd.DataFrame, arch: str) -> evidence.Interval:
    """Pearson correlation over the trained cells between our (seed-mean) map and the published
    one, with its Fisher-z interval over the cells."""
    c = _cells(rows)
    pub = q.published_fig1_map(arch, c[["k1", "k2"]].to_numpy())
    ours = c["test_acc"].to_numpy()
    r = float(np.corrcoef(ours, pub)[0, 1]) if len(c) > 2 and ours.std() > 0 and pub.std() > 0 else float("nan")
    return evidence.correlation_interval(r, len(c), what="cells")


def train_fit(rows: pd.DataFrame) -> evidence.Interval:
    """Mean final training accuracy over the trained cells (the interval over seeds where they
    are :func:`seeds_balanced`, else over the cells)."""
    if seeds_balanced(rows):
        return evidence.t_interval([g["train_acc"].mean() for _, g in rows.groupby("seed")], bounds=(0, 1))
    return evidence.runs_interval(_cells(rows)["train_acc"], (0, 1), "cells")


def frequency_gap(rows: pd.DataFrame, arch: str, low: int, high: int) -> evidence.Interval:
    """Mean test accuracy on the trained cells with max(|k1|, |k2|) <= low minus on >= high
    (seeds :func:`seeds_balanced`: a t-interval over seeds; else the cells' seed means, the
    interval paired per cell with ``arch``'s published map, which the claims compare it with on
    the same cells)."""
    if seeds_balanced(rows):
        gaps = [
            q.band_means(g["test_acc"].to_numpy()[None], g[["k1", "k2"]].to_numpy(), low, high)["gap"][0]
            for _, g in rows.groupby("seed")
        ]
        return evidence.t_interval(gaps, bounds=(-1, 1))
    c = _cells(rows)
    k = c[["k1", "k2"]].to_numpy()
    r = q.cell_radius(k)
    return evidence.paired_gap_interval(
        c["test_acc"], q.published_fig1_map(arch, k), r <= low, r >= high, (-1, 1), "cells"
    )


def published_gap(rows: pd.DataFrame, arch: str, low: int, high: int) -> float:
    """The same gap on the published map, over the same cells."""
    c = _cells(rows)
    pub = q.published_fig1_map(arch, c[["k1", "k2"]].to_numpy())
    return float(q.band_means(pub[None], c[["k1", "k2"]].to_numpy(), low, high)["gap"][0])


def diagnostic_table(frame: pd.DataFrame, arch: str, cells) -> pd.DataFrame:
    """The width study's cells of ``arch``: test accuracy (seed mean) per width, with the
    published full-width accuracy."""
    rows = on_cells(select(frame, arch), cells)
    table = rows.pivot_table(index=["k1", "k2"], columns="width", values="test_acc", aggfunc="mean")
    table.columns = [f"width {int(w)}" for w in table.columns]
    table["published (width 64)"] = q.published_fig1_map(arch, list(table.index))
    return table


def cell_runs(frames: dict, arch: str, cell, near: float = 0.01) -> pd.DataFrame:
    """Every run of ``arch`` on ``cell`` ``(k1, k2)`` or its transpose in ``frames`` (bundle name
    -> Fig. 1 rows), one row per bundle, width and recipe (a run trained in both precisions
    counts once, in float32): the seeds, the least, largest and mean test accuracy, a t-interval
    over seeds (NaN for one seed), how many runs land within ``near`` of the published
    full-width accuracy of the cell or above it, and that accuracy."""
    k1, k2 = (int(k) for k in cell)
    pub = float(q.published_fig1_map(arch, [(k1, k2)])[0])
    out = {}
    for name, frame in frames.items():
        if frame is None or frame.empty:
            continue
        rows = frame[frame["model"] == arch]
        rows = rows[((rows["k1"] == k1) & (rows["k2"] == k2)) | ((rows["k1"] == k2) & (rows["k2"] == k1))]
        for (w, r), g in rows.groupby(["width", "recipe"], sort=True):
            acc = select(g, arch, int(w), r)["test_acc"].to_numpy(dtype=float)
            iv = evidence.t_interval(acc, bounds=(0, 1)) if len(acc) >= 2 else None
            out[(name, int(w), r)] = {
                "seeds": len(acc),
                "min": acc.min(),
                "max": acc.max(),
                "mean": acc.mean(),
                "ci low": iv.low if iv else float("nan"),
                "ci high": iv.high if iv else float("nan"),
                "near": int((acc >= pub - near).sum()),
            }
    if not out:
        return pd.DataFrame()
    table = pd.DataFrame.from_dict(out, orient="index")
    table.index = table.index.set_names(["bundle", "width", "recipe"])
    table["published"] = pub
    return table


def fig6_curves(frame: pd.DataFrame, arch: str, width: int, sigma: float):
    """``(indices, accuracies (seeds, K))`` of one network and noise level along the NADs."""
    return _curves(select(frame, arch, width, sigma=float(sigma)))


def _curves(rows: pd.DataFrame):
    t = rows.pivot_table(index="seed", columns="nad_index", values="test_acc")
    return t.columns.to_numpy(), t.to_numpy()


def fig6_against_published(frame: pd.DataFrame, arch: str, width: int, sigma: float, published: pd.DataFrame):
    """:func:`fig6_curves` with each trained index's eigenvalue and the published curve's rows
    (``test_acc``, ``eigenvalue``) at the same indices: ``(indices, accuracies, eigenvalues,
    published)``."""
    rows = select(frame, arch, width, sigma=float(sigma))
    idx, acc = _curves(rows)
    ev = rows.groupby("nad_index")["eigenvalue"].first().reindex(idx).to_numpy()
    return idx, acc, ev, published[published["model"] == arch].set_index("nad_index").reindex(idx)


def fig6_summary(frame: pd.DataFrame, arch: str, width: int, sigma: float, published: pd.DataFrame) -> dict:
    """Fig. 6 in numbers for one network and noise level: first-vs-beyond gap (and, for one seed,
    the part of its interval more indices cannot shrink) and Spearman
    (eigenvalue, accuracy) with their intervals, mean |ours - published| at the same indices,
    and the published curve's own gap and Spearman there."""
    idx, acc, ev, pub = fig6_against_published(frame, arch, width, sigma, published)
    per = [q.nad_index_summary(idx, a, _by_index(idx, ev)) for a in acc]
    dist = np.abs(acc - pub["test_acc"].to_numpy()[None]).mean(1)
    floor = None
    if len(acc) >= 2:
        gap = evidence.t_interval([p["first_mean"] - p["beyond_mean"] for p in per], bounds=(-1, 1))
        rho = evidence.fisher_interval([p["spearman"] for p in per])
        d = evidence.t_interval(dist, bounds=(0, 1))
    else:
        a = acc[0]
        gap = evidence.paired_gap_interval(
            a, pub["test_acc"].to_numpy(), *q.first_and_beyond(idx), (-1, 1), "NAD indices"
        )
        rho = evidence.correlation_interval(per[0]["spearman"], len(idx), spearman=True, what="NAD indices")
        d = evidence.runs_interval(np.abs(a - pub["test_acc"].to_numpy()), (0, 1), "NAD indices")
        first = q.first_and_beyond(idx)[0]
        floor = (  # the first NADs are ten at most: past that, only more seeds narrow their side
            (a - pub["test_acc"].to_numpy())[first],
            q.FIRST_NADS,
            f"the first NADs ({int(first.sum())} of the {q.FIRST_NADS} there are trained), at their spread about "
            "the published curve,",
        )
    pub_sum = q.nad_index_summary(idx, pub["test_acc"].to_numpy(), _by_index(idx, pub["eigenvalue"].to_numpy()))
    return {
        "gap": gap,
        "gap_floor": floor,
        "spearman": rho,
        "distance": d,
        "indices": idx,
        "published_gap": pub_sum["first_mean"] - pub_sum["beyond_mean"],
        "published_spearman": pub_sum["spearman"],
    }


#: the stretches of the NAD sequence in :func:`fig6_stretches`: the first NADs, the fall, the approach
#: to chance, and two stretches of the tail
FIG6_STRETCHES = (0, 10, 100, 300, 700, 1024)


def fig6_stretches(
    frame: pd.DataFrame, arch: str, width: int, sigma: float, published: pd.DataFrame, edges=FIG6_STRETCHES
) -> pd.DataFrame:
    """Where along the NAD sequence a network's curve departs from its published one: per stretch
    ``[edges[k], edges[k+1])`` of its trained indices, how many, the mean accuracy (ours, over
    seeds and indices) and the published one at the same indices, and the Spearman rank
    correlation of accuracy with eigenvalue there (ours: the mean over seeds), as in
    :func:`fig6_summary` over the whole sequence."""
    idx, acc, ev, pub = fig6_against_published(frame, arch, width, sigma, published)
    out = {}
    for lo, hi in zip(edges[:-1], edges[1:]):
        sel = (idx >= lo) & (idx < hi)
        if not sel.any():
            continue
        ours, theirs = acc[:, sel], pub["test_acc"].to_numpy()[sel]
        ranked = sel.sum() >= 3  # a rank correlation over fewer indices says nothing
        out[f"{lo}-{hi - 1}"] = {
            "indices": int(sel.sum()),
            "accuracy": float(ours.mean()),
            "published accuracy": float(theirs.mean()),
            "spearman": float(q.rank_correlations(ours, ev[sel]).mean()) if ranked else np.nan,
            "published spearman": float(q.rank_correlations(theirs, pub["eigenvalue"].to_numpy()[sel])[0])
            if ranked
            else np.nan,
        }
    return pd.DataFrame.from_dict(out, orient="index").rename_axis("NAD indices")


def bias_difference(
    frame: pd.DataFrame, arch: str, width, other: str, other_width, sigma: float, below: int = 700
) -> evidence.Interval:
    """How much lower ``arch``'s Fig. 6 curve lies than ``other``'s: the mean, over the NAD
    indices both were trained on below ``below`` (past index 700 every network is at chance), of
    the difference of their seed-mean test accuracies, with a t-interval over those indices
    (negative: ``arch`` learns fewer of its NADs, the stronger directional bias)."""
    (i0, a0), (i1, a1) = (fig6_curves(frame, a, w, sigma) for a, w in ((arch, width), (other, other_width)))
    idx = np.intersect1d(i0, i1)
    idx = idx[idx < below]
    m0 = np.nanmean(a0, axis=0)[np.searchsorted(i0, idx)]
    m1 = np.nanmean(a1, axis=0)[np.searchsorted(i1, idx)]
    return evidence.runs_interval(m0 - m1, (-1, 1), "NAD indices")


def fig6_spans(indices) -> bool:
    """Whether a Fig. 6 curve (its NAD indices) spans the sequence, from the first NADs (0-9) to
    past index 700, as its claims need: a campaign's curve enters the book once it does."""
    return all(bool(end.any()) for end in q.first_and_beyond(indices))


def sigma_preference(
    frame: pd.DataFrame, arch: str, width: int, published: pd.DataFrame, sigmas=(3.0, 1.0)
) -> evidence.Interval:
    """How much closer the curve at ``sigmas[1]`` is to the published one than at
    ``sigmas[0]``: mean over the shared NAD indices of |acc(sigma_0) - published| -
    |acc(sigma_1) - published| (positive: sigma_1 fits better), paired per index."""
    (i0, a0), (i1, a1) = (fig6_curves(frame, arch, width, s) for s in sigmas)
    idx = np.intersect1d(i0, i1)
    pub = published[published["model"] == arch].set_index("nad_index")["test_acc"].reindex(idx).to_numpy()
    m0 = a0.mean(0)[np.searchsorted(i0, idx)]
    m1 = a1.mean(0)[np.searchsorted(i1, idx)]
    return evidence.runs_interval(np.abs(m0 - pub) - np.abs(m1 - pub), (-1, 1), "NAD indices")


def share_interval(flags) -> evidence.Interval:
    """The share of true ``flags`` (one per trained cell) with its t-interval over the cells."""
    return evidence.runs_interval(np.asarray(flags, dtype=float), (0, 1), "cells")


def _by_index(idx, values) -> np.ndarray:
    full = np.full(int(np.max(idx)) + 1, np.nan)
    full[np.asarray(idx, dtype=int)] = values
    return full
