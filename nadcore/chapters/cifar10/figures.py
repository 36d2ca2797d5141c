"""Figures of chapter 4 (CIFAR-10 poisoning and flipping; paper Sec. 4.2, Figs. 7 and 8).

Every function returns a matplotlib ``Figure`` and never calls ``plt.show()`` or switches backend.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from nadcore.book.evidence import seed_mean_halfwidth

__all__ = ["nad_strip", "poisoned_examples", "poison_accuracy_curve", "flip_accuracies", "flipped_examples"]


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


def _mean_and_halfwidth(values):
    """Mean and 95% t-interval half-width over seeds (0 for a single seed)."""
    m, h = seed_mean_halfwidth(np.asarray(values, dtype=float)[:, None])
    return float(m[0]), float(h[0]) if np.isfinite(h[0]) else 0.0


def poison_accuracy_curve(runs, *, title=None, chance: float = 0.1):
    """Test accuracy (clean test set) against the NAD index of the carrier (paper Fig. 7): mean
    over seeds with 95% t-interval error bars, the seeds as small dots.

    ``runs``: a tidy DataFrame (``nadcore.chapters.cifar10.runs.result_rows``) of one model and one training
    length with ``experiment`` "clean" (the baseline: a line and its interval as a band) and
    "poison" (by ``index``); ``carrier_test_acc`` (the test set with the same carrier: did the
    network pick the carrier up?) is drawn too.
    """
    pois = runs[runs.experiment == "poison"]
    base = runs[runs.experiment == "clean"]
    idx = np.array(sorted(pois["index"].unique()), dtype=int)
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    for col, color, marker, label in (
        ("test_acc", "C3", "o", "clean test set (trained on poisoned data)"),
        ("carrier_test_acc", "C7", "s", "test set with the same carrier"),
    ):
        stats = [_mean_and_halfwidth(100 * pois.loc[pois["index"] == i, col]) for i in idx]
        ax.errorbar(
            idx,
            [m for m, _ in stats],
            yerr=[h for _, h in stats],
            fmt=marker + "-",
            color=color,
            ms=4,
            lw=1.2,
            capsize=3,
            label=label + " (mean, 95% CI)",
        )
        for i in idx:
            v = 100 * pois.loc[pois["index"] == i, col]
            ax.plot(np.full(len(v), i), v, ".", color=color, ms=3, alpha=0.5)
    if len(base):
        m, h = _mean_and_halfwidth(100 * base["test_acc"])
        ax.axhline(m, color="C0", lw=2, label="trained on clean data (mean, 95% CI)")
        ax.axhspan(m - h, m + h, color="C0", alpha=0.15, lw=0)
    ax.axhline(100 * chance, color="k", lw=0.8, ls=":", label="chance")
    ax.set_xscale("symlog", linthresh=4, linscale=0.6)
    ax.set_xlim(-0.3, max(1100, idx.max() * 1.1) if len(idx) else 1100)
    ax.set_xticks(idx, [str(i) for i in idx], fontsize=7)
    ax.xaxis.set_minor_locator(plt.NullLocator())
    ax.set_xlabel("NAD index i of the carrier (NADs i, i+1; symlog axis)")
    ax.set_ylabel("test accuracy (%)")
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper right")
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def flip_accuracies(runs, *, title=None):
    """Grouped bars per model: mean test accuracy on the original and on the NAD-flipped
    representation (paper Fig. 8) with 95% t-interval error bars, each seed as a dot, and the
    mean final training accuracy as a dash.

    ``runs``: a tidy DataFrame with ``model``, ``representation`` ("original"/"flipped"),
    ``seed``, ``train_acc``, ``test_acc``.
    """
    names = list(dict.fromkeys(runs["model"]))
    x = np.arange(len(names))
    w = 0.38
    fig, ax = plt.subplots(figsize=(max(4.5, 1.6 * len(names) + 1.5), 3.8))
    for k, (rep, color) in enumerate((("original", "C0"), ("flipped", "C1"))):
        xs = x + (k - 0.5) * w
        for xi, n in zip(xs, names):
            sel = runs[(runs.model == n) & (runs.representation == rep)]
            m, h = _mean_and_halfwidth(100 * sel["test_acc"])
            ax.bar(xi, m, w, yerr=h, capsize=3, color=color, alpha=0.85, label=f"{rep}: test" if xi == xs[0] else None)
            ax.plot(
                np.full(len(sel), xi),
                100 * sel["test_acc"],
                "o",
                ms=3.5,
                mfc="white",
                mec="k",
                mew=0.7,
                label="one seed" if (k, xi) == (0, xs[0]) else None,
            )
            ax.scatter(
                [xi],
                [100 * sel["train_acc"].mean()],
                marker="_",
                s=400,
                color="k",
                zorder=3,
                label="train accuracy (last epoch)" if (k, xi) == (0, xs[0]) else None,
            )
            ax.text(xi, m / 2, f"{m:.1f}", ha="center", va="center", fontsize=7, color="white")
    ax.set_xticks(x, names)
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 105)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=4, frameon=False)
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def flipped_examples(x_norm, x_flipped, labels, class_names):
    """Normalised images (top row) and their NAD-flipped versions (bottom row), each mapped to
    [0, 1] by its own 1st and 99th percentiles (the flipped values lie outside any fixed display
    range, and a few extreme pixels would otherwise grey out the rest)."""
    n = len(x_norm)
    fig, axes = plt.subplots(2, n, figsize=(1.45 * n, 3.1), squeeze=False)
    for r, (xs, name) in enumerate(((x_norm, "original"), (x_flipped, "NAD-flipped"))):
        for j in range(n):
            a = np.asarray(xs[j], dtype=np.float64)
            lo, hi = np.percentile(a, [1, 99])
            axes[r, j].imshow(_img((a - lo) / max(hi - lo, 1e-12)))
            axes[r, j].set_xticks([])
            axes[r, j].set_yticks([])
            if r == 0:
                axes[r, j].set_title(class_names[int(labels[j])], fontsize=8)
        axes[r, 0].set_ylabel(name, fontsize=8)
    fig.tight_layout()
    return fig
