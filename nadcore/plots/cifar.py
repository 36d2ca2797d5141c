"""Figures of chapter 4 (CIFAR-10 poisoning and flipping; paper Sec. 4.2, Figs. 7 and 8).

Every function returns a matplotlib ``Figure`` and never calls ``plt.show()`` or switches backend.
"""
from __future__ import annotations

import numpy as np
import matplotlib.pyplot as plt

__all__ = ["nad_strip", "poisoned_examples", "poison_accuracy_curve", "flip_accuracies"]


def _img(x):
    """(3, H, W) float on the [0, 1] scale -> (H, W, 3) clipped for display."""
    return np.clip(np.asarray(x).transpose(1, 2, 0), 0.0, 1.0)


def nad_strip(nads, indices, *, shape=(32, 32), title=None):
    """The NADs ``indices`` (rows of ``nads``) as images, one shared symmetric colour scale each."""
    indices = list(indices)
    fig, axes = plt.subplots(1, len(indices), figsize=(1.3 * len(indices), 1.6), squeeze=False)
    for ax, i in zip(axes[0], indices):
        v = np.asarray(nads[i]).reshape(shape)
        m = np.abs(v).max()
        ax.imshow(v, cmap="RdBu_r", vmin=-m, vmax=m)
        ax.set_title(f"NAD {i}", fontsize=8)
        ax.axis("off")
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def poisoned_examples(x_clean, versions: dict, labels, class_names, *, amplify: float | None = None):
    """One row per image: the clean image, then for each poisoned version the poisoned image and
    its difference to the clean one, amplified around grey. ``amplify=None`` picks, per version,
    the factor that maps the largest change over the shown images to +-0.45 (given in the title).

    ``versions``: ``{column title: poisoned images}``, arrays ``(n, 3, H, W)`` on the ``[0, 1]``
    scale (display clips to [0, 1]; the training data itself is not clipped).
    """
    n = len(x_clean)
    cols = 1 + 2 * len(versions)
    fig, axes = plt.subplots(n, cols, figsize=(1.45 * cols, 1.5 * n), squeeze=False)
    gains = {}
    for title, xp in versions.items():
        m = float(np.abs(np.asarray(xp) - np.asarray(x_clean)).max())
        gains[title] = amplify if amplify is not None else (0.45 / m if m > 0 else 1.0)
    for r in range(n):
        axes[r, 0].imshow(_img(x_clean[r]))
        axes[r, 0].set_ylabel(class_names[int(labels[r])], fontsize=8)
        for j, (title, xp) in enumerate(versions.items()):
            axes[r, 1 + 2 * j].imshow(_img(xp[r]))
            axes[r, 2 + 2 * j].imshow(_img(0.5 + gains[title] * (xp[r] - x_clean[r])))
            if r == 0:
                axes[r, 1 + 2 * j].set_title(title, fontsize=8)
                axes[r, 2 + 2 * j].set_title(f"difference x{gains[title]:.3g}", fontsize=8)
        if r == 0:
            axes[r, 0].set_title("clean", fontsize=8)
    for ax in axes.ravel():
        ax.set_xticks([])
        ax.set_yticks([])
    fig.tight_layout()
    return fig


def poison_accuracy_curve(rows, *, title=None, chance: float = 0.1):
    """Test accuracy (clean test set) against the NAD index of the carrier (paper Fig. 7).

    ``rows``: the output of ``nadcore.cifar.poisoning_sweep`` (the row with ``index=None`` is the
    clean baseline, drawn as a horizontal line). Also draws the accuracy on test images that carry
    the same carrier (did the network pick the carrier up?) when present.
    """
    base = [r for r in rows if r["index"] is None]
    pts = sorted((r for r in rows if r["index"] is not None), key=lambda r: r["index"])
    idx = np.array([r["index"] for r in pts])
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    ax.plot(idx, [100 * r["test_acc"] for r in pts], "o-", color="C3",
            label="clean test set (trained on poisoned data)")
    if pts and "carrier_test_acc" in pts[0]:
        ax.plot(idx, [100 * r["carrier_test_acc"] for r in pts], "s--", color="C7", ms=4, lw=1,
                label="test set with the same carrier")
    if base:
        ax.axhline(100 * base[0]["test_acc"], color="C0", lw=2, label="trained on clean data")
    ax.axhline(100 * chance, color="k", lw=0.8, ls=":", label="chance")
    ax.set_xscale("symlog", linthresh=4, linscale=0.6)
    ax.set_xlim(-0.3, max(1100, idx.max() * 1.1) if len(idx) else 1100)
    ax.set_xticks(idx, [str(i) for i in idx], fontsize=7)
    ax.xaxis.set_minor_locator(plt.NullLocator())
    ax.set_xlabel("NAD index i of the carrier (NADs i, i+1; symlog axis)")
    ax.set_ylabel("test accuracy (%)")
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def flip_accuracies(results: dict, *, title=None):
    """Grouped bars per architecture: test accuracy on the original and on the NAD-flipped
    representation (paper Fig. 8), with the final training accuracy marked by a dash.

    ``results``: ``{model name: {"original": row, "flipped": row}}`` (rows of
    ``nadcore.cifar.flipping_experiment``).
    """
    names = list(results)
    x = np.arange(len(names))
    w = 0.38
    fig, ax = plt.subplots(figsize=(max(5.0, 1.6 * len(names) + 1.5), 3.8))
    for k, (key, color, label) in enumerate((("original", "C0", "original"),
                                             ("flipped", "C1", "NAD-flipped"))):
        te = [100 * results[n][key]["test_acc"] for n in names]
        tr = [100 * results[n][key]["train_acc"] for n in names]
        xs = x + (k - 0.5) * w
        bars = ax.bar(xs, te, w, color=color, label=f"{label}: test")
        ax.scatter(xs, tr, marker="_", s=400, color="k", zorder=3,
                   label="train accuracy (last epoch)" if k == 0 else None)
        for b, v in zip(bars, te):
            ax.text(b.get_x() + b.get_width() / 2, v / 2, f"{v:.1f}", ha="center", va="center",
                    fontsize=7, color="white")
    ax.set_xticks(x, names)
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 105)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3, frameon=False)
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig
