"""Figures of chapter 7, a NAD atlas: the gallery, the fingerprint map, the patch-embedding test
and the Fig. 6-style run with random directions as the control, and the Fig. 1 maps predicted from
the NADs."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from scipy.cluster.hierarchy import dendrogram

from nadcore.data.directions import fourier_directions, fourier_energy

__all__ = [
    "gallery",
    "fingerprint_map",
    "alias_bars",
    "index_curves",
    "prediction_maps",
    "prediction_scatter",
    "predicted_beside_directions",
]


def gallery(results: dict, indices=(0, 1, 2), title: str | None = None):
    """One row per architecture: the NADs ``indices`` in pixel space (diverging colours), each
    followed by its Fourier energy (low frequencies centred)."""
    labels = list(results)
    n = len(indices)
    fig, axes = plt.subplots(len(labels), 2 * n, figsize=(1.05 * 2 * n + 1.4, 1.05 * len(labels) + 0.6), squeeze=False)
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
    dn = dendrogram(tree, orientation="left", no_labels=True, ax=ax_d, color_threshold=0, above_threshold_color="0.3")
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
        ax.bar(
            x + (j - (len(patches) - 1) / 2) * width,
            f["fraction"],
            width,
            yerr=err,
            capsize=2,
            label=f"alias set of p={p}",
        )
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


def _extent(grid):
    t = np.asarray(grid.ticks)
    h = grid.stride / 2
    return [t[0] - h, t[-1] + h, t[-1] + h, t[0] - h]


def _score_panel(ax, score, grid, vmax: float):
    im = ax.imshow(
        np.log10(np.asarray(score, dtype=float)),
        cmap="RdBu_r",
        vmin=-vmax,
        vmax=vmax,
        extent=_extent(grid),
        interpolation="nearest",
    )
    ax.set_xlabel("$k_2$", fontsize=8)
    ax.set_ylabel("$k_1$", fontsize=8)
    ax.tick_params(labelsize=7)
    return im


def prediction_maps(rows: dict, grid, title: str | None = None):
    """Fig. 1 maps in rows: ``rows`` maps a row label to ``(kind, {panel label: map or None})``,
    ``kind`` "predicted" (a predicted learnability on a log scale: white for an average
    direction) or "accuracy" (test accuracy from 0.5 to 1; cells never trained grey). Each row
    has its own panels, left to right."""
    cols = max(len(maps) for _, maps in rows.values())
    fig, axes = plt.subplots(
        len(rows), cols, figsize=(2.5 * cols + 1.6, 2.6 * len(rows) + 0.6), squeeze=False, layout="constrained"
    )
    predicted = [
        np.log10(np.asarray(m, dtype=float))
        for kind, maps in rows.values()
        if kind == "predicted"
        for m in maps.values()
        if m is not None
    ]
    vmax = max((float(np.nanmax(np.abs(s))) for s in predicted), default=1.0) or 1.0
    shown = {}
    for r, (label, (kind, maps)) in enumerate(rows.items()):
        for c in range(cols):
            ax = axes[r, c]
            panel, m = list(maps.items())[c] if c < len(maps) else (None, None)
            if m is None:
                ax.set_axis_off()
                continue
            if kind == "predicted":
                shown[kind] = _score_panel(ax, m, grid, vmax)
            else:
                ax.set_facecolor("0.85")
                shown[kind] = ax.imshow(
                    np.asarray(m, dtype=float),
                    cmap="viridis",
                    vmin=0.5,
                    vmax=1.0,
                    extent=_extent(grid),
                    interpolation="nearest",
                )
                ax.tick_params(labelsize=7)
            ax.set_title(f"{panel}\n{label}" if label.strip() else panel, fontsize=8)
    if "predicted" in shown:
        fig.colorbar(shown["predicted"], ax=axes.ravel().tolist(), shrink=0.5, label="log10 predicted learnability")
    if "accuracy" in shown:
        fig.colorbar(shown["accuracy"], ax=axes.ravel().tolist(), shrink=0.5, label="test accuracy")
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def prediction_scatter(frames: dict, learnable: float, chance: float, title: str | None = None):
    """One panel per architecture (``frames``: label -> rows with ``predicted`` and
    ``test_acc``): the measured accuracy of each trained cell against its predicted
    learnability, with the learnable and chance levels that the AUC separates."""
    fig, axes = plt.subplots(1, len(frames), figsize=(3.1 * len(frames), 3.0), squeeze=False, layout="constrained")
    for ax, (label, f) in zip(axes[0], frames.items()):
        x, y = np.log10(f["predicted"].to_numpy(float)), f["test_acc"].to_numpy(float)
        ax.axhspan(learnable, 1.02, color="tab:green", alpha=0.08)
        ax.axhspan(0.4, chance, color="tab:red", alpha=0.08)
        ax.scatter(x, y, s=18, color="k")
        ax.axvline(0.0, color="0.6", lw=0.8, ls="--")
        ax.set_ylim(0.4, 1.02)
        ax.set_title(label, fontsize=9)
        ax.set_xlabel("log10 predicted learnability", fontsize=8)
        ax.tick_params(labelsize=7)
    axes[0, 0].set_ylabel("test accuracy", fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def predicted_beside_directions(score, grid, title: str | None = None, every: int = 2):
    """The predicted Fig. 1 map (log scale) beside the Fourier directions it scores, every
    ``every``-th cell of each axis as a tile at the cell's place (a tile per cell would be too
    small to show its pattern)."""
    sub = grid.subgrid(every)
    V = fourier_directions(sub).numpy()[:, 0]
    g, side, gap = sub.grid, sub.size, 4
    mosaic = np.full((g * (side + gap), g * (side + gap)), np.nan)
    for n, (i, j) in enumerate(sub.cells):
        r, c = i * (side + gap), j * (side + gap)
        mosaic[r : r + side, c : c + side] = V[n]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10.5, 4.8), layout="constrained")
    s = np.log10(np.asarray(score, dtype=float))
    im = _score_panel(a, score, grid, float(np.max(np.abs(s))) or 1.0)
    fig.colorbar(im, ax=a, shrink=0.85, label="log10 predicted learnability (0: an average direction)")
    a.set_title("predicted learnability", fontsize=9)
    m = np.nanmax(np.abs(mosaic))
    b.imshow(mosaic, cmap="BrBG", vmin=-m, vmax=m, interpolation="nearest")
    b.set_xticks([(j + 0.5) * (side + gap) for j in range(g)], [str(t) for t in sub.ticks], fontsize=7)
    b.set_yticks([(i + 0.5) * (side + gap) for i in range(g)], [str(t) for t in sub.ticks], fontsize=7)
    b.set_xlabel("$k_2$", fontsize=8)
    b.set_ylabel("$k_1$", fontsize=8)
    b.set_title(
        f"the Fourier directions (every {every}nd cell)"
        if every == 2
        else f"the Fourier directions (every {every}th cell)",
        fontsize=9,
    )
    if title:
        fig.suptitle(title, fontsize=10)
    return fig
