"""Figures of chapter 5 (underspecification): the three test accuracies over a grid of NAD pairs
(paper Fig. 2a, appendix Figs. 4 and 6), decision-boundary cross-sections (Fig. 2b, appendix
Figs. 5, 7, 8), the tilt of the boundary over the grid, and binary CIFAR-10 (+) D(v) accuracies
against the NAD index (Fig. 3).

Results hold one value per seed (axis 0): heatmaps show the mean over seeds, each cell annotated
with ``mean`` and ``+- half-width`` of its 95% t-interval; curves show the mean with its interval
as error bars and every seed as a small dot; cross-sections are drawn for one seed."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from nadcore.book.evidence import format_fixed, seed_mean_halfwidth
from nadcore.chapters.underspecification.runs import MAX_MARGIN_ANGLE, boundary_angle

PANELS = (
    ("acc_both", "both channels"),
    ("acc_first", "channel 1 only\n(channel 2 zeroed)"),
    ("acc_second", "channel 2 only\n(channel 1 zeroed)"),
)


def _grid_axes(ax, result, ylabel: bool = True):
    ax.set_xticks(range(len(result.indices2)))
    ax.set_xticklabels([str(i) for i in result.indices2], fontsize=7)
    ax.set_yticks(range(len(result.indices1)))
    ax.set_yticklabels([str(i) for i in result.indices1], fontsize=7)
    ax.set_xlabel("NAD index of $v_2$ (channel 2, $\\epsilon_2$ = %g)" % result.settings.get("eps2", 0.5), fontsize=8)
    if ylabel:
        ax.set_ylabel(
            "NAD index of $v_1$ (channel 1, $\\epsilon_1$ = %g)" % result.settings.get("eps1", 1.0), fontsize=8
        )


def _annotated_heatmap(
    ax, values, *, scale: float, digits: int, cmap: str, vmin: float, vmax: float, dark_below: float | None = None
):
    """Heatmap of the seed means of ``values`` (seeds, rows, cols); each cell annotated with the
    mean and the half-width of its 95% t-interval (both times ``scale``)."""
    mean, half = seed_mean_halfwidth(values)
    im = ax.imshow(mean, cmap=cmap, vmin=vmin, vmax=vmax, interpolation="nearest", aspect="auto")
    for i in range(mean.shape[0]):
        for j in range(mean.shape[1]):
            text = format_fixed(scale * mean[i, j], digits)
            if np.isfinite(half[i, j]):
                text += f"\n±{format_fixed(scale * half[i, j], digits)}"
            color = "w" if dark_below is not None and mean[i, j] < dark_below else "k"
            ax.text(j, i, text, ha="center", va="center", fontsize=7, color=color)
    return im


def ablation_heatmaps(result, *, title: str | None = None, vmin: float = 0.5, vmax: float = 1.0, cmap: str = "viridis"):
    """Paper Fig. 2a: test accuracy over the grid of (NAD index of v1, NAD index of v2) with both
    channels, channel 1 only and channel 2 only (a :class:`ConcatGridResult`), mean over seeds.
    Rows: v1 (first NADs at the top); columns: v2. Cells: mean and 95% half-width, in percent."""
    fig, axes = plt.subplots(1, 3, figsize=(12, 4.0), squeeze=False, layout="constrained")
    im = None
    for k, (ax, (key, name)) in enumerate(zip(axes[0], PANELS)):
        im = _annotated_heatmap(
            ax,
            getattr(result, key),
            scale=100,
            digits=0,
            cmap=cmap,
            vmin=vmin,
            vmax=vmax,
            dark_below=(vmin + vmax) / 2 + 0.1,
        )
        _grid_axes(ax, result, ylabel=k == 0)
        ax.set_title(name, fontsize=9)
    fig.colorbar(im, ax=axes[0].tolist(), shrink=0.85, label=f"test accuracy, mean of {len(result.seeds)} seeds")
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def angle_heatmaps(results: dict, *, title: str | None = None):
    """Tilt of the decision boundary over the grid, one panel per model: the direction of its
    normal in the (v1 (+) 0, 0 (+) v2) plane in degrees (0: only channel 1 matters, 90: only
    channel 2, about 27: the maximum-margin separator for eps = (1, 0.5)), mean over seeds with
    the 95% half-width."""
    names = list(results)
    fig, axes = plt.subplots(1, len(names), figsize=(4.4 * len(names) + 1.0, 3.8), squeeze=False, layout="constrained")
    im = None
    for k, (ax, name) in enumerate(zip(axes[0], names)):
        r = results[name]
        im = _annotated_heatmap(ax, r.angle, scale=1, digits=0, cmap="coolwarm", vmin=0, vmax=90)
        _grid_axes(ax, r, ylabel=k == 0)
        ax.set_title(name, fontsize=9)
    fig.colorbar(
        im,
        ax=axes[0].tolist(),
        shrink=0.85,
        label=f"boundary normal, degrees from $v_1 \\oplus 0$ (max margin: {MAX_MARGIN_ANGLE:.1f})",
    )
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def cross_sections(result, pairs, *, seed_index: int = 0, title: str | None = None):
    """Paper Fig. 2b: the network's decision regions in the plane spanned by ``v1 (+) 0``
    (horizontal) and ``0 (+) v2`` (vertical) for each ``(i1, i2)`` of ``pairs``, for the seed
    ``result.seeds[seed_index]``, as computed by
    :func:`nadcore.chapters.underspecification.runs.decision_cross_section`.
    Black line: the decision boundary (zero level set of the output); markers: the two class
    centres +-(eps1, eps2); dashed: the maximum-margin separator, for reference."""
    e1 = result.settings.get("eps1", 1.0)
    e2 = result.settings.get("eps2", 0.5)
    n = len(pairs)
    fig, axes = plt.subplots(1, n, figsize=(2.7 * n + 0.4, 3.1), squeeze=False, layout="constrained")
    for ax, (i1, i2) in zip(axes[0], pairs):
        sec = result.section(i1, i2, seed_index)
        a, b, z = sec["a"], sec["b"], sec["logits"]
        ext = [a[0], a[-1], b[0], b[-1]]
        ax.imshow(np.sign(z), origin="lower", extent=ext, cmap="RdBu", vmin=-2.5, vmax=2.5, interpolation="nearest")
        if np.nanmin(z) < 0 < np.nanmax(z):
            ax.contour(a, b, z, levels=[0.0], colors="k", linewidths=1.5)
        t = np.linspace(a[0], a[-1], 2)
        ax.plot(t, -e1 * t / e2, "k--", lw=0.8, alpha=0.6)
        ax.plot([e1], [e2], "o", ms=6, mfc="tab:blue", mec="k")
        ax.plot([-e1], [-e2], "s", ms=6, mfc="tab:red", mec="k")
        ax.set_xlim(a[0], a[-1])
        ax.set_ylim(b[0], b[-1])
        ax.set_title(f"$v_1=u_{{{i1}}}$, $v_2=u_{{{i2}}}$: {boundary_angle(a, b, z):.0f}°", fontsize=9)
        ax.set_xlabel("along $v_1 \\oplus 0$", fontsize=8)
        ax.tick_params(labelsize=7)
    axes[0][0].set_ylabel("along $0 \\oplus v_2$", fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def cifar_dv_curves(results: dict, *, transitions: dict | None = None, chance: float = 0.5, title: str | None = None):
    """Paper Fig. 3: binary CIFAR-10 (+) D(v) test accuracy against the NAD index of ``v``, one
    panel per model (``name -> CifarDVResult``): all channels, CIFAR channels only (D(v) zeroed),
    D(v) channel only (CIFAR zeroed); mean over seeds with 95% t-interval error bars, each seed a
    small dot. ``transitions``: name -> (index, threshold) from
    :func:`nadcore.chapters.underspecification.runs.phase_transition_index`, drawn as a vertical line."""
    names = list(results)
    fig, axes = plt.subplots(
        1, len(names), figsize=(4.3 * len(names), 3.4), squeeze=False, sharey=True, layout="constrained"
    )
    for ax, name in zip(axes[0], names):
        r = results[name]
        x = np.asarray(r.indices, dtype=float)
        for key, label, marker in (
            ("acc_all", "all channels", "o"),
            ("acc_cifar", "CIFAR only (D(v) zeroed)", "s"),
            ("acc_dv", "D(v) only (CIFAR zeroed)", "^"),
        ):
            vals = np.asarray(getattr(r, key), dtype=float)
            mean, half = seed_mean_halfwidth(vals)
            line = ax.errorbar(x, mean, yerr=np.nan_to_num(half), fmt=marker + "-", ms=4, capsize=2, label=label)
            ax.plot(
                np.broadcast_to(x, vals.shape).ravel(), vals.ravel(), ".", ms=2.5, alpha=0.5, color=line[0].get_color()
            )
        ax.axhline(chance, color="gray", ls=":", lw=1)
        if transitions and transitions.get(name) and transitions[name][0] is not None:
            ax.axvline(transitions[name][0], color="k", ls="--", lw=0.8)
        ax.set_xscale("symlog", linthresh=1.0)
        ax.set_xlim(min(0.0, x.min()) - 0.2, x.max() * 1.4 + 1)
        ax.set_xlabel("NAD index of $v$", fontsize=8)
        ax.set_title(f"{name} ({len(r.seeds)} seeds)", fontsize=9)
        ax.set_ylim(0.4, 1.02)
        ax.tick_params(labelsize=7)
    axes[0][0].set_ylabel("test accuracy", fontsize=8)
    axes[0][-1].legend(fontsize=7, loc="center left")
    if title:
        fig.suptitle(title, fontsize=10)
    return fig
