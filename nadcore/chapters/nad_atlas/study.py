"""Chapter 7's experiments on one chapter run's settings: the page calls one method per paper
quantity (``study.atlas()``, ``study.alias_fractions(...)``) and one evidence method per claim,
which returns the keywords of ``ch.claim`` (the interval, the values the claim's placeholders
name, the networks behind the estimate).

:class:`Study` holds what every step of the chapter shares (the architectures with the reader's
model, their families, ``k``, the seeds, the executor, the cache, the device) so that the page
shows the science and not the plumbing. The NADs and the runs are those of
:mod:`nadcore.chapters.nad_atlas.runs` (cached jobs), the figures those of
:mod:`nadcore.chapters.nad_atlas.figures`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from nadcore.book import bundles, profiles
from nadcore.book.evidence import accuracy_interval, exact_value, fisher_interval, jackknife_interval
from nadcore.book.explorer import default_indices, nad_explorer
from nadcore.chapters import campaigns
from nadcore.chapters.linear_separability import bundled
from nadcore.chapters.linear_separability.quantities import rank_correlations
from nadcore.chapters.linear_separability.runs import steps_per_run
from nadcore.chapters.nad_atlas import figures as plots
from nadcore.chapters.nad_atlas import runs as atlas
from nadcore.chapters.nad_atlas.claims import USEFUL_AUC, USEFUL_RANK
from nadcore.chapters.nad_atlas.prediction import CHANCE, LEARNABLE, prediction_agreement
from nadcore.data.directions import fourier_grid
from nadcore.nads import GROUPS, subspace_overlap
from nadcore.nads.predict import predicted_fig1_map
from nadcore.nads.published import published_fig1_map
from nadcore.nets import width_spec
from nadcore.runtime import threads
from nadcore.theory.patches import alias_energy_fraction, token_alias_mask

__all__ = ["Study", "PATCH_CLAIMS"]

#: the random control directions come from their own stream: the chapter's seed plus this offset,
#: apart from the seeds of the training runs (seed, seed + 1, ...) and of the NAD estimates
RANDOM_DIRECTIONS_STREAM = 7
#: the architectures whose patch-embedding prediction is a claim, and their claims' ids
PATCH_CLAIMS = {"ViT/4": "atlas-patch-vit4", "ViT/8": "atlas-patch-vit8", "MLP-Mixer/4": "atlas-patch-mixer"}
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


class Study:
    """Chapter 7 on the settings of ``ch`` (a :class:`nadcore.book.Chapter`), with the reader's
    ``model`` (a spec, or None) added to the atlas as "your model"."""

    def __init__(self, ch, model: str | None = None):
        self.ch, self.cfg = ch, ch.cfg
        cfg = ch.cfg
        self.archs = dict(cfg["architectures"], **({"your model": model} if model else {}))
        self.families = dict(cfg["families"], **({"your model": "yours"} if model else {}))
        self.k = cfg["k"]

    # ------------------------------------------------------------------ the atlas
    def atlas(self) -> dict:
        """``{label: NADResult}``: the exact-gradient NADs of every architecture, chapter 2's
        (shared, cached) for the paper's five (``from_chapter2``), the others from ``networks``
        random networks each."""
        ch, cfg = self.ch, self.cfg
        with threads(1, blas=True):  # chapter 2's estimates of the paper's five, shared (cached)
            shared = {a: ch.nads(s, "gradient")[0] for a, s in self.archs.items() if s in cfg["from_chapter2"]}
        own = atlas.atlas_nads(
            {a: s for a, s in self.archs.items() if a not in shared},
            cfg["networks"],
            ch.seed,
            cache=ch.cache,
            device=ch.device,
        )
        return {a: shared.get(a, own.get(a)) for a in self.archs}

    def architecture_table(self, results: dict) -> pd.DataFrame:
        """What each estimate cost and how settled it is (:func:`runs.architecture_table`)."""
        return atlas.architecture_table(self.archs, self.families, results, self.k)

    def secant_nads(self) -> dict:
        """The authors' secant NADs (step 100) of the architectures in ``secant_networks``."""
        ch, cfg = self.ch, self.cfg
        return atlas.atlas_nads(
            {a: self.archs[a] for a in cfg["secant_networks"]},
            {"default": 0, **cfg["secant_networks"]},
            ch.seed,
            method="secant",
            cache=ch.cache,
            device=ch.device,
        )

    def secant_agreement(self, secant: dict, results: dict) -> pd.DataFrame:
        """Per architecture with secant NADs: its networks, the top-``k`` overlap of its secant
        NADs with its gradient NADs, and the secant estimate's split-half overlap."""
        k = self.k
        return pd.DataFrame(
            {
                a: {
                    "networks": r.meta["networks"],
                    f"overlap with gradient NADs, k={k}": subspace_overlap(r.nads, results[a].nads, k),
                    f"secant split-half k={k}": atlas.split_half_overlap(r, k),
                }
                for a, r in secant.items()
            }
        ).T

    def draw_gallery(self, results: dict):
        """The first three NADs of every architecture, in pixels and as Fourier energy (and the
        figure's data file)."""
        fig = plots.gallery(results, (0, 1, 2), title="First NADs (exact gradient): pixels and Fourier energy")
        self.ch.figure_data(
            "gallery",
            pd.concat(
                [
                    pd.DataFrame(
                        {"architecture": a, "nad_index": i, "pixel": np.arange(r.nads.shape[1]), "value": r.nads[i]}
                    )
                    for a, r in results.items()
                    for i in (0, 1, 2)
                ],
                ignore_index=True,
            ),
        )
        return fig

    def explore_nads(self, results: dict):
        """Chapter 2's NAD explorer over the atlas."""
        return nad_explorer(results, indices=default_indices(1024, n=24, dense=8))

    # ------------------------------------------------------------------ fingerprints
    def fingerprint_distances(self, results: dict) -> pd.DataFrame:
        """Every pair's top-``k`` subspace overlap and distance (:func:`runs.fingerprint_distances`)."""
        return atlas.fingerprint_distances(results, self.k)

    def draw_fingerprints(self, pairs: pd.DataFrame, M: np.ndarray, tree, results: dict):
        """The distance heatmap beside its average-linkage tree (and the figure's data file)."""
        fig = plots.fingerprint_map(M, list(results), tree, self.families, self.k)
        self.ch.figure_data(
            "fingerprints", pairs.assign(family_a=pairs["a"].map(self.families), family_b=pairs["b"].map(self.families))
        )
        return fig

    def noise_floor(self, results: dict) -> dict:
        """Each architecture's split-half distance at ``k`` (:func:`runs.noise_floor`)."""
        return atlas.noise_floor(results, self.k)

    def describe_fingerprints(self, M: np.ndarray, results: dict, floor: dict) -> str:
        """The sentences written from the distances (:func:`runs.describe_fingerprints`)."""
        return atlas.describe_fingerprints(M, list(results), self.families, floor, self.cfg["clusters"])

    def signature(self, M: np.ndarray, results: dict, floor: dict) -> dict:
        """Claim ``atlas-signature``: the fraction of architectures farther from every other one
        than their own two half estimates are from each other."""
        distinct, told = atlas.distinct_architectures(M, results, floor)
        return dict(
            interval=exact_value(len(distinct) / max(len(told), 1), "count over architectures"),
            n_arch=len(told),
            networks=min(r.meta["networks"] for r in results.values()),
        )

    # ------------------------------------------------------------------ patch embeddings
    def alias_fractions(self, results: dict) -> pd.DataFrame:
        """The top-``k`` NAD energy on the alias sets of patch sizes 4 and 8, with jackknife
        intervals (:func:`runs.alias_fractions`)."""
        return atlas.alias_fractions(results, (4, 8), self.k)

    def draw_alias(self, alias: pd.DataFrame):
        """The alias fractions as bars, with the isotropic share (and the figure's data file)."""
        fig = plots.alias_bars(
            alias, title=f"Top-{self.k} NAD energy on the frequencies folded onto the token grid's zero"
        )
        self.ch.figure_data("patch_alias", alias)
        return fig

    def patch_alias_evidence(self, alias: pd.DataFrame, results: dict) -> dict:
        """Claims ``atlas-patch-*``: ``{claim id: keywords}`` for every architecture of
        ``patch_models`` with a claim (:data:`PATCH_CLAIMS`) in the atlas, in that order: its
        alias fraction with its jackknife interval."""
        out = {}
        for arch, p in self.cfg["patch_models"].items():
            if arch in PATCH_CLAIMS and arch in results:
                row = alias[(alias["architecture"] == arch) & (alias["patch"] == p)].iloc[0]
                out[PATCH_CLAIMS[arch]] = dict(
                    interval=jackknife_interval(row["fraction"], row["low"], row["high"], GROUPS, (0.0, 1.0)),
                    alias_count=int(token_alias_mask(32, p).sum()),
                    networks=results[arch].meta["networks"],
                )
        return out

    def patch_size_moves(self, results: dict) -> dict:
        """Claim ``atlas-patch-size-moves``: ViT/8 minus ViT/4 top-``k`` energy fraction on the
        frequencies that p = 8 folds onto zero and p = 4 does not, with the two jackknife
        half-widths added in quadrature (independent networks)."""
        only8 = token_alias_mask(32, 8) & ~token_alias_mask(32, 4)
        diff = [
            atlas.jackknife_statistic(results[a], lambda U: alias_energy_fraction(U, only8), self.k)
            for a in ("ViT/8", "ViT/4")
        ]
        # independent networks: errors add in quadrature
        half = np.hypot(diff[0][0] - diff[0][1], diff[1][0] - diff[1][1])
        d = diff[0][0] - diff[1][0]
        return dict(
            interval=jackknife_interval(d, d - half, d + half, GROUPS, (-1.0, 1.0)),
            networks=results["ViT/4"].meta["networks"],
        )

    # ------------------------------------------------------------------ Fig. 6 on modern architectures
    def index_accuracy(self, results: dict) -> dict:
        """``{label: tidy frame}``: every model of ``index_models`` trained on D(u_i) along its
        NAD indices ``index_indices`` and on ``index_random`` random directions (the control),
        every seed (:func:`runs.index_sweep`, :func:`runs.index_table`)."""
        ch, cfg = self.ch, self.cfg
        data = {key: cfg[key] for key in ("n_train", "n_test", "sigma", "epsilon", "signal")}
        settings = {**data, **cfg["index_train"]}
        idx = np.array(cfg["index_indices"])
        frames = {}
        for arch in cfg["index_models"]:
            r = results[arch]
            rnd = atlas.random_directions(cfg["index_random"], r.nads.shape[1], ch.seed + RANDOM_DIRECTIONS_STREAM)
            sweep = atlas.index_sweep(
                self.archs[arch],
                r,
                idx,
                rnd,
                settings,
                seeds=ch.seeds,
                cache=ch.cache,
                executor=ch.executor(),
                chunk=cfg["chunk"],
                device=str(ch.device),
            )
            frames[arch] = atlas.index_table(arch, idx, sweep, ch.seeds, r.eigenvalues)
        return frames

    def draw_index(self, frames: dict):
        """Accuracy along the NAD index, random directions as the band (and the figure's data file)."""
        fig = plots.index_curves(
            frames, title="Test accuracy on D(v) along the NAD index; random directions as control"
        )
        self.ch.figure_data("index_accuracy", pd.concat(frames.values(), ignore_index=True))
        return fig

    def nad_accuracy(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Test accuracy on the NADs: one row per seed, one column per NAD index."""
        return frame[frame["direction"] == "nad"].pivot(index="seed", columns="index", values="test_acc")

    def eigenvalue_spearman(self, frame: pd.DataFrame, result) -> np.ndarray:
        """Per seed: the Spearman correlation of the eigenvalue and the accuracy over the indices."""
        nad = self.nad_accuracy(frame)
        return rank_correlations(nad.to_numpy(), result.eigenvalues[nad.columns.to_numpy()])

    def first_nad_accuracy(self, frame: pd.DataFrame) -> pd.Series:
        """Per seed: the mean accuracy on the first NADs (indices below ``first``)."""
        nad = self.nad_accuracy(frame)
        return nad[[i for i in nad.columns if i < self.cfg["first"]]].mean(axis=1)

    def random_accuracy(self, frame: pd.DataFrame) -> pd.Series:
        """Per seed: the mean accuracy on the random directions (the control)."""
        return frame[frame["direction"] == "random"].groupby("seed")["test_acc"].mean()

    def describe_index(self, arch: str, frames: dict, results: dict) -> str:
        """One line per model: the Spearman correlation, first-NAD and random accuracy per seed."""
        frame = frames[arch]
        rho = self.eigenvalue_spearman(frame, results[arch])
        first, random_acc = self.first_nad_accuracy(frame), self.random_accuracy(frame)
        return (
            f"{arch}: Spearman per seed {np.round(rho, 3).tolist()}; first-NAD accuracy "
            f"{np.round(first.to_numpy(), 3).tolist()}, random {np.round(random_acc.to_numpy(), 3).tolist()}"
        )

    def _index_fill(self) -> dict:
        cfg = self.cfg
        return dict(n_idx=len(cfg["index_indices"]), n_seeds=len(self.ch.seeds), n_random=cfg["index_random"])

    def index_ranks(self, arch: str, frames: dict, results: dict) -> dict:
        """Claim ``atlas-index-*-ranks``: the per-seed Spearman correlations (Fisher interval)."""
        rho = self.eigenvalue_spearman(frames[arch], results[arch])
        return dict(interval=fisher_interval(rho), networks=results[arch].meta["networks"], **self._index_fill())

    def index_vs_random(self, arch: str, frames: dict) -> dict:
        """Claim ``atlas-index-*-vs-random``: first-NAD minus random-direction accuracy per seed."""
        frame = frames[arch]
        gap = (self.first_nad_accuracy(frame) - self.random_accuracy(frame)).to_numpy()
        return dict(interval=accuracy_interval(gap, self.cfg["n_test"], difference=True), **self._index_fill())

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
        secant = profiles.resolve("02_nads", ch.profile)["secant_networks"]
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
        counts = profiles.resolve("02_nads", ch.profile)["gradient_networks"]
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
        frame = bundle.frame(campaigns.ATLAS_CHAPTER, "atlas-fig1") if bundle is not None else None
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
            text = (
                f"* **{label}** learned {int(learned.sum())} of its {len(rows)} cells and left "
                f"{int(chance.sum())} at chance"
            )
            if learned.any() and chance.any():
                text += (
                    f"; predicted scores {pred[learned].min():.2g} to {pred[learned].max():.2g} on the cells it "
                    f"learned, {pred[chance].min():.2g} to {pred[chance].max():.2g} on those it did not"
                )
            elif learned.all():
                text += (
                    f": every cell, also those predicted as low as {pred.min():.2g} times an average "
                    "direction. The NADs order the directions; whether the network learns the "
                    "disfavoured ones anyway, they do not say"
                )
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
            common = dict(
                networks=int(results[label].meta["networks"]),
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
