"""Chapter 1's simulation: Theorem 1 checked against a Monte Carlo classifier on real samples.

The closed forms are in :mod:`nadcore.theory.pooling`; this module draws samples of D(v) with the
book's one sampler (:func:`nadcore.data.directional_dataset`), pools them in pixel space and
counts how often the Bayes-optimal linear rule is right.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from nadcore.data.directions import directional_dataset
from nadcore.theory.pooling import (
    average_pooling_prefilter,
    bayes_accuracy_after_pooling,
    bayes_accuracy_linear,
    optimal_linear_classifier,
    pooling_operator,
    real_fourier_direction,
)

__all__ = ["monte_carlo_accuracy_after_pooling", "compare_theorem1_monte_carlo"]


def monte_carlo_accuracy_after_pooling(
    ell: int,
    D: int,
    S: int,
    eps: float,
    sigma: float,
    n: int,
    generator: torch.Generator,
    phase: float = 0.0,
    kind: str = "average",
    m_hat=None,
    chunk: int = 25_000,
):
    """Monte Carlo accuracy of the optimal linear classifier on pooled samples of ``D(v_l)``.

    Draws ``n`` samples of D(v) (:func:`nadcore.data.directional_dataset`, the book's one
    sampler: ``x = eps y v + w``, ``w ~ N(0, sigma^2 (I - v v^T))``), ``v`` the real direction
    :func:`~nadcore.theory.pooling.real_fourier_direction` ``(ell, D, phase)``, in chunks of
    ``chunk``; applies the pooling matrix :func:`~nadcore.theory.pooling.pooling_operator` in
    pixel space, and classifies with :func:`~nadcore.theory.pooling.optimal_linear_classifier`
    (the known-covariance LDA rule). Returns ``(accuracy, standard_error)`` with
    ``standard_error = sqrt(acc (1 - acc) / n)``. Float32 samples on the CPU (single precision
    moves no decision boundary by a measurable amount at these sizes).
    """
    P_np = pooling_operator(D, S, kind=kind, m_hat=m_hat)
    v_np = real_fourier_direction(ell, D, phase)
    w_np = optimal_linear_classifier(P_np, v_np)
    w_np = w_np / max(np.abs(w_np).max(), 1e-300)
    Pw = torch.as_tensor(P_np.T @ w_np, dtype=torch.float32)  # classify z = P x by w: x . (P^T w)
    correct = done = 0
    while done < n:
        b = min(chunk, n - done)
        x, y = directional_dataset(v_np, b, sigma, eps, generator=generator)
        pred = torch.where(x @ Pw >= 0, 1, -1)
        correct += int((pred == y).sum().item())
        done += b
    acc = correct / n
    return acc, math.sqrt(max(acc * (1 - acc), 0.0) / n)


def compare_theorem1_monte_carlo(
    ells, D: int, S: int, eps: float, sigma: float, n: int, generator: torch.Generator, phase: float = 0.0
) -> list[dict]:
    """Rows ``{ell, sigma, closed_form, exact, mc, stderr, z}`` comparing Theorem 1 with simulation.

    ``closed_form``: the paper's formula :func:`~nadcore.theory.pooling.bayes_accuracy_after_pooling` (``phase=None``);
    ``exact``: :func:`~nadcore.theory.pooling.bayes_accuracy_linear` for the real direction actually sampled;
    ``mc``/``stderr``: :func:`monte_carlo_accuracy_after_pooling` (average pooling);
    ``z = |mc - exact| / sqrt(exact (1 - exact) / n)`` (0 when both are exactly 1).
    """
    m_hat = average_pooling_prefilter(D, S)
    P = pooling_operator(D, S)
    rows = []
    for ell in ells:
        closed = float(bayes_accuracy_after_pooling(ell, m_hat, S, eps, sigma))
        exact = bayes_accuracy_linear(P, real_fourier_direction(ell, D, phase), eps, sigma)
        mc, se = monte_carlo_accuracy_after_pooling(ell, D, S, eps, sigma, n, generator, phase)
        se0 = math.sqrt(exact * (1 - exact) / n)
        diff = abs(mc - exact)
        z = diff / se0 if se0 > 0 else (0.0 if diff == 0 else math.inf)
        rows.append(dict(ell=int(ell), sigma=float(sigma), closed_form=closed, exact=exact, mc=mc, stderr=se, z=z))
    return rows
