"""Figures of chapter 3: accuracy over Fourier grids (paper Figs. 1 and 3), training iterations
per direction (Fig. 2) and accuracy against the NAD index (Fig. 6)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from nadcore.book.evidence import seed_mean_halfwidth


def _extent(grid):
    t = np.asarray(grid.ticks)
    h = grid.stride / 2
    return [t[0] - h, t[-1] + h, t[-1] + h, t[0] - h]


def direction_heatmaps(
    maps: dict,
    grid,
    *,
    vmin=0.5,
    vmax=1.0,
    cmap="viridis",
    label="test accuracy",
    title: str | None = None,
    annotate: bool = False,
    fmt="{:.0%}",
    columns: int = 3,
):
    """One heatmap per entry of ``maps`` (name -> (g, g) array over ``grid``), in the paper's
    layout: cell (i, j) is frequency (k1, k2) = ``grid.k1[i, j], grid.k2[i, j]``, the constant
    direction at the centre, the highest frequencies at the corners; at most ``columns`` maps a
    row. NaN cells (not measured) are grey."""
    names = list(maps)
    ncol = max(1, min(columns, len(names)))
    nrow = -(-len(names) // ncol)
    fig, axes = plt.subplots(
        nrow, ncol, figsize=(max(2.9 * ncol + 0.6, 4.8), 3.3 * nrow), squeeze=False, layout="constrained"
    )
    for ax in axes.ravel()[len(names) :]:
        ax.set_visible(False)
    im = None
    for n, (ax, name) in enumerate(zip(axes.ravel(), names)):
        a = np.asarray(maps[name], dtype=float)
        g = maps[name].grid if hasattr(maps[name], "grid") else grid
        im = ax.imshow(a, cmap=cmap, vmin=vmin, vmax=vmax, extent=_extent(g), interpolation="nearest")
        ax.set_facecolor("0.9")  # cells not measured (NaN) show grey
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("$k_2$", fontsize=8)
        if n % ncol == 0:
            ax.set_ylabel("$k_1$", fontsize=8)
        ax.tick_params(labelsize=7)
        if annotate:
            for i in range(a.shape[0]):
                for j in range(a.shape[1]):
                    if np.isfinite(a[i, j]):
                        ax.text(
                            g.ticks[j], g.ticks[i], fmt.format(a[i, j]), ha="center", va="center", fontsize=5, color="w"
                        )
    fig.colorbar(im, ax=axes.ravel()[: len(names)].tolist(), shrink=0.85 if nrow == 1 else 0.6, label=label)
    if title:
        fig.suptitle(title, fontsize=9.5)
    return fig


def map_on_grid(values, frequencies, grid) -> np.ndarray:
    """A (g, g) map over ``grid`` holding ``values`` at the cells ``frequencies`` ((k1, k2) each,
    on the grid) and NaN (blank) elsewhere: a few cells shown in the layout of the full map."""
    where = {f: (i, j) for (i, j), f in zip(grid.cells, grid.frequencies)}
    out = np.full(grid.shape, np.nan)
    for v, f in zip(np.asarray(values, dtype=float).ravel(), frequencies):
        key = (int(f[0]), int(f[1]))
        if key not in where:
            raise ValueError(f"frequency {key} is not a cell of the {grid.grid}x{grid.grid} grid")
        out[where[key]] = v
    return out


def _mean_and_halfwidth(acc):
    m, h = seed_mean_halfwidth(np.atleast_2d(np.asarray(acc, dtype=float)))
    return m, np.where(np.isfinite(h), h, 0.0)


def accuracy_vs_index(
    panels: dict, eigenvalues: dict | None = None, *, title: str | None = None, log_eigen: bool = True, columns: int = 2
):
    """Paper Fig. 6: test accuracy on D(u_i) against the NAD index i, one panel per entry of
    ``panels`` (panel title -> {label: (indices, accuracies)}), at most ``columns`` panels a row.

    Accuracies of shape (seeds, K) are drawn as the seed mean with 95% t-interval error bars and
    every seed as a small dot; a 1-D array (the published curves) as a thin line.
    ``eigenvalues``: panel title -> {label: eigenvalues (D,)}, drawn as lambda_i / lambda_0
    (dashed, on a second axis, log scale by default).
    """
    titles = list(panels)
    ncol = max(1, min(columns, len(titles)))
    nrow = -(-len(titles) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(6.2 * ncol, 3.6 * nrow), squeeze=False)
    for ax in axes.ravel()[len(titles) :]:
        ax.set_visible(False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, name in zip(axes.ravel(), titles):
        handles = []
        for c, (label, (idx, acc)) in zip(colors, panels[name].items()):
            idx, acc = np.asarray(idx), np.asarray(acc, dtype=float)
            if acc.ndim == 1:
                handles += ax.plot(idx, acc, "-", lw=0.8, alpha=0.85, color=c, label=label)
                continue
            mean, half = _mean_and_halfwidth(acc)
            for row in acc:
                ax.plot(idx, row, ".", ms=2.5, alpha=0.45, color=c)
            handles.append(
                ax.errorbar(
                    idx, mean, yerr=half, fmt="o-", ms=3.5, lw=1.2, capsize=2, color=c, label=f"{label} (mean, 95% CI)"
                )
            )
        ax.axhline(0.5, color="0.6", lw=0.8, ls=":")
        ax.set_xlabel("NAD index $i$")
        ax.set_ylabel("test accuracy on $\\mathcal{D}(u_i)$")
        ax.set_ylim(0.4, 1.03)
        ax.set_title(name, fontsize=10)
        evs = (eigenvalues or {}).get(name) or {}
        if evs:
            ax2 = ax.twinx()
            for c, (label, ev) in zip(colors, evs.items()):
                ev = np.asarray(ev, dtype=float)
                handles += ax2.plot(
                    np.arange(len(ev)),
                    ev / ev[0],
                    color=c,
                    lw=1.0,
                    ls="--",
                    alpha=0.6,
                    label=f"$\\lambda_i/\\lambda_0$, {label}",
                )
            if log_eigen:  # below 1e-6: the null space of a rank-deficient estimate
                ax2.set_yscale("log")
                ax2.set_ylim(1e-6, 2.0)
            ax2.set_ylabel("normalised eigenvalue (dashed)", fontsize=8)
        ax.legend(handles=handles, fontsize=6.5, loc="upper right")
    if title:
        fig.suptitle(title, fontsize=10)
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


def fig1_panels(columns: dict, *, title: str | None = None, vmin=0.5, vmax=1.0, cmap="viridis", per_row: int = 3):
    """Fig. 1 for several networks, readable: one column per network (``columns``: label ->
    ``(ours, published, grid)``, maps of shape ``grid.shape``; NaN = not computed, drawn grey),
    ours above the authors' published map (None: none), at most ``per_row`` networks side by
    side (more wrap to a further pair of rows), with one shared colour bar."""
    names = list(columns)
    cols = min(per_row, len(names))
    bands = -(-len(names) // cols)
    fig, axes = plt.subplots(
        2 * bands, cols, figsize=(3.4 * cols + 1.0, 6.6 * bands), squeeze=False, layout="constrained"
    )
    for ax in axes.ravel():
        ax.set_axis_off()
    im = None
    for n, name in enumerate(names):
        ours, published, grid = columns[name]
        band, j = divmod(n, cols)
        for i, (a, what) in enumerate(((ours, "ours"), (published, "published"))):
            if a is None:
                continue
            ax = axes[2 * band + i, j]
            ax.set_axis_on()
            ax.set_facecolor("0.9")
            im = ax.imshow(
                np.asarray(a, dtype=float),
                cmap=cmap,
                vmin=vmin,
                vmax=vmax,
                extent=_extent(grid),
                interpolation="nearest",
            )
            ax.set_title(f"{name}\n{what}" if i == 0 else what, fontsize=10)
            ax.set_xlabel("$k_2$", fontsize=9)
            if j == 0:
                ax.set_ylabel("$k_1$", fontsize=9)
            ax.tick_params(labelsize=8)
    fig.colorbar(im, ax=axes.ravel().tolist(), shrink=0.6, label="test accuracy")
    if title:
        fig.suptitle(title, fontsize=11)
    return fig
