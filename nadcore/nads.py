"""Neural anisotropy directions (NADs): Monte Carlo estimation, eigendecomposition, comparison.

Paper: Ortiz-Jimenez, Modas, Moosavi-Dezfooli, Frossard, "Neural Anisotropy Directions",
NeurIPS 2020, Sec. 3. The NADs of an architecture are the eigenvectors of the second moment of its
input sensitivity over random initialisations,

    C = E_theta[ g_theta(x) g_theta(x)^T ],

at a fixed point ``x ~ N(0, I)`` (or averaged over ``points`` such points), for networks in eval
mode with a scalar output. The sensitivities come from :mod:`nadcore.estimators` (``secant``,
the authors' step-100 central difference, or ``gradient``, exact autograd).

The estimate is accumulated in float64 without storing samples, in ``GROUPS`` = 8 groups by
network index modulo 8. The groups give two split halves (even and odd indices: their agreement
measures convergence) and a delete-one-group jackknife: the top NADs of each leave-one-group-out
estimate are kept, so any statistic of the NADs (an overlap with another NAD set, say) gets a
standard error (:func:`overlap_interval`). Network ``n`` of seed ``s`` is initialised from the
seed ``derived_seed(s, n)`` whatever the batching, the number of worker processes or the order.
"""
from __future__ import annotations

import json
import math
import multiprocessing as mp
import os
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

import nadcore
from nadcore import estimators as est
from nadcore import models as _models
from nadcore.utils import keep_freed_memory, resolve_device

__all__ = [
    "NADResult", "compute_nads", "cached_nads", "subspace_overlap", "identifiable_overlap",
    "overlap_interval", "gradient_covariance", "top_eigenvectors", "complete_basis", "OVERLAP_KS",
    "METHODS", "GROUPS",
]

METHODS = ("secant", "gradient")
OVERLAP_KS = (1, 4, 16, 64)
GROUPS = 8
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


# Accumulation and eigendecomposition
class _Accumulator:
    """Sums of g g^T per group of networks (index mod GROUPS), float64, and of g; only their lower
    triangles, in panels of ``PANEL`` rows (5/8 of the multiply-adds for D = 1024)."""

    FLUSH_ROWS = 256  # rows buffered per group before one D x D update (saves memory traffic)
    PANEL = 256

    def __init__(self, D: int):
        self.sums = np.zeros((GROUPS, D, D))
        self.counts = np.zeros(GROUPS, dtype=np.int64)
        self.total = np.zeros(D)
        self.pending: list[list[np.ndarray]] = [[] for _ in range(GROUPS)]

    def add(self, G: np.ndarray, indices: np.ndarray):
        grp = np.asarray(indices) % GROUPS
        for g in np.unique(grp):
            self.pending[g].append(np.asarray(G[grp == g], dtype=np.float64))
            if sum(len(r) for r in self.pending[g]) >= self.FLUSH_ROWS:
                self._flush(g)
        self.total += G.sum(0)

    def _flush(self, g: int):
        if self.pending[g]:
            Gg = torch.from_numpy(np.concatenate(self.pending[g]))
            S = torch.from_numpy(self.sums[g])
            # in place, with torch's threads (one per lane): no D x D temporary, and no second
            # BLAS thread pool competing with the lanes; row panel i..i+P up to its diagonal
            for i in range(0, S.shape[0], self.PANEL):
                j = min(i + self.PANEL, S.shape[0])
                S[i:j, :j].addmm_(Gg[:, i:j].T, Gg[:, :j])
            self.counts[g] += len(Gg)
            self.pending[g] = []

    def flush(self) -> "_Accumulator":
        for g in range(GROUPS):
            self._flush(g)
        return self

    def __getstate__(self):  # workers send their accumulator back flushed
        self.flush()
        return self.__dict__

    def merge(self, other: "_Accumulator"):
        self.flush()
        other.flush()
        self.sums += other.sums
        self.counts += other.counts
        self.total += other.total

    def covariance(self, groups=None) -> np.ndarray:
        """The second-moment estimate from the given groups (default: all)."""
        self.flush()
        groups = range(GROUPS) if groups is None else list(groups)
        lower = np.tril(sum(self.sums[g] for g in groups))
        return gradient_covariance(lower + np.tril(lower, -1).T, sum(self.counts[g] for g in groups))


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


def _top_subspace(M: np.ndarray, start: np.ndarray, k: int, iters: int = 3) -> np.ndarray:
    """Top-``k`` eigenvectors (rows) of ``M`` by block subspace iteration from ``start`` (rows, a
    few more than ``k``: the top eigenvectors of a nearby matrix), then Rayleigh-Ritz. Used for
    the leave-one-group-out estimates, which differ from the full one by 1/GROUPS of the
    networks: far cheaper than a full eigendecomposition each."""
    V = start.T
    for _ in range(iters):
        V, _ = np.linalg.qr(M @ V)
    w, Q = np.linalg.eigh(V.T @ M @ V)
    return (V @ Q[:, np.argsort(w)[::-1][:k]]).T


def _split_half(acc: _Accumulator) -> list[float]:
    """Overlaps of the two half estimates; NaN where k exceeds a half's rank (its sample count)."""
    halves = (range(0, GROUPS, 2), range(1, GROUPS, 2))
    (_, Va), (_, Vb) = (top_eigenvectors(acc.covariance(h), max(OVERLAP_KS)) for h in halves)
    rank = min(int(sum(acc.counts[g] for g in h)) for h in halves)
    return [subspace_overlap(Va, Vb, k) if k <= rank else float("nan") for k in OVERLAP_KS]


# Comparing NAD sets
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
    n = min(int(a.meta.get("networks", 10 ** 9)), int(b.meta.get("networks", 10 ** 9)))
    return subspace_overlap(a.nads, b.nads, k) if k <= n else float("nan")


def overlap_interval(a: NADResult, other: np.ndarray, k: int, level: float = 0.95):
    """Overlap of ``a``'s top-``k`` NADs with the rows of ``other``, with a delete-one-group
    jackknife interval over ``a``'s Monte Carlo noise: ``(value, low, high)``.

    ``value`` is the full estimate's overlap; the standard error is
    ``sqrt((G-1)/G * sum_g (o_g - mean o)^2)`` over the G leave-one-group-out overlaps ``o_g``,
    and the interval ``value +- t_{G-1} * se`` clipped to [0, 1]."""
    from scipy.stats import t

    value = subspace_overlap(a.nads, other, k)
    jk = a.extras.get("jackknife_nads")
    if jk is None or k > jk.shape[1]:
        return value, float("nan"), float("nan")
    o = np.array([subspace_overlap(V, other, k) for V in jk])
    G = len(o)
    se = math.sqrt((G - 1) / G * np.sum((o - o.mean()) ** 2))
    half = float(t.ppf(0.5 + level / 2, G - 1)) * se
    return value, max(0.0, value - half), min(1.0, value + half)


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


# Estimation
def _worker(args) -> _Accumulator:
    spec, input_shape, seed, start, stop, method, step, device, chunk, strategy, points, precision = args
    acc = _Accumulator(int(np.prod(input_shape)))
    est.sample_range(spec, input_shape, seed, start, stop, method, step, device, chunk, acc.add,
                     threads=None if device.startswith("cuda") else 1, strategy=strategy,
                     points=points, precision=precision)
    return acc


class _Lanes:
    """``lanes`` threads in this process, each running one contiguous share of the networks with
    its own accumulator and one torch thread (numpy and torch release the GIL while they work);
    torch's thread count is restored afterwards. Same shares and merge order as worker
    processes, so the estimate does not depend on which of the two runs it."""

    def __init__(self, lanes: int):
        self.lanes, self.ex = lanes, ThreadPoolExecutor(lanes)
        self.threads = torch.get_num_threads()

    def map(self, fn, jobs):
        torch.set_num_threads(1)
        try:
            return list(self.ex.map(fn, jobs))
        finally:
            torch.set_num_threads(self.threads)

    def shutdown(self):
        self.ex.shutdown()


def compute_nads(model="lenet", input_shape=(1, 32, 32), num_networks: int = 1000, seed: int = 0,
                 method: str = "secant", step: float = 100.0, device="auto", chunk: int | None = None,
                 workers: int | str = "auto", checkpoints=None, progress: bool = False,
                 strategy: str = "auto", points: int = 1, top_k_checkpoints: int = 64,
                 precision: str = "float32", lanes: int | str = "auto") -> NADResult:
    """Estimate the NADs of ``model`` (registry name, ``"pkg.mod:factory"`` or a factory).

    ``num_networks`` random initialisations; ``method`` "secant" (step ``step``) or "gradient";
    ``points`` evaluation points per network (1: the authors' single point). On the CPU the
    networks are shared among ``lanes`` threads of one torch thread each ("auto": one per core)
    or, if asked, ``workers`` processes (string specs only). ``checkpoints``: network counts at
    which to record running estimates. ``strategy`` picks the sampling path
    (:mod:`nadcore.estimators`; float rounding apart, the same estimate). ``precision``: "float32"
    (IEEE, also on a GPU), or for the secant on a GPU "tf32" or "bf16" (tensor cores; see
    :func:`nadcore.estimators.precision_mode` for how far they move the sensitivities)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    input_shape = tuple(int(s) for s in input_shape)
    if len(input_shape) != 3 or min(input_shape) < 1:
        raise ValueError(f"input_shape must be (C, H, W) with positive sizes, got {input_shape}")
    num_networks, points = int(num_networks), int(points)
    if num_networks < 2:
        raise ValueError(f"num_networks must be at least 2 (got {num_networks})")
    if points < 1:
        raise ValueError(f"points must be at least 1 (got {points})")
    if method == "secant" and not (step > 0 and math.isfinite(step)):
        raise ValueError(f"step must be a positive finite number, got {step}")
    if precision not in est.PRECISIONS or (precision != "float32" and method != "secant"):
        raise ValueError(f"precision must be one of {est.PRECISIONS} (tf32 and bf16 for the secant only), "
                         f"got {precision!r} with method {method!r}")
    if strategy not in est.STRATEGIES:
        raise ValueError(f"strategy must be one of {est.STRATEGIES}, got {strategy!r}")
    dev = resolve_device(device)
    keep_freed_memory()  # every device: the parameters are drawn on the CPU, by threads
    # Build once in the parent: a clear error for a bad spec or a wrong output shape.
    probe = _models.build_model(model, input_shape[0], 1, input_shape[-1], check=False)
    _models.check_model_output(probe, input_shape, 1, model)
    spec_name = _models.spec_name(model)

    cps = sorted({int(c) for c in (checkpoints or []) if 2 <= int(c) < num_networks}) + [num_networks]
    # "auto": no worker processes; the lanes (threads) below use every core without the start-up
    # of processes (seconds each) and give the same estimate.
    if workers == "auto":
        workers = 1
    workers = max(1, int(workers)) if isinstance(model, str) else 1  # callables cannot travel
    if lanes == "auto":
        lanes = (os.cpu_count() or 1) if dev.type == "cpu" else 1
    lanes = 1 if workers > 1 else max(1, min(int(lanes), num_networks))
    D = int(np.prod(input_shape))
    total = _Accumulator(D)
    ck_n, ck_nads, ck_split = [], [], []
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=num_networks, desc=f"{method} NADs of {spec_name}", unit="net")
    t0 = time.perf_counter()
    if workers > 1:
        pool = ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn"))
    else:
        pool = _Lanes(lanes) if lanes > 1 else None
    shares = max(workers, lanes)
    try:
        start = 0
        for stop in cps:
            if pool is None:
                est.sample_range(model, input_shape, seed, start, stop, method, step, dev, chunk,
                                 total.add, progress=bar.update if bar else None, strategy=strategy,
                                 points=points, precision=precision)
            else:
                bounds = np.linspace(start, stop, shares + 1).astype(int)
                jobs = [(model, input_shape, seed, int(a), int(b), method, step, str(dev), chunk,
                         strategy, points, precision) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
                for acc in pool.map(_worker, jobs):
                    total.merge(acc)
                if bar:
                    bar.update(stop - start)
            start = stop
            if len(cps) > 1:
                ck_n.append(stop)
                ck_nads.append(top_eigenvectors(total.covariance(), top_k_checkpoints)[1].astype(np.float32))
                ck_split.append(_split_half(total))
    finally:
        if pool is not None:
            pool.shutdown()
        if bar:
            bar.close()
    seconds = time.perf_counter() - t0
    eigenvalues, nads = top_eigenvectors(total.covariance())
    rank = int(min(total.counts.sum(), D))
    if rank < D:  # past the rank the eigenvectors are an arbitrary basis: use the one of complete_basis
        eigenvalues[rank:] = 0.0
        nads = complete_basis(nads[:rank]).astype(nads.dtype)
    start = nads[:JACKKNIFE_K + 32]
    jk = np.stack([_top_subspace(total.covariance([h for h in range(GROUPS) if h != g]), start, JACKKNIFE_K)
                   for g in range(GROUPS) if total.counts[g] > 0]).astype(np.float32)
    meta = {
        "model": spec_name, "input_shape": list(input_shape), "networks": num_networks,
        "seed": int(seed), "method": method, "step": float(step) if method == "secant" else None,
        "points": points, "device": str(dev), "workers": workers, "lanes": lanes,
        "precision": precision,
        "sampling_seconds": round(seconds, 3), "networks_per_second": round(num_networks / seconds, 3),
        "nadcore_version": nadcore.__version__, "torch_version": torch.__version__,
        "estimator": "uncentered second moment",
        "mean_sensitivity_norm": float(np.linalg.norm(total.total / (num_networks * points))),
    }
    extras = {"jackknife_nads": jk, "split_half": np.array(ck_split[-1] if ck_split else _split_half(total))}
    if ck_n:
        extras.update(checkpoint_networks=np.array(ck_n), checkpoint_nads=np.stack(ck_nads),
                      checkpoint_split_half=np.array(ck_split), overlap_ks=np.array(OVERLAP_KS))
    return NADResult(eigenvalues, nads.astype(np.float32), meta, extras)


def cached_nads(model="lenet", method: str = "secant", num_networks: int = 1000, seed: int = 0,
                input_shape=(1, 32, 32), step: float = 100.0, cache=None, device="auto",
                checkpoints=None, progress: bool = False, workers="auto", points: int = 1,
                precision: str = "float32") -> NADResult:
    """:func:`compute_nads` through the content-addressed cache (key: the model's
    :func:`nadcore.models.spec_key`, input shape, networks, seed, method, step, points, and the
    code fingerprint; and ``precision`` when not float32). A cached entry serves any request
    whose ``checkpoints`` it already holds;
    otherwise it is recomputed with them. Factories given as callables are not cached."""
    from nadcore.cache import Cache

    if not isinstance(model, str):
        return compute_nads(model, input_shape, num_networks, seed, method, step, device,
                            checkpoints=checkpoints, progress=progress, workers=workers, points=points,
                            precision=precision)
    cache = cache if cache is not None else Cache()
    config = {**_models.spec_key(model), "input_shape": [int(s) for s in input_shape],
              "networks": int(num_networks), "seed": int(seed), "method": method,
              "step": float(step) if method == "secant" else None, "points": int(points)}
    if precision != "float32":
        config["precision"] = precision
    wanted = sorted({int(c) for c in (checkpoints or []) if 2 <= int(c) < num_networks})
    hit = cache.load("nads", config)
    if hit is not None:
        arrays, meta = hit
        if set(wanted) <= {int(c) for c in arrays.get("checkpoint_networks", [])}:
            arrays = dict(arrays)
            return NADResult(arrays.pop("eigenvalues"), arrays.pop("nads"), meta, arrays)
    r = compute_nads(model, input_shape, num_networks, seed, method, step, device,
                     checkpoints=wanted, progress=progress, workers=workers, points=points,
                     precision=precision)
    cache.save("nads", config, r.to_arrays(), r.meta)
    return r
