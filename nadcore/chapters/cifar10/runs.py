"""Chapter 4's experiments: networks trained on CIFAR-10 poisoned along NADs (paper Sec. 4.2,
Fig. 7) or on the NAD-flipped representation (Fig. 8), as jobs of the common runner.

:func:`cifar_job` trains one network per seed on one version of the data (clean, poisoned at
index i, or flipped); every seed starts from the same initial weights and batch order across the
versions, so that the versions are compared pairwise. The data transformations themselves are
:mod:`nadcore.data.poisoning`.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from nadcore.book.runner import Job
from nadcore.data.cifar import load_cifar10_spec, normalise
from nadcore.data.poisoning import EXPERIMENTS, flip_representation, poison, poison_change
from nadcore.nets import build_model, spec_key
from nadcore.runtime import digest, generator, resolve_device
from nadcore.train import evaluate, train_many

__all__ = [
    "cifar_jobs",
    "unique_jobs",
    "cifar_job",
    "result_rows",
    "CHANCE",
    "share_lost",
    "share_test_variance",
    "reading",
]

#: chance accuracy on CIFAR-10's ten classes
CHANCE = 0.1


def cifar_jobs(
    model,
    experiments,
    *,
    seeds,
    nads: np.ndarray,
    data_spec: dict,
    data_key: dict,
    train: dict,
    eps: float = 0.05,
    nads_key: dict | None = None,
    device="auto",
):
    """One :class:`nadcore.book.runner.Job` per experiment: ``"clean"``, ``("poison", i)`` or
    ``"flip"``, each training ``model`` once per seed. ``nads``: the full (D, D) NAD basis (rows),
    identified in the cache key by its digest, or by ``nads_key`` where one is given: what the
    basis is computed from (the published NADs of a network and their file's digest), for a
    key that is the same on every machine (the basis's own bits are not: completing it is float
    linear algebra, whose last bits differ between CPUs); ``data_key``: what identifies the data
    (:func:`nadcore.data.cifar.cifar_data_key`); ``data_spec``: how the worker loads the images
    (:func:`nadcore.data.cifar.load_cifar10_spec`); ``train``: epochs, max_lr, momentum,
    weight_decay, batch_size."""
    basis = dict(nads_key) if nads_key else {"digest": digest(np.asarray(nads))}
    jobs = []
    for e in experiments:
        kind, index = (e, None) if isinstance(e, str) else (e[0], int(e[1]))
        if kind not in EXPERIMENTS:
            raise ValueError(f"experiment must be one of {EXPERIMENTS}, got {kind!r}")
        config = {
            **spec_key(model),
            "experiment": kind,
            "index": index,
            "eps": float(eps) if kind == "poison" else None,
            "nads": basis if kind != "clean" else None,
            "data": data_key,
            "train": dict(train),
            "seeds": [int(s) for s in seeds],
        }
        jobs.append(Job(config, {"nads": nads, "data_spec": data_spec, "device": str(device)}))
    return jobs


def unique_jobs(jobs) -> list:
    """``jobs`` without repeats (same config = same cache key, e.g. the clean baseline of Fig. 7
    and the original representation of Fig. 8 when both train as long), first occurrence kept."""
    seen = {}
    for j in jobs:
        seen.setdefault(digest(j.config), j)
    return list(seen.values())


def cifar_job(config: dict, nads, data_spec: dict, device="auto"):
    """Train ``config["model"]`` (10 classes, 3 channels) once per seed on the clean, poisoned or
    flipped training set (authors' recipe: SGD, linear decay, clipping 0.5) and test it on the
    clean test set (flipped for "flip"), and, for "poison", on the test set carrying the same
    carrier. Returns arrays per seed (``train_acc``, ``test_acc``, ``carrier_test_acc``,
    ``epoch_acc`` (S, epochs)) and the poisoning's change to the images."""
    t0, c0 = time.perf_counter(), time.process_time()
    data = load_cifar10_spec(data_spec)
    kind, index, eps = config["experiment"], config["index"], config["eps"]
    x_tr, x_te = data.x_train, data.x_test
    meta, extra = {}, None
    if kind == "poison":
        x_tr = poison(data.x_train, data.y_train, nads, index, eps)
        meta = poison_change(data.x_train, x_tr)
        extra = normalise(poison(data.x_test, data.y_test, nads, index, eps))
    x_tr, x_te = normalise(x_tr), normalise(x_te)
    if kind == "flip":
        x_tr, x_te = flip_representation(x_tr, nads), flip_representation(x_te, nads)
    seeds = config["seeds"]
    nets = [build_model(config["model"], 3, 10, seed=(s, 4)) for s in seeds]
    tr = config["train"]
    res = train_many(
        nets,
        [x_tr] * len(seeds),
        [data.y_train] * len(seeds),
        generators=[generator(s, 4, 1) for s in seeds],
        device=device,
        xs_test=[x_te] * len(seeds),
        ys_test=[data.y_test] * len(seeds),
        epochs=int(tr["epochs"]),
        max_lr=float(tr["max_lr"]),
        momentum=float(tr.get("momentum", 0.0)),
        weight_decay=float(tr.get("weight_decay", 0.0)),
        batch_size=int(tr.get("batch_size", 128)),
    )
    arrays = {
        "train_acc": np.array([r.train_acc for r in res]),
        "test_acc": np.array([r.test_acc for r in res]),
        "epoch_acc": np.stack([r.epoch_acc for r in res]),
    }
    if extra is not None:
        arrays["carrier_test_acc"] = np.array([evaluate(n, extra, data.y_test, device=device)[0] for n in nets])
    meta.update(
        seconds=time.perf_counter() - t0,
        cpu_seconds=time.process_time() - c0,
        threads=torch.get_num_threads(),
        device=str(resolve_device(device)),
        trainer="many",
    )
    return arrays, meta


def result_rows(jobs, results) -> list[dict]:
    """Tidy rows, one per (job, seed): model, experiment, index, epochs, seed, train_acc,
    test_acc, carrier_test_acc (NaN where the test set carries no carrier) and, for poisoning,
    the mean L2 change of the training images (``l2_change``)."""
    rows = []
    for job, (arrays, meta) in zip(jobs, results):
        c = job.config
        for k, s in enumerate(c["seeds"]):
            carrier = arrays.get("carrier_test_acc")
            rows.append(
                dict(
                    model=c["model"],
                    experiment=c["experiment"],
                    index=c["index"],
                    epochs=int(c["train"]["epochs"]),
                    seed=int(s),
                    train_acc=float(arrays["train_acc"][k]),
                    test_acc=float(arrays["test_acc"][k]),
                    carrier_test_acc=float("nan") if carrier is None else float(carrier[k]),
                    l2_change=float(meta.get("l2_change", float("nan"))),
                )
            )
    return rows


def share_lost(baseline, poisoned, chance: float = CHANCE):
    """Per seed, the share of what the clean network learned above chance that the poisoned one
    lost: ``(baseline - poisoned) / (baseline - chance)``; 1 at chance, 0 as good as the baseline."""
    return (baseline - poisoned) / (baseline - chance)  # arrays, or pandas Series aligned by seed


def share_test_variance(baseline, n_test: int, seeds: int, chance: float = CHANCE) -> float:
    """The finite test set's binomial contribution to the variance of the mean of
    :func:`share_lost` over ``seeds``: a difference of two accuracies on ``n_test`` images has
    variance at most ``2 p (1 - p) / n_test <= 1 / (2 n_test)``, divided by the squared denominator."""
    return 0.5 / int(n_test) / (float(np.mean(baseline)) - chance) ** 2 / int(seeds)


def reading(
    *,
    name: str,
    early,
    late,
    base,
    acc_early,
    acc_late,
    gain_early,
    gain_late,
    flip: dict,
    flipped_fit: float,
    fit: float,
) -> str:
    """The chapter's closing paragraph, every number from this run: the per-seed values (arrays over
    seeds) are averaged here. ``flip``: model -> per-seed test accuracy, original minus flipped."""

    def pts(v):
        return 100 * float(np.mean(v))

    b = float(np.mean(base))
    lost_e, lost_l = (float(np.mean(share_lost(base, a))) for a in (acc_early, acc_late))
    out = (
        f"The clean baseline of {name} reaches {b:.1%} test accuracy. With the carrier on NADs {early} "
        f"the network reaches {float(np.mean(acc_early)):.1%} ({pts(np.subtract(acc_early, base)):+.1f} points "
        f"against the baseline: {lost_e:.0%} of what it learned above chance lost); its accuracy on test "
        f"images carrying that carrier minus on clean ones is {pts(gain_early):+.1f} points. With the "
        f"carrier on NADs {late} it reaches {float(np.mean(acc_late)):.1%} "
        f"({pts(np.subtract(acc_late, base)):+.1f} points: {lost_l:.0%} of the accuracy above chance lost), "
        f"and the same difference is {pts(gain_late):+.1f} points. "
    )
    out += "Test accuracy on the original minus on the NAD-flipped representation, mean over seeds: " + "; ".join(
        f"{m} {pts(d):+.1f} points" for m, d in flip.items()
    )
    return out + (
        f". The lowest final training accuracy among {name}'s original and "
        f"flipped networks is {flipped_fit:.1%}, against the `fit` threshold of {fit:.0%}."
    )
