"""Underspecification through the lens of NADs.

Paper: Ortiz-Jimenez, Salazar-Reque, Modas, Moosavi-Dezfooli, Frossard, "A neural anisotropic
view of underspecification in deep learning" (ICLR 2021 RAI workshop, arXiv:2104.14372).
Chapter ``chapters/05_underspecification.py`` runs everything here.

Two kinds of *underspecified* datasets, both solvable in more than one way:

* **D(v1) (+) D(v2)** (Sec. 3, Fig. 2, appendix A.1): ``x = x1 (+) x2`` (concatenation along the
  channel axis, 2 x 32 x 32), ``x1 ~ D(v1)`` with margin ``eps1``, ``x2 ~ D(v2)`` with ``eps2``,
  both with the SAME label. Either channel alone separates the classes perfectly.
  :func:`underspecified_dataset`, :func:`concat_grid_experiment`.
* **binary CIFAR-10 (+) D(v)** (Sec. 4, Fig. 3, appendix A.2): the three colour channels of a
  CIFAR-10 image (label -1 for classes 0-4, +1 for 5-9) and a fourth channel ``~ D(v)`` with the
  same label. :func:`cifar_dv_dataset`, :func:`cifar_dv_experiment`.

After training, which information a network uses is read off by *ablation*: the test accuracy
with every channel, and with one group of channels set to zero (:func:`channel_ablation_accuracy`).
For D(v1) (+) D(v2), the geometry of the solution is read off a *cross-section* of the decision
boundary in the plane spanned by ``v1 (+) 0`` and ``0 (+) v2`` (:func:`decision_cross_section`),
computed from the network's outputs on a grid of points, and summarised by the direction of the
boundary's normal in that plane (:func:`boundary_angle`).

The directions ``v`` are NADs of a one-channel copy of each architecture (:func:`nad_basis`).
Every training run (one chunk of NAD pairs / indices trained together with
:func:`nadcore.train.train_many`) is one content-addressed cache entry, so an interrupted chapter
resumes.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import torch

from nadcore.data import directional_dataset, unit
from nadcore.utils import derived_seed, generator as make_generator, resolve_device

__all__ = [
    "mlp_cifar", "directional_with_labels", "underspecified_dataset", "zero_channels",
    "channel_ablation_accuracy", "plane_points", "decision_cross_section", "boundary_points",
    "boundary_angle", "nad_basis", "ConcatGridResult", "concat_grid_experiment",
    "cifar_dv_dataset", "CifarDVResult", "cifar_dv_experiment", "phase_transition_index",
    "MAX_MARGIN_ANGLE", "CIFAR_ALIASES", "cifar_spec", "chapter_nad_basis",
]

#: Tags that keep the random streams of the two experiments apart (see ``derived_seed``).
_TAG_CONCAT, _TAG_CIFAR = 51, 52


# --------------------------------------------------------------------------------------------
# Architectures of the appendix not in the registry
# --------------------------------------------------------------------------------------------
def mlp_cifar(in_channels: int = 1, num_outputs: int = 1):
    """The MLP of appendix A.2 (binary CIFAR-10 (+) D(v)): hidden layers of 200 and 50 ReLUs.

    Use it as the model spec ``"nadcore.underspec:mlp_cifar"``. (Sec. 3's MLP, hidden 100 and 20,
    is the registry's ``"mlp"``.)
    """
    from nadcore.models import MLP

    return MLP(in_channels, num_outputs, 32, hidden=(200, 50))


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------
def directional_with_labels(v, y, sigma: float, epsilon: float,
                            generator: torch.Generator | None = None) -> torch.Tensor:
    """Samples of D(v) (eq. (1) of the paper) for GIVEN labels ``y`` in {-1, +1}:
    ``x = epsilon * y * v + w``, ``w ~ N(0, sigma^2 (I - v v^T))``.

    Draws with :func:`nadcore.data.directional_dataset` and then moves each sample whose drawn
    label differs from ``y`` by ``epsilon * (y - y_drawn) * v`` (only the signal term changes;
    the noise is orthogonal to ``v`` and independent of the label, so the result is exactly
    D(v) conditioned on ``y``). Returns float32 ``(n, *v.shape)``.
    """
    y = torch.as_tensor(np.asarray(y)).to(torch.float32).reshape(-1)
    if not bool(torch.all((y == 1) | (y == -1))):
        raise ValueError("labels must be in {-1, +1}")
    u = unit(v)
    x, y0 = directional_dataset(u, len(y), sigma, epsilon, generator)
    shift = float(epsilon) * (y - y0.to(torch.float32))
    return x + shift.view(-1, *([1] * u.dim())) * u


def underspecified_dataset(v1, v2, n: int, *, eps1: float = 1.0, eps2: float = 0.5,
                           sigma: float = 1.0, generator: torch.Generator | None = None):
    """``n`` samples of D(v1) (+) D(v2) (paper Sec. 3, Fig. 1): ``x = x1 (+) x2`` with the same
    label, ``x1 ~ D(v1)`` (margin ``eps1``), ``x2 ~ D(v2)`` (margin ``eps2``), noise ``sigma`` in
    both. ``v1``, ``v2``: one-channel directions (1024 values or (1, 32, 32)).

    Returns ``x`` float32 ``(n, 2, 32, 32)`` and ``y`` int64 ``(n,)`` in {-1, +1}.
    """
    v1 = unit(torch.as_tensor(np.asarray(v1, dtype=np.float32)).reshape(1, 32, 32))
    v2 = unit(torch.as_tensor(np.asarray(v2, dtype=np.float32)).reshape(1, 32, 32))
    x1, y = directional_dataset(v1, n, sigma, eps1, generator)
    x2 = directional_with_labels(v2, y, sigma, eps2, generator)
    return torch.cat([x1, x2], dim=1), y


def cifar_dv_dataset(x_cifar, y, v, *, sigma: float, epsilon: float = 1.0,
                     generator: torch.Generator | None = None) -> torch.Tensor:
    """Binary CIFAR-10 (+) D(v) (paper Sec. 4, appendix A.2): append to each (normalised) image
    ``x_cifar`` (N, 3, 32, 32) a fourth channel drawn from D(v) with the image's binary label
    ``y`` in {-1, +1}. Returns float32 (N, 4, 32, 32)."""
    xc = torch.as_tensor(np.asarray(x_cifar, dtype=np.float32))
    u = unit(torch.as_tensor(np.asarray(v, dtype=np.float32)).reshape(1, 32, 32))
    xd = directional_with_labels(u, y, sigma, epsilon, generator)
    return torch.cat([xc, xd], dim=1)


def zero_channels(x, channels: Sequence[int]) -> torch.Tensor:
    """A copy of ``x`` (N, C, H, W) with the given channels set to zero."""
    out = torch.as_tensor(x).clone()
    out[:, list(channels)] = 0
    return out


@torch.no_grad()
def _outputs(model, x: torch.Tensor, device, batch_size: int = 2000) -> torch.Tensor:
    """Scalar outputs of ``model`` (eval mode) on ``x`` (N, C, H, W), as a float64 CPU vector."""
    was = model.training
    model.eval()
    dev = resolve_device(device)
    outs = [model(x[i:i + batch_size].to(dev))[:, 0].double().cpu() for i in range(0, len(x), batch_size)]
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


def decision_cross_section(model, e1, e2, *, extent: float = 2.0, resolution: int = 41,
                           anchor=None, device="cpu") -> dict:
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


# --------------------------------------------------------------------------------------------
# NADs of a one-channel copy of an architecture
# --------------------------------------------------------------------------------------------
def nad_basis(arch: str, *, secant_networks: int | None = None, gradient_networks: int = 2000,
              prefer_published: bool = False, device="auto", seed: int = 0):
    """A full orthonormal NAD basis ``(1024, 1024)`` (one NAD per ROW, by decreasing eigenvalue)
    of a one-channel, one-output copy of ``arch``, and a sentence saying where it comes from.

    Order of preference: the authors' secant estimator with ``secant_networks`` networks (through
    :func:`nadcore.nads.cached_nads`, so chapter 2's entry is reused when the numbers match);
    else, with ``prefer_published``, the authors' published NADs (10,000 networks; the missing
    1024th direction completed as the orthogonal complement); else exact-gradient NADs with
    ``gradient_networks`` networks. Rows beyond the rank of the estimate are completed with
    :func:`nadcore.nads.complete_basis` by the estimator itself.
    """
    from nadcore.models import PUBLISHED_NAMES
    from nadcore.nads import cached_nads, complete_basis, load_published_nads

    name = arch.strip().lower() if isinstance(arch, str) else arch
    if secant_networks:
        r = cached_nads(arch, "secant", int(secant_networks), seed, device=device)
        src = (f"secant NADs (the authors' estimator, step 100) of a 1-channel {arch}, "
               f"{int(secant_networks):,} networks, seed {seed}")
    elif prefer_published and name in PUBLISHED_NAMES:
        try:
            r = load_published_nads(name)
            src = f"the authors' published NADs of {PUBLISHED_NAMES[name]} (10,000 networks, secant)"
        except FileNotFoundError:
            r = cached_nads(arch, "gradient", int(gradient_networks), seed, device=device, workers=1)
            src = (f"exact-gradient NADs of a 1-channel {arch}, {int(gradient_networks):,} networks, "
                   f"seed {seed} (published NADs not found)")
    else:
        r = cached_nads(arch, "gradient", int(gradient_networks), seed, device=device, workers=1)
        src = f"exact-gradient NADs of a 1-channel {arch}, {int(gradient_networks):,} networks, seed {seed}"
    U = complete_basis(np.asarray(r.nads, dtype=np.float64))
    return U.astype(np.float32), src


#: Sec. 4 (binary CIFAR-10 (+) D(v)) uses a wider MLP than Sec. 3: "mlp" means this spec there.
CIFAR_ALIASES = {"mlp": "nadcore.underspec:mlp_cifar"}


def cifar_spec(name: str) -> str:
    """Model spec used for ``name`` in the binary CIFAR-10 (+) D(v) experiment (``"mlp"`` -> the
    appendix's 200-50 MLP, anything else unchanged)."""
    return CIFAR_ALIASES.get(name, name)


def chapter_nad_basis(arch: str, profile: str, *, gradient_networks: int, source: str = "auto",
                      device="auto"):
    """The NADs chapter 5 uses for ``arch`` on ``profile`` (see :func:`nad_basis`).

    ``source``: ``"secant"``: chapter 2's secant NADs for ``arch`` on this profile (same networks,
    seed 0: one shared cache entry; falls through to the next options when chapter 2 computes
    none for ``arch``); ``"published"``: the authors' published NADs (falls back to gradient
    NADs when the files are absent); ``"gradient"``: exact-gradient NADs from
    ``gradient_networks`` networks (used for the MLPs, whose NADs are nearly isotropic: any basis
    is about as good as any other); ``"auto"``: secant if chapter 2 has them, else published if
    they exist, else gradient.
    """
    from nadcore import profiles

    if source not in ("auto", "secant", "published", "gradient"):
        raise ValueError(f"source must be auto, secant, published or gradient; got {source!r}")
    key = arch.strip().lower() if isinstance(arch, str) else arch
    n_secant = None
    if source in ("auto", "secant"):
        n_secant = profiles.resolve("02_nads", profile)["secant_networks"].get(key)
    return nad_basis(arch, secant_networks=n_secant, gradient_networks=gradient_networks,
                     prefer_published=source != "gradient", device=device)


def _digest(a) -> str:
    a = np.ascontiguousarray(np.asarray(a, dtype=np.float32))
    return hashlib.sha256(a.tobytes()).hexdigest()[:16]


def _build(spec, in_channels: int, seed_parts: Sequence[int]):
    from nadcore.models import build_model

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(derived_seed(*seed_parts))
        return build_model(spec, in_channels, 1)


def _train_chunk(specs_models, xs, ys, gens, train: dict, device):
    from nadcore.train import train_many

    kw = dict(epochs=int(train["epochs"]), batch_size=int(train.get("batch_size", 128)),
              max_lr=float(train["max_lr"]), momentum=float(train.get("momentum", 0.9)),
              weight_decay=float(train.get("weight_decay", 0.0)),
              clip_grad_norm=train.get("clip_grad_norm", None),
              schedule=train.get("schedule", "triangular"))
    return train_many(specs_models, xs, ys, generators=gens, device=device, **kw)


_TRAIN_KEYS = ("epochs", "batch_size", "max_lr", "momentum", "weight_decay", "clip_grad_norm",
               "schedule")


def _train_key(train: dict) -> dict:
    d = dict(batch_size=128, momentum=0.9, weight_decay=0.0, clip_grad_norm=None, schedule="triangular")
    d.update({k: train[k] for k in _TRAIN_KEYS if k in train})
    return d


# --------------------------------------------------------------------------------------------
# Experiment 1: D(v1) (+) D(v2) over a grid of NAD pairs (paper Fig. 2, appendix Figs. 4-8)
# --------------------------------------------------------------------------------------------
@dataclass
class ConcatGridResult:
    """Results over the grid ``indices1 x indices2`` (row = NAD index of v1, column = of v2).

    ``acc_both`` / ``acc_first`` / ``acc_second``: test accuracy with both channels, with channel
    1 only (channel 2 zeroed), with channel 2 only (channel 1 zeroed); ``train_acc``: last epoch's
    running training accuracy; ``angle``: :func:`boundary_angle` of each cross-section (degrees);
    ``sections``: ``(len(indices1), len(indices2), R, R)`` network outputs on the cross-section
    grid ``a`` x ``b`` (see :func:`decision_cross_section`).
    """

    model: str
    indices1: list
    indices2: list
    acc_both: np.ndarray
    acc_first: np.ndarray
    acc_second: np.ndarray
    train_acc: np.ndarray
    angle: np.ndarray
    sections: np.ndarray
    a: np.ndarray
    b: np.ndarray
    settings: dict = field(default_factory=dict)

    def section(self, i1: int, i2: int) -> dict:
        """The cross-section of the pair of NAD indices ``(i1, i2)``."""
        r, c = self.indices1.index(i1), self.indices2.index(i2)
        return {"a": self.a, "b": self.b, "logits": self.sections[r, c]}


def _concat_chunk(config: dict, nads: np.ndarray, device) -> dict:
    """Train one network per NAD pair of ``config["pairs"]`` (batched) and measure everything."""
    spec, seed, s = config["model"], config["seed"], config["settings"]
    pairs = [tuple(p) for p in config["pairs"]]
    xs, ys, tests, models, gens = [], [], [], [], []
    for i1, i2 in pairs:
        g = make_generator(seed, _TAG_CONCAT, i1, i2)
        x, y = underspecified_dataset(nads[i1], nads[i2], s["n_train"], eps1=s["eps1"], eps2=s["eps2"],
                                      sigma=s["sigma"], generator=g)
        xt, yt = underspecified_dataset(nads[i1], nads[i2], s["n_test"], eps1=s["eps1"],
                                        eps2=s["eps2"], sigma=s["sigma"], generator=g)
        xs.append(x), ys.append(y), tests.append((xt, yt))
        models.append(_build(spec, 2, (seed, _TAG_CONCAT, i1, i2, 1)))
        gens.append(make_generator(seed, _TAG_CONCAT, i1, i2, 2))
    results = _train_chunk(models, torch.stack(xs), torch.stack(ys), gens, s["train"], device)
    out = {k: [] for k in ("acc_both", "acc_first", "acc_second", "train_acc", "angle", "sections")}
    a = b = None
    for (i1, i2), net, r, (xt, yt) in zip(pairs, models, results, tests):
        acc = channel_ablation_accuracy(net, xt, yt, {"first": [0], "second": [1]}, device)
        e1 = torch.zeros(2, 32, 32)
        e2 = torch.zeros(2, 32, 32)
        e1[0] = unit(torch.as_tensor(nads[i1]).reshape(32, 32))
        e2[1] = unit(torch.as_tensor(nads[i2]).reshape(32, 32))
        sec = decision_cross_section(net, e1, e2, extent=s["extent"], resolution=s["resolution"],
                                     anchor=xt[0], device=device)
        a, b = sec["a"], sec["b"]
        out["acc_both"].append(acc["all"])
        out["acc_first"].append(acc["first"])
        out["acc_second"].append(acc["second"])
        out["train_acc"].append(r.train_acc)
        out["angle"].append(boundary_angle(a, b, sec["logits"]))
        out["sections"].append(sec["logits"].astype(np.float32))
    arrays = {k: np.asarray(v) for k, v in out.items()}
    arrays["a"], arrays["b"] = a, b
    return arrays


def concat_grid_experiment(model, nads, indices1, indices2=None, *, n_train: int, n_test: int,
                           train: dict, eps1: float = 1.0, eps2: float = 0.5, sigma: float = 1.0,
                           extent: float = 2.0, resolution: int = 41, seed: int = 0,
                           device="auto", chunk: int = 8, cache=None, repeats: int = 1,
                           progress: Callable[[str], None] | None = None) -> ConcatGridResult:
    """The experiment of the paper's Fig. 2 (and appendix Figs. 4-8) for one architecture.

    For every pair ``(i1, i2)`` of ``indices1 x indices2`` a fresh ``model`` (registry name or
    ``"pkg.mod:factory"``, built with 2 input channels and one output) is trained on ``n_train``
    samples of D(u_i1) (+) D(u_i2) (``u_k`` = row ``k`` of ``nads``, a NAD basis of a one-channel
    copy of the architecture) and tested on ``n_test`` fresh samples with both channels, channel 1
    only and channel 2 only; the cross-section of its decision boundary in the plane spanned by
    ``u_i1 (+) 0`` and ``0 (+) u_i2`` is computed on a ``resolution``-point grid over
    ``[-extent, extent]^2`` through the first test sample (its components in the plane removed,
    so the cross-section passes through typical noise, where the data live).

    ``train``: ``epochs``, ``max_lr`` and optionally ``batch_size`` (128), ``momentum`` (0.9),
    ``weight_decay`` (0), ``clip_grad_norm`` (None), ``schedule`` ("triangular"); the loss is the
    logistic loss on one output (``nadcore.train``). Pairs are trained ``chunk`` at a time with
    :func:`nadcore.train.train_many`; each chunk is one cache entry (``cache``: a
    :class:`nadcore.cache.Cache` or None). Initial weights, data and batch order of pair
    ``(i1, i2)`` depend only on ``(seed, i1, i2)``. ``repeats > 1`` repeats everything with seeds
    ``seed, seed + 1, ...`` and averages accuracies and angles (the paper averages three seeds);
    the cross-sections are those of the first seed (``settings["repeats"]`` records the number).
    """
    if int(repeats) > 1:
        runs = [concat_grid_experiment(model, nads, indices1, indices2, n_train=n_train, n_test=n_test,
                                       train=train, eps1=eps1, eps2=eps2, sigma=sigma, extent=extent,
                                       resolution=resolution, seed=seed + k, device=device, chunk=chunk,
                                       cache=cache, progress=progress) for k in range(int(repeats))]
        out = runs[0]
        for key in ("acc_both", "acc_first", "acc_second", "train_acc", "angle"):
            setattr(out, key, np.mean([getattr(r, key) for r in runs], axis=0))
        out.settings = {**out.settings, "repeats": int(repeats)}
        return out
    indices1 = [int(i) for i in indices1]
    indices2 = [int(i) for i in (indices1 if indices2 is None else indices2)]
    nads = np.asarray(nads, dtype=np.float32)
    settings = dict(n_train=int(n_train), n_test=int(n_test), eps1=float(eps1), eps2=float(eps2),
                    sigma=float(sigma), extent=float(extent), resolution=int(resolution),
                    train=_train_key(train))
    pairs = [(i1, i2) for i1 in indices1 for i2 in indices2]
    spec = model if isinstance(model, str) else getattr(model, "__name__", repr(model))
    rows: dict[tuple, dict] = {}
    for c0 in range(0, len(pairs), max(1, int(chunk))):
        part = pairs[c0:c0 + max(1, int(chunk))]
        config = dict(model=spec, seed=int(seed), settings=settings, pairs=[list(p) for p in part],
                      nads=_digest(nads[sorted({i for p in part for i in p})]))
        if progress:
            progress(f"{spec}: pairs {part[0]}..{part[-1]} ({c0 + len(part)}/{len(pairs)})")
        compute = lambda: (_concat_chunk({**config, "model": model}, nads, device), {})  # noqa: E731
        arrays = cache.get_or_compute("underspec_concat", config, compute)[0] if cache is not None \
            else compute()[0]
        for k, p in enumerate(part):
            rows[p] = {key: arrays[key][k] for key in
                       ("acc_both", "acc_first", "acc_second", "train_acc", "angle", "sections")}
        a, b = arrays["a"], arrays["b"]
    shape = (len(indices1), len(indices2))
    grid = lambda key: np.array([[rows[(i1, i2)][key] for i2 in indices2] for i1 in indices1])  # noqa: E731
    return ConcatGridResult(model=spec, indices1=indices1, indices2=indices2,
                            acc_both=grid("acc_both").reshape(shape),
                            acc_first=grid("acc_first").reshape(shape),
                            acc_second=grid("acc_second").reshape(shape),
                            train_acc=grid("train_acc").reshape(shape),
                            angle=grid("angle").reshape(shape), sections=grid("sections"),
                            a=np.asarray(a), b=np.asarray(b), settings=settings)


# --------------------------------------------------------------------------------------------
# Experiment 2: binary CIFAR-10 (+) D(v) (paper Fig. 3, appendix A.2)
# --------------------------------------------------------------------------------------------
@dataclass
class CifarDVResult:
    """Per NAD index of ``v``: test accuracy with all four channels (``acc_all``), with the CIFAR
    channels only (D(v) channel zeroed, ``acc_cifar``), with the D(v) channel only (CIFAR zeroed,
    ``acc_dv``), and the last epoch's running training accuracy."""

    model: str
    indices: list
    acc_all: np.ndarray
    acc_cifar: np.ndarray
    acc_dv: np.ndarray
    train_acc: np.ndarray
    settings: dict = field(default_factory=dict)


def _cifar_chunk(config: dict, arrays: dict, nads: np.ndarray, device) -> dict:
    spec, seed, s = config["model"], config["seed"], config["settings"]
    xtr, ytr, xte, yte = arrays["x_train"], arrays["y_train"], arrays["x_test"], arrays["y_test"]
    xs, tests, models, gens = [], [], [], []
    for i in config["indices"]:
        g = make_generator(seed, _TAG_CIFAR, i)
        xs.append(cifar_dv_dataset(xtr, ytr, nads[i], sigma=s["sigma"], epsilon=s["eps"], generator=g))
        tests.append(cifar_dv_dataset(xte, yte, nads[i], sigma=s["sigma"], epsilon=s["eps"], generator=g))
        models.append(_build(spec, 4, (seed, _TAG_CIFAR, 1)))   # same initial weights for every index
        gens.append(make_generator(seed, _TAG_CIFAR, 2))        # and the same batch order
    yt = torch.as_tensor(np.asarray(ytr)).to(torch.int64)
    results = _train_chunk(models, torch.stack(xs), yt.expand(len(xs), -1), gens, s["train"], device)
    out = {k: [] for k in ("acc_all", "acc_cifar", "acc_dv", "train_acc")}
    for net, r, xt in zip(models, results, tests):
        acc = channel_ablation_accuracy(net, xt, yte, {"cifar": [0, 1, 2], "dv": [3]}, device)
        out["acc_all"].append(acc["all"])
        out["acc_cifar"].append(acc["cifar"])
        out["acc_dv"].append(acc["dv"])
        out["train_acc"].append(r.train_acc)
    return {k: np.asarray(v) for k, v in out.items()}


def cifar_dv_experiment(model, x_train, y_train, x_test, y_test, nads, indices, *, sigma: float,
                        train: dict, eps: float = 1.0, seed: int = 0, device="auto", chunk: int = 4,
                        cache=None, data_tag: str | None = None, repeats: int = 1,
                        progress: Callable[[str], None] | None = None) -> CifarDVResult:
    """The experiment of the paper's Fig. 3 for one architecture.

    ``x_*``: normalised CIFAR-10 images (N, 3, 32, 32); ``y_*``: binary labels in {-1, +1}
    (:func:`nadcore.cifar.binarise_labels`). For every NAD index ``i`` a fresh ``model`` (4 input
    channels, one output) is trained on the images with a fourth channel ~ D(u_i) (margin ``eps``,
    noise ``sigma``) and tested with all channels, CIFAR only and D(u_i) only. Every index starts
    from the same initial weights and sees the same batch order, so runs differ only in ``v``.
    ``train``, ``chunk``, ``cache`` as in :func:`concat_grid_experiment`; ``data_tag`` names the
    data in the cache key (default: a checksum of the arrays). ``repeats > 1`` averages over the
    seeds ``seed, seed + 1, ...``.
    """
    if int(repeats) > 1:
        runs = [cifar_dv_experiment(model, x_train, y_train, x_test, y_test, nads, indices, sigma=sigma,
                                    train=train, eps=eps, seed=seed + k, device=device, chunk=chunk,
                                    cache=cache, data_tag=data_tag, progress=progress)
                for k in range(int(repeats))]
        out = runs[0]
        for key in ("acc_all", "acc_cifar", "acc_dv", "train_acc"):
            setattr(out, key, np.mean([getattr(r, key) for r in runs], axis=0))
        out.settings = {**out.settings, "repeats": int(repeats)}
        return out
    indices = [int(i) for i in indices]
    nads = np.asarray(nads, dtype=np.float32)
    y_train = np.asarray(y_train).astype(np.int64)
    y_test = np.asarray(y_test).astype(np.int64)
    data = {"x_train": np.asarray(x_train, dtype=np.float32), "y_train": y_train,
            "x_test": np.asarray(x_test, dtype=np.float32), "y_test": y_test}
    if data_tag is None:
        data_tag = _digest(np.concatenate([data["x_train"].reshape(-1)[:100000], y_train.astype(np.float32),
                                           data["x_test"].reshape(-1)[:100000], y_test.astype(np.float32)]))
    settings = dict(sigma=float(sigma), eps=float(eps), n_train=len(y_train), n_test=len(y_test),
                    data=data_tag, train=_train_key(train))
    spec = model if isinstance(model, str) else getattr(model, "__name__", repr(model))
    rows = {}
    step = max(1, int(chunk))
    for c0 in range(0, len(indices), step):
        part = indices[c0:c0 + step]
        config = dict(model=spec, seed=int(seed), settings=settings, indices=part,
                      nads=_digest(nads[part]))
        if progress:
            progress(f"{spec}: NAD indices {part} ({c0 + len(part)}/{len(indices)})")
        compute = lambda: (_cifar_chunk({**config, "model": model}, data, nads, device), {})  # noqa: E731
        arrays = cache.get_or_compute("underspec_cifar", config, compute)[0] if cache is not None \
            else compute()[0]
        for k, i in enumerate(part):
            rows[i] = {key: float(arrays[key][k]) for key in ("acc_all", "acc_cifar", "acc_dv", "train_acc")}
    col = lambda key: np.array([rows[i][key] for i in indices])  # noqa: E731
    return CifarDVResult(model=spec, indices=indices, acc_all=col("acc_all"), acc_cifar=col("acc_cifar"),
                         acc_dv=col("acc_dv"), train_acc=col("train_acc"), settings=settings)


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
