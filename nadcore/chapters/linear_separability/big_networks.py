"""The paper's big networks, read from the committed campaign bundles: their Figs. 1, 2, 3
and 6, the spot checks re-run live, and their claims (the checks of the campaign's settings:
:mod:`nadcore.chapters.linear_separability.setting_checks`).

A part of :class:`nadcore.chapters.linear_separability.study.Study` (the big networks); its methods use the
study's settings (``self.ch``, ``self.cfg``, ``self.grid``, ``self.run``) and each other's."""

from __future__ import annotations

import numpy as np
import pandas as pd

from nadcore import runtime
from nadcore.book import bundles
from nadcore.book.evidence import MUCH, difference_interval, exact_value
from nadcore.book.evidence import runs_interval as evidence_runs
from nadcore.chapters import campaigns
from nadcore.chapters.linear_separability import bundled
from nadcore.chapters.linear_separability import quantities as q
from nadcore.chapters.linear_separability import runs as sep
from nadcore.chapters.linear_separability.claims import BIG, width_suffix
from nadcore.chapters.linear_separability.quantities import blind_and_seen, seed_mean
from nadcore.nets import spec_width
from nadcore.train.budget import steps_per_run


class BigNetworks:
    """The big networks of chapter 3 (a mixin of ``Study``)."""

    # ------------------------------------------------------------------ the paper's big networks
    # (trained by a campaign, committed as a bundle: nadcore.chapters.campaigns)
    def campaign(self, name: str | None = None):
        """The committed bundle of campaign ``name`` (default: the chapter's ``campaign``; None
        where there is none), and the width it trains each network at (full width where the
        campaign names none)."""
        name = name or self.cfg["campaign"]
        widths = campaigns.CAMPAIGNS[name]["widths"]
        return bundles.load(name), {
            a: spec_width(campaigns.spec_of(a, widths.get(a))) for a in (*bundled.BIG, "resnet18_nopool")
        }

    def network(self, arch: str, width) -> str:
        """``"ResNet-18 at width 16"``: a network and its width, as panels and claims name it."""
        return bundled.width_label(campaigns.NAMES.get(arch, arch), arch, width)

    def big_rows(self, bundle, widths, figure: str = "fig1") -> dict:
        """Per big network, its ``figure`` rows at the campaign's width (the authors' recipe);
        networks without rows are left out."""
        frame = bundle.frame(campaigns.CHAPTER, figure) if bundle else None
        out = {}
        for arch in bundled.BIG if figure != "fig3" else ("resnet18_nopool",):
            rows = bundled.select(frame, arch, widths.get(arch))
            if len(rows):
                out[arch] = rows
        return out

    def fig1_columns(self, fig1: dict, big: dict, widths) -> dict:
        """Fig. 1 for every network of the paper, ours beside the published map: the build's
        networks on its grid, the campaign's on the 16x16 grid (NaN where not trained)."""
        cols = {}
        for a, r in fig1.items():
            pub = self.published_fig1([a]).get(a)
            cols[f"{campaigns.NAMES.get(a, a)} ({self.ch.profile} build)"] = (seed_mean(r["test_acc"]), pub, self.grid1)
        for a, rows in big.items():
            pub = q.published_fig1_map(a, self.grid).reshape(self.grid.shape)
            cols[self.network(a, widths.get(a))] = (bundled.fig1_map(rows, self.grid), pub, self.grid)
        return cols

    def big_fig1_table(self, big: dict, widths) -> pd.DataFrame:
        """Per campaign network: its width, trained cells and seeds, distance to and correlation
        with the published map, its low-high gap and the published one on the same cells, and
        its training accuracy."""
        rows = {}
        for a, r in big.items():
            rows[self.network(a, widths.get(a))] = {
                "cells": r[["k1", "k2"]].drop_duplicates().shape[0],
                "seeds": bundled.seeds_per_cell(r),
                "|ours - published| over the grid": bundled.map_distance(r, a).value,
                "Pearson": bundled.map_pearson(r, a).value,
                "gap": bundled.frequency_gap(r, a, self.low, self.high).value,
                "published gap": bundled.published_gap(r, a, self.low, self.high),
                "train acc": bundled.train_fit(r).value,
            }
        return pd.DataFrame.from_dict(rows, orient="index")

    def _bundle_fill(self, bundle, arch: str, width, rows) -> dict:
        return dict(
            network=self.network(arch, width),
            cells=rows[["k1", "k2"]].drop_duplicates().shape[0],
            profile=f"campaign {bundle.name}",
            steps=1,
            paper_steps=1,
            settings=self._bundle_settings(bundle, width, rows),
        )

    @staticmethod
    def _bundle_settings(bundle, width, rows) -> dict:
        """A campaign claim's settings: the width, seeds and bundle, and how many of its runs
        trained in bf16 autocast."""
        settings = {"width": int(width), "seeds": bundled.seeds_per_cell(rows), "bundle": bundle.title()}
        if "precision" in rows and (rows["precision"] == "bf16").any():
            settings["runs in bf16 autocast"] = int((rows["precision"] == "bf16").sum())
        return settings

    def big_fig1_evidence(self, bundle, arch: str, width, rows) -> dict:
        """The keywords of one campaign network's Fig. 1 claims, by claim id (ending in
        ``-full-width`` at the network's full width). The distance to the published map is a mean
        over the grid, so it counts only where the trained cells cover every stratum of the grid
        (:func:`bundled.map_coverage`); the gap, on its own cells, only where they include some
        that the published map has below 0.9: on cells that every network learns, any network
        that generalises would match it."""
        suffix = width_suffix(arch, width)
        fill = self._bundle_fill(bundle, arch, width, rows)
        hard = {
            "the trained cells include some the published map has below 0.9": bool(
                q.published_fig1_map(arch, rows[["k1", "k2"]].to_numpy()).min() < 0.9
            )
        }
        out = {
            f"fig1-train-fit-{arch}{suffix}": dict(interval=bundled.train_fit(rows), **fill),
            f"fig1-matches-published-{arch}{suffix}": dict(
                interval=bundled.map_distance(rows, arch), preconditions=bundled.map_coverage(rows, arch), **fill
            ),
        }
        r = q.cell_radius(rows[["k1", "k2"]].to_numpy())
        if (r <= self.low).any() and (r >= self.high).any():  # a gap needs cells in both bands
            out[f"fig1-frequency-gap-{arch}{suffix}"] = dict(
                interval=bundled.frequency_gap(rows, arch, self.low, self.high),
                preconditions=hard,
                published_gap=bundled.published_gap(rows, arch, self.low, self.high),
                **fill,
            )
        return out

    def densenet_few(self, bundle, width, rows) -> dict:
        """Share of DenseNet-121's trained cells that it learns (test accuracy at least
        :data:`bundled.LEARNED`), and that share on the whole published map; meaningful only once
        the trained cells sample the whole grid."""
        c = rows.groupby(["k1", "k2"])["test_acc"].mean()
        share = (c >= bundled.LEARNED).to_numpy()
        pub = q.published_fig1_map("densenet121", self.grid)
        on_rows = set(rows["k1"].unique()) <= {0, 2}
        return dict(
            interval=bundled.share_interval(share),
            published_share=float((pub >= bundled.LEARNED).mean()),
            preconditions={
                "the trained cells sample the whole grid (not only the rows k1 = 0, 2, which "
                "hold DenseNet's cross)": not on_rows and len(c) >= 64
            },
            **self._bundle_fill(bundle, "densenet121", width, rows),
        )

    def spot_checks(self, bundle, widths) -> pd.DataFrame:
        """The spot cells of each campaign network re-run live at ``spot_train`` (cached), beside
        the bundle's runs of the same cells (seed 0)."""
        out = []
        figures = {a: campaigns.cells_figure(bundle.name, a) for a in self.cfg["spot_cells"]}
        frames = {f: bundle.frame(campaigns.CHAPTER, f) for f in set(figures.values())}
        for arch, cells in self.cfg["spot_cells"].items():
            rows = bundled.select(frames[figures[arch]], arch, widths.get(arch), seed=0)
            if rows.empty:
                continue
            have = {(int(a), int(b)): float(t) for a, b, t in zip(rows["k1"], rows["k2"], rows["test_acc"])}
            cells = [tuple(c) for c in cells if tuple(c) in have]
            if not cells:
                continue
            spec = campaigns.spec_of(arch, widths.get(arch))
            s = self.spot_settings(arch)
            live = sep.fourier_sweep(spec, cells, s, **(self.run | {"seeds": [self.ch.seed]}))
            for c, acc in zip(cells, live["test_acc"][0]):
                out.append(
                    {
                        "network": self.network(arch, widths.get(arch)),
                        "arch": arch,
                        "k1": c[0],
                        "k2": c[1],
                        "bundle": have[c],
                        "live": float(acc),
                        "live budget": self.spot_budget(s),
                    }
                )
        return pd.DataFrame(out)

    def spot_settings(self, arch: str) -> dict:
        """The campaign's settings (the authors' recipe, one network at a time) at the spot
        check's budget ``spot_train`` and ``spot_n_test`` test samples; in ``spot_autocast``'s
        precision where this device runs it natively."""
        c = self.cfg
        autocast = c["spot_autocast"].get(arch)
        native = str(self.ch.device).startswith("cuda") or bool(runtime.native_bf16())
        return (
            {k: c[k] for k in ("sigma", "epsilon", "signal")}
            | {"n_test": c["spot_n_test"]}
            | c["recipes"]["authors"]
            | c["spot_train"].get(arch, c["spot_train"]["default"])
            | {"trainer": "many", "channels_last": True}
            | ({"autocast": autocast} if autocast and native else {})
        )

    @staticmethod
    def spot_budget(settings: dict) -> str:
        """A spot check's budget in words: samples, epochs and, where not float32, precision."""
        precision = f", {settings['autocast']} autocast" if settings.get("autocast") else ""
        return f"{settings['n_train']:,} samples x {settings['epochs']} epochs{precision}"

    def spot_networks(self, spots: pd.DataFrame) -> list[str]:
        """The networks with spot checks in ``spots``."""
        return list(spots["arch"].unique()) if len(spots) else []

    def spot_evidence(self, bundle, spots: pd.DataFrame, arch: str) -> dict:
        t = self.cfg["spot_threshold"]
        mine = spots[spots["arch"] == arch]
        same = ((mine["bundle"] >= t) == (mine["live"] >= t)).to_numpy()
        return dict(
            interval=exact_value(float(same.mean()), f"{same.sum()} of {same.size} spot cells"),
            network=mine["network"].iloc[0],
            spot_cells=", ".join(f"({a}, {b})" for a, b in zip(mine["k1"], mine["k2"])),
            spot_budget=mine["live budget"].iloc[0],
            spot_threshold=t,
            profile=f"campaign {bundle.name}",
            steps=steps_per_run(self.spot_settings(arch)),
            paper_steps=steps_per_run(self.ch.paper_cfg["recipes"]["authors"]),
            settings={"bundle": bundle.title()},
        )

    def big_fig3(self, bundle, widths) -> pd.DataFrame:
        """ResNet-18 without its average pool on the campaign's Fig. 3 cells, beside its pooled
        runs of the same cells (Fig. 1), seed by seed."""
        if bundle is None:
            return pd.DataFrame()
        nopool = bundled.select(
            bundle.frame(campaigns.CHAPTER, "fig3"), "resnet18_nopool", widths.get("resnet18_nopool")
        )
        pooled = bundled.select(bundle.frame(campaigns.CHAPTER, "fig1"), "resnet18", widths.get("resnet18"))
        if nopool.empty or pooled.empty:
            return pd.DataFrame()
        keys = ["k1", "k2", "seed"]
        both = nopool[keys + ["test_acc", "width"]].merge(
            pooled[keys + ["test_acc"]], on=keys, suffixes=(" without pool", " with pool")
        )
        both["published (with pool)"] = q.published_fig1_map("resnet18", both[["k1", "k2"]].to_numpy())
        return both.set_index(keys)

    def big_fig3_evidence(self, bundle, table: pd.DataFrame, blind: bool) -> dict:
        """ResNet-18 without minus with its pool, paired per cell, over the campaign's Fig. 3 cells
        where the pooled network is at chance (``blind``) or above it in the published map (the
        threshold of LeNet's claims)."""
        where, text = blind_and_seen(table.index, table["published (with pool)"])
        sel = where == blind
        diff = (table["test_acc without pool"] - table["test_acc with pool"]).to_numpy()[sel]
        width = int(table["width"].iloc[0])
        key = "cells_blind" if blind else "cells_seen"
        measured = {"interval": evidence_runs(diff, (-1, 1), "cells")} if len(diff) else {"values": diff}
        return dict(
            **measured,
            network=self.network("resnet18", width),
            **{key: text[key]},
            profile=f"campaign {bundle.name}",
            steps=1,
            paper_steps=1,
            settings={"width": width, "model": "resnet18_nopool", "bundle": bundle.title()},
            preconditions={f"some Fig. 3 cell is {'blind' if blind else 'seen'}": bool(sel.any())},
        )

    def big_fig3_uniform(self, bundle, table: pd.DataFrame) -> dict:
        """ResNet-18 without its pool: mean test accuracy on the campaign's low-frequency Fig. 3
        cells minus on its high-frequency ones (the bands of LeNet's claim), Welch over cells."""
        r = q.cell_radius(np.array(table.index.tolist())[:, :2])
        acc = table["test_acc without pool"].to_numpy()
        width = int(table["width"].iloc[0])
        return dict(
            interval=difference_interval(acc[r <= self.low], acc[r >= self.high], (-1, 1), "cells"),
            network=self.network("resnet18", width),
            low=self.low,
            high=self.high,
            profile=f"campaign {bundle.name}",
            steps=1,
            paper_steps=1,
            settings={"width": width, "model": "resnet18_nopool", "bundle": bundle.title(), "cells": len(acc)},
            preconditions={
                "resnet18_nopool learned: mean test accuracy >= 0.6": bool(acc.mean() >= 0.6),
                "both bands have two cells or more": bool((r <= self.low).sum() > 1 and (r >= self.high).sum() > 1),
            },
        )

    def big_fig2(self, bundle, widths) -> pd.DataFrame:
        """ResNet-18's Fig. 2 from the campaign: SGD iterations to a small training loss per cell
        (a run that never got there counts as its whole budget), beside the published Fig. 1
        accuracy of the full network on the same cell."""
        rows = (
            None
            if bundle is None
            else bundled.select(bundle.frame(campaigns.CHAPTER, "fig2"), "resnet18", widths.get("resnet18"))
        )
        if rows is None or rows.empty:
            return pd.DataFrame()
        table = rows[["k1", "k2", "seed", "width", "budget", "train_acc"]].copy()
        table.insert(4, "iterations", q.censored_iterations(rows["iters_to_loss"], rows["budget"]))
        table["published Fig. 1"] = q.published_fig1_map("resnet18", table[["k1", "k2"]].to_numpy())
        return table.set_index(["k1", "k2", "seed"])

    def big_fig2_evidence(self, bundle, table: pd.DataFrame) -> dict:
        """log10 of the ratio of the geometric-mean iterations on the cells where the pooled
        ResNet-18 is blind in the published map to those where it generalises (Welch over cells)."""
        blind, cells = blind_and_seen(table.index, table["published Fig. 1"])
        logs = np.log10(table["iterations"].to_numpy())
        width = int(table["width"].iloc[0])
        seen = 10 ** logs[~blind].mean() if (~blind).any() else float("nan")
        paper = self.ch.paper_cfg
        return dict(
            interval=difference_interval(logs[blind], logs[~blind], what="cells"),
            network=self.network("resnet18", width),
            **cells,
            fig2_sigma=paper["fig2_sigma"],
            fig2_threshold=paper["fig2_threshold"],
            profile=f"campaign {bundle.name}",
            steps=1,
            paper_steps=1,
            settings={"width": width, "bundle": bundle.title()},
            preconditions={
                "some Fig. 2 cell is blind and some sees": bool(blind.any() and (~blind).any()),
                "the budget can show the criterion's ratio (budget >= ratio x iterations where it sees)": bool(
                    table["budget"].min() >= MUCH * seen
                ),
            },
        )

    def fig2_summary(self, fig2: dict) -> pd.DataFrame:
        """Per network and seed: iterations to the threshold on the low and high frequencies,
        their ratio, and how many runs got there at all (censored runs count as the budget)."""
        cells = self.fig2_cells()
        lows = q.cell_radius(cells) <= self.low
        out = {}
        for arch, f in fig2.items():
            b = q.band_means(f["iterations"], cells, self.low, self.high)
            reached = f["result"]["iters_to_loss"] >= 0
            out[arch] = pd.DataFrame(
                {
                    "low": b["low"],
                    "high": b["high"],
                    "high / low": b["high"] / b["low"],
                    "low reached": reached[:, lows].sum(1),
                    "others reached": reached[:, ~lows].sum(1),
                    "budget": f["budget"],
                },
                index=pd.Index(self.fig2_seeds, name="seed"),
            )
        return pd.concat(out, names=["model", "seed"])

    def big_fig6(self, published: dict, *sources) -> dict | None:
        """The campaigns' Fig. 6 (the big networks on the authors' NADs, both noise levels;
        ``sources``: pairs of a bundle and its widths, as :meth:`campaign` returns them): the
        panels, a summary table, and the keywords of their claims (sigma = 3 for the paper's
        claims, both for the validation of the fitted sigma; ids ending in ``-full-width`` for a
        network at full width)."""
        table = q.published_fig6_table()
        panels, rows, claims = {}, {}, {}
        for bundle, widths in sources:
            frame = bundle.frame(campaigns.CHAPTER, "fig6") if bundle else None
            for arch in BIG if frame is not None else ():
                if not bundled.select(frame, arch, widths.get(arch)).empty:
                    got = self._big_fig6_network(bundle, frame, arch, widths[arch], published[arch], table)
                    if got is None:
                        continue
                    panel, more, evid = got
                    panels[self.network(arch, widths[arch])] = panel
                    rows.update(more)
                    claims.update(evid)
            if frame is not None:
                claims.update(self._stronger_bias(bundle, frame, widths, table))
        if not panels:
            return None
        return {"panels": panels, "table": pd.DataFrame.from_dict(rows, orient="index"), "evidence": claims}

    def big_fig6_stretches(self, arch: str, *sources) -> pd.DataFrame:
        """``arch``'s Fig. 6 at the paper's sigma in each of ``sources`` (pairs of a bundle and its
        widths), stretch by stretch of the NAD sequence against its published curve
        (:func:`bundled.fig6_stretches`), one block per network and width; empty where no bundle
        has such runs."""
        sigma, table, blocks = float(self.cfg["sigma"]), q.published_fig6_table(), {}
        for bundle, widths in sources:
            frame = bundle.frame(campaigns.CHAPTER, "fig6") if bundle else None
            if frame is not None and not bundled.select(frame, arch, widths.get(arch), sigma=sigma).empty:
                blocks[self.network(arch, widths[arch])] = bundled.fig6_stretches(
                    frame, arch, widths[arch], sigma, table
                )
        return pd.concat(blocks, names=["network"]) if blocks else pd.DataFrame()

    def _stronger_bias(self, bundle, frame, widths: dict, table) -> dict:
        """The keywords of ``fig6-stronger-bias-<arch>`` for ResNet-18 and DenseNet-121 against
        VGG-11 in one bundle, where both curves span the NAD sequence at the paper's sigma (ids
        ending in ``-full-width`` where both networks are at full width; none where only one
        is)."""
        sigma, claims = float(self.cfg["sigma"]), {}

        def spans(arch):
            return arch in widths and bundled.fig6_spans(bundled.fig6_curves(frame, arch, widths[arch], sigma)[0])

        for arch in ("resnet18", "densenet121"):
            if not (spans(arch) and spans("vgg11")):
                continue
            suffix = width_suffix(arch, widths[arch])
            if suffix != width_suffix("vgg11", widths["vgg11"]):
                continue
            iv = bundled.bias_difference(frame, arch, widths[arch], "vgg11", widths["vgg11"], sigma)
            rows = pd.concat([bundled.select(frame, a, widths[a]) for a in (arch, "vgg11")])
            pub = table[table["nad_index"] < 700]
            pub_diff = pub[pub["model"] == arch]["test_acc"].mean() - pub[pub["model"] == "vgg11"]["test_acc"].mean()
            claims[f"fig6-stronger-bias-{arch}{suffix}"] = dict(
                interval=iv,
                network=self.network(arch, widths[arch]),
                other=self.network("vgg11", widths["vgg11"]),
                published_diff=round(float(pub_diff), 3),
                profile=f"campaign {bundle.name}",
                steps=1,
                paper_steps=1,
                settings=self._bundle_settings(bundle, widths[arch], rows),
            )
        return claims

    def _big_fig6_network(self, bundle, frame, arch: str, w, pub, table) -> tuple[dict, dict, dict] | None:
        """One network's Fig. 6 in :meth:`big_fig6`: its panel, its summary rows by (network,
        sigma), and the keywords of its claims, from the noise levels whose curves span the NAD
        sequence (None if none does yet)."""
        sigma, fitted = float(self.cfg["sigma"]), float(self.cfg["fig6_sigma"])
        curves = {
            s: bundled.fig6_curves(frame, arch, w, s) for s in sorted(bundled.select(frame, arch, w)["sigma"].unique())
        }
        have = [s for s, (indices, _) in curves.items() if bundled.fig6_spans(indices)]
        if not have:
            return None
        name, suffix = self.network(arch, w), width_suffix(arch, w)
        panel = {f"{name}, sigma={s:g}": curves[s] for s in have}
        panel[f"{campaigns.NAMES[arch]}, published"] = (pub.index, pub["test_acc"])
        fill = dict(
            network=name,
            profile=f"campaign {bundle.name}",
            steps=1,
            paper_steps=1,
            settings=self._bundle_settings(bundle, w, bundled.select(frame, arch, w)),
        )
        rows, claims = {}, {}
        for s in have:
            sm = bundled.fig6_summary(frame, arch, w, s, table)
            rows[(name, s)] = {
                "acc NADs 0-9 minus > 700": sm["gap"].value,
                "published": sm["published_gap"],
                "spearman": sm["spearman"].value,
                "published spearman": sm["published_spearman"],
                "mean |ours - published|": sm["distance"].value,
            }
            if s == sigma:
                claims[f"fig6-first-vs-beyond-{arch}{suffix}"] = dict(
                    interval=sm["gap"], published_gap=sm["published_gap"], settle_floor=sm["gap_floor"], **fill
                )
                claims[f"fig6-monotone-{arch}{suffix}"] = dict(
                    interval=sm["spearman"],
                    n_indices=len(sm["indices"]),
                    published_spearman=sm["published_spearman"],
                    **fill,
                )
        if {sigma, fitted} <= set(have):
            claims[f"fig6-sigma-validation-{arch}{suffix}"] = dict(
                interval=bundled.sigma_preference(frame, arch, w, table, (sigma, fitted)), **fill
            )
        return panel, rows, claims
