"""Linear separability experiments on D(v): the paper's Figs. 1-3 and 6.

Ortiz-Jimenez et al., "Neural Anisotropy Directions", NeurIPS 2020, Sec. 2 (Figs. 1-3: D(v) for
Fourier directions v) and Sec. 4.1 (Fig. 6: D(u_i) for the NADs u_i). One *run* trains a fresh
network on independent train/test draws of D(v); a run is identified by its direction label
(a frequency ``[k1, k2]`` or a NAD index) and its seed, which alone decide its data,
initialisation and batch order. Runs are grouped into :class:`nadcore.experiments.Job` s of
``chunk`` runs trained together by :func:`nadcore.train.train_many`.
"""
from __future__ import annotations

import time
from typing import Sequence

import numpy as np
import torch

from nadcore.cache import Cache, digest
from nadcore.experiments import Job, collect, run_jobs
from nadcore.utils import derived_seed

__all__ = ["directional_job", "direction_jobs", "directions_sweep", "grid_sweep", "RESULT_KEYS",
           "iterations_to_loss", "frequency_radius", "accuracy_stats", "nad_index_summary", "steps_per_run"]

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
    the authors trained).
    """
    from nadcore.data import directional_train_test
    from nadcore.models import build_model
    from nadcore.train import train_many
    from nadcore.utils import generator, resolve_device

    t0 = time.perf_counter()
    dev = resolve_device(device)
    vectors = torch.as_tensor(np.asarray(vectors, dtype=np.float32))
    tr = dict(config["train"])
    thr = float(tr.pop("loss_threshold", 0.1))
    window = int(tr.pop("loss_window", 20))
    d, K = config["data"], int(config.get("outputs", 1))
    models, xs, ys, xts, yts, gens = [], [], [], [], [], []
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
    res = train_many(models, xs, ys, generators=gens, device=dev, xs_test=xts, ys_test=yts, **tr)
    il = np.stack([r.iter_loss for r in res]).astype(np.float32)
    arrays = {
        "test_acc": np.array([r.test_acc for r in res], dtype=np.float64),
        "train_acc": np.array([r.train_acc for r in res], dtype=np.float64),
        "train_loss": np.array([r.train_loss for r in res], dtype=np.float64),
        "iter_loss": il,
        "iters_to_loss": iterations_to_loss(il, thr, window),
    }
    meta = {"seconds": time.perf_counter() - t0, "device": str(dev), "threads": torch.get_num_threads()}
    return arrays, meta


def direction_jobs(vectors, labels: Sequence, seeds: Sequence[int], *, model, settings: dict,
                   chunk: int = 8, tag: str = "", device: str = "auto", outputs: int = 1) -> list[Job]:
    """Jobs of ``chunk`` runs over every (seed, direction): seed-major order, so that results
    reshape to (len(seeds), len(vectors)). ``settings``: n_train, n_test, sigma, epsilon, signal
    and the keywords of :func:`nadcore.train.train_many` (epochs, max_lr, ...); ``labels`` (JSON
    ints or int lists, e.g. ``[k1, k2]`` or a NAD index) and ``tag`` seed each run."""
    from nadcore.models import spec_key

    vectors = np.asarray(vectors, dtype=np.float32)
    if len(vectors) != len(labels):
        raise ValueError(f"{len(vectors)} vectors but {len(labels)} labels")
    labels = [[int(a) for a in l] if isinstance(l, (list, tuple, np.ndarray)) else int(l) for l in labels]
    data = {k: settings[k] for k in _DATA_KEYS if k in settings}
    train = {k: v for k, v in settings.items() if k not in _DATA_KEYS}
    runs = [(i, [labels[i], int(s)]) for s in seeds for i in range(len(vectors))]
    jobs = []
    for c in range(0, len(runs), chunk):
        part = runs[c:c + chunk]
        V = vectors[[i for i, _ in part]]
        config = {**spec_key(model), "runs": [r for _, r in part], "tag": tag, "vectors": digest(V),
                  "train": train, "data": data, "outputs": int(outputs)}
        jobs.append(Job(config=config, data={"vectors": V, "device": str(device)}))
    return jobs


def directions_sweep(model, vectors, labels, settings: dict, *, seeds: Sequence[int] = (0,),
                     chunk: int = 8, tag: str = "", executor=None, cache: Cache | None = None,
                     progress=False, device: str = "auto", outputs: int = 1) -> dict:
    """Train ``model`` on D(v) for every direction and seed. Returns :data:`RESULT_KEYS` arrays
    of shape (len(seeds), len(vectors), ...), plus ``compute_seconds`` (summed over jobs, as
    measured when they ran) and ``jobs``."""
    jobs = direction_jobs(vectors, labels, seeds, model=model, settings=settings, chunk=chunk,
                          tag=tag, device=device, outputs=outputs)
    res = run_jobs(jobs, directional_job, executor=executor, cache=cache, progress=progress)
    S, V = len(seeds), len(vectors)
    out = {k: collect(res, k).reshape(S, V, *collect(res, k).shape[1:]) for k in RESULT_KEYS}
    out["compute_seconds"] = float(sum(m.get("seconds", 0.0) for _, m in res))
    out["jobs"] = len(jobs)
    return out


def grid_sweep(model, grid, settings: dict, **kw) -> dict:
    """Train ``model`` on D(v) for every Fourier direction of ``grid`` (a
    :class:`nadcore.data.FourierGrid`) and seed: the paper's Figs. 1-3. Returns
    :func:`directions_sweep`'s arrays reshaped to (seeds, g, g, ...), plus ``grid``. Runs are
    labelled (and seeded) by their frequency, so the same frequency with the same settings gives
    the same run whatever grid it belongs to."""
    from nadcore.data import fourier_directions

    V = fourier_directions(grid).numpy()
    out = directions_sweep(model, V, grid.frequencies, settings, tag="fourier", **kw)
    g = grid.shape
    res = {k: out[k].reshape(out[k].shape[0], *g, *out[k].shape[2:]) for k in RESULT_KEYS}
    res.update(grid=grid, compute_seconds=out["compute_seconds"], jobs=out["jobs"])
    return res


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


def frequency_radius(grid) -> np.ndarray:
    """``max(|k1|, |k2|)`` of every cell of a Fourier grid (the paper's distance from the centre)."""
    return np.maximum(np.abs(grid.k1), np.abs(grid.k2))


def accuracy_stats(acc, grid=None, low: int = 4, high: int = 8, chance_margin: float = 0.05) -> dict:
    """min / median / max / mean, spread (max - min) and standard deviation of accuracies over the
    finite cells of one map (or a list), and the fraction of cells above ``0.5 + chance_margin``.

    With the :class:`nadcore.data.FourierGrid` ``grid``, also the frequency dependence (Figs. 1
    and 3): mean accuracy over low frequencies (``max(|k1|, |k2|) <= low``), over high ones
    (``>= high``) and their difference ``freq_gap``.
    """
    a_all = np.asarray(acc, dtype=float)
    fin = np.isfinite(a_all)
    a = a_all[fin]
    out = {"min": float(a.min()), "median": float(np.median(a)), "max": float(a.max()),
           "mean": float(a.mean()), "spread": float(a.max() - a.min()), "std": float(a.std()),
           "above_chance": float(np.mean(a > 0.5 + chance_margin)), "cells": int(a.size)}
    if grid is not None:
        r = frequency_radius(grid)
        lo, hi = a_all[(r <= low) & fin], a_all[(r >= high) & fin]
        out.update(low_freq=float(lo.mean()) if lo.size else float("nan"),
                   high_freq=float(hi.mean()) if hi.size else float("nan"))
        out["freq_gap"] = out["low_freq"] - out["high_freq"]
    return out


def nad_index_summary(indices, acc, eigenvalues, first: int = 10, beyond: int = 700) -> dict:
    """Fig. 6 in numbers for one seed: mean accuracy on the first ``first`` NADs and on NADs past
    ``beyond``, and the Spearman rank correlation between the eigenvalue lambda_i and the accuracy
    on D(u_i) over the trained indices (positive: larger eigenvalue, easier to learn)."""
    from scipy.stats import spearmanr

    idx = np.asarray(indices, dtype=int)
    acc = np.asarray(acc, dtype=float)
    ev = np.asarray(eigenvalues, dtype=float)[idx]
    lo, hi = acc[idx < first], acc[idx > beyond]
    rho, p = spearmanr(ev, acc)
    return {"first_mean": float(lo.mean()) if lo.size else float("nan"),
            "beyond_mean": float(hi.mean()) if hi.size else float("nan"),
            "first_n": int(lo.size), "beyond_n": int(hi.size),
            "spearman": float(rho), "p_value": float(p)}
