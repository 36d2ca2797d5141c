"""Chapter 3's own runs: the settings of each network here and in the paper, and the
live sweeps of Figs. 1, 2, 3 and 6 (cached jobs of :mod:`nadcore.chapters.linear_separability.runs`)
with the tables and summaries the page prints.

A part of :class:`nadcore.chapters.linear_separability.study.Study` (the live sweeps); its methods use the
study's settings (``self.ch``, ``self.cfg``, ``self.grid``, ``self.run``) and each other's."""

from __future__ import annotations

import numpy as np
import pandas as pd

from nadcore.chapters import campaigns
from nadcore.chapters.linear_separability import bundled
from nadcore.chapters.linear_separability import quantities as q
from nadcore.chapters.linear_separability import runs as sep
from nadcore.chapters.linear_separability.quantities import seed_mean
from nadcore.chapters.nad_atlas.runs import random_directions
from nadcore.data import fourier_basis_vector
from nadcore.train.budget import steps_per_run

#: the generator stream of footnote 4's random directions (added to the chapter's seed)
RANDOM_STREAM = 11


class Sweeps:
    """The live sweeps of chapter 3 (a mixin of ``Study``)."""

    # ------------------------------------------------------------------ settings
    def settings(self, arch: str, paper: bool = False, **over) -> dict:
        """D(v) and SGD settings of ``arch`` (its own entry, else "default") on this profile, or
        on the paper's (``paper=True``)."""
        c = self.ch.paper_cfg if paper else self.cfg
        s = c["train"].get(arch, c["train"]["default"])
        return {k: c[k] for k in ("sigma", "epsilon", "signal", "n_test")} | s | over

    def budget(self, arch: str, train_key: str | None = None) -> dict:
        """SGD steps of one run here and in the paper (a claim's ``steps`` and ``paper_steps``),
        with the training overrides of setting ``train_key`` (e.g. "fig2_train")."""
        here, there = (self.cfg[train_key], self.ch.paper_cfg[train_key]) if train_key else ({}, {})
        return dict(
            steps=steps_per_run(self.settings(arch, **here)),
            paper_steps=steps_per_run(self.settings(arch, paper=True, **there)),
        )

    def models(self, names) -> list[str]:
        """The list of architectures with "lenet" replaced by the chapter's model."""
        return list(dict.fromkeys(self.model if m == "lenet" else m for m in names))

    def training_table(self) -> pd.DataFrame:
        """Every trained network's settings, SGD steps per run and their fraction of the paper's."""
        archs = dict.fromkeys(self.models(self.cfg["fig1_models"]) + self.cfg["fig3_models"])
        table = pd.DataFrame.from_dict({a: self.settings(a) for a in archs}, orient="index")
        table["SGD steps"] = [steps_per_run(self.settings(a)) for a in table.index]
        table["of paper's"] = [f"{b['steps'] / b['paper_steps']:.2f}" for b in map(self.budget, table.index)]
        return table.drop(columns=["momentum", "weight_decay", "batch_size"])

    # ------------------------------------------------------------------ Fig. 1
    def fig1(self) -> dict:
        """Fig. 1: every Fig. 1 network on every cell of the profile's grid (mirrored cells
        under the transposition), the :func:`runs.grid_sweep` result per network."""
        return {
            a: sep.grid_sweep(
                a, self.grid1, self.settings(a), transpose_symmetric=self.cfg["fig1_transpose"], **self.run
            )
            for a in self.models(self.cfg["fig1_models"])
        }

    def published_fig1(self, archs) -> dict:
        """The authors' published maps of ``archs`` on the profile's grid."""
        return {
            a: q.published_fig1_map(a, self.grid1).reshape(self.grid1.shape)
            for a in archs
            if a in ("lenet", "logreg", "resnet18", "vgg11", "densenet121")
        }

    def theory_map(self) -> np.ndarray:
        """Theorem 1 on the profile's grid for LeNet's two 2x2 poolings (as average poolings)."""
        return q.pooling_bayes_map(self.grid1, epsilon=self.cfg["epsilon"], sigma=self.cfg["sigma"]).reshape(
            self.grid1.shape
        )

    def region_table(self, fig1: dict) -> pd.DataFrame:
        """Mean accuracy over the parts of the map LeNet's pooling shapes: ours (seed mean), the
        published maps on the same cells and Theorem 1's."""
        regions = q.fig1_regions(self.grid1)
        maps = (
            {a: seed_mean(r["test_acc"]) for a, r in fig1.items()}
            | {f"{a}, published": m for a, m in self.published_fig1(fig1).items()}
            | {"theory": self.theory_map()}
        )
        return pd.DataFrame(
            {name: [q.region_mean(m, mask) for mask in regions.values()] for name, m in maps.items()},
            index=list(regions),
        )

    def published_asymmetry(self) -> str:
        """Mean |A - A^T| of each published 16x16 map (trained cell by cell)."""
        return ", ".join(
            f"{a} {q.transpose_asymmetry(q.published_fig1_map(a, self.grid).reshape(self.grid.shape)):.3f}"
            for a in ("logreg", "lenet", "resnet18", "densenet121", "vgg11")
        )

    def convention_contrast(self, fig1: dict) -> pd.DataFrame:
        """The chapter's model on ``contrast_cells`` with the other data convention, beside Fig. 1's
        runs and the published map."""
        cells = self.cfg["contrast_cells"]
        other = "authors" if self.cfg["signal"] == "paper" else "paper"
        contrast = sep.fourier_sweep(self.model, cells, self.settings(self.model, signal=other), **self.run)
        cols = {f"signal={other!r}": seed_mean(contrast["test_acc"])}
        if self.model in fig1:
            cols[f"signal={self.cfg['signal']!r} (Fig. 1)"] = seed_mean(
                sep.select_cells(fig1[self.model], cells)["test_acc"]
            )
        if self.model in ("lenet", "logreg"):
            cols["published"] = q.published_fig1_map(self.model, cells)
        return pd.DataFrame(cols, index=[str(tuple(c)) for c in cells])

    def per_seed_fig1(self, fig1: dict) -> pd.DataFrame:
        """Per network and seed: the low and high bands, their gap, all cells, training accuracy."""
        n = len(self.ch.seeds)
        return pd.concat(
            {
                a: pd.DataFrame(
                    {
                        **q.band_means(r["test_acc"], self.grid1, self.low, self.high),
                        "all cells": r["test_acc"].reshape(n, -1).mean(1),
                        "train acc": r["train_acc"].reshape(n, -1).mean(1),
                    },
                    index=pd.Index(self.ch.seeds, name="seed"),
                )
                for a, r in fig1.items()
            },
            names=["model", "seed"],
        )

    # ------------------------------------------------------------------ Fig. 2
    def fig2(self) -> dict:
        """Fig. 2: iterations to a small training loss on ``fig2_cells`` (``fig2_sigma``,
        ``fig2_train``, ``fig2_seeds``), per network: the sweep, the censored iterations and the
        budget."""
        cells = self.fig2_cells()
        over = dict(sigma=self.cfg["fig2_sigma"], loss_threshold=self.cfg["fig2_threshold"], **self.cfg["fig2_train"])
        out = {}
        for arch in self.models(self.cfg["fig2_models"]):
            r = sep.fourier_sweep(arch, cells, self.settings(arch, **over), **(self.run | {"seeds": self.fig2_seeds}))
            steps = r["iter_loss"].shape[-1]
            out[arch] = dict(result=r, budget=steps, iterations=q.censored_iterations(r["iters_to_loss"], steps))
        return out

    def fig2_cells(self) -> list:
        c = self.cfg["fig2_cells"]
        return self.grid1.frequencies if c is None else [tuple(x) for x in c]

    def fig2_table(self, fig2: dict) -> pd.DataFrame:
        frame = q.fourier_table(
            {a: f["result"] for a, f in fig2.items()}, self.fig2_seeds, keys=("iters_to_loss", "test_acc", "train_acc")
        )
        frame["budget"] = frame["model"].map({a: f["budget"] for a, f in fig2.items()})
        return frame

    # ------------------------------------------------------------------ Fig. 3
    def fig3(self, fig1: dict, bundle=None) -> dict:
        """Fig. 3: the no-pooling networks on ``fig3_cells`` beside the pooled ones (Fig. 1's runs
        where the settings are the same). A no-pooling network's runs come from the campaign
        ``bundle`` where it holds all of them at this chapter's settings and seeds
        (:meth:`bundled_runs`), else they are trained here."""
        cells = [tuple(c) for c in self.cfg["fig3_cells"]]
        out = {}
        for arch in self.cfg["fig3_models"]:
            pooled = self.model if arch == "lenet_nopool" else arch.replace("_nopool", "")
            out[arch] = self.bundled_runs(bundle, "fig3", arch, cells) or sep.fourier_sweep(
                arch, cells, self.settings(arch), **self.run
            )
            same = (
                pooled in fig1
                and self.settings(pooled) == self.settings(arch)
                and set(cells) <= set(fig1[pooled]["frequencies"])
            )
            out[pooled] = (
                sep.select_cells(fig1[pooled], cells)
                if same
                else sep.fourier_sweep(pooled, cells, self.settings(arch), **self.run)
            )
        return out

    def bundled_runs(self, bundle, figure: str, arch: str, cells) -> dict | None:
        """``arch``'s runs of ``cells`` at every seed of this chapter from the bundle's
        ``figure``, shaped as :func:`runs.fourier_sweep` returns them (test and training
        accuracy, ``frequencies``, the ``bundle`` they came from), where the campaign trained
        every one of them with this chapter's settings (its speed-only options aside); None
        otherwise (another seed, profile or setting: the chapter then trains them itself)."""
        if bundle is None:
            return None
        mine = {k: v for k, v in self.settings(arch).items() if k not in campaigns.SPEED_ONLY}
        if mine | {"outputs": int(self.cfg["outputs"])} != campaigns.run_settings(bundle.name, figure, arch):
            return None
        rows = bundled.select(bundle.frame(campaigns.CHAPTER, figure), arch)
        have = {
            (int(a), int(b), int(s)): (t, r)
            for a, b, s, t, r in zip(
                rows.get("k1", []),
                rows.get("k2", []),
                rows.get("seed", []),
                rows.get("test_acc", []),
                rows.get("train_acc", []),
            )
        }
        want = [[(int(c[0]), int(c[1]), int(s)) for c in cells] for s in self.ch.seeds]
        if not all(k in have for ks in want for k in ks):
            return None
        return {
            "test_acc": np.array([[have[k][0] for k in ks] for ks in want], dtype=np.float64),
            "train_acc": np.array([[have[k][1] for k in ks] for ks in want], dtype=np.float64),
            "frequencies": [tuple(map(int, c)) for c in cells],
            "bundle": bundle,
        }

    def fig3_source(self, fig3: dict) -> dict:
        """A Fig. 3 claim's ``profile``: the campaign whose bundle holds the no-pooling LeNet's
        runs, where it came from one (the pooled LeNet is this build's)."""
        b = fig3["lenet_nopool"].get("bundle")
        return (
            {"profile": f"campaign {b.name}", "settings": {"bundle": b.title(), "pooled LeNet": "this build"}}
            if b is not None
            else {}
        )

    def per_seed_fig3(self, fig3: dict) -> pd.DataFrame:
        cells = [tuple(c) for c in self.cfg["fig3_cells"]]
        return pd.concat(
            {
                a: pd.DataFrame(
                    {
                        **q.band_means(r["test_acc"], cells, self.low, self.high),
                        "all cells": r["test_acc"].mean(1),
                        "train acc": r["train_acc"].mean(1),
                    },
                    index=pd.Index(self.ch.seeds, name="seed"),
                )
                for a, r in fig3.items()
            },
            names=["model", "seed"],
        )

    # ------------------------------------------------------------------ Fig. 6
    def fig6_estimates(self) -> dict:
        """The chapter model's NADs from chapter 2 (the same networks and seed): secant, gradient
        at one point and at ``gradient_points`` points, as ``{label: (NADResult, where)}``."""
        ch2 = self.ch.settings_of("02_nads")
        n = {m: ch2[f"{m}_networks"].get(self.model) or ch2[f"{m}_networks"]["lenet"] for m in ("secant", "gradient")}
        p = ch2["gradient_points"]
        self.nad_counts, self.points = n, p
        return {
            "secant": self.ch.nads(self.model, "secant", networks=n["secant"]),
            "gradient, 1 point": self.ch.nads(self.model, "gradient", networks=n["gradient"]),
            f"gradient, {p} points": self.ch.nads(self.model, "gradient", networks=n["gradient"], points=p),
        }

    def fig6(self, estimates: dict, sigma: float, estimators=("secant", "gradient")) -> dict:
        """Fig. 6 at noise ``sigma``: the chapter's model on D(u_i) for the NADs of
        ``estimators`` (secant; several-point gradient), ``{estimator: (indices, sweep result,
        NADResult)}``. The secant NADs alone train on ``fig6_indices``; with the gradient NADs,
        both train on ``fig6_gradient_indices`` (those in ``fig6_indices``), compared index by
        index."""
        sets = {"secant": estimates["secant"][0], "gradient": estimates[f"gradient, {self.points} points"][0]}
        sets = {e: r for e, r in sets.items() if e in estimators}
        top = min(r.nads.shape[0] for r in sets.values())
        ii = np.array([i for i in self.cfg["fig6_indices"] if i < top])
        if "gradient" in sets:
            ii = np.array([i for i in self.cfg["fig6_gradient_indices"] if i in ii])
        out = {}
        for est, r in sets.items():
            tag = f"nad-{est}-{r.meta['networks']}-{r.meta.get('points', 1)}"
            res = sep.directions_sweep(
                self.model,
                r.nads[ii].reshape(len(ii), *r.input_shape),
                ii.tolist(),
                self.settings(self.model, sigma=sigma),
                tag=tag,
                **self.run,
            )
            out[est] = (ii, res, r)
        return out

    def fig6_table(self, runs: dict, sigma: float) -> pd.DataFrame:
        return pd.concat(
            [
                q.nad_index_table(self.model, est, ii, res, self.ch.seeds, r.eigenvalues)
                for est, (ii, res, r) in runs.items()
            ],
            ignore_index=True,
        ).assign(sigma=sigma)

    def fig6_summary(self, runs: dict, published: dict) -> pd.DataFrame:
        """Per estimator and seed: accuracy on NADs 0-9 and past 700, Spearman(eigenvalue,
        accuracy), and the mean distance to the published LeNet curve at the same indices."""
        pub = published["lenet"]["test_acc"]
        return pd.concat(
            {
                e: pd.DataFrame(
                    [q.nad_index_summary(ii, a, r.eigenvalues) for a in res["test_acc"]],
                    index=pd.Index(self.ch.seeds, name="seed"),
                ).assign(vs_published=np.abs(res["test_acc"] - pub.reindex(ii).to_numpy()).mean(1))
                for e, (ii, res, r) in runs.items()
            },
            names=["estimator", "seed"],
        )

    def fig6_random(self, estimates: dict, sigma: float) -> dict:
        """Footnote 4: the chapter's model on D(v) for ``fig6_random`` random unit directions v
        (uniform on the sphere of the input space, drawn from the chapter's seed), at noise
        ``sigma``, with the chapter's seeds: the sweep result, (seeds, directions) arrays."""
        shape = estimates["secant"][0].input_shape
        v = random_directions(self.cfg["fig6_random"], int(np.prod(shape)), self.ch.seed + RANDOM_STREAM)
        return sep.directions_sweep(
            self.model,
            v.reshape(len(v), *shape).astype(np.float32),
            list(range(len(v))),
            self.settings(self.model, sigma=sigma),
            tag=f"random-{self.ch.seed}",
            **self.run,
        )

    def fig6_on_published(self, estimates: dict, sigma: float) -> dict:
        """Fig. 6 of the chapter's model trained on the authors' published NADs of it (10,000
        networks) at ``sigma``: the indices, seeds and runs of :meth:`fig6` on the book's own
        secant NADs, so that the two differ in the NAD estimate alone."""
        return self.fig6({**estimates, "secant": self.ch.nads(self.model, "published")}, sigma, estimators=["secant"])

    def convergence(self, estimates: dict) -> tuple[pd.DataFrame, dict]:
        """Split-half overlaps of each estimate at the networks used, and which reached
        ``converged_overlap`` at ``converged_k``."""
        table = q.split_half_table({k: r for k, (r, _) in estimates.items()})
        ck = f"k={self.cfg['converged_k']}"
        return table, {k: bool(table.loc[k, ck] >= self.cfg["converged_overlap"]) for k in table.index}

    def fig6_directions(self) -> dict:
        """Six Fourier directions in pixel space, for the chapter's first figure."""
        return {
            f"$k=({a},{b})$": fourier_basis_vector(a, b)
            for a, b in [(0, 2), (2, 0), (4, 4), (0, 14), (-16, 6), (-16, -16)]
        }
