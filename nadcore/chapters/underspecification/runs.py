"""The experiments of the underspecification paper (arXiv:2104.14372), as jobs of the common
runner (:mod:`nadcore.book.runner`): chapter 5 of the book.

Paper: Ortiz-Jimenez, Salazar-Reque, Modas, Moosavi-Dezfooli, Frossard, "A neural anisotropic
view of underspecification in deep learning" (ICLR 2021 RAI workshop). The datasets are
:mod:`nadcore.data.underspec`. After training, which information a network uses is read off by
*ablation*: the test accuracy with every channel, and with one group of channels set to zero
(:func:`channel_ablation_accuracy`). For D(v1) (+) D(v2), the geometry of the solution is read
off a *cross-section* of the decision boundary in the plane spanned by ``v1 (+) 0`` and
``0 (+) v2`` (:func:`decision_cross_section`), computed from the network's outputs on a grid of
points, and summarised by the direction of the boundary's normal in that plane
(:func:`boundary_angle`).

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

import math
import time
from typing import Sequence

import numpy as np
import torch

from nadcore.book.runner import Job, run_jobs
from nadcore.chapters.underspecification.results import CIFAR_KEYS, CONCAT_KEYS, CifarDVResult, ConcatGridResult
from nadcore.data.cifar import binarise_labels, load_cifar10_spec, normalise
from nadcore.data.directions import unit
from nadcore.data.underspec import cifar_dv_dataset, underspecified_dataset, zero_channels
from nadcore.nets import build_model, spec_key
from nadcore.runtime import digest, generator, resolve_device
from nadcore.train import train_many

__all__ = [
    "per_model",
    "channel_ablation_accuracy",
    "plane_points",
    "decision_cross_section",
    "boundary_points",
    "boundary_angle",
    "phase_transition_index",
    "MAX_MARGIN_ANGLE",
    "CIFAR_ALIASES",
    "cifar_spec",
    "ConcatGridResult",
    "concat_grid_experiment",
    "concat_jobs",
    "concat_job",
    "CifarDVResult",
    "cifar_dv_experiment",
    "cifar_dv_jobs",
    "cifar_dv_job",
    "CONCAT_KEYS",
    "CIFAR_KEYS",
]

#: Per-run quantities of the two experiments (arrays of shape (seeds, ...) in their results).
#: Tags that keep the random streams of the two experiments apart (see ``derived_seed``).
_TAG_CONCAT, _TAG_CIFAR = 51, 52
_TRAIN_DEFAULTS = dict(batch_size=128, momentum=0.9, weight_decay=0.0, clip_grad_norm=None, schedule="triangular")


def per_model(cfg: dict, setting: str, model: str):
    """A per-model setting of chapter 5's settings ``cfg``: the model's entry, else the "default" one."""
    per = cfg[setting]
    return per[model] if model in per else per["default"]


def _train_kwargs(train: dict) -> dict:
    kw = {**_TRAIN_DEFAULTS, **{k: v for k, v in train.items() if k != "n_train"}}
    return dict(
        epochs=int(kw["epochs"]),
        max_lr=float(kw["max_lr"]),
        batch_size=int(kw["batch_size"]),
        momentum=float(kw["momentum"]),
        weight_decay=float(kw["weight_decay"]),
        clip_grad_norm=kw["clip_grad_norm"],
        schedule=kw["schedule"],
    )


def _train(models, xs, ys, gens, train: dict, device):
    return train_many(models, xs, ys, generators=gens, device=device, **_train_kwargs(train))


def _timing(t0: float, c0: float, device) -> dict:
    """A job's meta: wall ``seconds`` and ``cpu_seconds`` of its process (the cost on an idle
    machine, for a one-thread worker, whatever else shares the CPU), its device and trainer."""
    return {
        "seconds": round(time.perf_counter() - t0, 3),
        "cpu_seconds": round(time.process_time() - c0, 3),
        "device": str(resolve_device(device)),
        "trainer": "many",
    }


def _chunks(items, chunk):
    step = max(1, int(chunk))
    return [items[i : i + step] for i in range(0, len(items), step)]


# --------------------------------------------------------------------------------------------
# Reading a trained network: channel ablation, decision-boundary cross-sections
# --------------------------------------------------------------------------------------------
@torch.no_grad()
def _outputs(model, x: torch.Tensor, device, batch_size: int = 2000) -> torch.Tensor:
    """Scalar outputs of ``model`` (eval mode) on ``x`` (N, C, H, W), as a float64 CPU vector."""
    was = model.training
    model.eval()
    dev = resolve_device(device)
    outs = [model(x[i : i + batch_size].to(dev))[:, 0].double().cpu() for i in range(0, len(x), batch_size)]
    model.train(was)
    return torch.cat(outs) if outs else torch.zeros(0, dtype=torch.float64)


def channel_ablation_accuracy(model, x, y, groups: dict[str, Sequence[int]], device="cpu") -> dict:
    """Test accuracy of a one-output binary classifier (prediction: sign of the output) on ``x``
    with every channel (key ``"all"``) and, for each ``name -> channels`` of ``groups``, with
    only those channels kept and all others zeroed (key ``name``).

    For D(v1) (+) D(v2), ``groups={"first": [0], "second": [1]}`` gives the paper's three numbers
    (Fig. 2a: both channels; channel 2 zeroed; channel 1 zeroed).
    """
    x = torch.as_tensor(x, dtype=torch.float32)
    yt = torch.as_tensor(np.asarray(y)).reshape(-1)
    C = x.shape[1]
    out = {"all": float(((_outputs(model, x, device) > 0) == (yt > 0)).double().mean())}
    for name, keep in groups.items():
        drop = [c for c in range(C) if c not in set(keep)]
        z = _outputs(model, zero_channels(x, drop), device)
        out[name] = float(((z > 0) == (yt > 0)).double().mean())
    return out


# --------------------------------------------------------------------------------------------
# Decision-boundary cross-sections (paper Fig. 2b, appendix Figs. 5, 7, 8)
# --------------------------------------------------------------------------------------------
#: Normal direction of the maximum-margin separator of D(v1) (+) D(v2) in the (v1, v2) plane,
#: in degrees from the v1 axis: the two classes sit at +-(eps1, eps2) there, so the normal is
#: (eps1, eps2); for eps1 = 1, eps2 = 0.5 that is atan(0.5) = 26.57 degrees.
MAX_MARGIN_ANGLE = math.degrees(math.atan2(0.5, 1.0))


def plane_points(e1, e2, a, b, anchor=None) -> torch.Tensor:
    """Points ``anchor + a_j e1 + b_i e2`` for every (i, j) of the grid ``b x a``: (len(b) * len(a),
    *e1.shape), row-major in (i, j) (``b`` varies along rows, ``a`` along columns).

    ``e1``, ``e2`` must be orthonormal; ``anchor`` (default 0) is any point of input space, whose
    components along ``e1`` and ``e2`` are removed first, so that (a, b) are exact coordinates.
    """
    e1 = torch.as_tensor(e1, dtype=torch.float64)
    e2 = torch.as_tensor(e2, dtype=torch.float64)
    if abs(float((e1 * e2).sum())) > 1e-5 or abs(float(e1.norm()) - 1) > 1e-5 or abs(float(e2.norm()) - 1) > 1e-5:
        raise ValueError("e1 and e2 must be orthonormal")
    x0 = torch.zeros_like(e1) if anchor is None else torch.as_tensor(anchor, dtype=torch.float64).reshape(e1.shape)
    x0 = x0 - (x0 * e1).sum() * e1 - (x0 * e2).sum() * e2
    A = torch.as_tensor(np.asarray(a, dtype=np.float64))
    B = torch.as_tensor(np.asarray(b, dtype=np.float64))
    bb, aa = torch.meshgrid(B, A, indexing="ij")
    shape = (1,) * e1.dim()
    pts = x0[None] + aa.reshape(-1, *shape) * e1[None] + bb.reshape(-1, *shape) * e2[None]
    return pts.to(torch.float32)


def decision_cross_section(
    model, e1, e2, *, extent: float = 2.0, resolution: int = 41, anchor=None, device="cpu"
) -> dict:
    """The network's output on a ``resolution x resolution`` grid of the plane spanned by the
    orthonormal directions ``e1``, ``e2`` (coordinates ``a, b`` in ``[-extent, extent]``),
    through ``anchor`` (see :func:`plane_points`).

    Returns ``{"a": (R,), "b": (R,), "logits": (R, R)}`` with ``logits[i, j]`` the output at
    ``(a[j], b[i])``; the decision boundary is its zero level set (the figure draws it, nothing
    about its shape is assumed).
    """
    a = np.linspace(-extent, extent, resolution)
    b = np.linspace(-extent, extent, resolution)
    pts = plane_points(e1, e2, a, b, anchor)
    z = _outputs(model, pts, device).numpy().reshape(len(b), len(a))
    return {"a": a, "b": b, "logits": z}


def boundary_points(a, b, logits) -> np.ndarray:
    """Points of the decision boundary (zero level set of ``logits[i, j]`` at ``(a[j], b[i])``),
    found by linear interpolation between neighbouring grid points of opposite sign, along ``a``
    (each row) and along ``b`` (each column). Returns (K, 2) rows ``(a, b)``; exact for a logit
    that is linear in (a, b)."""
    a, b, z = np.asarray(a, float), np.asarray(b, float), np.asarray(logits, float)
    pts = []
    for i in range(z.shape[0]):
        r = z[i]
        for j in np.nonzero(np.sign(r[:-1]) * np.sign(r[1:]) < 0)[0]:
            t = r[j] / (r[j] - r[j + 1])
            pts.append((a[j] + t * (a[j + 1] - a[j]), b[i]))
    for j in range(z.shape[1]):
        c = z[:, j]
        for i in np.nonzero(np.sign(c[:-1]) * np.sign(c[1:]) < 0)[0]:
            t = c[i] / (c[i] - c[i + 1])
            pts.append((a[j], b[i] + t * (b[i + 1] - b[i])))
    return np.array(pts, dtype=float).reshape(-1, 2)


def boundary_angle(a, b, logits) -> float:
    """Direction of the decision boundary's normal in the cross-section, in degrees from the
    ``a`` (v1 (+) 0) axis: ``atan2(w_b, w_a)`` for the least-squares plane
    ``logits ~ c + w_a a + w_b b`` over the grid.

    0 degrees: the output changes only along v1 (the boundary is parallel to the v2 axis: the
    network uses channel 1 only); 90 degrees: only channel 2; :data:`MAX_MARGIN_ANGLE` (26.6 for
    eps = (1, 0.5)): the maximum-margin linear separator. Values outside [0, 90] mean the output
    decreases along a class direction (a network that did not learn that channel's sign).
    """
    a, b, z = np.asarray(a, float), np.asarray(b, float), np.asarray(logits, float)
    bb, aa = np.meshgrid(b, a, indexing="ij")
    X = np.stack([np.ones(aa.size), aa.ravel(), bb.ravel()], 1)
    coef, *_ = np.linalg.lstsq(X, z.ravel(), rcond=None)
    return float(np.degrees(np.arctan2(coef[2], coef[1])))


#: Sec. 4 (binary CIFAR-10 (+) D(v)) uses a wider MLP than Sec. 3: "mlp" means this spec there.
CIFAR_ALIASES = {"mlp": "nadcore.nets.variants:mlp_cifar"}


def cifar_spec(name: str) -> str:
    """Model spec used for ``name`` in the binary CIFAR-10 (+) D(v) experiment (``"mlp"`` -> the
    appendix's 200-50 MLP, anything else unchanged)."""
    return CIFAR_ALIASES.get(name, name)


def phase_transition_index(indices, acc, chance: float = 0.5):
    """The first NAD index (of ``indices``, in increasing order) at which ``acc`` falls below the
    midpoint ``(chance + max(acc)) / 2``, together with that threshold: ``(index or None,
    threshold)``. None when it never falls below (no transition within the tested range)."""
    idx = np.asarray(indices)
    a = np.asarray(acc, dtype=float)
    order = np.argsort(idx, kind="stable")
    idx, a = idx[order], a[order]
    thr = (chance + float(a.max())) / 2
    below = np.nonzero(a < thr)[0]
    return (int(idx[below[0]]) if below.size else None), thr


# --------------------------------------------------------------------------------------------
# Experiment 1: D(v1) (+) D(v2)
# --------------------------------------------------------------------------------------------
def concat_job(config: dict, nads, device="auto"):
    """Train one network per pair of ``config["pairs"]`` (seed ``config["seed"]``) and measure
    the three accuracies, the cross-section and its angle."""
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
        sec = decision_cross_section(
            net, e1, e2, extent=s["extent"], resolution=s["resolution"], anchor=xt[0], device=device
        )
        for k, v in (
            ("acc_both", acc["all"]),
            ("acc_first", acc["first"]),
            ("acc_second", acc["second"]),
            ("train_acc", r.train_acc),
            ("angle", boundary_angle(sec["a"], sec["b"], sec["logits"])),
            ("sections", sec["logits"].astype(np.float32)),
        ):
            out[k].append(v)
    arrays = {k: np.asarray(v) for k, v in out.items()}
    arrays["a"], arrays["b"] = sec["a"], sec["b"]
    return arrays, _timing(t0, c0, device)


def concat_jobs(
    model,
    nads,
    indices1,
    indices2,
    *,
    seeds,
    n_train: int,
    n_test: int,
    train: dict,
    eps1: float,
    eps2: float,
    sigma: float,
    extent: float,
    resolution: int,
    device="auto",
    chunk: int = 8,
) -> tuple[list[Job], dict]:
    """The jobs of :func:`concat_grid_experiment` (per seed, ``chunk`` NAD pairs of the grid
    ``indices1 x indices2`` at a time, row-major) and the settings they share."""
    nads = np.asarray(nads, dtype=np.float32)
    settings = dict(
        n_train=int(n_train),
        n_test=int(n_test),
        eps1=float(eps1),
        eps2=float(eps2),
        sigma=float(sigma),
        extent=float(extent),
        resolution=int(resolution),
        train=_train_kwargs(train),
    )
    pairs = [(int(i1), int(i2)) for i1 in indices1 for i2 in indices2]
    jobs = [
        Job(
            {
                **spec_key(model),
                "seed": int(s),
                "settings": settings,
                "pairs": [list(p) for p in part],
                "nads": digest(nads[sorted({i for p in part for i in p})]),
            },
            {"nads": nads, "device": str(device)},
        )
        for s in seeds
        for part in _chunks(pairs, chunk)
    ]
    return jobs, settings


def concat_grid_experiment(
    model,
    nads,
    indices1,
    indices2=None,
    *,
    seeds,
    n_train: int,
    n_test: int,
    train: dict,
    eps1: float = 1.0,
    eps2: float = 0.5,
    sigma: float = 1.0,
    extent: float = 2.0,
    resolution: int = 41,
    device="auto",
    chunk: int = 8,
    cache=None,
    executor=None,
    progress=False,
) -> ConcatGridResult:
    """The experiment of the paper's Fig. 2 (and appendix Figs. 4-8) for one architecture.

    ``model``: registry name or ``"pkg.mod:factory"`` (built with 2 input channels, one output);
    ``nads``: a full NAD basis (rows) of a one-channel copy of it; each network is trained on
    ``n_train`` samples of D(u_i1) (+) D(u_i2) and tested on ``n_test`` fresh ones. The
    cross-section passes through the first test sample with its in-plane components removed.
    ``train``: ``epochs``, ``max_lr`` and optionally ``batch_size`` (128), ``momentum`` (0.9),
    ``weight_decay`` (0), ``clip_grad_norm`` (None), ``schedule`` ("triangular").
    """
    indices1 = [int(i) for i in indices1]
    indices2 = [int(i) for i in (indices1 if indices2 is None else indices2)]
    jobs, settings = concat_jobs(
        model,
        nads,
        indices1,
        indices2,
        seeds=seeds,
        n_train=n_train,
        n_test=n_test,
        train=train,
        eps1=eps1,
        eps2=eps2,
        sigma=sigma,
        extent=extent,
        resolution=resolution,
        device=device,
        chunk=chunk,
    )
    res = run_jobs(jobs, concat_job, executor=executor, cache=cache, progress=progress)
    S, n1, n2 = len(seeds), len(indices1), len(indices2)
    cat = lambda k: np.concatenate([a[k] for a, _ in res]).reshape(S, n1, n2, *res[0][0][k].shape[1:])  # noqa: E731
    return ConcatGridResult(
        model=spec_key(model)["model"],
        indices1=indices1,
        indices2=indices2,
        seeds=list(seeds),
        acc_both=cat("acc_both"),
        acc_first=cat("acc_first"),
        acc_second=cat("acc_second"),
        train_acc=cat("train_acc"),
        angle=cat("angle"),
        sections=cat("sections"),
        a=res[0][0]["a"],
        b=res[0][0]["b"],
        settings=settings,
        seconds=float(sum(m.get("seconds", 0.0) for _, m in res)),
    )


# --------------------------------------------------------------------------------------------
# Experiment 2: binary CIFAR-10 (+) D(v)
# --------------------------------------------------------------------------------------------
def _binary_cifar(data_spec: dict):
    d = load_cifar10_spec(data_spec)
    return (
        normalise(d.x_train),
        binarise_labels(d.y_train).astype(np.int64),
        normalise(d.x_test),
        binarise_labels(d.y_test).astype(np.int64),
    )


def cifar_dv_job(config: dict, nads, data_spec: dict, device="auto"):
    """Train one network per NAD index of ``config["indices"]`` (seed ``config["seed"]``) on
    binary CIFAR-10 (+) D(u_i) and measure the three accuracies."""
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
        for k, v in (
            ("acc_all", acc["all"]),
            ("acc_cifar", acc["cifar"]),
            ("acc_dv", acc["dv"]),
            ("train_acc", r.train_acc),
        ):
            out[k].append(v)
    return {k: np.asarray(v) for k, v in out.items()}, _timing(t0, c0, device)


def cifar_dv_jobs(
    model,
    nads,
    indices,
    *,
    seeds,
    data_spec: dict,
    data_key: dict,
    sigma: float,
    train: dict,
    eps: float,
    device="auto",
    chunk: int = 4,
) -> tuple[list[Job], dict]:
    """The jobs of :func:`cifar_dv_experiment` (per seed, ``chunk`` NAD indices at a time) and
    the settings they share."""
    nads = np.asarray(nads, dtype=np.float32)
    indices = [int(i) for i in indices]
    settings = dict(sigma=float(sigma), eps=float(eps), data=dict(data_key), train=_train_kwargs(train))
    jobs = [
        Job(
            {**spec_key(model), "seed": int(s), "settings": settings, "indices": part, "nads": digest(nads[part])},
            {"nads": nads, "data_spec": dict(data_spec), "device": str(device)},
        )
        for s in seeds
        for part in _chunks(indices, chunk)
    ]
    return jobs, settings


def cifar_dv_experiment(
    model,
    nads,
    indices,
    *,
    seeds,
    data_spec: dict,
    data_key: dict,
    sigma: float,
    train: dict,
    eps: float = 1.0,
    device="auto",
    chunk: int = 4,
    cache=None,
    executor=None,
    progress=False,
) -> CifarDVResult:
    """The experiment of the paper's Fig. 3 for one architecture (4 input channels, one output).

    ``nads``: a full NAD basis (rows); ``data_spec``: how a worker loads CIFAR-10
    (:func:`nadcore.data.cifar.load_cifar10_spec`; labels are binarised: -1 for classes 0-4, +1 for
    5-9; images normalised); ``data_key``: what identifies those images in the cache key (name,
    checksum, sizes); ``train``, ``chunk``, ``cache`` as in :func:`concat_grid_experiment`.
    """
    indices = [int(i) for i in indices]
    jobs, settings = cifar_dv_jobs(
        model,
        nads,
        indices,
        seeds=seeds,
        data_spec=data_spec,
        data_key=data_key,
        sigma=sigma,
        train=train,
        eps=eps,
        device=device,
        chunk=chunk,
    )
    res = run_jobs(jobs, cifar_dv_job, executor=executor, cache=cache, progress=progress)
    S = len(seeds)
    cat = lambda k: np.concatenate([a[k] for a, _ in res]).reshape(S, len(indices))  # noqa: E731
    return CifarDVResult(
        model=spec_key(model)["model"],
        indices=indices,
        seeds=list(seeds),
        acc_all=cat("acc_all"),
        acc_cifar=cat("acc_cifar"),
        acc_dv=cat("acc_dv"),
        train_acc=cat("train_acc"),
        settings=settings,
        seconds=float(sum(m.get("seconds", 0.0) for _, m in res)),
    )
