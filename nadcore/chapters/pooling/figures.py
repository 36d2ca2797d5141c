"""Figures of chapter 1 (pooling and aliasing): the paper's Fig. 4a and Fig. 4b.

Ortiz-Jimenez et al., "Neural Anisotropy Directions", NeurIPS 2020, Sec. 2.1-2.2.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from nadcore.theory import pooling as theory

__all__ = ["plot_bayes_accuracy_after_pooling", "plot_linear_pooling_training"]


def plot_bayes_accuracy_after_pooling(
    rows: list[dict], D: int, S: int, eps: float, sigmas, phase: float = 0.0, figsize=(7.5, 4.2)
):
    """Fig. 4a: best achievable accuracy after average pooling vs the discriminative frequency l.

    For every ``sigma``: Theorem 1's closed form (line, l = 0..D/2), the exact value for the real
    cosine direction where it differs (open circles), and the Monte Carlo estimates in ``rows``
    (from :func:`nadcore.chapters.pooling.runs.compare_theorem1_monte_carlo`) with +-2 standard errors.
    """
    m_hat = theory.average_pooling_prefilter(D, S)
    ells = np.arange(D // 2 + 1)
    fig, ax = plt.subplots(figsize=figsize)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    M = D // S
    for i, sigma in enumerate(sigmas):
        col = colors[i % len(colors)]
        closed = theory.bayes_accuracy_after_pooling(ells, m_hat, S, eps, sigma)
        ax.plot(ells, closed, "-", color=col, lw=1.6, label=rf"Theorem 1, $\epsilon/\sigma = {eps / sigma:.3g}$")
        exact = theory.bayes_accuracy_after_pooling(ells, m_hat, S, eps, sigma, phase=phase)
        differ = np.abs(exact - closed) > 1e-9
        if differ.any():
            ax.plot(
                ells[differ],
                exact[differ],
                "o",
                mfc="none",
                color=col,
                ms=8,
                mew=1.4,
                label="exact, real cosine (where it differs)" if i == 0 else None,
            )
        mine = [r for r in rows if abs(r["sigma"] - sigma) < 1e-12]
        if mine:
            ax.errorbar(
                [r["ell"] for r in mine],
                [r["mc"] for r in mine],
                yerr=[2 * r["stderr"] for r in mine],
                fmt="x",
                color=col,
                ms=5,
                capsize=2,
                label=r"Monte Carlo $\pm 2$ s.e." if i == 0 else None,
            )
    for k in range(0, D // 2 + 1, M):
        ax.axvline(k, color="0.85", lw=0.8, zorder=0)
    ax.set_xlabel(r"discriminative frequency $\ell$")
    ax.set_ylabel("best achievable test accuracy")
    ax.set_title(f"Average pooling, D = {D}, S = {S}: an anisotropic lossy channel")
    ax.set_ylim(0.45, 1.02)
    ax.set_xlim(-1, D // 2 + 1)
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig


def plot_linear_pooling_training(results: list[dict], logx: bool = False, figsize=(7.5, 4.2)):
    """Fig. 4b: training loss of the deep linear model of pooling, one curve per frequency l.

    ``results``: outputs of :func:`nadcore.theory.train_linear_pooling_model`; the legend shows
    Lemma 1's curvature ratio zeta(l). The dotted line is the best linear loss
    ``sigma^2 / (eps^2 + sigma^2)``.
    """
    fig, ax = plt.subplots(figsize=figsize)
    cmap = plt.get_cmap("viridis")
    n = max(len(results) - 1, 1)
    for i, r in enumerate(results):
        ax.plot(
            np.arange(len(r["loss"])),
            r["loss"],
            color=cmap(i / n),
            lw=1.5,
            label=rf"$\ell = {r['ell']}$, $\zeta = {r['zeta']:.3g}$",
        )
    if results:
        ax.axhline(results[0]["bayes_loss"], color="0.4", ls=":", lw=1, label="best linear loss")
    if logx:
        ax.set_xscale("symlog", linthresh=10, linscale=0.5)
    if results:
        ax.set_xlim(0, len(results[0]["loss"]) - 1)
    ax.set_xlabel("SGD iteration" + (" (linear up to 10, then logarithmic)" if logx else ""))
    ax.set_ylabel(r"training loss $(y - f(x))^2$")
    ax.set_title(r"Deep linear model of pooling $f(x) = \theta^T A(m \odot \phi \odot x)$")
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    return fig
