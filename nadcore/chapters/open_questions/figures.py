"""Figures of chapter 6 (open questions): accuracy maps of the downsampling variants, NADs during
training, accuracy after removing NAD components, the two bases of Lemma 2, alpha(v) against
accuracy."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from nadcore.book.evidence import t_interval

__all__ = ["quadrant_maps", "dynamics_curves", "removal_curves", "overlap_vs_k", "alpha_scatter"]


def quadrant_maps(maps: dict, grid, *, title: str | None = None, vmin=0.5, vmax=1.0):
    """One heatmap per entry of ``maps`` (name -> (g, g) accuracy over a quadrant grid, cell (i, j)
    = frequency ``(grid.k1[i, j], grid.k2[i, j])``), each cell annotated with its value."""
    names = list(maps)
    fig, axes = plt.subplots(1, len(names), figsize=(2.5 * len(names) + 0.8, 2.9), squeeze=False)
    ticks = grid.k1[:, 0]
    im = None
    for ax, name in zip(axes[0], names):
        a = np.asarray(maps[name], dtype=float)
        im = ax.imshow(a, cmap="viridis", vmin=vmin, vmax=vmax, origin="lower")
        for i in range(a.shape[0]):
            for j in range(a.shape[1]):
                ax.text(
                    j,
                    i,
                    f"{a[i, j]:.2f}".lstrip("0"),
                    ha="center",
                    va="center",
                    fontsize=6,
                    color="w" if a[i, j] < 0.8 else "k",
                )
        ax.set_xticks(range(len(ticks)), ticks, fontsize=7)
        ax.set_yticks(range(len(ticks)), ticks, fontsize=7)
        ax.set_xlabel("$k_2$", fontsize=8)
        ax.set_title(name, fontsize=9)
    axes[0, 0].set_ylabel("$k_1$", fontsize=8)
    fig.colorbar(im, ax=axes[0].tolist(), shrink=0.85, label="test accuracy (mean over seeds)")
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def dynamics_curves(panels: dict, ks, chance: dict | None = None, *, ylabel: str, title=None):
    """One panel per entry of ``panels`` (name -> (seeds, epochs + 1, len(ks)) array): a line per
    seed and ``k`` against the epoch; dotted lines at ``chance[name][k]`` (``chance`` a list: the
    same levels in every panel)."""
    if chance is not None and not isinstance(chance, dict):
        chance = {name: chance for name in panels}
    fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels), 3.0), squeeze=False, sharey=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (name, a) in zip(axes[0], panels.items()):
        a = np.asarray(a, dtype=float)
        epochs = np.arange(a.shape[1])
        for j, k in enumerate(ks):
            for s in range(a.shape[0]):
                ax.plot(
                    epochs,
                    a[s, :, j],
                    "-o",
                    ms=2.5,
                    lw=1.0,
                    color=colors[j % len(colors)],
                    alpha=0.8,
                    label=f"k = {k}" if s == 0 else None,
                )
            if chance and name in chance:
                ax.axhline(chance[name][j], color=colors[j % len(colors)], lw=0.8, ls=":")
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("epoch")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel(ylabel)
    axes[0, -1].legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.94) if title else None)
    return fig


def removal_curves(ks, acc: dict, energy: dict, clean, *, title=None):
    """Test accuracy (left) and the share of the images' squared norm removed (right) against the
    number k of directions removed, one line per direction set (name -> (seeds, len(ks))), with
    the 95% t-interval over seeds; the clean accuracy of each seed is a dotted line."""
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.2))
    for name in acc:
        for ax, a in ((axes[0], acc[name]), (axes[1], energy[name])):
            iv = [t_interval(col) for col in np.asarray(a, dtype=float).T]
            mean = np.array([i.value for i in iv])
            err = np.array([[i.value - i.low, i.high - i.value] for i in iv]).T
            ax.errorbar(ks, mean, yerr=np.nan_to_num(err), fmt="-o", ms=3.5, capsize=2, label=name)
    for c in np.ravel(clean):
        axes[0].axhline(c, color="0.6", lw=0.7, ls=":")
    axes[0].set_ylabel("test accuracy (binary)")
    axes[1].set_ylabel("share of the images' energy removed")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlabel("k directions removed in every channel")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.94) if title else None)
    return fig


def overlap_vs_k(curves: dict, D: int, *, title=None):
    """Subspace overlaps against k, a line per seed (``curves``: name -> (ks, values (seeds,
    len(ks)))), with the chance level k/D."""
    fig, ax = plt.subplots(figsize=(5.2, 3.2))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for c, (name, (ks, vals)) in zip(colors, curves.items()):
        v = np.asarray(vals, dtype=float)
        for s in range(v.shape[0]):
            ax.plot(ks, v[s], "-o", ms=3, lw=1.0, alpha=0.8, color=c, label=name if s == 0 else None)
    kk = np.unique(np.concatenate([np.asarray(k) for k, _ in curves.values()]))
    ax.plot(kk, kk / D, "k:", lw=1.0, label="chance k/D")
    ax.set_xscale("log")
    ax.set_xlabel("k")
    ax.set_ylabel("top-k subspace overlap")
    ax.set_ylim(0, 1.02)
    return _finish(fig, ax, title)


def alpha_scatter(points: dict, *, title=None):
    """Test accuracy on D(v) against the normalised alpha(v), one colour per architecture
    (name -> (alpha, accuracy) arrays over the grid cells, accuracy averaged over seeds)."""
    fig, ax = plt.subplots(figsize=(5.4, 3.4))
    for name, (a, acc) in points.items():
        ax.scatter(a, acc, s=16, alpha=0.8, label=name)
    ax.set_xscale("log")
    ax.axhline(0.5, color="0.6", lw=0.8, ls=":")
    ax.set_xlabel(r"$\alpha(v)\,/\,(\mathrm{tr}\,C/D)$ (eq. (2), normalised)")
    ax.set_ylabel("test accuracy on $\\mathcal{D}(v)$")
    return _finish(fig, ax, title)


def _finish(fig, ax, title):
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    if title:
        ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig
