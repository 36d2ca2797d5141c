"""Chapter 3's figures, and the Fig. 6 panels and counts they draw.

A part of :class:`nadcore.chapters.linear_separability.study.Study` (the drawing); its methods use the
study's settings (``self.ch``, ``self.cfg``, ``self.grid``, ``self.run``) and each other's."""

from __future__ import annotations

import pandas as pd

from nadcore.book.explorer import direction_explorer
from nadcore.chapters import campaigns
from nadcore.chapters.linear_separability import figures as plots
from nadcore.chapters.linear_separability import quantities as q
from nadcore.chapters.linear_separability import runs as sep
from nadcore.chapters.linear_separability.quantities import seed_mean


class Drawing:
    """The drawing of chapter 3 (a mixin of ``Study``)."""

    # ------------------------------------------------------------------ Fig. 6, drawn and counted
    def published_fig6(self) -> dict:
        """The authors' published Fig. 6 curves, per network, indexed by NAD index."""
        return {m: d.set_index("nad_index") for m, d in q.published_fig6_table().groupby("model")}

    def fig6_panels(self, fig6: dict, published: dict) -> dict:
        """The chapter model's curves per estimator and noise level, with LeNet's published one."""
        panel = {
            f"{self.model}, {e} NADs, sigma={s:g}": (ii, res["test_acc"])
            for s, runs in fig6.items()
            for e, (ii, res, _) in runs.items()
        }
        panel["LeNet, published"] = (published["lenet"].index, published["lenet"]["test_acc"])
        return {f"{self.model} (ours) and LeNet (published)": panel}

    def fig6_eigen(self, fig6: dict) -> dict:
        runs = next(iter(fig6.values()))
        return {f"{self.model} (ours) and LeNet (published)": {e: r.eigenvalues for e, (_, _, r) in runs.items()}}

    def fig6_summaries(self, fig6: dict, published: dict) -> pd.DataFrame:
        cols = {
            "first_mean": "acc NADs 0-9",
            "beyond_mean": "acc NADs >700",
            "spearman": "spearman",
            "vs_published": "mean |ours - published|",
        }
        return pd.concat(
            {s: self.fig6_summary(r, published)[list(cols)].rename(columns=cols) for s, r in fig6.items()},
            names=["sigma", "estimator", "seed"],
        )

    def published_fig6_counts(self, published: dict) -> pd.DataFrame:
        return pd.DataFrame.from_dict(
            {
                m: {
                    "NADs 0-9": round(d["test_acc"].loc[:9].mean(), 3),
                    "NADs > 700": round(d["test_acc"].loc[701:].mean(), 3),
                    "indices above 0.6": int((d["test_acc"] > 0.6).sum()),
                }
                for m, d in published.items()
            },
            orient="index",
        )

    # ------------------------------------------------------------------ the chapter's figures
    # (each draws one figure of the page and records the numbers behind it as a data file)
    def title(self, what: str, sigma=None, seeds=None) -> str:
        """A figure's title line: what it shows, the seeds (default: the chapter's), the data
        convention, the profile."""
        noise = f", sigma={sigma:g}" if sigma is not None else ""
        n = len(self.ch.seeds if seeds is None else seeds)
        return f"{what}\n(mean of {n} seeds; {self.convention}{noise}; {self.ch.profile} profile)"

    def draw_directions(self):
        return plots.direction_images(self.fig6_directions(), title="Six Fourier directions in pixel space")

    def draw_fig1(self, fig1: dict):
        maps = (
            {a: seed_mean(r["test_acc"]) for a, r in fig1.items()}  # each published map under ours
            | {"theory: 2 average pools": self.theory_map()}
            | {f"{a}, published": m for a, m in self.published_fig1(fig1).items()}
        )
        fig = plots.direction_heatmaps(
            maps, self.grid1, title=self.title("Fig. 1: test accuracy on D(v), v a Fourier direction")
        )
        self.ch.figure_data("fig1", q.fourier_table(fig1, self.ch.seeds))
        return fig

    def explore_fig1(self, fig1: dict):
        """Fig. 1 as an interactive explorer (seed means)."""
        return direction_explorer(
            {f"{a} (seed mean)": seed_mean(r["test_acc"]) for a, r in fig1.items()},
            self.grid1,
            title="Fig. 1, interactively",
        )

    def draw_fig1_networks(self, fig1: dict, big: dict, widths, bundle):
        """Fig. 1 for every network of the paper, ours above the published maps."""
        return plots.fig1_panels(
            self.fig1_columns(fig1, big, widths),
            title=(
                "Fig. 1 for the paper's networks: ours (top) and the authors' published maps\n"
                + (bundle.title() if bundle else "no campaign bundle")
            ),
        )

    def draw_fig2(self, fig2: dict):
        cells = self.fig2_cells()
        grid = sep.covering_subgrid(self.grid, cells)
        maps = {a: plots.map_on_grid(seed_mean(f["iterations"]), cells, grid) for a, f in fig2.items()}
        fig = plots.direction_heatmaps(
            maps,
            grid,
            vmin=0,
            vmax=max(f["budget"] for f in fig2.values()),
            cmap="magma_r",
            label=f"iterations to loss < {self.cfg['fig2_threshold']:g}",
            title=self.title(
                "Fig. 2: iterations to a small loss (censored = budget)", self.cfg["fig2_sigma"], self.fig2_seeds
            ),
        )
        self.ch.figure_data("fig2", self.fig2_table(fig2))
        return fig

    def draw_fig3(self, fig3: dict):
        cells = [tuple(c) for c in self.cfg["fig3_cells"]]
        grid = sep.covering_subgrid(self.grid, cells)
        maps = {a: plots.map_on_grid(seed_mean(r["test_acc"]), cells, grid) for a, r in fig3.items()}
        source = {a: f"campaign {r['bundle'].name}" for a, r in fig3.items() if r.get("bundle") is not None}
        what = "Fig. 3: without and with pooling" + "".join(
            f"; {campaigns.NAMES.get(a, a)} from the {w} bundle" for a, w in source.items()
        )
        fig = plots.direction_heatmaps(maps, grid, annotate=True, title=self.title(what))
        self.ch.figure_data("fig3", q.fourier_table(fig3, self.ch.seeds))
        return fig

    def draw_fig6(self, fig6: dict, published: dict):
        fig = plots.accuracy_vs_index(
            self.fig6_panels(fig6, published),
            self.fig6_eigen(fig6),
            title=f"Fig. 6: test accuracy on D(u_i) along the NADs ({self.convention})",
        )
        self.ch.figure_data("fig6", pd.concat([self.fig6_table(r, s) for s, r in fig6.items()]))
        self.ch.figure_data("fig6_published", q.published_fig6_table())
        return fig

    def draw_big_fig6(self, big6: dict | None):
        if not big6:
            return None
        return plots.accuracy_vs_index(
            big6["panels"], title="Fig. 6 for the paper's big networks (campaign bundles; published curves as lines)"
        )
