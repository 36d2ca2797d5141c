"""The underspecified datasets of the follow-up paper.

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

The directions ``v`` are NADs of a one-channel copy of each architecture. How a trained network
uses the channels, and the experiments themselves, are :mod:`nadcore.chapters.underspecification.runs`.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from nadcore.data.directions import directional_dataset, unit

__all__ = ["directional_with_labels", "underspecified_dataset", "cifar_dv_dataset", "zero_channels"]


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------
def directional_with_labels(v, y, sigma: float, epsilon: float, generator: torch.Generator) -> torch.Tensor:
    """Samples of D(v) (eq. (1) of the paper) for GIVEN labels ``y`` in {-1, +1}:
    ``x = epsilon * y * v + w``, ``w ~ N(0, sigma^2 (I - v v^T))``.

    Draws with :func:`nadcore.data.directions.directional_dataset` and then moves each sample whose drawn
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


def underspecified_dataset(
    v1, v2, n: int, *, eps1: float = 1.0, eps2: float = 0.5, sigma: float = 1.0, generator: torch.Generator
):
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


def cifar_dv_dataset(x_cifar, y, v, *, sigma: float, epsilon: float = 1.0, generator: torch.Generator) -> torch.Tensor:
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
