"""Chapter 3's experiments on one chapter run's settings: the page calls one method per paper
quantity (``study.fig1()``, ``study.fig6(...)``) and one evidence method per claim, which
returns the keywords of ``ch.claim`` (the measured values or interval, the values the claim's
placeholders name, the budget, the preconditions).

:class:`Study` holds what every run of the chapter shares (the settings of each network on the
profile and on the paper's, the seeds, the executor, the cache, the device) so that the page
shows the science and not the plumbing. The runs are those of
:mod:`nadcore.chapters.linear_separability.runs` (cached jobs), the summaries those of
:mod:`nadcore.chapters.linear_separability.quantities`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from nadcore import runtime
from nadcore.book import bundles
from nadcore.book.evidence import MUCH, accuracy_interval, difference_interval, exact_value, fisher_interval
from nadcore.book.evidence import runs_interval as evidence_runs
from nadcore.book.explorer import direction_explorer
from nadcore.chapters import campaigns
from nadcore.chapters.linear_separability import bundled
from nadcore.chapters.linear_separability import figures as plots
from nadcore.chapters.linear_separability import quantities as q
from nadcore.chapters.linear_separability import runs as sep
from nadcore.chapters.linear_separability.claims import BIG, width_suffix
from nadcore.data import fourier_basis_vector, fourier_grid
from nadcore.nads.published import PUBLISHED_NETWORKS
from nadcore.nets import spec_width

__all__ = ["Study", "seed_mean", "BLIND"]

#: a Fig. 3 cell is one where the pooled network is blind when its published Fig. 1 accuracy is
#: below this (halfway from chance to LeNet's typical 0.6-0.8), else one where it sees
BLIND = 0.55
#: the recipe check's two recipes (names in the chapter's ``recipes``): the campaign's and the
#: alternative it is measured against
RECIPES_COMPARED = ("authors", "follow-up")


def blind_and_seen(cells, published) -> tuple[np.ndarray, dict]:
    """Which ``cells`` ((k1, k2, ...) tuples) a pooled network is blind on in its published map
    (accuracy below :data:`BLIND`), and the two lists as text (``cells_blind``, ``cells_seen``)."""
    blind = np.asarray(published) < BLIND
    text = {
        f"cells_{side}": ", ".join(str((int(c[0]), int(c[1]))) for c, b in zip(cells, blind) if b == (side == "blind"))
        for side in ("blind", "seen")
    }
    return blind, text


def seed_mean(a) -> np.ndarray:
    """The mean over the first (seeds) axis."""
    return np.asarray(a, dtype=float).mean(0)


class Study:
    """Chapter 3 on the settings of ``ch`` (a :class:`nadcore.book.Chapter`) with the chapter's
    ``model`` in LeNet's place."""

    def __init__(self, ch, model: str = "lenet"):
        self.ch, self.cfg, self.model = ch, ch.cfg, model
        cfg = ch.cfg
        self.grid = fourier_grid(32, cfg["grid"])
        self.grid1 = self.grid.subgrid(cfg["fig1_every"]) if cfg["fig1_every"] > 1 else self.grid
        self.low, self.high = cfg["low"], cfg["high"]
        self.convention = f"{cfg['signal']}' D(v)".replace("paper'", "paper's") + f", {cfg['outputs']} output(s)"
        self.run = dict(
            seeds=ch.seeds,
            chunk=cfg["chunk"],
            balance=cfg["workers"],
            executor=ch.executor(),
            cache=ch.cache,
            device=str(ch.device),
            outputs=cfg["outputs"],
        )

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
            steps=sep.steps_per_run(self.settings(arch, **here)),
            paper_steps=sep.steps_per_run(self.settings(arch, paper=True, **there)),
        )

    def models(self, names) -> list[str]:
        """The list of architectures with "lenet" replaced by the chapter's model."""
        return list(dict.fromkeys(self.model if m == "lenet" else m for m in names))

    def training_table(self) -> pd.DataFrame:
        """Every trained network's settings, SGD steps per run and their fraction of the paper's."""
        archs = dict.fromkeys(self.models(self.cfg["fig1_models"]) + self.cfg["fig3_models"])
        table = pd.DataFrame.from_dict({a: self.settings(a) for a in archs}, orient="index")
        table["SGD steps"] = [sep.steps_per_run(self.settings(a)) for a in table.index]
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

    # ------------------------------------------------------------------ Fig. 1 evidence
    def fig1_gap(self, fig1: dict) -> dict:
        per = self.per_seed_fig1(fig1)
        pub = q.published_fig1_map("lenet", self.grid1)[None]
        return dict(
            values=per.loc["lenet", "gap"],
            published_gap=float(q.band_means(pub, self.grid1, self.low, self.high)["gap"][0]),
            cells=len(self.grid1.frequencies),
            **self.budget(self.model),
        )

    def fig1_distance(self, fig1: dict) -> dict:
        pub = self.published_fig1(["lenet"])["lenet"]
        return dict(
            values=np.abs(fig1["lenet"]["test_acc"] - pub).mean((1, 2)),
            cells=len(self.grid1.frequencies),
            **self.budget(self.model),
        )

    def fig1_low_beats_high(self, fig1: dict) -> dict:
        return dict(
            values=self.per_seed_fig1(fig1).loc[self.model, "gap"],
            cells=len(self.grid1.frequencies),
            **self.budget(self.model),
        )

    def logreg_flat(self, fig1: dict) -> dict:
        per = self.per_seed_fig1(fig1)
        pub = q.published_fig1_map("logreg", self.grid1)[None]
        lr_acc = per.loc["logreg", "all cells"]
        return dict(
            values=per.loc["logreg", "gap"].abs(),
            cells=len(self.grid1.frequencies),
            published_logreg_gap=abs(float(q.band_means(pub, self.grid1, self.low, self.high)["gap"][0])),
            preconditions={
                "logistic regression learned: mean test accuracy >= 0.6 on every seed": bool((lr_acc >= 0.6).all())
            },
            **self.budget("logreg"),
        )

    def logreg_level(self, fig1: dict) -> dict:
        acc = fig1["logreg"]["test_acc"].reshape(len(self.ch.seeds), -1)
        worst = int(np.argmin(acc.mean(0)))
        return dict(
            interval=accuracy_interval(acc[:, worst], self.cfg["n_test"]), cells=acc.shape[1], **self.budget("logreg")
        )

    def logreg_train(self, fig1: dict) -> dict:
        return dict(values=self.per_seed_fig1(fig1).loc["logreg", "train acc"], **self.budget("logreg"))

    # ------------------------------------------------------------------ Fig. 2
    def fig2(self) -> dict:
        """Fig. 2: iterations to a small training loss on ``fig2_cells`` (``fig2_sigma``,
        ``fig2_train``), per network: the sweep, the censored iterations and the budget."""
        cells = self.fig2_cells()
        over = dict(sigma=self.cfg["fig2_sigma"], loss_threshold=self.cfg["fig2_threshold"], **self.cfg["fig2_train"])
        out = {}
        for arch in self.models(self.cfg["fig2_models"]):
            r = sep.fourier_sweep(arch, cells, self.settings(arch, **over), **self.run)
            steps = r["iter_loss"].shape[-1]
            out[arch] = dict(result=r, budget=steps, iterations=q.censored_iterations(r["iters_to_loss"], steps))
        return out

    def fig2_cells(self) -> list:
        c = self.cfg["fig2_cells"]
        return self.grid1.frequencies if c is None else [tuple(x) for x in c]

    def fig2_table(self, fig2: dict) -> pd.DataFrame:
        frame = q.fourier_table(
            {a: f["result"] for a, f in fig2.items()}, self.ch.seeds, keys=("iters_to_loss", "test_acc", "train_acc")
        )
        frame["budget"] = frame["model"].map({a: f["budget"] for a, f in fig2.items()})
        return frame

    def fig2_speed(self, fig2: dict) -> dict:
        cells = self.fig2_cells()
        f = fig2[self.model]
        b = q.band_means(f["iterations"], cells, self.low, self.high)
        lows = q.cell_radius(cells) <= self.low
        reached = f["result"]["iters_to_loss"][:, lows] >= 0
        low_mean = float(np.nanmean(b["low"]))
        return dict(
            values=b["high"] / b["low"],
            **self.budget(self.model, "fig2_train"),
            preconditions={
                "some low-frequency run reached the loss threshold": bool(reached.any()),
                "the budget can show the criterion's ratio (budget >= ratio x low-frequency iterations)": bool(
                    f["budget"] >= MUCH * low_mean
                ),
            },
            settings={"fig2_threshold": self.cfg["fig2_threshold"], "cells": len(cells)},
        )

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

    def fig3_improves(self, fig3: dict, blind: bool) -> dict:
        """The no-pooling LeNet minus the pooled one over the Fig. 3 cells where the pooled LeNet
        is at chance (``blind``) or above it in the published map (:data:`BLIND`)."""
        cells = [tuple(c) for c in self.cfg["fig3_cells"]]
        where, text = blind_and_seen(cells, q.published_fig1_map("lenet", cells))
        sel = where == blind
        diff = (fig3["lenet_nopool"]["test_acc"] - fig3[self.model]["test_acc"])[:, sel].mean(1)
        key = "cells_blind" if blind else "cells_seen"
        return {
            "values": diff,
            key: text[key],
            **self.budget("lenet_nopool"),
            **self.fig3_source(fig3),
            "preconditions": {f"some Fig. 3 cell is {'blind' if blind else 'seen'}": bool(sel.any())},
        }

    def fig3_uniform(self, fig3: dict) -> dict:
        nopool = self.per_seed_fig3(fig3).loc["lenet_nopool"]
        source = self.fig3_source(fig3)
        return dict(
            values=nopool["gap"].abs(),
            **self.budget("lenet_nopool"),
            profile=source.get("profile"),
            preconditions={
                "lenet_nopool learned: mean test accuracy >= 0.6 on every seed": bool(
                    (nopool["all cells"] >= 0.6).all()
                )
            },
            settings={"cells": len(self.cfg["fig3_cells"]), **source.get("settings", {})},
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

    def fig6_evidence(self, runs: dict, published: dict, sigma: float) -> dict:
        """The keywords of the Fig. 6 claims of the chapter's model at ``sigma``, by claim."""
        ii, res, r = runs["secant"]
        s = self.fig6_summary(runs, published).loc["secant"]
        pub = published["lenet"]
        sel = pub.reindex(ii)
        fill = dict(
            n_indices=len(ii),
            networks=self.nad_counts["secant"],
            **self.budget(self.model),
            settings={"indices": ii.tolist(), "sigma": sigma},
        )
        crossing = int(pub.index[(pub["test_acc"] < 0.75).to_numpy()][0])
        near = int(ii[np.abs(ii - crossing).argmin()])
        lenet = self.model == "lenet"
        first, beyond = q.first_and_beyond(ii)
        return {
            "monotone": dict(
                interval=fisher_interval(s["spearman"]),
                **fill,
                published_spearman=float(q.rank_correlations(sel["test_acc"], sel["eigenvalue"])[0]) if lenet else None,
            ),
            "first-vs-beyond": dict(
                values=s["first_mean"] - s["beyond_mean"],
                **fill,
                published_first_beyond=float(sel["test_acc"][first].mean() - sel["test_acc"][beyond].mean()),
            ),
            "crossing": dict(
                interval=accuracy_interval(res["test_acc"][:, ii == near].ravel(), self.cfg["n_test"]),
                crossing=near,
                published_crossing=float(pub["test_acc"].loc[near]),
                **fill,
            ),
            "matches-published": dict(values=s["vs_published"], **fill),
        }

    def fig6_on_published(self, estimates: dict, sigma: float) -> dict:
        """Fig. 6 of the chapter's model trained on the authors' published NADs of it (10,000
        networks) at ``sigma``: the indices, seeds and runs of :meth:`fig6` on the book's own
        secant NADs, so that the two differ in the NAD estimate alone."""
        return self.fig6({**estimates, "secant": self.ch.nads(self.model, "published")}, sigma, estimators=["secant"])

    def published_nads_evidence(self, runs: dict, published: dict, sigma: float) -> dict:
        """``fig6-published-nads``: the mean distance to the published curve, per seed, of the runs
        on the authors' NADs (:meth:`fig6_on_published`)."""
        return {**self.fig6_evidence(runs, published, sigma)["matches-published"], "networks": PUBLISHED_NETWORKS}

    def fig6_gap_explained(self) -> str:
        """Whether the NAD estimate or sigma explains LeNet's distance to its published Fig. 6
        curve, in words chosen by the verdicts of ``fig6-published-nads`` (the authors' NADs, the
        paper's sigma), ``fig6-matches-published`` (the book's NADs, the paper's sigma) and
        ``fig6-matches-published-calibrated`` (the book's NADs, the fitted sigma)."""
        got = {c.id: c for c in self.ch.claims}
        ids = ("fig6-published-nads", "fig6-matches-published", "fig6-matches-published-calibrated")
        if not all(i in got for i in ids):
            return "(the three Fig. 6 distances to the published LeNet curve were not all measured)"
        pub, own, cal = (got[i] for i in ids)
        sigma, fitted = self.cfg["sigma"], self.cfg["fig6_sigma"]
        said = (
            f"Mean distance to the published LeNet curve: {pub.measured()} on the authors' NADs at sigma = "
            f"{sigma:g} ({pub.verdict}), {own.measured()} on the book's NADs at sigma = {sigma:g} "
            f"({own.verdict}), {cal.measured()} on the book's NADs at sigma = {fitted:g} ({cal.verdict})."
        )
        if pub.verdict == "reproduced" and own.verdict != "reproduced":
            return said + (
                " The authors' NADs at the paper's sigma meet the curve and the book's do not: the "
                "NAD estimate explains the gap, and the paper's sigma needs no change."
            )
        if pub.verdict == "not reproduced":
            return said + (
                " Even the authors' NADs at the paper's sigma miss the curve: the NAD estimate does "
                "not explain the gap; a training setting (sigma among them) does."
            )
        if pub.verdict == "reproduced":
            return said + " Both NAD estimates meet the curve at the paper's sigma: there is no gap to explain."
        return said + " The run on the authors' NADs is undecided, so this build cannot tell which explains the gap."

    def sigma_fit(self, at_paper: dict, fitted: dict, published: dict) -> dict:
        """|acc(sigma) - published| - |acc(fig6_sigma) - published|, mean over the shared secant
        indices, paired per seed."""
        (ia, ra, _), (ib, rb, _) = at_paper["secant"], fitted["secant"]
        idx = np.intersect1d(ia, ib)
        pub = published["lenet"]["test_acc"].reindex(idx).to_numpy()
        a = ra["test_acc"][:, np.searchsorted(ia, idx)]
        b = rb["test_acc"][:, np.searchsorted(ib, idx)]
        return dict(
            values=(np.abs(a - pub) - np.abs(b - pub)).mean(1),
            **self.budget(self.model),
            settings={"indices": idx.tolist()},
        )

    def secant_vs_gradient(self, runs: dict, published: dict, converged: dict) -> dict:
        (si, sres, sr), (gi, _, _) = runs["secant"], runs["gradient"]
        shared = [int(np.flatnonzero(si == i)[0]) for i in gi]
        secant = q.rank_correlations(sres["test_acc"][:, shared], sr.eigenvalues[gi])
        gradient = self.fig6_summary(runs, published).loc["gradient"]["spearman"].to_numpy()
        ck, co = f"k={self.cfg['converged_k']}", self.cfg["converged_overlap"]
        return dict(
            values=secant - gradient,
            gradient_points=self.points,
            n_gradient=len(gi),
            **self.budget(self.model),
            preconditions={
                f"secant NADs converged (split-half overlap {ck} >= {co})": converged["secant"],
                f"gradient NADs converged (split-half overlap {ck} >= {co})": converged[
                    f"gradient, {self.points} points"
                ],
            },
            settings={
                "indices": gi.tolist(),
                "networks": self.nad_counts,
                "gradient_points": self.points,
                "sigma": self.cfg["fig6_sigma"],
            },
        )

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
                "mean |ours - published|": bundled.map_distance(r, a).value,
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
        ``-full-width`` at the network's full width). A comparison with the published map counts
        only where the trained cells include some that the published map has below 0.9: on cells
        that every network learns, any network that generalises would match it."""
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
                interval=bundled.map_distance(rows, arch), preconditions=hard, **fill
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

    def recipe_checks(self, bundle, widths, recipes=RECIPES_COMPARED, cells=campaigns.RECIPE_CELLS) -> pd.DataFrame:
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
        of the authors') on the ablation cells (``campaigns.ABLATION_CELLS``)."""
        return self.recipe_checks(bundle, widths, tuple(self.cfg["recipes"]), campaigns.ABLATION_CELLS)

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
            a: bundled.diagnostic_table(frame, a, campaigns.DIAGNOSTIC[a])
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
        cells = sorted(tuple(c) for c in campaigns.DIAGNOSTIC[arch])
        rows = bundled.on_cells(bundled.select(frame, arch, width), cells)
        return dict(
            interval=bundled.map_distance(rows, arch),
            diagnostic_cells=", ".join(map(str, cells)),
            **self._bundle_fill(bundle, arch, width, rows),
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
            steps=sep.steps_per_run(self.spot_settings(arch)),
            paper_steps=sep.steps_per_run(self.ch.paper_cfg["recipes"]["authors"]),
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
            settings={"width": width, "bundle": bundle.title()},
            preconditions={f"some Fig. 3 cell is {'blind' if blind else 'seen'}": bool(sel.any())},
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
                index=pd.Index(self.ch.seeds, name="seed"),
            )
        return pd.concat(out, names=["model", "seed"])

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
        if not panels:
            return None
        return {"panels": panels, "table": pd.DataFrame.from_dict(rows, orient="index"), "evidence": claims}

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
                    interval=sm["gap"], published_gap=sm["published_gap"], **fill
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

    # ------------------------------------------------------------------ the chapter's figures
    # (each draws one figure of the page and records the numbers behind it as a data file)
    def title(self, what: str, sigma=None) -> str:
        """A figure's title line: what it shows, the seeds, the data convention, the profile."""
        noise = f", sigma={sigma:g}" if sigma is not None else ""
        return f"{what}\n(mean of {len(self.ch.seeds)} seeds; {self.convention}{noise}; {self.ch.profile} profile)"

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
            title=self.title("Fig. 2: iterations to a small loss (censored = budget)", self.cfg["fig2_sigma"]),
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
