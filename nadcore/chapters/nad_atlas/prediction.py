"""Chapter 7's test of the paper's thesis as a tool: Fig. 1 predicted from a network's NADs
(:func:`nadcore.nads.predict.predicted_fig1_map`), scored against a measured map.

A map is scored on its distinct cells: the authors' published Fig. 1 holds one value per class
of cells under the mirror ``k2 -> -k2`` (they computed one half-plane of frequencies and mirrored
it), so the 256 cells of the 16x16 grid carry 144 values; counting a copied cell twice would
narrow every interval for nothing. :func:`prediction_agreement` gives the two scores the claims
use, both free of any fitted parameter:

* the rank correlation between the predicted score and the measured accuracy (Spearman, with
  its Fisher-z interval over the distinct cells): does the prediction order the directions as
  the network's accuracy does?
* the AUC that separates the learnable cells (accuracy >= 0.9) from the chance cells (<= 0.6),
  the cells in between left out: does a learnable direction score above a chance one?

:func:`cells_spanning_prediction` picks the cells an atlas architecture is trained on before any
training: cells whose predicted scores are evenly spaced over the map's range, so that the
trained cells test the whole range of the prediction rather than its ends.
"""

from __future__ import annotations

import numpy as np

from nadcore.book.evidence import auc_interval, correlation_interval, spearman
from nadcore.data.directions import FourierGrid

__all__ = [
    "LEARNABLE",
    "CHANCE",
    "ATLAS_CELLS",
    "mirror_classes",
    "class_means",
    "prediction_agreement",
    "cells_spanning_prediction",
]

#: a cell the network learned (published accuracy at least this), and one left at chance (at most)
LEARNABLE, CHANCE = 0.9, 0.6

#: the cells each atlas architecture of ``predict_models`` is trained on, fixed before any of them
#: was trained: :func:`cells_spanning_prediction` (12 cells) of the map predicted from the cpu
#: profile's gradient NADs (256 networks, seed 0; ``python -m nadcore predict`` prints the same)
ATLAS_CELLS = {
    "MLP-Mixer/4": [
        [-4, -4],
        [2, -6],
        [-6, -4],
        [-2, 0],
        [6, -16],
        [-10, -10],
        [8, -16],
        [0, -16],
        [-8, -16],
        [-8, -8],
        [-16, -16],
        [0, 0],
    ],
    "ResMLP/4": [
        [-10, -2],
        [-4, -6],
        [-12, -6],
        [-6, 0],
        [-12, -8],
        [-2, -12],
        [8, 0],
        [-16, 0],
        [-8, 0],
        [-8, -16],
        [8, -8],
        [-16, -16],
    ],
    "ViT/8": [
        [-2, -6],
        [-16, -2],
        [6, 0],
        [2, -16],
        [4, -10],
        [2, -12],
        [-12, -16],
        [4, -12],
        [8, 0],
        [12, -8],
        [-16, -4],
        [0, -16],
    ],
    "ConvNeXt": [
        [12, -16],
        [-14, 0],
        [-12, -4],
        [-8, -8],
        [0, -8],
        [-10, -14],
        [-2, -10],
        [-4, -2],
        [-4, 0],
        [0, -2],
        [-6, -2],
        [2, -10],
    ],
}


def _wrap(k: int, size: int) -> int:
    half = size // 2
    return int((k + half) % size - half)


def mirror_classes(grid: FourierGrid) -> list[list[int]]:
    """The classes of ``grid``'s cells (row-major flat indices) under ``k2 -> -k2`` (modulo the
    image size), in order of their first cell: the distinct values of a published Fig. 1 map."""
    index = {f: n for n, f in enumerate(grid.frequencies)}
    seen, classes = set(), []
    for n, (k1, k2) in enumerate(grid.frequencies):
        if n in seen:
            continue
        members = sorted({n, index.get((k1, _wrap(-k2, grid.size)), n)})
        seen.update(members)
        classes.append(members)
    return classes


def class_means(values, classes) -> np.ndarray:
    """The mean of ``values`` (a map, flattened row-major) over each class, NaN cells left out
    (NaN where a class has no value)."""
    flat = np.ravel(np.asarray(values, dtype=np.float64))
    out = np.full(len(classes), np.nan)
    for c, members in enumerate(classes):
        v = flat[members]
        v = v[np.isfinite(v)]
        if v.size:
            out[c] = v.mean()
    return out


def prediction_agreement(predicted, measured, grid: FourierGrid | None = None) -> dict:
    """How well a predicted map (positive scores) orders a measured accuracy map: ``rank``
    (Spearman's correlation with its Fisher-z interval), ``auc`` (learnable against chance cells,
    Hanley-McNeil interval), ``cells`` (the distinct cells with a measured value), ``learnable``
    and ``chance`` (how many of them). ``grid``: the maps' Fig. 1 grid (their cells are averaged
    over :func:`mirror_classes`); None: the maps are already one value per distinct cell
    (``measured`` may hold NaN for cells never trained)."""
    p = np.log10(np.ravel(np.asarray(predicted, dtype=np.float64)))
    m = np.ravel(np.asarray(measured, dtype=np.float64))
    if grid is not None:
        classes = mirror_classes(grid)
        p, m = class_means(p, classes), class_means(m, classes)
    ok = np.isfinite(m) & np.isfinite(p)
    p, m = p[ok], m[ok]
    n = int(ok.sum())
    rank = correlation_interval(spearman(p, m), n, spearman=True, what="distinct cells")
    decided = (m >= LEARNABLE) | (m <= CHANCE)
    auc = auc_interval(p[decided], m[decided] >= LEARNABLE, what="distinct cells")
    return {
        "rank": rank,
        "auc": auc,
        "cells": n,
        "learnable": int((m >= LEARNABLE).sum()),
        "chance": int((m <= CHANCE).sum()),
    }


def cells_spanning_prediction(predicted, grid: FourierGrid, n: int) -> list[tuple[int, int]]:
    """``n`` cells of ``grid`` whose predicted scores (log scale) lie nearest to ``n`` evenly
    spaced values from the lowest to the highest score of the ``predicted`` map, one per class
    of :func:`mirror_classes` and never a cell's transpose twice (a network learns the
    transposed direction as well, in distribution): the cells to train before knowing how they
    turn out. Spacing by value, not by quantile, keeps a map whose scores form two clusters
    (the alias set of a patch embedding and the rest) from sending nearly every cell to the
    larger cluster."""
    classes = mirror_classes(grid)
    freqs = grid.frequencies
    score = class_means(np.log10(np.asarray(predicted, dtype=np.float64)), classes)
    picked, seen = [], set()
    for target in np.linspace(score.min(), score.max(), n):
        for c in sorted(range(len(classes)), key=lambda i: (abs(score[i] - target), i)):
            k1, k2 = freqs[classes[c][0]]
            if {(k1, k2), (k2, k1)} & seen:
                continue
            seen.update({(k1, k2), (k2, k1)})
            picked.append((k1, k2))
            break
    return picked
