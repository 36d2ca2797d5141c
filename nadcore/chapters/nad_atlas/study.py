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

from nadcore.book.evidence import accuracy_interval, exact_value, fisher_interval, jackknife_interval
from nadcore.book.explorer import default_indices, nad_explorer
from nadcore.chapters.linear_separability.quantities import rank_correlations
from nadcore.chapters.nad_atlas import figures as plots
from nadcore.chapters.nad_atlas import runs as atlas
from nadcore.chapters.nad_atlas.predicted_maps import PredictedMaps
from nadcore.nads import GROUPS, jackknife_statistic, subspace_overlap
from nadcore.runtime import threads
from nadcore.theory.patches import alias_energy_fraction, token_alias_mask

__all__ = ["Study", "PATCH_CLAIMS"]

#: the random control directions come from their own stream: the chapter's seed plus this offset,
#: apart from the seeds of the training runs (seed, seed + 1, ...) and of the NAD estimates
RANDOM_DIRECTIONS_STREAM = 7
#: the architectures whose patch-embedding prediction is a claim, and their claims' ids
PATCH_CLAIMS = {"ViT/4": "atlas-patch-vit4", "ViT/8": "atlas-patch-vit8", "MLP-Mixer/4": "atlas-patch-mixer"}


class Study(PredictedMaps):
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
            jackknife_statistic(results[a], lambda U: alias_energy_fraction(U, only8), self.k)
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
