"""Linear separability experiments on D(v): the paper's Figs. 1-3 and 6.

Ortiz-Jimenez et al., "Neural Anisotropy Directions", NeurIPS 2020, Sec. 2 (Figs. 1-3: D(v) for
Fourier directions v) and Sec. 4.1 (Fig. 6: D(u_i) for the NADs u_i). One *run* trains a fresh
network on independent train/test draws of D(v); a run is identified by its direction label
(a frequency ``[k1, k2]`` or a NAD index) and its seed, which alone decide its data,
initialisation and batch order. Runs are grouped into :class:`nadcore.experiments.runner.Job` s
of ``chunk`` runs trained together by :func:`nadcore.train.train_many`.
"""
from __future__ import annotations

import time
from typing import Sequence

import numpy as np
import pandas as pd
import torch
from scipy.stats import spearmanr

from nadcore.data.directions import directional_train_test, fourier_basis_vector
from nadcore.experiments.cache import Cache
from nadcore.experiments.runner import Job, collect, run_jobs
from nadcore.nads.covariance import OVERLAP_KS
from nadcore.nads.published import FIG6_COLUMNS, load_published_fig6
from nadcore.nets import build_model, spec_key
from nadcore.nads.published import load_published_fig1
from nadcore.runtime import derived_seed, digest, generator, resolve_device
from nadcore.theory.pooling import bayes_accuracy_linear, pooling_operator
from nadcore.train import train_many, train_side_by_side

__all__ = ["directional_job", "direction_jobs", "directions_sweep", "fourier_sweep", "grid_sweep",
           "select_cells", "covering_subgrid", "RESULT_KEYS", "steps_per_run", "iterations_to_loss",
           "censored_iterations", "frequency_radius", "cell_radius", "band_means",
           "nad_index_summary", "rank_correlations", "fourier_table", "nad_table",
           "published_fig6_table", "published_fig1_map", "pooling_bayes_map", "fig1_regions",
           "transpose_asymmetry", "split_half_table"]

RESULT_KEYS = ("test_acc", "train_acc", "train_loss", "iter_loss", "iters_to_loss")
_DATA_KEYS = ("n_train", "n_test", "sigma", "epsilon", "signal")


def steps_per_run(settings: dict) -> int:
    """SGD steps of one run: ``epochs * ceil(n_train / batch_size)``."""
    return int(settings["epochs"]) * -(-int(settings["n_train"]) // int(settings.get("batch_size", 128)))


def _run_seed(seed: int, tag: str, label) -> int:
    parts = label if isinstance(label, list) else [label]
    return derived_seed(seed, int(digest(tag, 8), 16), *[int(p) % (1 << 31) for p in parts], len(parts))


def directional_job(config: dict, vectors, device: str = "auto"):
    """Train ``config["model"]`` on D(v) for each run of ``config["runs"]`` (``[label, seed]``
    pairs, one row of ``vectors`` each); the job function of chapter 3.

    Returns arrays ``test_acc``, ``train_acc``, ``train_loss`` (R,), ``iter_loss`` (R, T) and
    ``iters_to_loss`` (R,; -1 = never reached; threshold ``config["train"]["loss_threshold"]``,
    default 0.1, averaged over ``loss_window`` = 20 iterations), and meta (seconds, device).
    ``config["outputs"]``: 1 (one logit, logistic loss) or 2 (two logits and cross-entropy, as
    the authors trained). ``config["train"]["trainer"]``: ``"many"`` (the default:
    :func:`nadcore.train.train_many`, which trains networks with BatchNorm or Dropout one at a
    time) or ``"side_by_side"`` (:func:`nadcore.train.train_side_by_side`: any architecture, all
    runs of the job at once, dropout masks from per-run generators; the paper profile's big
    networks on a GPU), with ``autocast`` ("bf16" or None; applied on CUDA only, recorded in the
    meta).
    """
    t0 = time.perf_counter()
    dev = resolve_device(device)
    vectors = torch.as_tensor(np.asarray(vectors, dtype=np.float32))
    tr = dict(config["train"])
    thr = float(tr.pop("loss_threshold", 0.1))
    window = int(tr.pop("loss_window", 20))
    trainer = tr.pop("trainer", "many")
    autocast = tr.pop("autocast", None)
    autocast = autocast if dev.type == "cuda" else None  # bf16 autocast is for the GPU
    if trainer not in ("many", "side_by_side"):
        raise ValueError(f"trainer must be 'many' or 'side_by_side', got {trainer!r}")
    d, K = config["data"], int(config.get("outputs", 1))
    models, xs, ys, xts, yts, gens, dgens = [], [], [], [], [], [], []
    for v, (label, seed) in zip(vectors, config["runs"]):
        s = _run_seed(int(seed), config.get("tag", ""), label)
        x, y, xt, yt = directional_train_test(v, int(d["n_train"]), int(d["n_test"]), float(d["sigma"]),
                                              float(d["epsilon"]), generator=generator(s, 0),
                                              signal=d.get("signal", "paper"))
        if K == 2:  # the authors' two outputs: class 0 is y = +1
            y, yt = (y < 0).long(), (yt < 0).long()
        models.append(build_model(config["model"], v.shape[0], K, v.shape[-1], seed=(s, 1), check=False))
        xs.append(x), ys.append(y), xts.append(xt), yts.append(yt)
        gens.append(generator(s, 2))
        dgens.append(generator(s, 3, device=dev))
    if trainer == "side_by_side":
        res = train_side_by_side(models, xs, ys, generators=gens, dropout_generators=dgens, device=dev,
                                 xs_test=xts, ys_test=yts, autocast=autocast, **tr)
    else:
        res = train_many(models, xs, ys, generators=gens, device=dev, xs_test=xts, ys_test=yts, **tr)
    il = np.stack([r.iter_loss for r in res]).astype(np.float32)
    arrays = {
        "test_acc": np.array([r.test_acc for r in res], dtype=np.float64),
        "train_acc": np.array([r.train_acc for r in res], dtype=np.float64),
        "train_loss": np.array([r.train_loss for r in res], dtype=np.float64),
        "iter_loss": il,
        "iters_to_loss": iterations_to_loss(il, thr, window),
    }
    meta = {"seconds": time.perf_counter() - t0, "device": str(dev), "threads": torch.get_num_threads(),
            "trainer": trainer, "autocast": autocast}
    if dev.type == "cuda":
        meta["gpu"] = torch.cuda.get_device_name(dev)
    return arrays, meta


def direction_jobs(vectors, labels: Sequence, seeds: Sequence[int], *, model, settings: dict,
                   chunk: int = 8, tag: str = "", device: str = "auto", outputs: int = 1,
                   balance: int = 1) -> list[Job]:
    """Jobs of ``chunk`` runs over every (seed, direction): seed-major order, so that results
    reshape to (len(seeds), len(vectors)). ``settings``: n_train, n_test, sigma, epsilon, signal
    and the keywords of :func:`nadcore.train.train_many` (epochs, max_lr, ...); ``labels`` (JSON
    ints or int lists, e.g. ``[k1, k2]`` or a NAD index) and ``tag`` seed each run.
    ``balance`` > 1 (the number of workers): as many jobs as a multiple of it, of at most
    ``chunk`` runs and near-equal sizes, so that no worker idles while one finishes a big job."""
    vectors = np.asarray(vectors, dtype=np.float32)
    if len(vectors) != len(labels):
        raise ValueError(f"{len(vectors)} vectors but {len(labels)} labels")
    labels = [[int(a) for a in l] if isinstance(l, (list, tuple, np.ndarray)) else int(l) for l in labels]
    data = {k: settings[k] for k in _DATA_KEYS if k in settings}
    train = {k: v for k, v in settings.items() if k not in _DATA_KEYS}
    runs = [(i, [labels[i], int(s)]) for s in seeds for i in range(len(vectors))]
    if balance > 1:
        n_jobs = -(-len(runs) // chunk)  # ceil
        n_jobs = min(len(runs), -(-n_jobs // balance) * balance)
        cuts = np.linspace(0, len(runs), n_jobs + 1).round().astype(int)
    else:
        cuts = np.r_[np.arange(0, len(runs), chunk), len(runs)]
    jobs = []
    for a, b in zip(cuts[:-1], cuts[1:]):
        part = runs[a:b]
        V = vectors[[i for i, _ in part]]
        config = {**spec_key(model), "runs": [r for _, r in part], "tag": tag, "vectors": digest(V),
                  "train": train, "data": data, "outputs": int(outputs)}
        jobs.append(Job(config=config, data={"vectors": V, "device": str(device)}))
    return jobs


def directions_sweep(model, vectors, labels, settings: dict, *, seeds: Sequence[int] = (0,),
                     chunk: int = 8, tag: str = "", executor=None, cache: Cache | None = None,
                     progress=False, device: str = "auto", outputs: int = 1, balance: int = 1) -> dict:
    """Train ``model`` on D(v) for every direction and seed. Returns :data:`RESULT_KEYS` arrays
    of shape (len(seeds), len(vectors), ...), plus ``compute_seconds`` (summed over jobs, as
    measured when they ran) and ``jobs``."""
    jobs = direction_jobs(vectors, labels, seeds, model=model, settings=settings, chunk=chunk,
                          tag=tag, device=device, outputs=outputs, balance=balance)
    res = run_jobs(jobs, directional_job, executor=executor, cache=cache, progress=progress)
    S, V = len(seeds), len(vectors)
    out = {k: collect(res, k).reshape(S, V, *collect(res, k).shape[1:]) for k in RESULT_KEYS}
    out["compute_seconds"] = float(sum(m.get("seconds", 0.0) for _, m in res))
    out["jobs"] = len(jobs)
    return out


def fourier_sweep(model, frequencies, settings: dict, *, size: int = 32, **kw) -> dict:
    """Train ``model`` on D(v) for every Fourier direction ``(k1, k2)`` of ``frequencies`` and
    every seed: :func:`directions_sweep`'s arrays of shape (seeds, cells, ...), plus
    ``frequencies``. Runs are labelled (and seeded) by their frequency, so the same frequency with
    the same settings is the same run (and cache entry) whichever grid or cell list asks for it."""
    freqs = [(int(a), int(b)) for a, b in frequencies]
    V = np.stack([fourier_basis_vector(a, b, size).numpy() for a, b in freqs])
    out = directions_sweep(model, V, [list(f) for f in freqs], settings, tag="fourier", **kw)
    out["frequencies"] = freqs
    return out


def grid_sweep(model, grid, settings: dict, *, transpose_symmetric: bool = False, **kw) -> dict:
    """:func:`fourier_sweep` over every cell of ``grid`` (a :class:`nadcore.data.FourierGrid`):
    the paper's Figs. 1-3. Arrays reshaped to (seeds, g, g, ...), plus ``grid``, ``frequencies``
    (row-major) and ``trained`` (g, g): which cells were trained.

    ``transpose_symmetric``: train only the cells with k1 <= k2 and give cell (k2, k1) the runs of
    (k1, k2). Exact in distribution when the architecture's random initialisation is invariant
    under transposing the image (square kernels and pooling windows with i.i.d. weights, as in
    LeNet, logistic regression and the paper's other networks): transposing every image of
    D(v(k1, k2)) gives D(v(k2, k1)), the Fourier direction being cos + sin of
    2 pi (k1 m + k2 n) / size, and the transposed network is as likely as the original. It saves
    g (g - 1) / 2 of the g^2 runs; per-seed averages over the grid stay unbiased."""
    freqs = [(int(a), int(b)) for a, b in grid.frequencies]
    if transpose_symmetric:
        cells = [f for f in freqs if f[0] <= f[1]]
        pos = {f: i for i, f in enumerate(cells)}
        missing = [f for f in freqs if (min(f), max(f)) not in pos]
        if missing:
            raise ValueError(f"the grid is not symmetric under transposition: {missing[:3]} have no mirror cell")
        pick = np.array([pos[(min(f), max(f))] for f in freqs])
        trained = np.array([f[0] <= f[1] for f in freqs])
    else:
        cells, pick, trained = freqs, np.arange(len(freqs)), np.ones(len(freqs), dtype=bool)
    out = fourier_sweep(model, cells, settings, size=grid.size, **kw)
    g = grid.shape
    res = {k: out[k][:, pick].reshape(out[k].shape[0], *g, *out[k].shape[2:]) for k in RESULT_KEYS}
    res.update(grid=grid, frequencies=freqs, trained=trained.reshape(g),
               compute_seconds=out["compute_seconds"], jobs=out["jobs"])
    return res


def select_cells(result: dict, cells) -> dict:
    """The runs of a :func:`fourier_sweep` / :func:`grid_sweep` ``result`` at the frequencies
    ``cells`` (which it must hold): :data:`RESULT_KEYS` arrays (seeds, len(cells), ...) and
    ``frequencies``, the same runs without training them again."""
    freqs = [tuple(f) for f in result["frequencies"]]
    cells = [(int(a), int(b)) for a, b in cells]
    missing = [c for c in cells if c not in freqs]
    if missing:
        raise ValueError(f"cells {missing} are not among the result's frequencies")
    pick = [freqs.index(c) for c in cells]
    lead = 3 if "grid" in result else 2  # (seeds, g, g, ...) or (seeds, cells, ...)
    out = {}
    for k in RESULT_KEYS:
        a = np.asarray(result[k])
        out[k] = a.reshape(a.shape[0], len(freqs), *a.shape[lead:])[:, pick]
    out["frequencies"] = cells
    return out


def covering_subgrid(grid, frequencies):
    """The coarsest ``grid.subgrid(every)`` (every = 8, 4, 2 or 1) holding every frequency of
    ``frequencies``: where a few cells are drawn in the layout of the full map."""
    want = {(int(a), int(b)) for a, b in frequencies}
    for every in (8, 4, 2, 1):
        sub = grid.subgrid(every) if every > 1 else grid
        if want <= set(sub.frequencies):
            return sub
    raise ValueError(f"frequencies {sorted(want - set(grid.frequencies))} are not cells of the grid")


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


def censored_iterations(iters, budget: int) -> np.ndarray:
    """:func:`iterations_to_loss` values with the censored runs (-1: never reached) counted as
    the whole ``budget``, as floats: averages of them are lower bounds on the true mean."""
    a = np.asarray(iters)
    return np.where(a >= 0, a, int(budget)).astype(np.float64)


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


def nad_index_summary(indices, acc, eigenvalues, first: int = 10, beyond: int = 700) -> dict:
    """Fig. 6 in numbers for one seed: mean accuracy on the first ``first`` NADs and on NADs past
    ``beyond``, and the Spearman rank correlation between the eigenvalue lambda_i and the accuracy
    on D(u_i) over the trained indices (positive: larger eigenvalue, easier to learn)."""
    idx = np.asarray(indices, dtype=int)
    acc = np.asarray(acc, dtype=float)
    lo, hi = acc[idx < first], acc[idx > beyond]
    return {"first_mean": float(lo.mean()) if lo.size else float("nan"),
            "beyond_mean": float(hi.mean()) if hi.size else float("nan"),
            "first_n": int(lo.size), "beyond_n": int(hi.size),
            "spearman": float(rank_correlations(acc, np.asarray(eigenvalues, dtype=float)[idx])[0])}


def rank_correlations(acc, reference) -> np.ndarray:
    """Spearman rank correlation of each seed's accuracies (seeds, K) with ``reference`` (K,),
    e.g. the eigenvalues of the trained NADs or the published accuracies at the same indices:
    one value per seed (NaN where either side is constant)."""
    a = np.atleast_2d(np.asarray(acc, dtype=np.float64))
    ref = np.asarray(reference, dtype=np.float64)
    out = []
    for row in a:
        ok = np.isfinite(row) & np.isfinite(ref)
        same = np.ptp(row[ok]) == 0 or np.ptp(ref[ok]) == 0 if ok.sum() > 1 else True
        out.append(float("nan") if same else float(spearmanr(row[ok], ref[ok])[0]))
    return np.array(out)


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
                rows.append({name: label, "k1": k1, "k2": k2, "seed": int(seed),
                             **{k: arrays[k][s, c].item() for k in keys}, "trained": bool(trained[c])})
    return pd.DataFrame(rows, columns=[name, "k1", "k2", "seed", *keys, "trained"])


def nad_table(model: str, estimator: str, indices, result: dict, seeds, eigenvalues):
    """Fig. 6 rows of one NAD set: ``model, estimator, nad_index, seed, test_acc, train_acc,
    eigenvalue, eigenvalue_ratio`` (lambda_i / lambda_0) from a :func:`directions_sweep` result
    over the NADs ``indices``."""
    ev = np.asarray(eigenvalues, dtype=np.float64)
    rows = [{"model": model, "estimator": estimator, "nad_index": int(i), "seed": int(seed),
             "test_acc": float(result["test_acc"][s, j]), "train_acc": float(result["train_acc"][s, j]),
             "eigenvalue": float(ev[i]), "eigenvalue_ratio": float(ev[i] / ev[0]) if ev[0] > 0 else float("nan")}
            for s, seed in enumerate(seeds) for j, i in enumerate(indices)]
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
        frames.append(pd.DataFrame({"model": m, "nad_index": df.index.to_numpy(dtype=int),
                                    "test_acc": df[f"acc_{c}"].to_numpy(dtype=np.float64),
                                    "eigenvalue": ev, "eigenvalue_ratio": ev / ev[0]}))
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
        rows[label] = {"networks": n, "points": int(r.meta.get("points", 1) or 1),
                       **{f"k={k}": (float(v) if k <= n // 2 else float("nan")) for k, v in zip(OVERLAP_KS, last)}}
    return pd.DataFrame.from_dict(rows, orient="index")


def published_fig1_map(model: str, frequencies) -> np.ndarray:
    """The authors' published Fig. 1 accuracies of ``model`` (:func:`nadcore.nads.published.load_published_fig1`)
    at the cells ``frequencies`` ((k1, k2) pairs or a FourierGrid, row-major), as a flat array."""
    pub = load_published_fig1([model]).set_index(["k1", "k2"])["test_acc"]
    freqs = frequencies.frequencies if hasattr(frequencies, "frequencies") else frequencies
    return np.array([pub.loc[(int(a), int(b))] for a, b in freqs], dtype=np.float64)


def pooling_bayes_map(frequencies, size: int = 32, pools: int = 2, epsilon: float = 1.0,
                      sigma: float = 3.0) -> np.ndarray:
    """Theorem 1 on a grid: the Bayes accuracy on D(v(k1, k2)) (``x = epsilon y v + w``) after
    ``pools`` stacked 2x2 average poolings of a ``size`` x ``size`` image (a linear stand-in for
    LeNet's two max poolings), for each cell of ``frequencies`` ((k1, k2) pairs or a FourierGrid),
    from :func:`nadcore.theory.pooling.bayes_accuracy_linear` with the separable 2-D pooling
    operator. 0.5: the pooling blinds the direction; the Fourier direction is the data's
    ``cos + sin`` of 2 pi (k1 m + k2 n) / size."""
    P, d = np.eye(size), size
    for _ in range(pools):
        P, d = pooling_operator(d, 2) @ P, d // 2
    P2 = np.kron(P, P)
    m = np.arange(size)
    freqs = frequencies.frequencies if hasattr(frequencies, "frequencies") else frequencies
    out = []
    for a, b in freqs:
        theta = 2 * np.pi * (int(a) * m[:, None] + int(b) * m[None, :]) / size
        v = (np.cos(theta) + np.sin(theta)).ravel()
        out.append(bayes_accuracy_linear(P2, v / np.linalg.norm(v), epsilon, sigma))
    return np.array(out)


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


def transpose_asymmetry(acc_map) -> float:
    """Mean |A - A^T| of a square Fig. 1 map (rows k1, columns k2, the same frequencies on both
    axes): 0 for a map symmetric under (k1, k2) -> (k2, k1)."""
    a = np.asarray(acc_map, dtype=np.float64)
    return float(np.nanmean(np.abs(a - a.T)))
