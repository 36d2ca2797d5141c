"""The Scorecard page's forest plots: per chapter, every claim's value and 95% interval against
its criterion (threshold or tolerance band) and the paper's number, one small panel per claim on
its own scale, with the data as CSV."""

from __future__ import annotations

import csv
from pathlib import Path

from nadcore.book.claim_rows import VERDICT_COLOURS, VERDICT_MARKERS, kind_of, num_or_none, parse_criterion, profile_of
from nadcore.book.evidence import VERDICTS, number

__all__ = ["FOREST_COLUMNS", "forest_rows", "forest_plot"]


# --------------------------------------------------------------------------------------------
# Forest plots
# --------------------------------------------------------------------------------------------
FOREST_COLUMNS = (
    "id",
    "kind",
    "verdict",
    "value",
    "ci_low",
    "ci_high",
    "op",
    "threshold",
    "band_low",
    "band_high",
    "paper_value",
    "quantity",
    "profile",
)


def forest_rows(claims) -> list[dict]:
    """The data of a forest plot: one row per claim (numbers as floats, missing as None)."""
    rows = []
    for c in claims:
        quantity, op, thr = parse_criterion(c.get("criterion", ""))
        band = c.get("band") or [None, None]
        if op == "within" and None in band and num_or_none(c.get("paper_value")) is not None and thr is not None:
            band = [num_or_none(c.get("paper_value")) - thr, num_or_none(c.get("paper_value")) + thr]
        rows.append(
            {
                "id": c["id"],
                "kind": kind_of(c),
                "verdict": c.get("verdict", "inconclusive"),
                "value": num_or_none(c.get("value")),
                "ci_low": num_or_none(c.get("ci_low")),
                "ci_high": num_or_none(c.get("ci_high")),
                "op": op or "",
                "threshold": thr,
                "band_low": num_or_none(band[0]) if op == "within" else None,
                "band_high": num_or_none(band[1]) if op == "within" else None,
                "paper_value": num_or_none(c.get("paper_value")),
                "quantity": quantity,
                "profile": profile_of(c),
            }
        )
    return rows


def _limits(row) -> tuple[float, float]:
    thr = None if row["op"] == "within" else row["threshold"]
    xs = [
        x
        for x in (
            row["value"],
            row["ci_low"],
            row["ci_high"],
            thr,
            row["paper_value"],
            row.get("band_low"),
            row.get("band_high"),
        )
        if x is not None
    ]
    if not xs:
        return 0.0, 1.0
    lo, hi = min(xs), max(xs)
    scale = max(abs(lo), abs(hi))
    # at least 10% of the numbers' size wide, so that a value on its threshold still shows a scale
    pad = max(0.15 * (hi - lo), 0.05 * scale if scale > 0 else 0.05)
    return lo - pad, hi + pad


def forest_plot(claims, png: Path, csv_path: Path | None = None, title: str = "") -> Path:
    """One small panel per claim, each on its own scale: the measured value (marker by verdict)
    with its 95% interval, the criterion's threshold (dashed line; the side where the criterion
    holds shaded) and the paper's number (hollow diamond). Writes ``png`` (and the rows as
    ``csv_path``)."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    rows = forest_rows(claims)
    png = Path(png)
    png.parent.mkdir(parents=True, exist_ok=True)
    if csv_path is not None:
        with open(csv_path, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=FOREST_COLUMNS)
            w.writeheader()
            for r in rows:
                w.writerow(
                    {
                        k: ("" if r[k] is None else (f"{r[k]:.6g}" if isinstance(r[k], float) else r[k]))
                        for k in FOREST_COLUMNS
                    }
                )
    n = max(len(rows), 1)
    fig = Figure(figsize=(6.4, 0.55 * n + 0.9), dpi=110)
    gs = fig.add_gridspec(
        n, 1, hspace=0.9, left=0.36, right=0.8, top=1 - 0.45 / (0.55 * n + 0.9), bottom=0.45 / (0.55 * n + 0.9)
    )
    for i, r in enumerate(rows):
        ax = fig.add_subplot(gs[i, 0])
        lo, hi = _limits(r)
        ax.set_xlim(lo, hi)
        ax.set_ylim(-1, 1)
        ax.set_yticks([])
        for side in ("left", "right", "top"):
            ax.spines[side].set_visible(False)
        ax.tick_params(axis="x", labelsize=7.5, length=2, pad=1)
        ax.xaxis.set_major_locator(MaxNLocator(4))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: number(x)))  # no offset text
        if r["op"] == "within" and r["band_low"] is not None:
            ax.axvspan(r["band_low"], r["band_high"], color="#1a7f37", alpha=0.08, lw=0)
            for t in (r["band_low"], r["band_high"]):
                ax.axvline(t, color="0.3", ls="--", lw=1)
        elif r["threshold"] is not None:
            t = r["threshold"]
            if r["op"] in (">=", ">"):
                ax.axvspan(t, max(hi, t), color="#1a7f37", alpha=0.08, lw=0)
            else:
                ax.axvspan(min(lo, t), t, color="#1a7f37", alpha=0.08, lw=0)
            ax.axvline(t, color="0.3", ls="--", lw=1)
        colour = VERDICT_COLOURS.get(r["verdict"], "0.4")
        if r["ci_low"] is not None and r["ci_high"] is not None and r["ci_low"] != r["ci_high"]:
            ax.plot([r["ci_low"], r["ci_high"]], [0, 0], color=colour, lw=2.2, solid_capstyle="butt")
            ax.plot([r["ci_low"], r["ci_high"]], [0, 0], ls="", marker="|", ms=8, color=colour)
        if r["value"] is not None:
            ax.plot(
                [r["value"]],
                [0],
                marker=VERDICT_MARKERS.get(r["verdict"], "o"),
                ms=6.5,
                color=colour,
                mec="white",
                mew=0.6,
                ls="",
            )
        else:
            ax.text(0.5, 0, "no value", transform=ax.get_yaxis_transform(), ha="center", va="center", fontsize=7)
        if r["paper_value"] is not None:
            ax.plot([r["paper_value"]], [0.55], marker="D", ms=5.5, mfc="none", mec="black", mew=1.1, ls="")
        ax.text(-0.02, 0.1, r["id"], transform=ax.transAxes, ha="right", va="center", fontsize=8)
        ax.text(
            1.02,
            0.1,
            r["verdict"],
            transform=ax.transAxes,
            ha="left",
            va="center",
            fontsize=8,
            color=colour,
            fontweight="bold",
        )
    handles = [Line2D([], [], ls="", marker=VERDICT_MARKERS[v], color=VERDICT_COLOURS[v], label=v) for v in VERDICTS]
    handles += [
        Line2D([], [], ls="--", color="0.3", label="criterion's threshold"),
        Line2D([], [], ls="", marker="D", mfc="none", mec="black", label="paper's value"),
    ]
    fig.legend(
        handles=handles,
        loc="upper center",
        ncol=5,
        fontsize=7,
        frameon=False,
        bbox_to_anchor=(0.5, 1.0),
        handletextpad=0.3,
        columnspacing=1.0,
    )
    if title:
        fig.text(0.01, 0.0, title, fontsize=6.5, color="0.4", va="bottom")
    fig.savefig(png)
    return png
