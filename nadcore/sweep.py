"""Sweeps of independent training jobs, through any ``concurrent.futures.Executor``, resumable.

A sweep of the NAD paper (directions x architectures x seeds, Figs. 1-3 and 6) is a list of
independent :class:`Job` s. Each job carries a JSON-like ``config`` (which is also its cache key)
and optional ``data`` (inputs that are not part of the key, e.g. the direction vectors, whose
checksum goes in the config). :func:`run_sweep` runs ``fn(config, **data)`` for every job that is
not in the cache yet, through

* nothing at all (in-process, the default),
* any ``concurrent.futures.Executor`` (``ThreadPoolExecutor``, ``ProcessPoolExecutor``),
* Dask, whose ``distributed.Client`` is an Executor::

      from distributed import Client, LocalCluster
      with LocalCluster(n_workers=4, threads_per_worker=1) as cl, Client(cl) as client:
          results = run_sweep(jobs, directional_job, executor=client)

  (or ``Client("tcp://scheduler:8786")`` for a cluster that already runs),
* Slurm through ``submitit``, whose ``AutoExecutor`` also has ``submit``::

      import submitit
      ex = submitit.AutoExecutor(folder="slurm_logs")
      ex.update_parameters(timeout_min=60, slurm_partition="gpu", gpus_per_node=1, cpus_per_task=8)
      results = run_sweep(jobs, directional_job, executor=ex, cache=Cache("/shared/nadcache"))

  (the submitted function and its arguments are pickled; the workers must import ``nadcore``).

Every finished job is written to the cache by the calling process the moment its future
completes (atomically; see :mod:`nadcore.cache`), so an interrupted sweep - Ctrl-C, a killed
Slurm allocation, a crashed worker - resumes where it stopped when run again with the same jobs:
finished jobs are loaded, only the missing ones are submitted.

The job function of chapter 3 is :func:`directional_job`: train one architecture on ``D(v)`` for a
chunk of directions ``v`` (batched with :func:`nadcore.train.train_many`) and return the
accuracies, the per-iteration training losses and the iterations needed to reach a small loss.
"""
from __future__ import annotations

import concurrent.futures as cf
import hashlib
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

import numpy as np
import torch

from nadcore.cache import Cache

__all__ = ["Job", "run_sweep", "SweepInterrupted", "directional_job", "direction_jobs",
           "directions_sweep", "grid_sweep", "vectors_digest", "collect", "make_executor",
           "split_settings", "accuracy_stats", "nad_index_summary"]


@dataclass
class Job:
    """One unit of a sweep: ``fn(config, **data)``; ``config`` is the cache key (JSON-like)."""

    config: dict
    data: dict = field(default_factory=dict)


class SweepInterrupted(RuntimeError):
    """Raised by :func:`run_sweep` when ``stop_after`` jobs were run (used to test resuming)."""


def _call(fn, config, data):
    return fn(config, **data)


def _fn_name(fn) -> str:
    return getattr(fn, "__qualname__", getattr(fn, "__name__", type(fn).__name__))


def run_sweep(jobs: Sequence[Job], fn: Callable, executor: cf.Executor | None = None,
              cache: Cache | None = None, name: str | None = None, progress: bool = False,
              stop_after: int | None = None) -> list[tuple[dict, dict]]:
    """Run ``fn(job.config, **job.data)`` for every job; return ``[(arrays, meta), ...]`` in job order.

    ``fn`` must return ``(arrays: dict of numpy arrays, meta: dict)`` and be importable by the
    workers (a module-level function) when ``executor`` runs it in other processes.
    ``executor``: None (in-process, in order) or anything with ``submit(fn, *args)`` returning a
    future (``concurrent.futures``, ``distributed.Client``, ``submitit.AutoExecutor``).
    ``cache``: where finished jobs go (default: :class:`nadcore.cache.Cache` at its default root);
    entries live under ``name`` (default: the function's name). Each job's result is saved as soon
    as it completes. ``stop_after``: raise :class:`SweepInterrupted` after that many jobs were
    computed (they are saved), to simulate an interruption.
    """
    cache = cache if cache is not None else Cache()
    name = name or f"sweep-{_fn_name(fn)}"
    results: list = [None] * len(jobs)
    todo = []
    for i, job in enumerate(jobs):
        hit = cache.load(name, job.config)
        if hit is not None:
            results[i] = hit
        else:
            todo.append(i)
    t0 = time.perf_counter()
    done = 0

    def _report():
        if progress:
            print(f"\r[{name}] {len(jobs) - len(todo) + done}/{len(jobs)} jobs "
                  f"({done} computed, {time.perf_counter() - t0:.0f} s)", end="", file=sys.stderr,
                  flush=True)

    def _finish(i, out):
        nonlocal done
        arrays, meta = out
        arrays = {k: np.asarray(v) for k, v in arrays.items()}
        cache.save(name, jobs[i].config, arrays, meta)
        results[i] = (arrays, meta)
        done += 1
        _report()
        if stop_after is not None and done >= stop_after and done < len(todo):
            raise SweepInterrupted(f"stopped after {done} of {len(todo)} jobs (results saved)")

    if executor is None:
        for i in todo:
            _finish(i, _call(fn, jobs[i].config, jobs[i].data))
    else:
        futures = {executor.submit(_call, fn, jobs[i].config, jobs[i].data): i for i in todo}
        try:
            for fut in _as_completed(futures):
                _finish(futures[fut], fut.result())
        finally:
            for fut in futures:
                if not fut.done():
                    fut.cancel()
    if progress and todo:
        print(file=sys.stderr)
    return results


def _as_completed(futures):
    """``as_completed`` for concurrent.futures, Dask and submitit futures alike."""
    futs = list(futures)
    if futs and all(isinstance(f, cf.Future) for f in futs):
        yield from cf.as_completed(futs)
        return
    mod = type(futs[0]).__module__ if futs else ""
    if mod.startswith("distributed"):
        from distributed import as_completed
        yield from as_completed(futs)
        return
    # generic (e.g. submitit Jobs: .done() and .result()): poll
    pending = list(futs)
    while pending:
        still = []
        for f in pending:
            if f.done():
                yield f
            else:
                still.append(f)
        pending = still
        if pending:
            time.sleep(0.5)


def collect(results, key: str) -> np.ndarray:
    """Concatenate array ``key`` of all results along axis 0 (job order)."""
    return np.concatenate([np.atleast_1d(a[key]) for a, _ in results], axis=0)


# --------------------------------------------------------------------------------------------
# The job of chapter 3: train one architecture on D(v) for a chunk of directions
# --------------------------------------------------------------------------------------------
def vectors_digest(vectors) -> str:
    """SHA-256 (16 hex) of float32 direction vectors: goes into a job's config (its cache key)."""
    a = np.ascontiguousarray(np.asarray(vectors, dtype=np.float32))
    return hashlib.sha256(a.tobytes() + str(a.shape).encode()).hexdigest()[:16]


def direction_jobs(vectors, labels: Sequence, *, model: str, train: dict, data: dict, seed: int = 0,
                   chunk: int = 8, tag: str = "", device: str = "auto") -> list[Job]:
    """Split directions into jobs of ``chunk`` directions each.

    ``vectors``: (V, C, H, W) unit directions; ``labels``: V JSON-like identifiers (e.g. ``[k1, k2]``
    or a NAD index) that, with ``tag``, also seed each direction's data, initialisation and batch
    order (so results do not depend on the chunking); ``train``: keyword arguments of
    :func:`nadcore.train.train_classifier` (epochs, max_lr, ...); ``data``: n_train, n_test,
    sigma, epsilon; ``device``: where the jobs train (not part of the cache key).
    """
    vectors = np.asarray(vectors, dtype=np.float32)
    if len(vectors) != len(labels):
        raise ValueError(f"{len(vectors)} vectors but {len(labels)} labels")
    jobs = []
    for s in range(0, len(vectors), chunk):
        v = vectors[s:s + chunk]
        lab = [list(l) if isinstance(l, (tuple, list, np.ndarray)) else l for l in labels[s:s + chunk]]
        lab = [[int(a) for a in l] if isinstance(l, list) else int(l) for l in lab]
        config = {"model": model, "labels": lab, "tag": tag, "seed": int(seed),
                  "vectors": vectors_digest(v), "train": dict(train), "data": dict(data)}
        jobs.append(Job(config=config, data={"vectors": v, "device": str(device)}))
    return jobs


def _label_seed(seed: int, tag: str, label) -> int:
    from nadcore.utils import derived_seed

    parts = label if isinstance(label, list) else [label]
    tag_int = int(hashlib.sha256(tag.encode()).hexdigest()[:8], 16)
    return derived_seed(seed, tag_int, *[int(p) % (1 << 31) for p in parts], len(parts))


def directional_job(config: dict, vectors, device: str = "auto", loss_threshold: float | None = None):
    """Train ``config["model"]`` on ``D(v)`` for each of ``vectors``; the job function of chapter 3.

    Per direction: independent train/test draws of ``D(v)``, a fresh initialisation and a batch
    order, all seeded by ``(seed, tag, label)``; all directions of the job trained together by
    :func:`nadcore.train.train_many`. Returns arrays ``test_acc``, ``train_acc``, ``train_loss``
    (V,), ``iter_loss`` (V, T) and ``iters_to_loss`` (V,; -1 = never reached; threshold
    ``config["train"]["loss_threshold"]``, default 0.1, averaged over 20 iterations), and meta
    (seconds, device).
    """
    from nadcore.data import directional_train_test
    from nadcore.models import build_model
    from nadcore.train import iterations_to_loss, train_many
    from nadcore.utils import resolve_device

    t0 = time.perf_counter()
    dev = resolve_device(device)
    vectors = torch.as_tensor(np.asarray(vectors, dtype=np.float32))
    tr = dict(config["train"])
    thr = float(tr.pop("loss_threshold", 0.1) if loss_threshold is None else loss_threshold)
    window = int(tr.pop("loss_window", 20))
    d = config["data"]
    labels = config["labels"]
    models, xs, ys, xts, yts, gens = [], [], [], [], [], []
    for v, lab in zip(vectors, labels):
        s = _label_seed(config["seed"], config.get("tag", ""), lab)
        g_data = torch.Generator().manual_seed(s)
        x, y, xt, yt = directional_train_test(v, int(d["n_train"]), int(d["n_test"]),
                                              float(d.get("sigma", 3.0)), float(d.get("epsilon", 1.0)),
                                              g_data)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(s + 1)
            models.append(build_model(config["model"], v.shape[0], 1, v.shape[-1], check=False))
        xs.append(x); ys.append(y); xts.append(xt); yts.append(yt)
        gens.append(torch.Generator().manual_seed(s + 2))
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
            "loss_threshold": thr, "loss_window": window}
    return arrays, meta


# --------------------------------------------------------------------------------------------
# Conveniences for the chapter: executors, and sweeps over a list of directions
# --------------------------------------------------------------------------------------------
def _single_thread():  # process-pool initializer: one torch thread per worker process
    torch.set_num_threads(1)


def make_executor(workers: int | None):
    """None for ``workers <= 1`` (in-process), else a spawn-based ``ProcessPoolExecutor`` whose
    worker processes each use one torch thread (on a small CPU, P one-thread processes train
    small models faster than one P-thread process). Close it with ``shutdown()`` or ``with``."""
    if not workers or int(workers) <= 1:
        return None
    import multiprocessing as mp

    return cf.ProcessPoolExecutor(int(workers), mp_context=mp.get_context("spawn"),
                                  initializer=_single_thread)


_DATA_KEYS = ("n_train", "n_test", "sigma", "epsilon")


def split_settings(settings: dict) -> tuple[dict, dict]:
    """Split one dict of settings into (train kwargs, data kwargs) for :func:`direction_jobs`."""
    data = {k: settings[k] for k in _DATA_KEYS if k in settings}
    train = {k: v for k, v in settings.items() if k not in _DATA_KEYS}
    return train, data


def directions_sweep(model: str, vectors, labels, settings: dict, *, seed: int = 0, chunk: int = 8,
                     tag: str = "", executor=None, cache: Cache | None = None,
                     progress: bool = False, device: str = "auto") -> dict:
    """Train ``model`` on D(v) for every direction (a sweep of :func:`directional_job` chunks).

    ``settings``: n_train, n_test, sigma, epsilon and the training keywords (epochs, max_lr, ...).
    Returns a dict of arrays concatenated over directions (``test_acc``, ``train_acc``,
    ``train_loss``, ``iter_loss``, ``iters_to_loss``) plus ``compute_seconds`` (sum over jobs, as
    measured when they ran) and ``jobs``.
    """
    train, data = split_settings(settings)
    jobs = direction_jobs(vectors, labels, model=model, train=train, data=data, seed=seed,
                          chunk=chunk, tag=tag, device=device)
    res = run_sweep(jobs, directional_job, executor=executor, cache=cache, progress=progress)
    out = {k: collect(res, k) for k in ("test_acc", "train_acc", "train_loss", "iter_loss",
                                         "iters_to_loss")}
    out["compute_seconds"] = float(sum(m.get("seconds", 0.0) for _, m in res))
    out["jobs"] = len(jobs)
    return out


def grid_sweep(model: str, grid, settings: dict, *, seed: int = 0, chunk: int = 8, executor=None,
               cache: Cache | None = None, progress: bool = False, device: str = "auto") -> dict:
    """Train ``model`` on D(v) for every Fourier direction of ``grid`` (a
    :class:`nadcore.data.FourierGrid`): the paper's Figs. 1-3. Returns :func:`directions_sweep`'s
    arrays reshaped to the grid (``test_acc``, ``train_acc``, ``train_loss``, ``iters_to_loss``:
    (g, g); ``iter_loss``: (g, g, T)), plus ``grid``, ``compute_seconds`` and ``jobs``. Directions
    are labelled (and seeded) by their frequency, so a sub-grid reuses nothing but also
    contradicts nothing: the same frequency with the same settings gives the same run."""
    from nadcore.data import fourier_directions

    V = fourier_directions(grid).numpy()
    out = directions_sweep(model, V, grid.frequencies, settings, seed=seed, chunk=chunk,
                           tag="fourier", executor=executor, cache=cache, progress=progress,
                           device=device)
    g = grid.shape
    res = {k: out[k].reshape(*g, *out[k].shape[1:]) for k in
           ("test_acc", "train_acc", "train_loss", "iter_loss", "iters_to_loss")}
    res.update(grid=grid, compute_seconds=out["compute_seconds"], jobs=out["jobs"])
    return res


# --------------------------------------------------------------------------------------------
# Summaries of sweep results (chapter 3's closing numbers)
# --------------------------------------------------------------------------------------------
def accuracy_stats(acc, grid=None, low: int = 4, high: int = 8, chance_margin: float = 0.05) -> dict:
    """min / median / max / mean, spread (max - min) and standard deviation of accuracies over the
    finite cells of a grid (or a list), and the fraction of cells above ``0.5 + chance_margin``.

    With the :class:`nadcore.data.FourierGrid` ``grid``, also the frequency dependence (Figs. 1
    and 3): mean accuracy over low frequencies (``max(|k1|, |k2|) <= low``), over high ones
    (``>= high``) and their difference ``freq_gap``; a network whose accuracy does not depend on
    the frequency has ``freq_gap`` near 0 whatever its spread from training noise.
    """
    a_all = np.asarray(acc, dtype=float)
    fin = np.isfinite(a_all)
    a = a_all[fin]
    out = {"min": float(a.min()), "median": float(np.median(a)), "max": float(a.max()),
           "mean": float(a.mean()), "spread": float(a.max() - a.min()), "std": float(a.std()),
           "above_chance": float(np.mean(a > 0.5 + chance_margin)), "cells": int(a.size)}
    if grid is not None:
        r = np.maximum(np.abs(grid.k1), np.abs(grid.k2))
        lo, hi = a_all[(r <= low) & fin], a_all[(r >= high) & fin]
        out.update(low_freq=float(lo.mean()) if lo.size else float("nan"),
                   high_freq=float(hi.mean()) if hi.size else float("nan"))
        out["freq_gap"] = out["low_freq"] - out["high_freq"]
    return out


def nad_index_summary(indices, acc, eigenvalues, first: int = 10, beyond: int = 700) -> dict:
    """Fig. 6 in numbers: mean accuracy on the first ``first`` NADs and on NADs past ``beyond``,
    and the Spearman rank correlation between the eigenvalue lambda_i and the accuracy on D(u_i)
    over the trained indices (positive: larger eigenvalue, easier to learn)."""
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
