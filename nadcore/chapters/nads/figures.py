"""Figures of chapter 2: NADs in pixel and Fourier space (paper Fig. 5), spectra, convergence."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from nadcore.data.directions import fourier_energy


def nad_grid(results: dict, indices=(0, 1, 2), title: str | None = None):
    """Paper Fig. 5: for each architecture (a pair of rows) the NADs ``indices`` in pixel space
    (diverging colours) and their Fourier energy below (low frequencies centred).

    ``results``: label -> NADResult (or an array of NADs, one per row, of 1x32x32 images).
    """
    labels = list(results)
    n = len(indices)
    fig, axes = plt.subplots(2 * len(labels), n, figsize=(1.25 * n + 0.9, 2.5 * len(labels) + 0.4), squeeze=False)
    for a, label in enumerate(labels):
        r = results[label]
        U = r.nads if hasattr(r, "nads") else np.asarray(r)
        side = int(round(np.sqrt(U.shape[1])))
        for j, i in enumerate(indices):
            ax_p, ax_f = axes[2 * a, j], axes[2 * a + 1, j]
            img = U[i].reshape(side, side)
            vmax = np.abs(img).max()
            ax_p.imshow(img, cmap="BrBG", vmin=-vmax, vmax=vmax)
            ax_f.imshow(fourier_energy(img), cmap="magma")
            ax_p.set_title(f"NAD {i}", fontsize=8)
            for ax in (ax_p, ax_f):
                ax.set_xticks([])
                ax.set_yticks([])
        axes[2 * a, 0].set_ylabel(f"{label}\npixels", fontsize=8)
        axes[2 * a + 1, 0].set_ylabel("Fourier", fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def spectra(results: dict, title: str = "Normalised eigenvalues of the gradient covariance"):
    """Normalised eigenvalues (largest = 1, log scale) of several NAD estimates on one axis."""
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    for label, r in results.items():
        ax.semilogy(r.eigenvalues / r.eigenvalues[0], label=label, lw=1.4)
    ax.set_xlabel("NAD index")
    ax.set_ylabel(r"$\lambda_i / \lambda_1$")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def convergence(curves: dict, ks, xlabel="networks", ylabel="top-k subspace overlap", title=None):
    """Overlap curves: ``curves`` maps a label to (network counts, overlaps (len(counts), len(ks)))."""
    fig, axes = plt.subplots(1, len(curves), figsize=(3.4 * len(curves), 3.0), squeeze=False, sharey=True)
    for ax, (label, (ns, ov)) in zip(axes[0], curves.items()):
        ov = np.asarray(ov)
        for j, k in enumerate(ks):
            ax.semilogx(ns, ov[:, j], "o-", label=f"k={k}")
        ax.set_xticks(list(ns), [str(int(v)) for v in ns], fontsize=7)
        ax.minorticks_off()
        ax.set_title(label, fontsize=9)
        ax.set_xlabel(xlabel)
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel(ylabel)
    axes[0, -1].legend(fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def nads_table(results: dict, indices=(0, 1, 2)):
    """The data behind :func:`nad_grid`, tidy: one row per set, NAD index and pixel
    (``set, nad_index, row, col, value``)."""
    import pandas as pd

    frames = []
    for label, r in results.items():
        U = r.nads if hasattr(r, "nads") else np.asarray(r)
        side = int(round(np.sqrt(U.shape[1])))
        rows, cols = np.divmod(np.arange(side * side), side)
        for i in indices:
            frames.append(
                pd.DataFrame(
                    {"set": label, "nad_index": i, "row": rows, "col": cols, "value": np.asarray(U[i], dtype=float)}
                )
            )
    return pd.concat(frames, ignore_index=True)


def dipole_volumes(volumes, title: str):
    """Eq. (6): per NAD index, the share of random networks whose dipole score reaches eta, and
    Markov's bound on it (``volumes``: :func:`nadcore.chapters.nads.quantities.dipole_volumes`)."""
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    i = volumes.index.to_numpy()
    ax.semilogy(i, volumes["Markov bound"], color="0.4", lw=1.2, label="Markov bound $\\lambda_i / \\eta$ (eq. 6)")
    share = volumes["share reaching eta"].to_numpy()
    ax.semilogy(
        i[share > 0], share[share > 0], ".", ms=3, color="C3", label="share of fresh networks, $q(u_i) \\geq \\eta$"
    )
    ax.set_xlabel("NAD index $i$")
    ax.set_ylabel("share of networks")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
