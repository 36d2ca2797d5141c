"""Summaries of a directional bias (chapter 6): accuracy maps over Fourier directions, NAD spectra,
and the follow-up paper's margin quantity alpha(v).

* :func:`quadrant_grid`: the frequencies ``k1, k2 >= 0`` of a Fig.-1 map. The distribution of the
  test accuracy over initialisations and data is symmetric under mirroring the image (which maps
  frequency ``(k1, k2)`` to ``(k1, -k2)`` and ``(-k1, k2)``) and under transposing it, so the
  quadrant carries the whole map at a quarter of the cost.
* :func:`map_summary`: per seed, the mean accuracy near the centre and off the centre, the number
  of off-centre *islands* (cells learned well although far from the low frequencies) and the
  spread of the map.
* :func:`alpha`: eq. (2) of Ortiz-Jimenez et al., "A neural anisotropic view of
  underspecification" (2021): ``alpha(v) = v^T E_theta[grad_x f grad_x f^T] v``, which the paper
  says the test accuracy on D(v) increases with.
* :func:`spectrum_summary`: how concentrated a NAD spectrum is and where in frequency the input
  gradients put their energy.
"""
from __future__ import annotations

import numpy as np

from nadcore.data import FourierGrid, low_frequency_fraction
from nadcore.separability import frequency_radius

__all__ = ["quadrant_grid", "map_summary", "alpha", "spearman", "spectrum_summary", "nad_table"]


def quadrant_grid(ticks, size: int = 32) -> FourierGrid:
    """The grid of frequencies ``(k1, k2)`` with both in ``ticks`` (non-negative, increasing):
    cell (i, j) holds ``(ticks[i], ticks[j])``, the constant direction in the corner (0, 0).
    (Its ``ticks`` property, meant for centred grids, does not apply: use ``k1``/``k2``.)"""
    t = np.asarray(ticks, dtype=int)
    if t.ndim != 1 or t.size < 2 or t.min() < 0 or np.any(np.diff(t) <= 0) or t.max() > size // 2:
        raise ValueError(f"ticks must increase within [0, {size // 2}], got {list(ticks)}")
    k1, k2 = np.meshgrid(t, t, indexing="ij")
    return FourierGrid(size=size, grid=int(t.size), stride=int(t[1] - t[0]), k1=k1, k2=k2)


def map_summary(acc, grid: FourierGrid, off_centre: int = 8, island: float = 0.6) -> dict:
    """Per-seed summaries of accuracy maps ``acc`` (seeds, g, g) over ``grid``, each an array
    (seeds,): ``centre`` (mean over cells with ``max(|k1|, |k2|) < off_centre``), ``off_centre``
    (mean over the others), ``islands`` (fraction of off-centre cells with accuracy >= ``island``),
    ``spread`` (max - min over all cells) and ``std`` (standard deviation over all cells: 0 for a
    network that finds every direction equally easy)."""
    a = np.asarray(acc, dtype=float)
    far = frequency_radius(grid) >= off_centre
    flat = a.reshape(a.shape[0], -1)
    return {"centre": a[:, ~far].mean(1), "off_centre": a[:, far].mean(1),
            "islands": (a[:, far] >= island).mean(1), "spread": flat.max(1) - flat.min(1),
            "std": flat.std(1)}


def alpha(eigenvalues, nads, directions, normalise: bool = True) -> np.ndarray:
    """Eq. (2) of the underspecification paper, ``alpha(v) = v^T C v`` with
    ``C = sum_i lambda_i u_i u_i^T`` the gradient covariance (eigenvalues and NADs as rows), for
    every row ``v`` of ``directions`` (unit vectors). ``normalise``: divide by the mean eigenvalue
    ``tr C / D``, so that 1 means "as sensitive as the average direction" and architectures with
    different gradient scales can be compared."""
    lam = np.asarray(eigenvalues, dtype=np.float64)
    U = np.asarray(nads, dtype=np.float64)
    V = np.asarray(directions, dtype=np.float64).reshape(len(directions), -1)
    a = ((V @ U.T) ** 2) @ lam[: U.shape[0]]
    return a / lam.mean() if normalise else a


def spearman(a, b) -> float:
    """Spearman's rank correlation of two equal-length sequences (ties get average ranks)."""
    from scipy.stats import spearmanr

    return float(spearmanr(np.ravel(a), np.ravel(b))[0])


def spectrum_summary(eigenvalues, nads, k: int = 16, radius: float = 8.0) -> dict:
    """``top_k``: the share of the gradient energy ``E ||grad_x f||^2 = sum_i lambda_i`` in the
    first ``k`` NADs; ``low_frequency``: the share within Fourier radius ``radius`` of the zero
    frequency (``sum_i lambda_i`` times the share of NAD i's Fourier energy there); ``first_low``:
    that share for the first NAD alone."""
    lam = np.clip(np.asarray(eigenvalues, dtype=np.float64), 0.0, None)
    U = np.asarray(nads, dtype=np.float64)
    share = np.array([low_frequency_fraction(u, radius) for u in U])
    return {"top_k": float(lam[:k].sum() / lam.sum()),
            "low_frequency": float((lam[: len(U)] * share).sum() / lam[: len(U)].sum()),
            "first_low": float(share[0])}


def nad_table(sets: dict, indices, **columns):
    """The NAD images of a figure as a tidy table: one row per (set, NAD index, pixel) with the
    columns ``nads`` (the key of ``sets``: a NADResult or rows of NADs), ``index``, ``row``,
    ``col``, ``value``, plus constant ``columns``."""
    import pandas as pd

    frames = []
    for name, r in sets.items():
        U = np.asarray(r.nads if hasattr(r, "nads") else r)
        side = int(round(np.sqrt(U.shape[1])))
        rows, cols = np.divmod(np.arange(U.shape[1]), side)
        for i in indices:
            frames.append(pd.DataFrame({"nads": name, "index": i, "row": rows, "col": cols, "value": U[i],
                                        **columns}))
    return pd.concat(frames, ignore_index=True)
