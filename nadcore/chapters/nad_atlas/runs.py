"""Chapter 7, a NAD atlas: the NADs of many architectures side by side, their fingerprints, and
the predictions tested on them.

The paper (Ortiz-Jimenez et al., NeurIPS 2020, Sec. 5) calls NADs "a signature" of an
architecture and leaves transformers for later. Here every architecture is a model spec
(:mod:`nadcore.nets.registry`: the paper's five, and timm / torchvision models built from
scratch for 1x32x32 inputs), its NADs a cached job (:func:`nadcore.book.nad_jobs.cached_nads`).

* :func:`atlas_nads`: the NADs of every architecture, and :func:`architecture_table` what they
  cost (parameters, networks, seconds) and how settled they are (split-half overlaps);
* :func:`fingerprint_distances`: the pairwise distance ``1 - overlap_k`` of the top-``k`` NAD
  subspaces (:func:`nadcore.nads.subspace_overlap`), :func:`fingerprint_tree` its average-linkage
  tree and :func:`describe_fingerprints` sentences written from those numbers;
* :func:`alias_fractions`: the patch-embedding prediction of :mod:`nadcore.theory.patches`, with
  its interval over the Monte Carlo groups of networks (:func:`nadcore.nads.jackknife_statistic`);
* :func:`random_directions` and :func:`index_sweep`: a Fig. 6-style run (accuracy on D(u_i) along
  the NAD index) with random directions as the control (:mod:`nadcore.chapters.linear_separability.runs`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import squareform

from nadcore.book.cache import Cache
from nadcore.book.nad_jobs import cached_nads
from nadcore.chapters.linear_separability.runs import directions_sweep
from nadcore.nads.covariance import OVERLAP_KS, NADResult, jackknife_statistic, subspace_overlap
from nadcore.nets import build_model
from nadcore.nets.hub import parameter_count
from nadcore.runtime import threads
from nadcore.theory.patches import alias_energy_fraction, token_alias_mask

__all__ = [
    "atlas_nads",
    "architecture_table",
    "fingerprint_distances",
    "distance_matrix",
    "fingerprint_tree",
    "split_half_overlap",
    "noise_floor",
    "distinct_architectures",
    "describe_fingerprints",
    "alias_fractions",
    "random_directions",
    "index_sweep",
    "index_table",
]


# --------------------------------------------------------------------------------------------
# NADs of every architecture
# --------------------------------------------------------------------------------------------
def atlas_nads(
    architectures: dict,
    networks,
    seed: int,
    *,
    method: str = "gradient",
    cache: Cache | None = None,
    device="auto",
    input_shape=(1, 32, 32),
) -> dict:
    """``{label: NADResult}``: the ``method`` NADs of every ``label: spec`` of ``architectures``
    from ``networks`` random networks (an int, or ``{label: int}`` with a ``"default"``), cached.

    The eigendecompositions behind each estimate run on one BLAS thread (:func:`nadcore.runtime.threads`)."""
    out = {}
    with threads(1, blas=True):
        for label, spec in architectures.items():
            n = networks if isinstance(networks, int) else int(networks.get(label, networks["default"]))
            out[label] = cached_nads(spec, method, n, seed, input_shape=input_shape, cache=cache, device=device)
    return out


def architecture_table(
    architectures: dict, families: dict, results: dict, k: int, input_shape=(1, 32, 32)
) -> pd.DataFrame:
    """One row per architecture: family, spec, parameters, the NAD estimate (method, networks,
    seconds of sampling and networks per second, as measured when it was computed) and its
    convergence (split-half overlap of the top-``k`` NADs; NaN when ``k`` exceeds a half)."""
    rows = []
    for label, spec in architectures.items():
        r = results[label]
        n = int(r.meta["networks"])
        model = build_model(spec, input_shape[0], 1, input_shape[-1], seed=0, check=False)
        rows.append(
            {
                "architecture": label,
                "family": families.get(label, "-"),
                "spec": spec,
                "parameters": parameter_count(model),
                "method": r.meta["method"],
                "networks": n,
                "seconds": float(r.meta.get("sampling_seconds", np.nan)),
                "networks/s": float(r.meta.get("networks_per_second", np.nan)),
                f"split-half k={k}": split_half_overlap(r, k),
            }
        )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# Fingerprints
# --------------------------------------------------------------------------------------------
def fingerprint_distances(results: dict, k: int) -> pd.DataFrame:
    """Every pair of architectures (``a < b`` in the given order): the top-``k`` subspace overlap
    of their NADs and the distance ``1 - overlap`` (0: the same subspace; about ``1 - k/D`` for
    unrelated ones)."""
    labels = list(results)
    rows = []
    for i, a in enumerate(labels):
        for b in labels[i + 1 :]:
            ov = subspace_overlap(results[a].nads, results[b].nads, k)
            rows.append({"a": a, "b": b, "k": int(k), "overlap": ov, "distance": 1.0 - ov})
    return pd.DataFrame(rows, columns=["a", "b", "k", "overlap", "distance"])


def distance_matrix(pairs: pd.DataFrame, labels) -> np.ndarray:
    """The square, symmetric distance matrix (zero diagonal) of :func:`fingerprint_distances`."""
    labels = list(labels)
    pos = {l: i for i, l in enumerate(labels)}
    M = np.zeros((len(labels), len(labels)))
    for a, b, d in pairs[["a", "b", "distance"]].itertuples(index=False):
        M[pos[a], pos[b]] = M[pos[b], pos[a]] = d
    return M


def fingerprint_tree(M: np.ndarray) -> np.ndarray:
    """Average-linkage (UPGMA) tree of the distance matrix ``M`` (scipy's linkage matrix)."""
    return linkage(squareform(M, checks=False), method="average")


def split_half_overlap(result: NADResult, k: int) -> float:
    """The overlap of the top-``k`` NADs of the two half estimates (even and odd networks) of
    ``result``; NaN when ``k`` is not one of ``OVERLAP_KS`` or exceeds the networks of a half."""
    sh = dict(zip(OVERLAP_KS, np.asarray(result.extras.get("split_half", [np.nan] * len(OVERLAP_KS)), float)))
    n = int(result.meta.get("networks", 0))
    return float(sh[k]) if k in sh and k <= n // 2 else float("nan")


def noise_floor(results: dict, k: int) -> dict:
    """``{label: 1 - split-half overlap of the top-k NADs}``: how far two estimates of the SAME
    architecture from half the networks each are apart (a pessimistic scale for the noise in a
    distance between two full estimates; NaN when ``k`` exceeds a half)."""
    return {label: 1.0 - split_half_overlap(r, k) for label, r in results.items()}


def distinct_architectures(M: np.ndarray, labels, floor: dict) -> tuple[list, list]:
    """``(distinct, told)``: the architectures whose nearest other architecture (distance matrix
    ``M``) is farther than their own split-half distance ``floor``, and those with a finite
    floor (for which the question can be asked)."""
    labels = list(labels)
    told = [l for l in labels if np.isfinite(floor.get(l, np.nan))]
    distinct = [
        l
        for i, l in enumerate(labels)
        if l in told and np.min(np.where(np.arange(len(labels)) == i, np.inf, M[i])) > floor[l]
    ]
    return distinct, told


def describe_fingerprints(M: np.ndarray, labels, families: dict, floor: dict, clusters: int) -> str:
    """Markdown sentences that say, from the numbers only, which architectures are close: the
    closest and farthest pairs, each architecture's nearest neighbour and whether it is nearer
    than the estimates' noise, and the groups of the tree cut into ``clusters`` clusters with the
    families they hold."""
    labels = list(labels)
    n = len(labels)
    iu = np.triu_indices(n, 1)
    order = np.argsort(M[iu])
    a, b = iu[0][order[0]], iu[1][order[0]]
    z, w = iu[0][order[-1]], iu[1][order[-1]]
    lines = [
        f"* Closest pair: **{labels[a]}** and **{labels[b]}** (distance {M[a, b]:.3f}); farthest: "
        f"**{labels[z]}** and **{labels[w]}** ({M[z, w]:.3f}). Median distance over all "
        f"{len(order)} pairs: {np.median(M[iu]):.3f}."
    ]
    apart, told = distinct_architectures(M, labels, floor)
    lines.append(
        f"* {len(apart)} of {len(told)} architectures are farther from every other one than "
        "their own two half-estimates are from each other (a distinct signature at this "
        "number of networks)" + (f": {', '.join(apart)}." if apart else ".")
    )
    if n > clusters >= 2:
        groups = fcluster(fingerprint_tree(M), clusters, criterion="maxclust")
        parts = []
        for g in sorted(set(groups), key=lambda g: min(np.flatnonzero(groups == g))):
            members = [labels[i] for i in np.flatnonzero(groups == g)]
            fams = sorted({families.get(m, "-") for m in members})
            parts.append(f"{{{', '.join(members)}}} ({'/'.join(fams)})")
        mixed = sum(len({families.get(labels[i], "-") for i in np.flatnonzero(groups == g)}) > 1 for g in set(groups))
        lines.append(
            f"* Cut into {clusters} clusters, the tree groups: "
            + "; ".join(parts)
            + f". {mixed} of the {len(set(groups))} clusters mix families."
        )
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Statistics of the top NADs, with their Monte Carlo uncertainty
# (:func:`nadcore.nads.jackknife_statistic`)
# --------------------------------------------------------------------------------------------
def alias_fractions(results: dict, patch_sizes, k: int, side: int = 32) -> pd.DataFrame:
    """For every architecture and patch size ``p``: the fraction of the Fourier energy of its
    top-``k`` NADs on the frequencies a stride-``p`` patch embedding folds onto the token grid's
    zero frequency (:func:`nadcore.theory.patches.token_alias_mask`), with its jackknife
    interval, and the fraction of all frequencies that set holds (what isotropic NADs would put
    there)."""
    rows = []
    for p in patch_sizes:
        mask = token_alias_mask(side, int(p))
        for label, r in results.items():
            v, lo, hi = jackknife_statistic(r, lambda U: alias_energy_fraction(U, mask), k)
            rows.append(
                {
                    "architecture": label,
                    "patch": int(p),
                    "k": int(k),
                    "fraction": v,
                    "low": lo,
                    "high": hi,
                    "chance": float(mask.mean()),
                }
            )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# A Fig. 6-style run: accuracy on D(u_i) along the NAD index, random directions as control
# --------------------------------------------------------------------------------------------
def random_directions(count: int, dim: int, seed: int) -> np.ndarray:
    """``count`` unit vectors drawn uniformly on the sphere of R^dim (rows), from a numpy
    generator seeded with ``seed``."""
    G = np.random.default_rng(seed).standard_normal((count, dim))
    return G / np.linalg.norm(G, axis=1, keepdims=True)


def index_sweep(
    model: str,
    result: NADResult,
    indices,
    random: np.ndarray,
    settings: dict,
    *,
    seeds,
    cache: Cache | None = None,
    executor=None,
    chunk: int = 8,
    device="auto",
) -> dict:
    """Train ``model`` on D(u_i) for the NADs ``indices`` of ``result`` and on D(r_j) for the
    ``random`` directions (rows), every seed: ``{"nads": sweep, "random": sweep}`` of
    :func:`nadcore.chapters.linear_separability.runs.directions_sweep` results (arrays (seeds, directions))."""
    idx = [int(i) for i in indices]
    shape = result.input_shape
    common = dict(
        seeds=list(seeds),
        cache=cache,
        executor=executor,
        chunk=chunk,
        device=device,
        balance=getattr(executor, "_max_workers", 1) or 1,
    )
    nad = directions_sweep(model, result.nads[idx].reshape(len(idx), *shape), idx, settings, tag="atlas-nad", **common)
    rnd = directions_sweep(
        model,
        np.asarray(random).reshape(len(random), *shape),
        list(range(len(random))),
        settings,
        tag="atlas-random",
        **common,
    )
    return {"nads": nad, "random": rnd}


def index_table(model: str, indices, sweep: dict, seeds, eigenvalues) -> pd.DataFrame:
    """Tidy rows of :func:`index_sweep`: ``model, direction ("nad"/"random"), index, seed,
    test_acc, train_acc, eigenvalue_ratio`` (NaN for random directions)."""
    ev = np.asarray(eigenvalues, dtype=float)
    rows = []
    for kind, res in (("nad", sweep["nads"]), ("random", sweep["random"])):
        n = res["test_acc"].shape[1]
        for s, seed in enumerate(seeds):
            for j in range(n):
                i = int(indices[j]) if kind == "nad" else j
                rows.append(
                    {
                        "model": model,
                        "direction": kind,
                        "index": i,
                        "seed": int(seed),
                        "test_acc": float(res["test_acc"][s, j]),
                        "train_acc": float(res["train_acc"][s, j]),
                        "eigenvalue_ratio": float(ev[i] / ev[0]) if kind == "nad" else float("nan"),
                    }
                )
    return pd.DataFrame(rows)
