"""Figures of chapter 3: accuracy over Fourier grids (paper Figs. 1 and 3), training iterations
per direction (Fig. 2) and accuracy against the NAD index (Fig. 6)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np


def _extent(grid):
    t = np.asarray(grid.ticks)
    h = grid.stride / 2
    return [t[0] - h, t[-1] + h, t[-1] + h, t[0] - h]


def direction_heatmaps(maps: dict, grid, *, vmin=0.5, vmax=1.0, cmap="viridis", label="test accuracy",
                       title: str | None = None, annotate: bool = False, fmt="{:.0%}"):
    """One heatmap per entry of ``maps`` (name -> (g, g) array over ``grid``), in the paper's
    layout: cell (i, j) is frequency (k1, k2) = ``grid.k1[i, j], grid.k2[i, j]``, the constant
    direction at the centre, the highest frequencies at the corners. NaN cells are left blank."""
    names = list(maps)
    fig, axes = plt.subplots(1, len(names), figsize=(2.9 * len(names) + 0.6, 3.0), squeeze=False)
    im = None
    for ax, name in zip(axes[0], names):
        a = np.asarray(maps[name], dtype=float)
        g = maps[name].grid if hasattr(maps[name], "grid") else grid
        im = ax.imshow(a, cmap=cmap, vmin=vmin, vmax=vmax, extent=_extent(g), interpolation="nearest")
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("$k_2$", fontsize=8)
        ax.set_ylabel("$k_1$", fontsize=8)
        ax.tick_params(labelsize=7)
        if annotate:
            for i in range(a.shape[0]):
                for j in range(a.shape[1]):
                    if np.isfinite(a[i, j]):
                        ax.text(g.ticks[j], g.ticks[i], fmt.format(a[i, j]), ha="center",
                                va="center", fontsize=5, color="w")
    fig.colorbar(im, ax=axes[0].tolist(), shrink=0.85, label=label)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def grid_from_values(values, grid_shape, mask=None) -> np.ndarray:
    """Put row-major ``values`` into a (g, g) array; with ``mask`` (bool (g, g)), values fill the
    True cells in row-major order and the others are NaN."""
    out = np.full(grid_shape, np.nan)
    if mask is None:
        out[...] = np.asarray(values, dtype=float).reshape(grid_shape)
    else:
        out[np.asarray(mask)] = np.asarray(values, dtype=float)
    return out


def accuracy_vs_index(curves: dict, eigenvalues: dict | None = None, *, title: str | None = None,
                      log_eigen: bool = True):
    """Paper Fig. 6: test accuracy on D(u_i) against the NAD index i (one line per estimator), with
    the normalised eigenvalues lambda_i / lambda_0 on a second axis.

    ``curves``: label -> (indices, accuracies); ``eigenvalues``: label -> eigenvalues (D,).
    """
    fig, ax = plt.subplots(figsize=(7.0, 3.4))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for c, (label, (idx, acc)) in zip(colors, curves.items()):
        ax.plot(idx, acc, "o-", ms=3.5, lw=1.2, color=c, label=f"accuracy, {label} NADs")
    ax.axhline(0.5, color="0.6", lw=0.8, ls=":")
    ax.set_xlabel("NAD index $i$")
    ax.set_ylabel("test accuracy on $\\mathcal{D}(u_i)$")
    ax.set_ylim(0.45, 1.02)
    if eigenvalues:
        ax2 = ax.twinx()
        for c, (label, ev) in zip(colors, eigenvalues.items()):
            ev = np.asarray(ev, dtype=float)
            ax2.plot(np.arange(len(ev)), ev / ev[0], color=c, lw=1.0, ls="--", alpha=0.7,
                     label=f"$\\lambda_i/\\lambda_0$, {label}")
        if log_eigen:
            ax2.set_yscale("log")
        ax2.set_ylabel("normalised eigenvalue (dashed)")
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        ax.legend(h1 + h2, l1 + l2, fontsize=7, loc="upper right")
    else:
        ax.legend(fontsize=7)
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def direction_images(images: dict, title: str | None = None):
    """Directions in pixel space (name -> (H, W) array), diverging colours centred on 0."""
    names = list(images)
    fig, axes = plt.subplots(1, len(names), figsize=(1.6 * len(names), 1.9), squeeze=False)
    for ax, name in zip(axes[0], names):
        a = np.asarray(images[name], dtype=float)
        a = a.reshape(a.shape[-2], a.shape[-1])
        m = np.abs(a).max() or 1.0
        ax.imshow(a, cmap="BrBG", vmin=-m, vmax=m)
        ax.set_title(name, fontsize=8)
        ax.set_xticks([])
        ax.set_yticks([])
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig
