"""Chapter 3's quantities: the paper's Figs. 1, 2, 3 and 6 in numbers, from the runs of
:mod:`nadcore.chapters.linear_separability.runs` (arrays of shape (seeds, cells, ...)) and from
the authors' published data.

* Fig. 2: :func:`iterations_to_loss`, :func:`censored_iterations`;
* Figs. 1 and 3: :func:`band_means` (low vs high frequencies), :func:`cell_radius`,
  :func:`fig1_regions`, :func:`transpose_asymmetry`, the published map (:func:`published_fig1_map`)
  and Theorem 1's map for LeNet's two poolings (:func:`pooling_bayes_map`);
* Fig. 6: :func:`nad_index_summary`, :func:`rank_correlations`, the published curves
  (:func:`published_fig6_table`);
* the figures' tidy tables: :func:`fourier_table`, :func:`nad_index_table`, :func:`split_half_table`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from nadcore.book.intervals import spearman
from nadcore.data.directions import fourier_basis_vector
from nadcore.nads.covariance import OVERLAP_KS
from nadcore.nads.published import FIG6_COLUMNS, load_published_fig6, published_fig1_map
from nadcore.theory.pooling import bayes_accuracy_map, stacked_pooling_operator_2d

__all__ = [
    "BLIND",
    "RECIPES_COMPARED",
    "blind_and_seen",
    "seed_mean",
    "iterations_to_loss",
    "censored_iterations",
    "frequency_radius",
    "cell_radius",
    "band_means",
    "nad_index_summary",
    "rank_correlations",
    "fourier_table",
    "nad_index_table",
    "published_fig6_table",
    "published_fig1_map",
    "pooling_bayes_map",
    "fig1_regions",
    "region_mean",
    "transpose_asymmetry",
    "split_half_table",
]


# --------------------------------------------------------------------------------------------
# Summaries
# --------------------------------------------------------------------------------------------
def iterations_to_loss(iter_loss, threshold: float = 0.1, window: int = 20) -> int | None:
    """Iterations needed to reach a small training loss (the paper's Fig. 2).

    The first iteration (1-based count) at which the mean of the last ``window`` mini-batch losses
    falls below ``threshold``; ``None`` if it never does (the run is censored at its length).
    Accepts one run's losses (T,) or a batch (M, T) and then returns an int array with -1 for
    censored runs.
    """
    a = np.asarray(iter_loss, dtype=np.float64)
    if a.ndim == 2:
        out = np.array([iterations_to_loss(r, threshold, window) or -1 for r in a], dtype=np.int64)
        return out
    if a.size == 0:
        return None
    w = max(1, min(int(window), a.size))
    c = np.cumsum(np.r_[0.0, a])
    ma = (c[w:] - c[:-w]) / w  # ma[j] = mean of a[j : j + w]
    hit = np.nonzero(ma < threshold)[0]
    return int(hit[0] + w) if hit.size else None


def censored_iterations(iters, budget) -> np.ndarray:
    """:func:`iterations_to_loss` values with the censored runs (-1: never reached) counted as
    the whole ``budget`` (one for all, or one per run), as floats: averages of them are lower
    bounds on the true mean."""
    a = np.asarray(iters)
    return np.where(a >= 0, a, np.asarray(budget, dtype=np.int64)).astype(np.float64)


def frequency_radius(grid) -> np.ndarray:
    """``max(|k1|, |k2|)`` of every cell of a Fourier grid (the paper's distance from the centre)."""
    return np.maximum(np.abs(grid.k1), np.abs(grid.k2))


def cell_radius(frequencies) -> np.ndarray:
    """``max(|k1|, |k2|)`` of cells given as (k1, k2) pairs or as a FourierGrid (row-major)."""
    if hasattr(frequencies, "k1"):  # a FourierGrid
        return frequency_radius(frequencies).ravel()
    f = np.asarray(frequencies, dtype=int).reshape(-1, 2)
    return np.abs(f).max(1)


def band_means(values, frequencies, low: int = 4, high: int = 8) -> dict:
    """Per-seed means of ``values`` (seeds, cells) or (seeds, g, g) over the low frequencies
    (``max(|k1|, |k2|) <= low``) and the high ones (``>= high``), and their difference: arrays
    ``low``, ``high`` and ``gap`` = low - high, one value per seed (NaN cells are skipped; a band
    without cells gives NaN). ``frequencies``: the cells' ``(k1, k2)`` in the values' order, or
    the :class:`nadcore.data.FourierGrid` of (seeds, g, g) maps. The paper's Figs. 1-3 in numbers."""
    r = cell_radius(frequencies)
    v = np.asarray(values, dtype=np.float64)
    v = v.reshape(v.shape[0], -1)
    if v.shape[1] != r.size:
        raise ValueError(f"{v.shape[1]} cells of values but {r.size} frequencies")

    def mean(sel):
        part = v[:, sel]
        ok = np.isfinite(part)
        with np.errstate(invalid="ignore"):
            return np.where(ok.any(1), np.nansum(part, 1) / np.maximum(ok.sum(1), 1), np.nan)

    lo, hi = mean(r <= low), mean(r >= high)
    return {"low": lo, "high": hi, "gap": lo - hi}


FIRST_NADS, BEYOND_NADS = 10, 700


def first_and_beyond(indices) -> tuple[np.ndarray, np.ndarray]:
    """Fig. 6's two ends over NAD indices, as masks: the first NADs (0-9) and the NADs past
    index 700."""
    idx = np.asarray(indices, dtype=int)
    return idx < FIRST_NADS, idx > BEYOND_NADS


def nad_index_summary(indices, acc, eigenvalues) -> dict:
    """Fig. 6 in numbers for one seed: mean accuracy on the first NADs and on NADs past index 700
    (:func:`first_and_beyond`), and the Spearman rank correlation between the eigenvalue lambda_i
    and the accuracy on D(u_i) over the trained indices (positive: larger eigenvalue, easier to
    learn)."""
    idx = np.asarray(indices, dtype=int)
    acc = np.asarray(acc, dtype=float)
    first, beyond = first_and_beyond(idx)
    lo, hi = acc[first], acc[beyond]
    return {
        "first_mean": float(lo.mean()) if lo.size else float("nan"),
        "beyond_mean": float(hi.mean()) if hi.size else float("nan"),
        "first_n": int(lo.size),
        "beyond_n": int(hi.size),
        "spearman": float(rank_correlations(acc, np.asarray(eigenvalues, dtype=float)[idx])[0]),
    }


def rank_correlations(acc, reference) -> np.ndarray:
    """Spearman rank correlation (:func:`nadcore.book.evidence.spearman`) of each seed's
    accuracies (seeds, K) with ``reference`` (K,), e.g. the eigenvalues of the trained NADs or
    the published accuracies at the same indices: one value per seed (NaN where either side is
    constant)."""
    return np.array([spearman(row, reference) for row in np.atleast_2d(np.asarray(acc, dtype=np.float64))])


# --------------------------------------------------------------------------------------------
# Tidy tables (the figures' data)
# --------------------------------------------------------------------------------------------
def fourier_table(results: dict, seeds, keys=("test_acc", "train_acc"), name: str = "model"):
    """One row per entry of ``results`` (label -> :func:`fourier_sweep` or :func:`grid_sweep`
    result), cell and seed: ``name, k1, k2, seed, *keys, trained`` (Fig. 1: ``model, k1, k2, seed,
    test_acc, train_acc, trained``; ``trained`` False: the cell holds its transpose's runs, see
    :func:`grid_sweep`)."""
    rows = []
    for label, r in results.items():
        freqs = r["frequencies"]
        arrays = {k: np.asarray(r[k]).reshape(len(seeds), len(freqs)) for k in keys}
        trained = np.asarray(r.get("trained", np.ones(len(freqs), dtype=bool))).reshape(-1)
        for s, seed in enumerate(seeds):
            for c, (k1, k2) in enumerate(freqs):
                rows.append(
                    {
                        name: label,
                        "k1": k1,
                        "k2": k2,
                        "seed": int(seed),
                        **{k: arrays[k][s, c].item() for k in keys},
                        "trained": bool(trained[c]),
                    }
                )
    return pd.DataFrame(rows, columns=[name, "k1", "k2", "seed", *keys, "trained"])


def nad_index_table(model: str, estimator: str, indices, result: dict, seeds, eigenvalues):
    """Fig. 6 rows of one NAD set: ``model, estimator, nad_index, seed, test_acc, train_acc,
    eigenvalue, eigenvalue_ratio`` (lambda_i / lambda_0) from a :func:`directions_sweep` result
    over the NADs ``indices``."""
    ev = np.asarray(eigenvalues, dtype=np.float64)
    rows = [
        {
            "model": model,
            "estimator": estimator,
            "nad_index": int(i),
            "seed": int(seed),
            "test_acc": float(result["test_acc"][s, j]),
            "train_acc": float(result["train_acc"][s, j]),
            "eigenvalue": float(ev[i]),
            "eigenvalue_ratio": float(ev[i] / ev[0]) if ev[0] > 0 else float("nan"),
        }
        for s, seed in enumerate(seeds)
        for j, i in enumerate(indices)
    ]
    return pd.DataFrame(rows)


def published_fig6_table(models=None, root=None):
    """The authors' published Fig. 6 (:func:`nadcore.nads.published.load_published_fig6`) as tidy rows
    ``model, nad_index, test_acc, eigenvalue, eigenvalue_ratio`` for ``models`` (default: all
    four: lenet, resnet18, densenet121, vgg11)."""
    df = load_published_fig6(root)
    frames = []
    for m in models or list(FIG6_COLUMNS):
        c = FIG6_COLUMNS[m]
        ev = df[f"eig_{c}"].to_numpy(dtype=np.float64)
        frames.append(
            pd.DataFrame(
                {
                    "model": m,
                    "nad_index": df.index.to_numpy(dtype=int),
                    "test_acc": df[f"acc_{c}"].to_numpy(dtype=np.float64),
                    "eigenvalue": ev,
                    "eigenvalue_ratio": ev / ev[0],
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def split_half_table(results: dict):
    """Convergence of NAD estimates (label -> :class:`nadcore.nads.NADResult`): networks,
    evaluation points and the split-half subspace overlap at k = 1, 4, 16, 64 at the full count
    (``extras["split_half"]``; NaN where k exceeds the networks in a half)."""
    rows = {}
    for label, r in results.items():
        n = int(r.meta.get("networks", 0))
        sh = r.extras.get("split_half")
        last = np.asarray(sh, dtype=float) if sh is not None else np.full(len(OVERLAP_KS), np.nan)
        rows[label] = {
            "networks": n,
            "points": int(r.meta.get("points", 1) or 1),
            **{f"k={k}": (float(v) if k <= n // 2 else float("nan")) for k, v in zip(OVERLAP_KS, last)},
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def pooling_bayes_map(
    frequencies, size: int = 32, pools: int = 2, epsilon: float = 1.0, sigma: float = 3.0
) -> np.ndarray:
    """Theorem 1 on a grid (:func:`nadcore.theory.pooling.bayes_accuracy_map`): the Bayes
    accuracy on D(v(k1, k2)) after ``pools`` stacked 2x2 average poolings of a ``size`` x ``size``
    image (a linear stand-in for LeNet's two max poolings), for each cell of ``frequencies``
    ((k1, k2) pairs or a FourierGrid), v the data's Fourier direction
    (:func:`nadcore.data.fourier_basis_vector`). 0.5: the pooling blinds the direction."""
    freqs = frequencies.frequencies if hasattr(frequencies, "frequencies") else frequencies
    V = [fourier_basis_vector(int(a), int(b), size).numpy() for a, b in freqs]
    return bayes_accuracy_map(stacked_pooling_operator_2d(size, pools), V, epsilon, sigma)


def fig1_regions(grid, low: int = 4, blind: int = 8, island: int = 12) -> dict:
    """Boolean masks (flat, row-major over ``grid``) of the parts of a Fig. 1 map that LeNet's
    pooling shapes (see :func:`pooling_bayes_map`): ``core`` (max(|k1|, |k2|) <= low), ``blind
    lines`` (|k1| or |k2| = blind), ``islands`` (on an axis at |k| = island) and ``other high``
    (the remaining cells with max(|k1|, |k2|) >= blind)."""
    k1, k2 = np.asarray(grid.k1).ravel(), np.asarray(grid.k2).ravel()
    r = np.maximum(np.abs(k1), np.abs(k2))
    lines = (np.abs(k1) == blind) | (np.abs(k2) == blind)
    isl = ((k1 == 0) & (np.abs(k2) == island)) | ((k2 == 0) & (np.abs(k1) == island))
    return {"core": r <= low, "blind lines": lines, "islands": isl, "other high": (r >= blind) & ~lines & ~isl}


def region_mean(acc_map, mask) -> float:
    """Mean of a Fig. 1 map (any shape, row-major over the grid) over the cells of ``mask``
    (:func:`fig1_regions`); NaN for an empty region."""
    mask = np.asarray(mask, dtype=bool)
    return float(np.asarray(acc_map, dtype=np.float64).ravel()[mask].mean()) if mask.any() else float("nan")


def transpose_asymmetry(acc_map) -> float:
    """Mean |A - A^T| of a square Fig. 1 map (rows k1, columns k2, the same frequencies on both
    axes): 0 for a map symmetric under (k1, k2) -> (k2, k1)."""
    a = np.asarray(acc_map, dtype=np.float64)
    return float(np.nanmean(np.abs(a - a.T)))


#: a Fig. 3 cell is one where the pooled network is blind when its published Fig. 1 accuracy is
#: below this (halfway from chance to LeNet's typical 0.6-0.8), else one where it sees
BLIND = 0.55
#: the recipe check's two recipes (names in the chapter's ``recipes``): the campaign's and the
#: alternative it is measured against
RECIPES_COMPARED = ("authors", "follow-up")


def blind_and_seen(cells, published) -> tuple[np.ndarray, dict]:
    """Which ``cells`` ((k1, k2, ...) tuples) a pooled network is blind on in its published map
    (accuracy below :data:`BLIND`), and the two lists as text (``cells_blind``, ``cells_seen``)."""
    blind = np.asarray(published) < BLIND
    text = {
        f"cells_{side}": ", ".join(str((int(c[0]), int(c[1]))) for c, b in zip(cells, blind) if b == (side == "blind"))
        for side in ("blind", "seen")
    }
    return blind, text


def seed_mean(a) -> np.ndarray:
    """The mean over the first (seeds) axis."""
    return np.asarray(a, dtype=float).mean(0)
