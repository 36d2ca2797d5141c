"""The experiments of the underspecification paper (arXiv:2104.14372), as jobs of the common
runner (:mod:`nadcore.experiments`): chapter 5 of the book.

* :func:`concat_grid_experiment` (Sec. 3, Fig. 2, appendix A.1): for every pair ``(i1, i2)`` of a
  grid of NAD indices and every seed, a fresh network is trained on D(u_i1) (+) D(u_i2), tested
  with both channels, channel 1 only and channel 2 only, and its decision boundary is cut by the
  plane of ``u_i1 (+) 0`` and ``0 (+) u_i2``.
* :func:`cifar_dv_experiment` (Sec. 4, Fig. 3, appendix A.2): for every NAD index ``i`` and seed,
  a fresh network is trained on binary CIFAR-10 (+) D(u_i) and tested with all channels, CIFAR
  only and D(u_i) only. Every index of one seed starts from the same initial weights and batch
  order, so that runs differ only in ``v``.

Runs of one seed are trained ``chunk`` at a time with :func:`nadcore.train.train_many`; data,
initial weights and batch order of a run depend only on the seed and the NAD indices.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from nadcore.cache import digest
from nadcore.experiments import Job, run_jobs
from nadcore.underspec import (boundary_angle, channel_ablation_accuracy, cifar_dv_dataset,
                               decision_cross_section, underspecified_dataset)
from nadcore.utils import generator

__all__ = ["ConcatGridResult", "concat_grid_experiment", "concat_job", "CifarDVResult",
           "cifar_dv_experiment", "cifar_dv_job", "CONCAT_KEYS", "CIFAR_KEYS"]

#: Per-run quantities of the two experiments (arrays of shape (seeds, ...) in their results).
CONCAT_KEYS = ("acc_both", "acc_first", "acc_second", "train_acc", "angle")
CIFAR_KEYS = ("acc_all", "acc_cifar", "acc_dv", "train_acc")
#: Tags that keep the random streams of the two experiments apart (see ``derived_seed``).
_TAG_CONCAT, _TAG_CIFAR = 51, 52
_TRAIN_DEFAULTS = dict(batch_size=128, momentum=0.9, weight_decay=0.0, clip_grad_norm=None,
                       schedule="triangular")


def _train_kwargs(train: dict) -> dict:
    kw = {**_TRAIN_DEFAULTS, **{k: v for k, v in train.items() if k != "n_train"}}
    return dict(epochs=int(kw["epochs"]), max_lr=float(kw["max_lr"]), batch_size=int(kw["batch_size"]),
                momentum=float(kw["momentum"]), weight_decay=float(kw["weight_decay"]),
                clip_grad_norm=kw["clip_grad_norm"], schedule=kw["schedule"])


def _train(models, xs, ys, gens, train: dict, device):
    from nadcore.train import train_many

    return train_many(models, xs, ys, generators=gens, device=device, **_train_kwargs(train))


def _timing(t0: float, c0: float) -> dict:
    """A job's meta: wall ``seconds`` and ``cpu_seconds`` of its process (the cost on an idle
    machine, for a one-thread worker, whatever else shares the CPU)."""
    return {"seconds": round(time.perf_counter() - t0, 3), "cpu_seconds": round(time.process_time() - c0, 3)}


def _chunks(items, chunk):
    step = max(1, int(chunk))
    return [items[i:i + step] for i in range(0, len(items), step)]


# --------------------------------------------------------------------------------------------
# Experiment 1: D(v1) (+) D(v2)
# --------------------------------------------------------------------------------------------
@dataclass
class ConcatGridResult:
    """Per seed (axis 0) and pair of NAD indices (rows: v1, columns: v2): test accuracy with both
    channels (``acc_both``), channel 1 only (``acc_first``), channel 2 only (``acc_second``), the
    last epoch's running training accuracy, the boundary's tilt ``angle`` (degrees) and the
    network's outputs on the cross-section grid ``a`` x ``b`` (``sections``, (S, n1, n2, R, R))."""

    model: str
    indices1: list
    indices2: list
    seeds: list
    acc_both: np.ndarray
    acc_first: np.ndarray
    acc_second: np.ndarray
    train_acc: np.ndarray
    angle: np.ndarray
    sections: np.ndarray
    a: np.ndarray
    b: np.ndarray
    settings: dict = field(default_factory=dict)

    def section(self, i1: int, i2: int, seed_index: int = 0) -> dict:
        """The cross-section of the pair of NAD indices ``(i1, i2)`` for one seed."""
        r, c = self.indices1.index(i1), self.indices2.index(i2)
        return {"a": self.a, "b": self.b, "logits": self.sections[seed_index, r, c]}

    def values(self, key: str, i1: int, i2: int) -> np.ndarray:
        """``key`` (e.g. ``"acc_first"``, ``"angle"``) of the pair ``(i1, i2)``, one value per seed."""
        return np.asarray(getattr(self, key))[:, self.indices1.index(i1), self.indices2.index(i2)]

    def spread(self, key: str) -> np.ndarray:
        """Per seed, ``max - min`` of ``key`` over the whole grid of NAD pairs."""
        a = np.asarray(getattr(self, key))
        return np.ptp(a.reshape(a.shape[0], -1), axis=1)

    def fitted(self, cells=None, threshold: float = 0.95) -> bool:
        """Whether every seed's network fitted its training set (last-epoch training accuracy
        >= ``threshold``) at every pair ``(i1, i2)`` of ``cells`` (default: the whole grid)."""
        cells = cells if cells is not None else [(i1, i2) for i1 in self.indices1 for i2 in self.indices2]
        return bool(all((self.values("train_acc", *c) >= threshold).all() for c in cells))

    def frame(self):
        """Tidy table: one row per seed and pair (model, seed, v1_index, v2_index, the three test
        accuracies, train_acc, angle)."""
        import pandas as pd

        return pd.DataFrame([{"model": self.model, "seed": s, "v1_index": i1, "v2_index": i2,
                              **{k: float(getattr(self, k)[k0, a, b]) for k in CONCAT_KEYS}}
                             for k0, s in enumerate(self.seeds) for a, i1 in enumerate(self.indices1)
                             for b, i2 in enumerate(self.indices2)])

    def sections_frame(self, pairs, seed_index: int = 0):
        """Tidy table of the cross-sections of ``pairs`` for one seed: model, seed, v1_index,
        v2_index, a (along v1 (+) 0), b (along 0 (+) v2), logit (the network's output)."""
        import pandas as pd

        bb, aa = np.meshgrid(self.b, self.a, indexing="ij")
        parts = [pd.DataFrame({"model": self.model, "seed": self.seeds[seed_index], "v1_index": i1,
                               "v2_index": i2, "a": aa.ravel(), "b": bb.ravel(),
                               "logit": self.section(i1, i2, seed_index)["logits"].ravel()})
                 for i1, i2 in pairs]
        return pd.concat(parts, ignore_index=True)


def concat_job(config: dict, nads, device="auto"):
    """Train one network per pair of ``config["pairs"]`` (seed ``config["seed"]``) and measure
    the three accuracies, the cross-section and its angle."""
    from nadcore.models import build_model
    from nadcore.data import unit

    t0, c0 = time.perf_counter(), time.process_time()
    seed, s = int(config["seed"]), config["settings"]
    pairs = [tuple(p) for p in config["pairs"]]
    xs, ys, tests, models, gens = [], [], [], [], []
    for i1, i2 in pairs:
        g = generator(seed, _TAG_CONCAT, i1, i2)
        kw = dict(eps1=s["eps1"], eps2=s["eps2"], sigma=s["sigma"], generator=g)
        x, y = underspecified_dataset(nads[i1], nads[i2], s["n_train"], **kw)
        tests.append(underspecified_dataset(nads[i1], nads[i2], s["n_test"], **kw))
        xs.append(x), ys.append(y)
        models.append(build_model(config["model"], 2, 1, seed=(seed, _TAG_CONCAT, i1, i2, 1), check=False))
        gens.append(generator(seed, _TAG_CONCAT, i1, i2, 2))
    results = _train(models, torch.stack(xs), torch.stack(ys), gens, s["train"], device)
    out = {k: [] for k in (*CONCAT_KEYS, "sections")}
    for (i1, i2), net, r, (xt, yt) in zip(pairs, models, results, tests):
        acc = channel_ablation_accuracy(net, xt, yt, {"first": [0], "second": [1]}, device)
        e1, e2 = torch.zeros(2, 32, 32), torch.zeros(2, 32, 32)
        e1[0] = unit(torch.as_tensor(nads[i1]).reshape(32, 32))
        e2[1] = unit(torch.as_tensor(nads[i2]).reshape(32, 32))
        sec = decision_cross_section(net, e1, e2, extent=s["extent"], resolution=s["resolution"],
                                     anchor=xt[0], device=device)
        for k, v in (("acc_both", acc["all"]), ("acc_first", acc["first"]), ("acc_second", acc["second"]),
                     ("train_acc", r.train_acc), ("angle", boundary_angle(sec["a"], sec["b"], sec["logits"])),
                     ("sections", sec["logits"].astype(np.float32))):
            out[k].append(v)
    arrays = {k: np.asarray(v) for k, v in out.items()}
    arrays["a"], arrays["b"] = sec["a"], sec["b"]
    return arrays, _timing(t0, c0)


def concat_grid_experiment(model, nads, indices1, indices2=None, *, seeds, n_train: int, n_test: int,
                           train: dict, eps1: float = 1.0, eps2: float = 0.5, sigma: float = 1.0,
                           extent: float = 2.0, resolution: int = 41, device="auto", chunk: int = 8,
                           cache=None, executor=None, progress=False) -> ConcatGridResult:
    """The experiment of the paper's Fig. 2 (and appendix Figs. 4-8) for one architecture.

    ``model``: registry name or ``"pkg.mod:factory"`` (built with 2 input channels, one output);
    ``nads``: a full NAD basis (rows) of a one-channel copy of it; each network is trained on
    ``n_train`` samples of D(u_i1) (+) D(u_i2) and tested on ``n_test`` fresh ones. The
    cross-section passes through the first test sample with its in-plane components removed.
    ``train``: ``epochs``, ``max_lr`` and optionally ``batch_size`` (128), ``momentum`` (0.9),
    ``weight_decay`` (0), ``clip_grad_norm`` (None), ``schedule`` ("triangular").
    """
    from nadcore.models import spec_key

    indices1 = [int(i) for i in indices1]
    indices2 = [int(i) for i in (indices1 if indices2 is None else indices2)]
    nads = np.asarray(nads, dtype=np.float32)
    settings = dict(n_train=int(n_train), n_test=int(n_test), eps1=float(eps1), eps2=float(eps2),
                    sigma=float(sigma), extent=float(extent), resolution=int(resolution),
                    train=_train_kwargs(train))
    pairs = [(i1, i2) for i1 in indices1 for i2 in indices2]
    jobs = [Job({**spec_key(model), "seed": int(s), "settings": settings, "pairs": [list(p) for p in part],
                 "nads": digest(nads[sorted({i for p in part for i in p})])},
                {"nads": nads, "device": str(device)})
            for s in seeds for part in _chunks(pairs, chunk)]
    res = run_jobs(jobs, concat_job, executor=executor, cache=cache, progress=progress)
    S, n1, n2 = len(seeds), len(indices1), len(indices2)
    cat = lambda k: np.concatenate([a[k] for a, _ in res]).reshape(S, n1, n2, *res[0][0][k].shape[1:])  # noqa: E731
    return ConcatGridResult(model=spec_key(model)["model"], indices1=indices1, indices2=indices2,
                            seeds=list(seeds), acc_both=cat("acc_both"), acc_first=cat("acc_first"),
                            acc_second=cat("acc_second"), train_acc=cat("train_acc"), angle=cat("angle"),
                            sections=cat("sections"), a=res[0][0]["a"], b=res[0][0]["b"], settings=settings)


# --------------------------------------------------------------------------------------------
# Experiment 2: binary CIFAR-10 (+) D(v)
# --------------------------------------------------------------------------------------------
@dataclass
class CifarDVResult:
    """Per seed (axis 0) and NAD index of ``v``: test accuracy with all four channels
    (``acc_all``), with the CIFAR channels only (``acc_cifar``), with the D(v) channel only
    (``acc_dv``), and the last epoch's running training accuracy."""

    model: str
    indices: list
    seeds: list
    acc_all: np.ndarray
    acc_cifar: np.ndarray
    acc_dv: np.ndarray
    train_acc: np.ndarray
    settings: dict = field(default_factory=dict)

    def values(self, key: str, index: int) -> np.ndarray:
        """``key`` (e.g. ``"acc_dv"``) at NAD index ``index``, one value per seed."""
        return np.asarray(getattr(self, key))[:, self.indices.index(index)]

    def fitted(self, indices=None, threshold: float = 0.95) -> bool:
        """Whether every seed's network fitted its training set (last-epoch training accuracy
        >= ``threshold``) at every NAD index of ``indices`` (default: all)."""
        return bool(all((self.values("train_acc", i) >= threshold).all()
                        for i in (indices if indices is not None else self.indices)))

    def frame(self):
        """Tidy table: one row per seed and NAD index (model, seed, nad_index, the three test
        accuracies, train_acc)."""
        import pandas as pd

        return pd.DataFrame([{"model": self.model, "seed": s, "nad_index": i,
                              **{k: float(getattr(self, k)[k0, j]) for k in CIFAR_KEYS}}
                             for k0, s in enumerate(self.seeds) for j, i in enumerate(self.indices)])


def _binary_cifar(data_spec: dict):
    from nadcore.cifar import binarise_labels, load_cifar10_spec, normalise

    d = load_cifar10_spec(data_spec)
    return (normalise(d.x_train), binarise_labels(d.y_train).astype(np.int64),
            normalise(d.x_test), binarise_labels(d.y_test).astype(np.int64))


def cifar_dv_job(config: dict, nads, data_spec: dict, device="auto"):
    """Train one network per NAD index of ``config["indices"]`` (seed ``config["seed"]``) on
    binary CIFAR-10 (+) D(u_i) and measure the three accuracies."""
    from nadcore.models import build_model

    t0, c0 = time.perf_counter(), time.process_time()
    seed, s = int(config["seed"]), config["settings"]
    xtr, ytr, xte, yte = _binary_cifar(data_spec)
    xs, tests, models, gens = [], [], [], []
    for i in config["indices"]:
        g = generator(seed, _TAG_CIFAR, i)
        xs.append(cifar_dv_dataset(xtr, ytr, nads[i], sigma=s["sigma"], epsilon=s["eps"], generator=g))
        tests.append(cifar_dv_dataset(xte, yte, nads[i], sigma=s["sigma"], epsilon=s["eps"], generator=g))
        models.append(build_model(config["model"], 4, 1, seed=(seed, _TAG_CIFAR, 1), check=False))
        gens.append(generator(seed, _TAG_CIFAR, 2))
    yt = torch.as_tensor(ytr)
    results = _train(models, torch.stack(xs), yt.expand(len(xs), -1), gens, s["train"], device)
    out = {k: [] for k in CIFAR_KEYS}
    for net, r, xt in zip(models, results, tests):
        acc = channel_ablation_accuracy(net, xt, yte, {"cifar": [0, 1, 2], "dv": [3]}, device)
        for k, v in (("acc_all", acc["all"]), ("acc_cifar", acc["cifar"]), ("acc_dv", acc["dv"]),
                     ("train_acc", r.train_acc)):
            out[k].append(v)
    return {k: np.asarray(v) for k, v in out.items()}, _timing(t0, c0)


def cifar_dv_experiment(model, nads, indices, *, seeds, data_spec: dict, data_key: dict, sigma: float,
                        train: dict, eps: float = 1.0, device="auto", chunk: int = 4, cache=None,
                        executor=None, progress=False) -> CifarDVResult:
    """The experiment of the paper's Fig. 3 for one architecture (4 input channels, one output).

    ``nads``: a full NAD basis (rows); ``data_spec``: how a worker loads CIFAR-10
    (:func:`nadcore.cifar.load_cifar10_spec`; labels are binarised: -1 for classes 0-4, +1 for
    5-9; images normalised); ``data_key``: what identifies those images in the cache key (name,
    checksum, sizes); ``train``, ``chunk``, ``cache`` as in :func:`concat_grid_experiment`.
    """
    from nadcore.models import spec_key

    indices = [int(i) for i in indices]
    nads = np.asarray(nads, dtype=np.float32)
    settings = dict(sigma=float(sigma), eps=float(eps), data=dict(data_key), train=_train_kwargs(train))
    jobs = [Job({**spec_key(model), "seed": int(s), "settings": settings, "indices": part,
                 "nads": digest(nads[part])},
                {"nads": nads, "data_spec": dict(data_spec), "device": str(device)})
            for s in seeds for part in _chunks(indices, chunk)]
    res = run_jobs(jobs, cifar_dv_job, executor=executor, cache=cache, progress=progress)
    S = len(seeds)
    cat = lambda k: np.concatenate([a[k] for a, _ in res]).reshape(S, len(indices))  # noqa: E731
    return CifarDVResult(model=spec_key(model)["model"], indices=indices, seeds=list(seeds),
                         acc_all=cat("acc_all"), acc_cifar=cat("acc_cifar"), acc_dv=cat("acc_dv"),
                         train_acc=cat("train_acc"), settings=settings)
