"""The gradient covariance and its eigenvectors, the NADs; comparing NAD sets.

Paper: Ortiz-Jimenez, Modas, Moosavi-Dezfooli, Frossard, "Neural Anisotropy Directions",
NeurIPS 2020, Sec. 3. The NADs of an architecture are the eigenvectors of the second moment of its
input sensitivity over random initialisations,

    C = E_theta[ g_theta(x) g_theta(x)^T ],

estimated by Monte Carlo, ``C_hat = (1/N) sum_n g_n g_n^T`` (:func:`gradient_covariance`), and
ordered by decreasing eigenvalue (:func:`top_eigenvectors`).

The sum is accumulated in float64 without storing samples, in ``GROUPS`` = 8 groups by network
index modulo 8 (:class:`GroupSums`). The groups give two split halves (even and odd indices:
their agreement measures convergence, :func:`split_half_overlaps`) and a delete-one-group
jackknife of any statistic of the NADs (:func:`jackknife_statistic`, :func:`overlap_interval`).
The order of every floating-point addition is fixed by the definition, not by how the work was
shared out: group ``g`` adds its networks ``g, g + 8, g + 16, ...`` in chunks of ``CHUNK``
networks, in order, and the groups are summed in order. So an estimate has the same bits
whether it was computed in one go or with running estimates along the way, by one thread or
several (tests/test_nads.py).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from scipy.stats import t as student_t

__all__ = [
    "NADResult",
    "GroupSums",
    "gradient_covariance",
    "covariance_of",
    "top_eigenvectors",
    "top_subspace",
    "split_half_overlaps",
    "subspace_overlap",
    "identifiable_overlap",
    "overlap_interval",
    "jackknife_statistic",
    "complete_basis",
    "OVERLAP_KS",
    "GROUPS",
    "CHUNK",
    "JACKKNIFE_K",
]

OVERLAP_KS = (1, 4, 16, 64)
GROUPS = 8
#: networks of one group added to its sum at a time (the unit of the fixed summation order)
CHUNK = 32
#: top NADs kept per leave-one-group-out estimate (jackknife of overlaps up to this k)
JACKKNIFE_K = 64


# Result container
@dataclass
class NADResult:
    """Eigenvalues (descending), NADs (one unit vector per ROW, same order), metadata.

    ``extras`` holds optional arrays: ``checkpoint_networks`` (C,), ``checkpoint_nads`` (C, K, D)
    top NADs of the running estimate, ``checkpoint_split_half`` (C, len(OVERLAP_KS)) overlap of
    the two half estimates, ``split_half`` (len(OVERLAP_KS),) that overlap for all the networks,
    ``jackknife_nads`` (GROUPS, JACKKNIFE_K, D) top NADs of each leave-one-group-out estimate.
    """

    eigenvalues: np.ndarray
    nads: np.ndarray
    meta: dict
    extras: dict = field(default_factory=dict)

    @property
    def input_shape(self) -> tuple:
        side = int(math.isqrt(self.nads.shape[1]))
        return tuple(self.meta.get("input_shape", (1, side, side)))

    def nad(self, i: int) -> np.ndarray:
        """NAD ``i`` reshaped to the input shape."""
        return self.nads[i].reshape(self.input_shape)

    def normalized_spectrum(self) -> np.ndarray:
        """Eigenvalues divided by the largest one (the paper's Fig. 6 green curves)."""
        return self.eigenvalues / self.eigenvalues[0]

    def to_arrays(self) -> dict:
        return {"eigenvalues": self.eigenvalues, "nads": self.nads, **self.extras}

    def save(self, path) -> Path:
        """Write ``path`` (.npz): ``eigenvalues`` (D,), ``nads`` (D, D), ``meta`` (JSON string)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".part.npz")
        np.savez(tmp, meta=np.array(json.dumps(self.meta, sort_keys=True)), **self.to_arrays())
        os.replace(tmp, path)
        return path

    @classmethod
    def load(cls, path) -> "NADResult":
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        meta = json.loads(str(arrays.pop("meta"))) if "meta" in arrays else {}
        return cls(arrays.pop("eigenvalues"), arrays.pop("nads"), meta, arrays)


# --------------------------------------------------------------------------------------------
# Accumulation and eigendecomposition
# --------------------------------------------------------------------------------------------
class GroupSums:
    """The running sums of one group of networks: ``S = sum g g^T`` (float64, lower triangle, in
    panels of ``PANEL`` rows: 5/8 of the multiply-adds for D = 1024), ``total = sum g`` and the
    number of sensitivity rows. :meth:`add` takes one whole chunk of the group's networks at a
    time, in order; :meth:`with_rows` gives the sums as they would be after some more rows
    without changing them (a running estimate part-way through a chunk)."""

    PANEL = 256

    def __init__(self, D: int):
        self.S = np.zeros((D, D))
        self.total = np.zeros(D)
        self.count = 0

    @classmethod
    def _lower_update(cls, S: np.ndarray, G: np.ndarray) -> None:
        """``S += G^T G`` on the lower triangle, in place, in one fixed order: row panel
        ``i..i+P`` up to its diagonal, one product each, on torch's current threads (nadcore's
        NAD sampling runs each lane with one)."""
        Gt, St = torch.from_numpy(np.ascontiguousarray(G, dtype=np.float64)), torch.from_numpy(S)
        for i in range(0, St.shape[0], cls.PANEL):
            j = min(i + cls.PANEL, St.shape[0])
            St[i:j, :j].addmm_(Gt[:, i:j].T, Gt[:, :j])

    def add(self, G: np.ndarray) -> None:
        """Add the rows ``G`` (n, D) of one chunk."""
        if len(G):
            self._lower_update(self.S, G)
            self.total += np.asarray(G, dtype=np.float64).sum(0)
            self.count += len(G)

    def with_rows(self, G: np.ndarray) -> "GroupSums":
        """A copy of these sums with the rows ``G`` added (this object is left as it is)."""
        out = GroupSums.__new__(GroupSums)
        out.S, out.total, out.count = self.S.copy(), self.total.copy(), self.count
        out.add(G)
        return out


def covariance_of(groups, which=None) -> np.ndarray:
    """The second-moment estimate from the :class:`GroupSums` ``groups[g]`` for ``g`` in
    ``which`` (default: all), summed in ascending group order."""
    which = range(len(groups)) if which is None else sorted(which)
    lower = np.zeros_like(groups[0].S)
    for g in which:
        lower += groups[g].S
    lower = np.tril(lower)
    return gradient_covariance(lower + np.tril(lower, -1).T, sum(groups[g].count for g in which))


def gradient_covariance(sum_ggT: np.ndarray, n: int) -> np.ndarray:
    """Monte Carlo estimate ``(1/n) sum_i g_i g_i^T`` of ``E_theta[g g^T]`` (paper Sec. 3)."""
    return sum_ggT / max(int(n), 1)


def top_eigenvectors(M: np.ndarray, k: int | None = None):
    """Eigenvalues (descending, negative rounding clipped to 0) and eigenvectors (one per ROW, same
    order) of the symmetric matrix ``M``; the top ``k`` if given."""
    w, V = np.linalg.eigh(M)
    order = np.argsort(w)[::-1]
    w, V = w[order], V[:, order]
    if k is not None:
        w, V = w[:k], V[:, :k]
    return np.clip(w, 0.0, None), V.T.copy()


def top_subspace(M: np.ndarray, start: np.ndarray, k: int, iters: int = 3) -> np.ndarray:
    """Top-``k`` eigenvectors (rows) of ``M`` by block subspace iteration from ``start`` (rows, a
    few more than ``k``: the top eigenvectors of a nearby matrix), then Rayleigh-Ritz. Used for
    the leave-one-group-out estimates, which differ from the full one by 1/GROUPS of the
    networks: far cheaper than a full eigendecomposition each."""
    V = start.T
    for _ in range(iters):
        V, _ = np.linalg.qr(M @ V)
    w, Q = np.linalg.eigh(V.T @ M @ V)
    return (V @ Q[:, np.argsort(w)[::-1][:k]]).T


def split_half_overlaps(groups) -> list[float]:
    """Overlaps of the two half estimates (even and odd groups) at ``OVERLAP_KS``; NaN where k
    exceeds a half's rank (its sample count)."""
    halves = (range(0, GROUPS, 2), range(1, GROUPS, 2))
    (_, Va), (_, Vb) = (top_eigenvectors(covariance_of(groups, h), max(OVERLAP_KS)) for h in halves)
    rank = min(int(sum(groups[g].count for g in h)) for h in halves)
    return [subspace_overlap(Va, Vb, k) if k <= rank else float("nan") for k in OVERLAP_KS]


# --------------------------------------------------------------------------------------------
# Comparing NAD sets
# --------------------------------------------------------------------------------------------
def subspace_overlap(U: np.ndarray, V: np.ndarray, k: int) -> float:
    """``||U_k V_k^T||_F^2 / k`` for NAD sets stored one vector per ROW (1 = same subspace,
    about k/D for random subspaces)."""
    U = np.asarray(U, dtype=np.float64)[:k]
    V = np.asarray(V, dtype=np.float64)[:k]
    if U.shape[0] < k or V.shape[0] < k:
        raise ValueError(f"need at least k={k} NADs in both sets, got {U.shape[0]} and {V.shape[0]}")
    return float(np.sum((U @ V.T) ** 2) / k)


def identifiable_overlap(a: NADResult, b: NADResult, k: int) -> float:
    """:func:`subspace_overlap` of two NAD estimates, or NaN when ``k`` exceeds the number of
    networks behind either: an N-network estimate has rank <= N, and its NADs past N are an
    arbitrary basis of the null space."""
    n = min(int(a.meta.get("networks", 10**9)), int(b.meta.get("networks", 10**9)))
    return subspace_overlap(a.nads, b.nads, k) if k <= n else float("nan")


def jackknife_statistic(a: NADResult, statistic, k: int, level: float = 0.95, bounds=(-math.inf, math.inf)):
    """``statistic(U)`` of ``a``'s top-``k`` NADs ``U`` (one per row) with a delete-one-group
    jackknife interval over ``a``'s Monte Carlo noise: ``(value, low, high)``, NaN bounds where
    ``a`` kept fewer than ``k`` leave-one-group-out NADs.

    ``value`` is the full estimate's statistic; the standard error is
    ``sqrt((G-1)/G * sum_g (s_g - mean s)^2)`` over the G leave-one-group-out statistics ``s_g``,
    and the interval ``value +- t_{G-1} * se`` clipped to ``bounds``."""
    value = float(statistic(a.nads[:k]))
    jk = a.extras.get("jackknife_nads")
    if jk is None or k > jk.shape[1]:
        return value, float("nan"), float("nan")
    s = np.array([statistic(V[:k]) for V in jk], dtype=np.float64)
    G = len(s)
    se = math.sqrt((G - 1) / G * np.sum((s - s.mean()) ** 2))
    half = float(student_t.ppf(0.5 + level / 2, G - 1)) * se
    return value, max(bounds[0], value - half), min(bounds[1], value + half)


def overlap_interval(a: NADResult, other: np.ndarray, k: int, level: float = 0.95):
    """Overlap of ``a``'s top-``k`` NADs with the rows of ``other``, with a delete-one-group
    jackknife interval over ``a``'s Monte Carlo noise (:func:`jackknife_statistic`):
    ``(value, low, high)``."""
    return jackknife_statistic(a, lambda V: subspace_overlap(V, other, k), k, level, bounds=(0.0, 1.0))


def complete_basis(nads: np.ndarray) -> np.ndarray:
    """A full orthonormal basis ``(D, D)``, one vector per ROW, whose first K rows are the K <= D
    given NADs made orthonormal to float64 precision: rows that are already orthonormal up to
    float32 rounding (eigenvectors, the published NADs) get a few Newton-Schulz steps
    ``V <- 1.5 V - 0.5 V V^T V`` (they move by ~1e-6 and keep their order and signs); anything
    further from orthonormal goes through a QR decomposition (Gram-Schmidt in order, signs kept).
    The last D - K rows span the orthogonal complement (the published files hold 1023 of 1024
    NADs: the missing one is the direction of least variance and goes last): the complement's
    projection of a fixed Gaussian matrix (seed 0, part of this definition, not an experiment's
    randomness), orthonormalised in order, each row with its largest entry made positive. Unlike
    an eigenbasis of the (degenerate) complement, this basis moves continuously with the given
    NADs, so float rounding cannot swap it for another."""
    V = np.array(nads, dtype=np.float64)
    K, D = V.shape
    if K > D:
        raise ValueError(f"more NADs ({K}) than dimensions ({D})")
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    err = np.abs(V @ V.T - np.eye(K)).max()
    if err > 1e-3:
        Q, R = np.linalg.qr(V.T)
        d = np.sign(np.diag(R))
        d[d == 0] = 1.0
        V = (Q * d[None, :]).T
    else:
        for _ in range(5):
            if err < 1e-13:
                break
            V = 1.5 * V - 0.5 * (V @ V.T) @ V
            err = np.abs(V @ V.T - np.eye(K)).max()
    if K == D:
        return V
    Q = np.random.default_rng(0).standard_normal((D, D - K))
    for _ in range(2):  # project out the NADs twice: orthogonal to float64 precision
        Q, _ = np.linalg.qr(Q - V.T @ (V @ Q))
    extra = Q.T
    extra *= np.sign(extra[np.arange(D - K), np.abs(extra).argmax(1)])[:, None]
    return np.vstack([V, extra])
