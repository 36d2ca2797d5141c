"""Whether the campaign's settings stand in for the paper's: the width study (the diagnostic
cells at several widths, the narrow networks against the full ones), the recipe check and its
ablation, the bf16 precision check, and every run of one cell side by side (what moves it: the
seed, the width or the recipe).

A part of :class:`nadcore.chapters.linear_separability.study.Study`; its methods use the
study's settings and :class:`nadcore.chapters.linear_separability.big_networks.BigNetworks`'
bundle helpers (``self.network``, ``self._bundle_fill``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from nadcore.book.evidence import number
from nadcore.book.evidence import runs_interval as evidence_runs
from nadcore.chapters import campaigns
from nadcore.chapters.linear_separability import bundled
from nadcore.chapters.linear_separability import quantities as q
from nadcore.chapters.linear_separability.campaign import ABLATION_CELLS, DIAGNOSTIC, RECIPE_CELLS
from nadcore.chapters.linear_separability.quantities import RECIPES_COMPARED

#: how near the published accuracy a single run counts as reaching it
NEAR = 0.01


class SettingChecks:
    """The checks of the campaign's settings in chapter 3 (a mixin of ``Study``)."""

    def width_agreement(self, big: dict, widths, full: dict, full_widths) -> pd.DataFrame:
        """Per network trained both at the campaign's width and at full width: the cells both
        have (a cell or its transpose), their accuracy at each width and in the published map."""
        out = []
        for a in [a for a in big if a in full]:
            cells = big[a][["k1", "k2"]].drop_duplicates().to_numpy()
            narrow, wide = bundled.cell_accuracy(big[a], cells), bundled.cell_accuracy(full[a], cells)
            both = ~np.isnan(wide)
            out.append(
                pd.DataFrame(
                    {
                        "network": campaigns.NAMES.get(a, a),
                        "arch": a,
                        "k1": cells[both, 0],
                        "k2": cells[both, 1],
                        "narrow width": widths[a],
                        "narrow": narrow[both],
                        "full width": full_widths[a],
                        "full": wide[both],
                        "published": q.published_fig1_map(a, cells[both]),
                    }
                )
            )
        return pd.concat(out, ignore_index=True) if out else pd.DataFrame()

    def width_stand_in(self, agree: pd.DataFrame, bundle, widths, big: dict) -> dict:
        """Per network in :meth:`width_agreement`, the keywords of its ``width-stand-in`` claim:
        the mean |narrow - full| over the cells both widths have (a t-interval over the cells). It
        counts only where the full network generalises on some of those cells and not on others:
        on cells that every width learns, any network would stand in."""
        out = {}
        for arch, g in agree.groupby("arch", sort=False):
            rows, full = bundled.on_cells(big[arch], zip(g.k1, g.k2)), g["full"].to_numpy()
            out[f"width-stand-in-{arch}"] = dict(
                interval=evidence_runs(np.abs(g["narrow"].to_numpy() - full), (0, 1), "cells"),
                preconditions={
                    "the full network is above 0.9 on some of the cells and below 0.6 on others": bool(
                        full.max() > 0.9 and full.min() < 0.6
                    )
                },
                **self._bundle_fill(bundle, arch, widths[arch], rows),
            )
        return out

    @staticmethod
    def width_agreement_summary(agree: pd.DataFrame) -> pd.DataFrame:
        """Per network, the means over the cells both widths have: how far the narrow network is
        from the full one and each from the published map (pub.), and how often both land on the
        same side of 0.6."""
        rows = {}
        for name, g in agree.groupby("network", sort=False):
            n, f, p = g["narrow"], g["full"], g["published"]
            label = f"{name}: width {int(g['narrow width'].iloc[0])} vs {int(g['full width'].iloc[0])}"
            rows[label] = {
                "cells": len(g),
                "|narrow - full|": (n - f).abs().mean(),
                "narrow - full": (n - f).mean(),
                "|narrow - pub.|": (n - p).abs().mean(),
                "|full - pub.|": (f - p).abs().mean(),
                "same side of 0.6": ((n > 0.6) == (f > 0.6)).mean(),
            }
        return pd.DataFrame.from_dict(rows, orient="index")

    def recipe_checks(self, bundle, widths, recipes=RECIPES_COMPARED, cells=RECIPE_CELLS) -> pd.DataFrame:
        """The campaign networks trained with each of ``recipes`` (names in the chapter's
        ``recipes``; by default the authors' and the follow-up's) on their ``cells`` (by
        default the recipe cells): the rows of :func:`bundled.recipe_check`, indexed by network
        and cell, with an ``arch`` column."""
        frame = bundle.frame(campaigns.CHAPTER, "fig1") if bundle else None
        tables = {
            self.network(a, widths[a]): bundled.recipe_check(frame, a, widths[a], c, recipes).assign(arch=a)
            for a, c in cells.items()
        }
        tables = {n: t for n, t in tables.items() if len(t)}
        return pd.concat(tables, names=["network", "k1", "k2"]) if tables else pd.DataFrame()

    def recipe_ablation(self, bundle, widths) -> pd.DataFrame:
        """The recipe ablation: :meth:`recipe_checks` with every recipe of the chapter's
        ``recipes`` (the authors', the follow-up's, each of the follow-up's changes alone on top
        of the authors', the follow-up's without each of them, and momentum with max_lr on top
        of the authors') on the ablation cells (``ABLATION_CELLS``)."""
        return self.recipe_checks(bundle, widths, tuple(self.cfg["recipes"]), ABLATION_CELLS)

    @staticmethod
    def recipes_that_learn(table) -> list[str]:
        """The recipes of :meth:`recipe_ablation`'s ``table`` whose runs learn every one of its
        cells (:func:`bundled.recipes_that_learn`)."""
        return bundled.recipes_that_learn(table.drop(columns=["published", "arch"]))

    def recipe_evidence(self, bundle, arch: str, width, table) -> dict:
        """The keywords of ``recipe-authors-<arch>``: how much closer to the published map the
        authors' recipe lands than the follow-up's, over the cells of ``table`` (the network's
        rows of :meth:`recipe_checks`)."""
        names = RECIPES_COMPARED
        cells = [c[-2:] for c in table.index]
        rows = bundled.on_cells(bundled.select(bundle.frame(campaigns.CHAPTER, "fig1"), arch, width), cells)
        return dict(
            interval=bundled.recipe_preference(table, names),
            recipe_cells=", ".join(map(str, cells)),
            **{f"{r.replace('-', '_')}_recipe": bundled.recipe_text(self.cfg["recipes"][r]) for r in names},
            **self._bundle_fill(bundle, arch, width, rows),
        )

    def precision_checks(self, bundle, widths) -> dict:
        """Per campaign network: its runs trained both in float32 and in bf16 autocast
        (:func:`bundled.precision_check`), where it has any."""
        frame = bundle.frame(campaigns.CHAPTER, "fig1") if bundle else None
        tables = {a: bundled.precision_check(frame, a, widths[a]) for a in bundled.BIG}
        return {a: t for a, t in tables.items() if len(t)}

    def precision_evidence(self, bundle, arch: str, width, table) -> dict:
        """The keywords of ``precision-bf16-<arch>``: mean |bf16 - float32| over the runs of
        ``table``."""
        fill = self._bundle_fill(bundle, arch, width, table.reset_index())
        return dict(interval=bundled.precision_gap(table), **fill)

    def width_study(self, bundle) -> dict:
        """The width study's diagnostic cells: per network, test accuracy at each width beside
        the published full-width accuracy."""
        frame = bundle.frame(campaigns.CHAPTER, "fig1") if bundle else None
        return {
            a: bundled.diagnostic_table(frame, a, DIAGNOSTIC[a])
            for a in ("resnet18", "vgg11")
            if frame is not None and len(bundled.select(frame, a))
        }

    def widths_studied(self, bundle) -> list[tuple[str, int]]:
        """(network, width) pairs of the width study that the bundle has runs of."""
        return [
            (a, int(c.split()[-1]))
            for a, t in self.width_study(bundle).items()
            for c in t.columns
            if c.startswith("width ")
        ]

    def width_evidence(self, bundle, arch: str, width: int) -> dict:
        frame = bundle.frame(campaigns.CHAPTER, "fig1")
        cells = sorted(tuple(c) for c in DIAGNOSTIC[arch])
        rows = bundled.on_cells(bundled.select(frame, arch, width), cells)
        return dict(
            interval=bundled.cells_distance(rows, arch),
            diagnostic_cells=", ".join(map(str, cells)),
            **self._bundle_fill(bundle, arch, width, rows),
        )

    def cell_sources(self, bundles_, arch: str, cell) -> pd.DataFrame:
        """Every run of ``arch`` on ``cell`` (or its transpose) in the campaign bundles
        ``bundles_``, by bundle, width and recipe: the seeds, their test accuracies, their mean
        with a t-interval over seeds, and the published full-width accuracy
        (:func:`bundled.cell_runs`)."""
        frames = {b.name: b.frame(campaigns.CHAPTER, "fig1") for b in bundles_ if b is not None}
        return bundled.cell_runs(frames, arch, cell, near=NEAR)

    @staticmethod
    def cell_sources_summary(table: pd.DataFrame, arch: str, cell, width: int) -> str:
        """What :meth:`cell_sources` says, in words computed from it: whether the spread over
        seeds at the campaign's ``width`` with the authors' recipe reaches the published
        accuracy, and where the other widths and recipes land."""
        pub = float(table["published"].iloc[0]) if len(table) else float("nan")
        authors = table.xs("authors", level="recipe") if len(table) else table
        at = [k for k in authors.index if k[1] == int(width)]
        if not at:
            return f"no run of {arch} on {tuple(cell)} at width {width} with the authors' recipe yet"
        base_key = max(at, key=lambda k: authors.loc[k, "seeds"])
        base = authors.loc[base_key]
        reach = bool(base["ci high"] >= pub) if np.isfinite(base["ci high"]) else None
        words = [
            f"{campaigns.NAMES.get(arch, arch)} on {tuple(cell)}, published {number(pub)}: at width "
            f"{base_key[1]} with the authors' recipe, {int(base['seeds'])} seeds give {number(base['min'])} to "
            f"{number(base['max'])} (mean {number(base['mean'])}, interval [{number(base['ci low'])}, "
            f"{number(base['ci high'])}])"
        ]
        if reach is None:
            words.append("; one seed cannot tell the seeds' part")
        else:
            words.append(
                ", an interval that "
                + ("reaches" if reach else "stays below")
                + " the published accuracy: "
                + (
                    "the spread over seeds can account for the gap (these seeds cannot tell the "
                    "network from the published one)"
                    if reach
                    else "the seeds do not account for the gap of their mean"
                    + (
                        f", though {int(base['near'])} of them land{'s' if base['near'] == 1 else ''} within {number(NEAR)} of it"
                        if base["near"]
                        else ""
                    )
                )
            )
        others = [
            f"{'width ' + str(w) if r == 'authors' else r + ' recipe at width ' + str(w)} ({b}, "
            f"{int(row['seeds'])} seed{'s' if row['seeds'] > 1 else ''}) {number(row['mean'])}"
            for (b, w, r), row in table.iterrows()
            if (b, w, r) != (*base_key[:2], "authors") and (r == "authors" or r in RECIPES_COMPARED)
        ]
        return "".join(words) + (". Elsewhere: " + "; ".join(others) + "." if others else ".")
