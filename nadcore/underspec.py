"""Underspecification through the lens of NADs.

Paper: Ortiz-Jimenez, Salazar-Reque, Modas, Moosavi-Dezfooli, Frossard, "A neural anisotropic
view of underspecification in deep learning" (ICLR 2021 RAI workshop, arXiv:2104.14372).
Chapter ``chapters/05_underspecification.py`` runs everything here.

Two kinds of *underspecified* datasets, both solvable in more than one way:

* **D(v1) (+) D(v2)** (Sec. 3, Fig. 2, appendix A.1): ``x = x1 (+) x2`` (concatenation along the
  channel axis, 2 x 32 x 32), ``x1 ~ D(v1)`` with margin ``eps1``, ``x2 ~ D(v2)`` with ``eps2``,
  both with the SAME label. Either channel alone separates the classes perfectly.
  :func:`underspecified_dataset`.
* **binary CIFAR-10 (+) D(v)** (Sec. 4, Fig. 3, appendix A.2): the three colour channels of a
  CIFAR-10 image (label -1 for classes 0-4, +1 for 5-9) and a fourth channel ``~ D(v)`` with the
  same label. :func:`cifar_dv_dataset`.

After training, which information a network uses is read off by *ablation*: the test accuracy
with every channel, and with one group of channels set to zero (:func:`channel_ablation_accuracy`).
For D(v1) (+) D(v2), the geometry of the solution is read off a *cross-section* of the decision
boundary in the plane spanned by ``v1 (+) 0`` and ``0 (+) v2`` (:func:`decision_cross_section`),
computed from the network's outputs on a grid of points, and summarised by the direction of the
boundary's normal in that plane (:func:`boundary_angle`).

The directions ``v`` are NADs of a one-channel copy of each architecture. The experiments
themselves (jobs of the common runner) are in :mod:`nadcore.underspec_experiments`.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import torch

from nadcore.data import directional_dataset, unit
from nadcore.utils import resolve_device

__all__ = [
    "mlp_cifar", "directional_with_labels", "underspecified_dataset", "zero_channels",
    "channel_ablation_accuracy", "plane_points", "decision_cross_section", "boundary_points",
    "boundary_angle", "cifar_dv_dataset", "phase_transition_index", "MAX_MARGIN_ANGLE",
    "CIFAR_ALIASES", "cifar_spec", "seed_mean_halfwidth", "seed_summary", "format_fixed",
]


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
                            generator: torch.Generator) -> torch.Tensor:
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
    x, y0 = directional_dataset(u, len(y), sigma, epsilon, generator=generator)
    shift = float(epsilon) * (y - y0.to(torch.float32))
    return x + shift.view(-1, *([1] * u.dim())) * u


def underspecified_dataset(v1, v2, n: int, *, eps1: float = 1.0, eps2: float = 0.5,
                           sigma: float = 1.0, generator: torch.Generator):
    """``n`` samples of D(v1) (+) D(v2) (paper Sec. 3, Fig. 1): ``x = x1 (+) x2`` with the same
    label, ``x1 ~ D(v1)`` (margin ``eps1``), ``x2 ~ D(v2)`` (margin ``eps2``), noise ``sigma`` in
    both. ``v1``, ``v2``: one-channel directions (1024 values or (1, 32, 32)).

    Returns ``x`` float32 ``(n, 2, 32, 32)`` and ``y`` int64 ``(n,)`` in {-1, +1}.
    """
    v1 = unit(torch.as_tensor(np.asarray(v1, dtype=np.float32)).reshape(1, 32, 32))
    v2 = unit(torch.as_tensor(np.asarray(v2, dtype=np.float32)).reshape(1, 32, 32))
    x1, y = directional_dataset(v1, n, sigma, eps1, generator=generator)
    x2 = directional_with_labels(v2, y, sigma, eps2, generator)
    return torch.cat([x1, x2], dim=1), y


def cifar_dv_dataset(x_cifar, y, v, *, sigma: float, epsilon: float = 1.0,
                     generator: torch.Generator) -> torch.Tensor:
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


#: Sec. 4 (binary CIFAR-10 (+) D(v)) uses a wider MLP than Sec. 3: "mlp" means this spec there.
CIFAR_ALIASES = {"mlp": "nadcore.underspec:mlp_cifar"}


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
# Summaries over seeds
# --------------------------------------------------------------------------------------------
def seed_mean_halfwidth(values, axis: int = 0):
    """Mean over independent seeds (``axis``) and the half-width of its 95% Student-t interval
    (:func:`nadcore.evidence.t_interval`), elementwise over the other axes: ``(mean, half)``;
    the half-width is NaN with a single seed."""
    from nadcore.evidence import t_interval

    a = np.moveaxis(np.asarray(values, dtype=float), axis, -1)
    flat = a.reshape(-1, a.shape[-1])
    ivs = [t_interval(v) for v in flat]
    mean = np.array([iv.value for iv in ivs]).reshape(a.shape[:-1])
    half = np.array([iv.high - iv.value for iv in ivs]).reshape(a.shape[:-1])
    return mean, half


def format_fixed(x, digits: int) -> str:
    """``x`` with ``digits`` decimals, never "-0" (a tiny negative value prints as 0)."""
    return f"{float(np.round(x, digits)) + 0.0:.{digits}f}"


def seed_summary(frame, by, columns, scale: float = 100.0, digits: int = 1):
    """A table of ``mean +- half-width`` strings (95% t-interval over the rows of each group, one
    row per seed), grouping the tidy ``frame`` by ``by`` and summarising ``columns``, each
    multiplied by ``scale`` (100: accuracies in percent)."""
    import pandas as pd

    rows = []
    for key, g in frame.groupby(list(by), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(by, key))
        for c in columns:
            m, h = seed_mean_halfwidth(scale * g[c].to_numpy())
            row[c] = format_fixed(m, digits) + ("" if not np.isfinite(h) else f" ± {format_fixed(h, digits)}")
        rows.append(row)
    return pd.DataFrame(rows)
