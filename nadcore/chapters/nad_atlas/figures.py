"""Figures of chapter 7, a NAD atlas: the gallery, the fingerprint map, the patch-embedding test
and the Fig. 6-style run with random directions as the control."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from scipy.cluster.hierarchy import dendrogram

from nadcore.data.directions import fourier_energy

__all__ = ["gallery", "fingerprint_map", "alias_bars", "index_curves"]


def gallery(results: dict, indices=(0, 1, 2), title: str | None = None):
    """One row per architecture: the NADs ``indices`` in pixel space (diverging colours), each
    followed by its Fourier energy (low frequencies centred)."""
    labels = list(results)
    n = len(indices)
    fig, axes = plt.subplots(len(labels), 2 * n, figsize=(1.05 * 2 * n + 1.4, 1.05 * len(labels) + 0.6),
                             squeeze=False)
    for a, label in enumerate(labels):
        U = results[label].nads
        side = int(round(np.sqrt(U.shape[1])))
        for j, i in enumerate(indices):
            img = U[i].reshape(side, side)
            vmax = np.abs(img).max()
            axes[a, 2 * j].imshow(img, cmap="BrBG", vmin=-vmax, vmax=vmax)
            axes[a, 2 * j + 1].imshow(fourier_energy(img), cmap="magma")
            if a == 0:
                axes[a, 2 * j].set_title(f"NAD {i}", fontsize=8)
                axes[a, 2 * j + 1].set_title("Fourier", fontsize=8)
        axes[a, 0].set_ylabel(label, fontsize=7, rotation=0, ha="right", va="center")
    for ax in axes.ravel():
        ax.set_xticks([])
        ax.set_yticks([])
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def fingerprint_map(M: np.ndarray, labels, tree, families: dict | None = None, k: int = 16):
    """The pairwise distances (1 - top-k overlap) as a heatmap, rows and columns in the order of
    the average-linkage tree drawn beside it."""
    labels = list(labels)
    fig = plt.figure(figsize=(9.5, 6.8))
    ax_d = fig.add_axes([0.02, 0.1, 0.17, 0.78])
    ax_h = fig.add_axes([0.36, 0.1, 0.5, 0.78])
    ax_c = fig.add_axes([0.88, 0.1, 0.02, 0.78])
    dn = dendrogram(tree, orientation="left", no_labels=True, ax=ax_d, color_threshold=0,
                    above_threshold_color="0.3")
    order = dn["leaves"][::-1]  # the first leaf is drawn at the bottom: rows top to bottom
    ax_d.set_ylim(0, 10 * len(labels))  # leaf j at 10 j + 5: aligned with the heatmap's rows
    ax_d.set_xlabel("distance", fontsize=8)
    ax_d.set_yticks([])
    for s in ("top", "right", "left"):
        ax_d.spines[s].set_visible(False)
    im = ax_h.imshow(M[np.ix_(order, order)], cmap="viridis", vmin=0, vmax=1, aspect="auto")
    names = [f"{labels[i]}" + (f" ({families.get(labels[i])})" if families else "") for i in order]
    ax_h.set_yticks(range(len(order)), names, fontsize=7)
    ax_h.set_xticks(range(len(order)), [labels[i] for i in order], fontsize=7, rotation=90)
    fig.colorbar(im, cax=ax_c, label=f"1 - top-{k} subspace overlap")
    ax_h.set_title(f"NAD fingerprints: pairwise distance of the top-{k} NAD subspaces", fontsize=10)
    return fig


def alias_bars(frame, title: str | None = None):
    """For each architecture, the fraction of its top-k NAD energy on each patch size's alias set
    (bars with jackknife intervals), and what isotropic NADs would put there (dashed)."""
    patches = sorted(frame["patch"].unique())
    archs = list(dict.fromkeys(frame["architecture"]))
    fig, ax = plt.subplots(figsize=(max(6.0, 0.45 * len(archs) + 1.5), 3.4))
    width = 0.8 / len(patches)
    x = np.arange(len(archs))
    for j, p in enumerate(patches):
        f = frame[frame["patch"] == p].set_index("architecture").loc[archs]
        err = np.vstack([f["fraction"] - f["low"], f["high"] - f["fraction"]])
        err = np.where(np.isfinite(err), np.clip(err, 0, None), 0)
        ax.bar(x + (j - (len(patches) - 1) / 2) * width, f["fraction"], width, yerr=err, capsize=2,
               label=f"alias set of p={p}")
        ax.axhline(float(f["chance"].iloc[0]), color=f"C{j}", ls="--", lw=0.8)
    ax.set_xticks(x, archs, rotation=60, ha="right", fontsize=7)
    ax.set_ylim(0, 1)
    ax.set_ylabel("fraction of top-k NAD energy")
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def index_curves(frames: dict, title: str | None = None):
    """Test accuracy on D(u_i) against the NAD index (one panel per model: mean over seeds, seeds
    as dots; eigenvalue ratio on a second axis), with the random directions' mean and range as a
    band (the control)."""
    fig, axes = plt.subplots(1, len(frames), figsize=(4.6 * len(frames), 3.3), squeeze=False, sharey=True)
    for ax, (label, df) in zip(axes[0], frames.items()):
        nad = df[df["direction"] == "nad"]
        rnd = df[df["direction"] == "random"]["test_acc"]
        mean = nad.groupby("index")["test_acc"].mean()
        x = np.asarray(mean.index) + 1
        ax.scatter(nad["index"] + 1, nad["test_acc"], s=8, color="C0", alpha=0.4)
        ax.plot(x, mean.values, "o-", color="C0", ms=3, label="NAD $u_i$ (mean of seeds)")
        ax.axhspan(rnd.min(), rnd.max(), color="C1", alpha=0.2, label="random directions (range)")
        ax.axhline(rnd.mean(), color="C1", lw=1)
        ax.set_xscale("log")
        ax.set_xlabel("NAD index i + 1")
        ax.set_title(label, fontsize=9)
        ax.grid(alpha=0.3)
        ev = nad.groupby("index")["eigenvalue_ratio"].first()
        ax2 = ax.twinx()
        ax2.semilogy(np.asarray(ev.index) + 1, ev.values, color="C2", lw=1, alpha=0.7)
        ax2.set_ylabel(r"$\lambda_i / \lambda_0$", color="C2", fontsize=8)
    axes[0, 0].set_ylabel("test accuracy on D(v)")
    axes[0, 0].legend(fontsize=7, loc="lower left")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig
