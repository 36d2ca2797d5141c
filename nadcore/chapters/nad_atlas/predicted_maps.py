"""Chapter 7's Fig. 1 predicted from the NADs (:mod:`nadcore.chapters.nad_atlas.prediction`): the
paper's five networks scored against the published maps and the campaign's cells, the atlas
architectures' predicted maps and the cells the campaign trained them on, and their claims.

A part of :class:`nadcore.chapters.nad_atlas.study.Study` (a mixin); its methods use the study's
settings (``self.ch``, ``self.cfg``, ``self.archs``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from nadcore.book import bundles
from nadcore.book.evidence import exact_value
from nadcore.chapters import campaigns
from nadcore.chapters.linear_separability import bundled
from nadcore.chapters.nad_atlas import figures as plots
from nadcore.chapters.nad_atlas.campaign import ATLAS_FIG1
from nadcore.chapters.nad_atlas.claims import USEFUL_AUC, USEFUL_RANK
from nadcore.chapters.nad_atlas.prediction import CHANCE, LEARNABLE, prediction_agreement
from nadcore.data.directions import fourier_grid
from nadcore.nads.predict import predicted_fig1_map
from nadcore.nads.published import published_fig1_map
from nadcore.nets import width_spec
from nadcore.runtime import threads
from nadcore.train.budget import steps_per_run

__all__ = ["PredictedMaps", "GRID", "PAPER_FIVE"]

#: the paper's Fig. 1 grid (16 x 16 frequencies of a 32 x 32 image)
GRID = fourier_grid(32, 16)
#: the paper's networks, as Fig. 1 names them
PAPER_FIVE = {
    "logreg": "LogReg",
    "lenet": "LeNet",
    "resnet18": "ResNet-18",
    "vgg11": "VGG-11",
    "densenet121": "DenseNet-121",
}
#: the big networks, which the campaign trains at a reduced width
NARROW = ("resnet18", "vgg11", "densenet121")
#: what each set of predictions is made from, for the tables
PREDICTION_SOURCES = {
    "": "published NADs",
    "own-": "this book's NADs, full width",
    "gradient-": "this book's exact-gradient NADs, full width",
    "narrow-": "this book's NADs, campaign width",
}
_ESTIMATORS = {"secant": "secant (step 100)", "gradient": "exact-gradient"}


class PredictedMaps:
    """Fig. 1 predicted from the NADs (a mixin of chapter 7's ``Study``)."""

    # ------------------------------------------------------------------ Fig. 1 predicted from the NADs
    def predicted_maps(self, results: dict) -> dict:
        """``{label: map}``: every architecture's Fig. 1 predicted from its NADs
        (:func:`nadcore.nads.predict.predicted_fig1_map`), on the paper's grid."""
        return {a: predicted_fig1_map(r, GRID) for a, r in results.items()}

    def prediction_sets(self, results: dict) -> dict:
        """The paper's networks' predicted maps and the maps they are scored against, as
        ``{prefix: {arch: (predicted, measured, info)}}``: the authors' published NADs against the
        published maps (prefix ``""``); this book's full-width NADs of the atlas (chapter 2's)
        against the published maps (``"own-"``); this book's NADs at the campaign's width against
        the campaign's Fig. 1 cells of the same narrow network (``"narrow-"``, NaN where no cell
        was trained). ``info``: the estimate's networks, and the narrow network's width, runs and
        bundle."""
        ch, cfg = self.ch, self.cfg
        published = {a: published_fig1_map(a, GRID).reshape(GRID.shape) for a in PAPER_FIVE}
        sets = {
            "": {
                a: (predicted_fig1_map(ch.nads(a, "published")[0], GRID), published[a], {"networks": 10000})
                for a in PAPER_FIVE
            }
        }
        sets["own-"], sets["gradient-"] = {}, {}
        secant = ch.settings_of("02_nads")["secant_networks"]
        for label, a in self.archs.items():
            if a not in PAPER_FIVE or a not in cfg["from_chapter2"]:
                continue
            # the authors' estimator where chapter 2 computes it, as the published maps were
            # predicted from; the exact gradient of the atlas otherwise (and beside it, for the table)
            with threads(1, blas=True):
                r = ch.nads(a, "secant")[0] if secant.get(a) else results[label]
            sets["own-"][a] = (
                predicted_fig1_map(r, GRID),
                published[a],
                {"networks": int(r.meta["networks"]), "estimator": _ESTIMATORS[r.meta["method"]]},
            )
            if secant.get(a):
                g = results[label]
                sets["gradient-"][a] = (
                    predicted_fig1_map(g, GRID),
                    published[a],
                    {"networks": int(g.meta["networks"]), "estimator": _ESTIMATORS["gradient"]},
                )
        camp = campaigns.CAMPAIGNS[cfg["campaign"]]
        bundle = bundles.load(cfg["campaign"])
        frame = bundle.frame(campaigns.CHAPTER, "fig1") if bundle is not None else None
        counts = ch.settings_of("02_nads")["gradient_networks"]
        sets["narrow-"] = {}
        for a in NARROW:
            w = camp["widths"][a]
            rows = bundled.select(frame, a, w)
            if rows.empty:
                continue
            with threads(1, blas=True):  # chapter 2's width study computed them (cached)
                r = ch.nads(width_spec(a, w), "gradient", networks=int(counts[a]))[0]
            sets["narrow-"][a] = (
                predicted_fig1_map(r, GRID),
                bundled.fig1_map(rows, GRID),
                {
                    "networks": int(r.meta["networks"]),
                    "width": w,
                    "runs": len(rows),
                    "bundle": bundle.title(),
                    "estimator": _ESTIMATORS["gradient"],
                },
            )
        return sets

    def prediction_table(self, sets: dict) -> pd.DataFrame:
        """One row per set of predictions and network: the rank correlation and the AUC with their
        intervals, the distinct cells scored and how many of them are learnable and at chance."""
        rows = []
        for prefix, preds in sets.items():
            for a, (pred, meas, info) in preds.items():
                s = prediction_agreement(pred, meas, GRID)
                rows.append(
                    {
                        "NADs": PREDICTION_SOURCES[prefix],
                        "network": PAPER_FIVE[a],
                        "estimator": info.get("estimator", "secant (step 100)"),
                        "networks": info["networks"],
                        "width": info.get("width", "full"),
                        "rank": s["rank"].value,
                        "rank low": s["rank"].low,
                        "rank high": s["rank"].high,
                        "AUC": s["auc"].value,
                        "AUC low": s["auc"].low,
                        "AUC high": s["auc"].high,
                        "cells": s["cells"],
                        "learnable": s["learnable"],
                        "chance": s["chance"],
                    }
                )
        table = pd.DataFrame(rows)
        self.ch.figure_data("prediction_scores", table)
        return table

    def draw_predictions(self, sets: dict):
        """The paper's five: predicted from the published NADs, from this book's NADs, and the
        published map (and the figure's data file)."""

        def row(prefix, which):  # every network in its column, None where a set lacks it
            return {name: (sets[prefix][a][which] if a in sets[prefix] else None) for a, name in PAPER_FIVE.items()}

        rows = {
            "predicted, published NADs": ("predicted", row("", 0)),
            "predicted, this book's NADs": ("predicted", row("own-", 0)),
            "published accuracy": ("accuracy", row("", 1)),
        }
        fig = plots.prediction_maps(rows, GRID, title="Fig. 1 predicted from the NADs, beside the published map")
        self.ch.figure_data(
            "predicted_fig1",
            pd.concat(
                [
                    pd.DataFrame(
                        {
                            "NADs": PREDICTION_SOURCES[prefix],
                            "network": PAPER_FIVE[a],
                            "k1": GRID.k1.ravel(),
                            "k2": GRID.k2.ravel(),
                            "predicted": p.ravel(),
                            "measured": m.ravel(),
                        }
                    )
                    for prefix, preds in sets.items()
                    for a, (p, m, _) in preds.items()
                ],
                ignore_index=True,
            ),
        )
        return fig

    @staticmethod
    def describe_predictions(table: pd.DataFrame) -> str:
        """Sentences written from :meth:`prediction_table`: per set of NADs, each network's AUC
        and rank correlation, and where a score falls short of a useful predictor's bound (or
        cannot be computed)."""

        def score(v, lo, hi):
            return "undefined" if not np.isfinite(v) else f"{v:.3f} [{lo:.3f}, {hi:.3f}]"

        lines = []
        for nads, part in table.groupby("NADs", sort=False):
            items, short, unscored = [], [], []
            for _, r in part.iterrows():
                auc, rank = (
                    score(r["AUC"], r["AUC low"], r["AUC high"]),
                    score(r["rank"], r["rank low"], r["rank high"]),
                )
                items.append(f"{r['network']} ({r['estimator']}, {r['networks']:,} networks): AUC {auc}, rank {rank}")
                if np.isfinite(r["AUC high"]) and r["AUC high"] < USEFUL_AUC:
                    short.append(f"{r['network']}'s AUC lies below {USEFUL_AUC:g}")
                if np.isfinite(r["rank high"]) and r["rank high"] < USEFUL_RANK:
                    short.append(f"{r['network']}'s rank correlation lies below {USEFUL_RANK:g}")
                if not np.isfinite(r["AUC"]):
                    unscored.append(f"{r['network']} ({'no learnable' if r['learnable'] == 0 else 'no chance'} cell)")
            lines.append(
                f"* **{nads}**: "
                + "; ".join(items)
                + "."
                + (f" Short of a useful predictor: {', '.join(short)}." if short else "")
                + (
                    f" No AUC where the map lacks one of the two kinds of cell: {', '.join(unscored)}."
                    if unscored
                    else ""
                )
            )
        return "\n".join(lines)

    def draw_narrow_predictions(self, sets: dict):
        """The big networks at the campaign's width: predicted from their NADs above the cells the
        campaign trained."""
        narrow = sets["narrow-"]
        label = {
            a: f"{PAPER_FIVE[a]} ({'growth rate' if a == 'densenet121' else 'width'} {i['width']})"
            for a, (_, _, i) in narrow.items()
        }
        rows = {
            "predicted, this book's NADs": ("predicted", {label[a]: p for a, (p, _, _) in narrow.items()}),
            "accuracy, campaign cells": ("accuracy", {label[a]: m for a, (_, m, _) in narrow.items()}),
        }
        return plots.prediction_maps(rows, GRID, title="Narrow networks: predicted, and the cells the campaign trained")

    def prediction_evidence(self, sets: dict) -> dict:
        """``{claim id: keywords of ch.claim}`` of the ``predict-*`` claims of the paper's networks
        (``predict-<prefix><arch>-auc`` and ``-rank``, LogReg's ``-flat``) for every prediction in
        ``sets``: the score's interval over the distinct cells, the networks behind the NADs,
        and for the narrow networks the bundle they are scored on."""
        out = {}
        for prefix, preds in sets.items():
            if prefix not in ("", "own-", "narrow-"):
                continue
            for a, (pred, meas, info) in preds.items():
                common = dict(
                    networks=info["networks"],
                    networks_own=info["networks"],
                    estimator=info.get("estimator", "secant (step 100)"),
                )
                if a == "logreg":
                    out[f"predict-{prefix}logreg-flat"] = dict(
                        interval=exact_value(
                            float(pred.max() / pred.min()),
                            "over the grid's cells (the NAD estimate's own noise not included)",
                        ),
                        **common,
                    )
                    continue
                s = prediction_agreement(pred, meas, GRID)
                if prefix == "narrow-":
                    steps = steps_per_run(campaigns.run_settings(self.cfg["campaign"], "fig1", a))
                    common.update(
                        cells=s["cells"],
                        steps=steps,
                        paper_steps=steps,
                        profile=f"campaign {self.cfg['campaign']}",
                        settings={"width": info["width"], "bundle": info["bundle"]},
                    )
                if a != "lenet":  # LeNet's published map has no learnable cell
                    out[f"predict-{prefix}{a}-auc"] = dict(interval=s["auc"], **common)
                out[f"predict-{prefix}{a}-rank"] = dict(interval=s["rank"], **common)
        return out

    def draw_atlas_predictions(self, predicted: dict, per_row: int = 7):
        """Every atlas architecture's predicted Fig. 1, ``per_row`` to a row."""
        labels = list(predicted)
        rows = {
            " " * n: ("predicted", {a: predicted[a] for a in labels[i : i + per_row]})
            for n, i in enumerate(range(0, len(labels), per_row))
        }
        return plots.prediction_maps(rows, GRID, title="Fig. 1 predicted from the NADs of every architecture")

    def atlas_cells(self, predicted: dict) -> dict:
        """``{label: rows}``: the cells the campaign trained each atlas architecture of
        ``predict_models`` on (seed means), with the predicted learnability of each; only the
        architectures of the atlas that the bundle has."""
        bundle = bundles.load(self.cfg["campaign"])
        frame = bundle.frame(ATLAS_FIG1.chapter, "atlas-fig1") if bundle is not None else None
        index = {f: n for n, f in enumerate(GRID.frequencies)}
        out = {}
        for label, slug in self.cfg["predict_models"].items():
            rows = bundled.select(frame, slug)
            if label not in predicted or rows.empty:
                continue
            cells = rows.groupby(["k1", "k2"], as_index=False)[["test_acc", "train_acc"]].mean()
            cells["predicted"] = [
                float(predicted[label].ravel()[index[(int(a), int(b))]]) for a, b in zip(cells["k1"], cells["k2"])
            ]
            out[label] = cells.assign(architecture=label, runs=len(rows))
        return out

    def draw_atlas_cells(self, cells: dict):
        """Measured accuracy against predicted learnability on each atlas architecture's cells
        (and the figure's data file); None, saying so, where the bundle has none."""
        if not cells:
            print(
                f"campaign {self.cfg['campaign']!r} has trained no atlas cells yet: run "
                f"`python scripts/run_campaign.py --campaign {self.cfg['campaign']} --figures atlas-fig1`"
            )
            return None
        fig = plots.prediction_scatter(
            cells, LEARNABLE, CHANCE, title="Atlas architectures: accuracy on cells chosen before training"
        )
        self.ch.figure_data("atlas_cells", pd.concat(cells.values(), ignore_index=True))
        return fig

    @staticmethod
    def describe_atlas_cells(cells: dict) -> str:
        """One sentence per atlas architecture, written from its trained cells: how many it
        learned (accuracy >= 0.9) and left at chance (<= 0.6), and how the predicted scores of
        the two groups compare."""
        lines = []
        for label, rows in cells.items():
            acc, pred = rows["test_acc"].to_numpy(float), rows["predicted"].to_numpy(float)
            learned, chance = acc >= LEARNABLE, acc <= CHANCE
            middle = ~learned & ~chance
            text = (
                f"* **{label}** learned {int(learned.sum())} of its {len(rows)} cells and left "
                f"{int(chance.sum())} at chance"
            )
            if learned.any() and chance.any():
                text += (
                    f"; predicted scores {pred[learned].min():.2g} to {pred[learned].max():.2g} on the cells it "
                    f"learned, {pred[chance].min():.2g} to {pred[chance].max():.2g} on those it did not"
                )
            elif learned.any():
                text += (
                    f", also cells predicted as low as {pred[learned].min():.2g} times an average direction: "
                    "the NADs order the directions; whether the network learns the disfavoured ones anyway, "
                    "they do not say"
                )
            if middle.any():
                where = ", ".join(
                    f"({a}, {b}) at {x:.2g}" for a, b, x in zip(rows["k1"][middle], rows["k2"][middle], pred[middle])
                )
                text += f"; {int(middle.sum())} cell(s) between 0.6 and 0.9, predicted {where}"
            lines.append(text + ".")
        return "\n".join(lines)

    def atlas_prediction_evidence(self, cells: dict, results: dict) -> dict:
        """``{claim id: keywords}`` of ``predict-atlas-<slug>-auc`` and ``-rank`` for each atlas
        architecture with trained cells."""
        out = {}
        name = self.cfg["campaign"]
        bundle = bundles.load(name)
        for label, rows in cells.items():
            slug = self.cfg["predict_models"][label]
            s = prediction_agreement(rows["predicted"], rows["test_acc"])
            steps = steps_per_run(campaigns.run_settings(name, "fig1", slug))
            n = int(results[label].meta["networks"])
            common = dict(
                networks=n,
                nad_networks=f"{n:,}",
                cells=s["cells"],
                campaign=name,
                steps=steps,
                paper_steps=steps,
                profile=f"campaign {name}",
                settings={"bundle": bundle.title()},
            )
            out[f"predict-atlas-{slug}-auc"] = dict(interval=s["auc"], **common)
            out[f"predict-atlas-{slug}-rank"] = dict(interval=s["rank"], **common)
        return out
