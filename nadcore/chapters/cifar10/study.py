"""Chapter 4's experiments on one chapter run's settings: the page calls one method per paper
quantity (``study.fig7(runs)``, ``study.flip_loss(fig8, model)``) and one evidence method per
claim, which returns the keywords of ``ch.claim`` (the interval, the values the claim's
placeholders name, the budget, the preconditions, the settings).

:class:`Study` holds what every step of the chapter shares: the settings, the seeds, the models
of Fig. 8, and, once :meth:`Study.load_data` has loaded the images, what identifies the data and
its size (the jobs, the titles, the budgets and the test-set noise of the intervals use them).
The jobs are those of :mod:`nadcore.chapters.cifar10.runs`, the data transformations those of
:mod:`nadcore.data.poisoning`, the figures those of :mod:`nadcore.chapters.cifar10.figures`.
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pandas as pd

from nadcore.book.evidence import Interval, accuracy_interval, t_interval
from nadcore.book.runner import run_jobs
from nadcore.book.settling import hours_per_run
from nadcore.chapters import campaigns
from nadcore.chapters.cifar10 import figures as plots
from nadcore.chapters.cifar10 import runs as cifar10
from nadcore.chapters.cifar10.claims import CAMPAIGN_CLAIMS, CLAIMS
from nadcore.data import cifar, poisoning
from nadcore.nads import complete_basis
from nadcore.nads.published import load_published_nads
from nadcore.nets import spec_name
from nadcore.train.budget import cifar_budget

__all__ = ["Study"]


def _f3(v) -> str:
    return f"{v:.3f}"


def _f4(v) -> str:
    return f"{v:.4f}"


class Study:
    """Chapter 4 on the settings of ``ch`` (a :class:`nadcore.book.Chapter`) with the chapter's
    ``model`` (a registry name or "package.module:factory") as the network under test."""

    def __init__(self, ch, model: str = "lenet"):
        self.ch, self.cfg, self.model = ch, ch.cfg, model
        cfg = ch.cfg
        if not (set(cfg["early"]) <= set(cfg["indices"]) and set(cfg["late"]) <= set(cfg["indices"])):
            raise ValueError("the `early` and `late` carriers must be among the `indices`")
        self.name = spec_name(model)
        self.early, self.late = cfg["early"], cfg["late"]
        #: Fig. 8's models: the chapter's model, then the other ``flip_models``
        self.flip_models = [model] + [m for m in cfg["flip_models"] if spec_name(m) != self.name]
        self.flip_names = [spec_name(m) for m in self.flip_models]
        #: the seeds of Fig. 8's CNNs (``flip_seeds``) and of its fully connected controls
        #: (``control_seeds``)
        self.flip_seeds = ch.seeds_of("flip_seeds")
        self.control_seeds = ch.seeds_of("control_seeds")
        self.spec = self.data_key = self.n_train = self.n_test = self.description = None
        #: what a claim and a figure add when the runs come from a campaign bundle (:meth:`campaign`)
        self.tags, self.sources = {}, {}

    @property
    def tag(self) -> str:
        """What the chapter's network adds to a claim's name: its ``tags`` entry ("" for a
        network the chapter trains)."""
        return self.tags.get(self.name, "")

    @property
    def source(self) -> dict:
        """Where the chapter's network's runs come from: its ``sources`` entry (empty for a
        network the chapter trains)."""
        return self.sources.get(self.name, {})

    # ------------------------------------------------------------------ data and NADs
    def load_data(self, root=None, subset_root=None, download: bool = False):
        """CIFAR-10 (:func:`nadcore.data.cifar.load_cifar10`, at most ``max_train`` / ``max_test``
        images), remembering how each job loads it (``spec``), what identifies it in a cache key
        and its size."""
        self.spec = dict(
            root=root,
            subset_root=subset_root,
            download=download,
            max_train=self.cfg["max_train"],
            max_test=self.cfg["max_test"],
        )
        data = cifar.load_cifar10(**self.spec)
        self.data_key = cifar.cifar_data_key(data)
        self.n_train, self.n_test = data.description["n_train"], data.description["n_test"]
        self.description = data.description
        return data

    def basis_summary(self, U, source: str) -> str:
        """Where the NADs come from, and that the completed basis ``U`` is orthonormal."""
        return (
            f"NADs of {self.name}: {source}; full basis {U.shape[0]} x {U.shape[1]}, "
            f"max |U U^T - I| < 1e-10: {bool(np.abs(U @ U.T - np.eye(len(U))).max() < 1e-10)}"
        )

    def draw_nads(self, U):
        """The first NADs and some of the carriers' NADs as images (and their pixels as data)."""
        idx = self.cfg["indices"]
        shown = sorted(set([0, 1] + idx[2:6] + idx[-1:]))
        fig = plots.nad_strip(U, shown, title=f"NADs of {self.name} used as carriers (red +, blue -)")
        self.ch.figure_data(
            "nads",
            pd.DataFrame(
                [{"nad": i, "row": p // 32, "col": p % 32, "value": U[i, p]} for i in shown for p in range(U.shape[1])]
            ),
        )
        return fig

    # ------------------------------------------------------------------ the carrier
    def carrier_table(self) -> pd.DataFrame:
        """Each class's carrier: NAD i or i+1, colour channel, sign (the authors' layout)."""
        return pd.DataFrame(
            [
                {
                    "class": f"{t} {cifar.CIFAR10_CLASSES[t]}",
                    "NAD": f"i+{off}",
                    "channel": "RGB"[c],
                    "sign": "+" if sign > 0 else "-",
                }
                for t, (off, c, sign) in enumerate(poisoning.carrier_assignment())
            ]
        )

    def substitution_check(self, x, y, U) -> str:
        """The two properties of the substitution on the images ``x`` (labels ``y``) with the
        first carrier: the component along the carrier is s * eps, nothing changes orthogonally."""
        i0, eps = self.cfg["indices"][0], self.cfg["eps"]
        C, S = poisoning.poison_carriers(U, i0)
        c = C[y].reshape(len(y), -1)
        delta = (poisoning.poison(x, y, U, i0, eps) - x).reshape(len(y), -1).astype(np.float64)
        along = np.einsum("nd,nd->n", x.reshape(len(y), -1) + delta, c)
        ortho = delta - np.einsum("nd,nd->n", delta, c)[:, None] * c
        return (
            f"carrier at NAD {i0}: |<x', c> - s*eps| < 1e-6: {bool(np.abs(along - eps * S[y]).max() < 1e-6)}; "
            f"change orthogonal to c < 1e-6: {bool(np.abs(ortho).max() < 1e-6)}"
        )

    def visibility(self, x, y, U) -> pd.DataFrame:
        """How much poisoning changes the images ``x``, per carrier position
        (:func:`nadcore.data.poisoning.carrier_visibility`)."""
        return pd.DataFrame(poisoning.carrier_visibility(x, y, U, self.cfg["indices"], self.cfg["eps"]))

    def visibility_table(self, vis: pd.DataFrame) -> str:
        """:meth:`visibility` as printed: readable column names, four decimals."""
        return vis.rename(
            columns={
                "l2_change": "mean L2 change",
                "mean_abs_change": "mean |change|",
                "max_abs_change": "max |change|",
                "relative_l2_change": "relative",
                "dc_cosine": "dc_cosine",
            }
        ).to_string(index=False, float_format=_f4)

    def draw_visibility(self, data, U, vis: pd.DataFrame):
        """Four training images poisoned at the first, a middle and the last carrier position,
        with the amplified differences (and the :meth:`visibility` table as data)."""
        idx = self.cfg["indices"]
        shown = [idx[0], idx[len(idx) // 2], idx[-1]]
        pick = [int(np.flatnonzero(data.y_train == t)[0]) for t in (0, 3, 7, 8)]
        versions = {
            f"carrier at NAD {i}": poisoning.poison(data.x_train[pick], data.y_train[pick], U, i, self.cfg["eps"])
            for i in shown
        }
        fig = plots.poisoned_examples(data.x_train[pick], versions, data.y_train[pick], cifar.CIFAR10_CLASSES)
        self.ch.figure_data("visibility", vis)
        return fig

    # ------------------------------------------------------------------ flipping
    def flip_checks(self, xn, xf, U) -> str:
        """The flip's algebra on the normalised images ``xn`` and their flipped versions ``xf``:
        it preserves norms and is its own inverse."""
        n0 = np.linalg.norm(xn.reshape(len(xn), -1), axis=1)
        n1 = np.linalg.norm(xf.reshape(len(xf), -1), axis=1)
        return (
            f"flip preserves norms (max relative error < 1e-5): {bool(np.abs(n1 / n0 - 1).max() < 1e-5)}; "
            f"flipping twice is the identity (max error < 1e-4): "
            f"{bool(np.abs(poisoning.flip_representation(xf, U) - xn).max() < 1e-4)}"
        )

    def flip_energy(self, xn, xf, U) -> pd.DataFrame:
        """The mean share of an image's energy along the first and the last 64 NADs (of each
        channel), before and after the flip."""
        return pd.DataFrame(
            {
                "representation": ["original", "flipped"],
                "energy on NADs 0-63": [poisoning.leading_energy(x, U, 64).mean() for x in (xn, xf)],
                "energy on NADs 960-1023": [poisoning.leading_energy(x, U[::-1], 64).mean() for x in (xn, xf)],
            }
        )

    def energy_table(self, energy: pd.DataFrame) -> str:
        """:meth:`flip_energy` as printed, three decimals."""
        return energy.to_string(index=False, float_format=_f3)

    def draw_flipped(self, xn, xf, labels, energy: pd.DataFrame):
        """Six normalised images and their flipped versions (and :meth:`flip_energy` as data)."""
        fig = plots.flipped_examples(xn[:6], xf[:6], labels[:6], cifar.CIFAR10_CLASSES)
        self.ch.figure_data("flip_energy", energy)
        return fig

    # ------------------------------------------------------------------ the runs
    def criteria(self) -> str:
        """The registered criteria of the claims on this study's networks (the chapter's model, or
        the campaign's networks of its figure), printed before the runs they judge."""
        if not self.sources:
            ids = [c.id for c in CLAIMS if c.id not in CAMPAIGN_CLAIMS]
            return self.ch.criteria(ids, model=self.name, network=self.name, early=self.early, late=self.late)
        return "\n".join(
            self.ch.criteria(
                [i for i in CAMPAIGN_CLAIMS if i.startswith(self.figure) and i.endswith(self.tags[m])],
                model=m,
                network=m,
                early=self.early,
                late=self.late,
            )
            for m in self.sources
        )

    def jobs(self, U) -> list:
        """Every network of Figs. 7 and 8 as jobs of the book's runner, without repeats, the
        longer Fig. 8 runs first: each Fig. 8 model on the original and flipped representation
        (a CNN flipped with its own NADs on ``flip_seeds``, a control with ``U`` on
        ``control_seeds``), then the chapter's model on the clean and each poisoned set."""
        cfg, ch = self.cfg, self.ch
        bases = {
            m: U if (m == self.model or spec_name(m) in poisoning.FLIP_CONTROLS) else complete_basis(ch.nads(m)[0].nads)
            for m in self.flip_models
        }
        recipe = {k: cfg[k] for k in ("max_lr", "momentum", "weight_decay", "batch_size")}
        common = dict(data_spec=self.spec, data_key=self.data_key, eps=cfg["eps"], device=ch.device)
        fig8_jobs = [
            j
            for m in self.flip_models
            for j in cifar10.cifar_jobs(
                m,
                ["clean", "flip"],
                nads=bases[m],
                train=dict(recipe, epochs=cfg["flip_epochs"]),
                seeds=self.control_seeds if spec_name(m) in poisoning.FLIP_CONTROLS else self.flip_seeds,
                **common,
            )
        ]
        fig7_jobs = cifar10.cifar_jobs(
            self.model,
            ["clean"] + [("poison", i) for i in cfg["indices"]],
            nads=U,
            train=dict(recipe, epochs=cfg["epochs"]),
            seeds=ch.seeds,
            **common,
        )
        return cifar10.unique_jobs(fig8_jobs + fig7_jobs)

    def train(self, jobs) -> tuple[pd.DataFrame, float]:
        """Run ``jobs`` (cached, on the chapter's executor): one tidy row per network
        (:func:`nadcore.chapters.cifar10.runs.result_rows`) with the wall ``seconds`` of its share
        of its job, and the CPU seconds of the training."""
        results = run_jobs(jobs, cifar10.cifar_job, executor=self.ch.executor(), cache=self.ch.cache)
        cpu_seconds = sum(meta.get("cpu_seconds", float("nan")) for _, meta in results)
        seconds = [
            meta.get("seconds", np.nan) / len(job.config["seeds"])
            for job, (_, meta) in zip(jobs, results)
            for _ in job.config["seeds"]
        ]
        return pd.DataFrame(cifar10.result_rows(jobs, results)).assign(seconds=seconds), cpu_seconds

    def budget(self, epochs: str) -> dict:
        """The budget of one run here and in the paper (full training set) with the epochs of
        setting ``epochs`` ("epochs" for Fig. 7, "flip_epochs" for Fig. 8)
        (:func:`nadcore.train.budget.cifar_budget`)."""
        here, paper = ({"epochs": c[epochs], "batch_size": c["batch_size"]} for c in (self.cfg, self.ch.paper_cfg))
        return cifar_budget(here, paper, self.description, self.cfg["max_train"])

    # ------------------------------------------------------------------ Fig. 7
    def fig7(self, runs: pd.DataFrame) -> pd.DataFrame:
        """Fig. 7: the chapter's model on the clean and the poisoned sets, one row per seed, with
        the carrier's position (``carrier``)."""
        fig7 = runs[
            (runs.model == self.name) & (runs.epochs == self.cfg["epochs"]) & runs.experiment.isin(["clean", "poison"])
        ]
        return fig7.assign(
            carrier=[
                ("none (clean)" if e == "clean" else f"NADs {int(i)}, {int(i) + 1}")
                for e, i in zip(fig7.experiment, fig7["index"])
            ]
        )

    def fig7_summary(self, fig7: pd.DataFrame) -> str:
        """Fig. 7 as a table: per carrier position, the mean over seeds of the final training
        accuracy, the clean test accuracy and the accuracy on test images with the carrier."""
        cfg, seeds = self.cfg, sorted(map(int, fig7.seed.unique()))
        summary = fig7.groupby(["carrier"], sort=False)[["train_acc", "test_acc", "carrier_test_acc"]].mean()
        return (
            f"{self.name}, eps={cfg['eps']}, {self.n_train:,} training images, {cfg['epochs']} epochs, "
            f"mean over seeds {seeds}\n" + summary.to_string(float_format=_f3, na_rep="-")
        )

    def draw_fig7(self, fig7: pd.DataFrame):
        """Fig. 7: test accuracy against the carrier's NAD index (and the runs as data)."""
        cfg = self.cfg
        fig = plots.poison_accuracy_curve(
            fig7,
            title=f"{self.name} on poisoned CIFAR-10 ({self.n_train:,} train "
            f"images, eps={cfg['eps']}, {fig7.seed.nunique()} seeds)",
        )
        self.ch.figure_data(
            f"fig7{self.tag}",
            fig7[["experiment", "index", "seed", "train_acc", "test_acc", "carrier_test_acc", "l2_change"]].rename(
                columns={"l2_change": "poison_l2_change"}
            ),
        )
        return fig

    def poisoned(self, fig7: pd.DataFrame):
        """Per seed: the clean baseline's test accuracy (a Series), and the test accuracy and the
        carrier gain (with minus without the carrier) per carrier index (seeds x indices)."""
        base = fig7[fig7.experiment == "clean"].set_index("seed")["test_acc"].sort_index()
        pois = fig7[fig7.experiment == "poison"].astype({"index": int})
        acc = pois.pivot(index="seed", columns="index", values="test_acc")
        gain = pois.assign(g=pois.carrier_test_acc - pois.test_acc).pivot(index="seed", columns="index", values="g")
        return base, acc, gain

    def fig7_per_seed(self, fig7: pd.DataFrame) -> pd.DataFrame:
        """Per seed: the baseline, the mean test accuracy with the early and the late carriers,
        and the carrier gain of the early ones."""
        base, acc, gain = self.poisoned(fig7)
        return pd.DataFrame(
            {
                "baseline": base,
                "early": acc[self.early].mean(axis=1),
                "late": acc[self.late].mean(axis=1),
                "carrier gain (early)": gain[self.early].mean(axis=1),
            }
        )

    def share_lost(self, fig7: pd.DataFrame, which) -> Interval:
        """The share of the above-chance accuracy lost with carriers at ``which`` (mean over
        them), a t-interval over the seeds widened by the test set's binomial noise."""
        base, acc, _ = self.poisoned(fig7)
        lost = cifar10.share_lost(base, acc[which].mean(axis=1))
        iv = t_interval(lost, extra_variance=cifar10.share_test_variance(base, self.n_test, len(lost)))
        return dataclasses.replace(iv, method=f"t-interval over seeds + test-set binomial (n_test={self.n_test})")

    def _fig7_claim(self, fig7: pd.DataFrame, nad_result) -> dict:
        """What the Fig. 7 claims share: the budget, the NAD estimate's networks, the settings
        (and, for a campaign's runs, the bundle, the width and the seeds; for this build's, the
        hours of one more seed)."""
        cfg, src = self.cfg, self.source
        return dict(
            **self.budget("epochs"),
            networks=nad_result.meta["networks"],
            hours_per_unit=self.seed_hours(fig7, src),
            **(
                {"profile": src["profile"], "network": self.name, "early": self.early, "late": self.late} if src else {}
            ),
            settings={
                "model": self.name,
                "epochs": cfg["epochs"],
                "n_train": self.n_train,
                "eps": cfg["eps"],
                **src.get("settings", {}),
            },
        )

    @staticmethod
    def seed_hours(runs: pd.DataFrame, source: dict) -> float | None:
        """The hours of one more seed of ``runs`` that this build trained (their ``seconds`` over
        their seeds); None for a campaign's (``source``), which its bundle's ledger prices."""
        return None if source or "seconds" not in runs else hours_per_run(runs.seconds, runs.seed.nunique())

    def _baseline_ok(self, fig7: pd.DataFrame) -> dict:
        base, _, _ = self.poisoned(fig7)
        return {"clean baseline above chance (mean test accuracy >= 0.2)": bool(base.mean() >= 0.2)}

    def share_lost_early(self, fig7: pd.DataFrame, nad_result) -> dict:
        """Claim fig7-early-carriers-hurt: the share lost with the ``early`` carriers, if the
        baseline is above chance and the networks picked the carriers up."""
        _, _, gain = self.poisoned(fig7)
        picked = bool((gain[self.early].mean(axis=1) > 0).all())
        return dict(
            interval=self.share_lost(fig7, self.early),
            **self._fig7_claim(fig7, nad_result),
            preconditions={
                **self._baseline_ok(fig7),
                "the networks picked up the early carriers (carrier gain > 0 for every seed)": picked,
            },
        )

    def share_lost_late(self, fig7: pd.DataFrame, nad_result) -> dict:
        """Claim fig7-late-carriers-harmless: the share lost with the ``late`` carriers."""
        return dict(
            interval=self.share_lost(fig7, self.late),
            preconditions=self._baseline_ok(fig7),
            **self._fig7_claim(fig7, nad_result),
        )

    def carrier_gain(self, fig7: pd.DataFrame, nad_result) -> dict:
        """Claim fig7-carrier-learned: test accuracy with minus without the ``early`` carriers."""
        _, _, gain = self.poisoned(fig7)
        return dict(
            interval=accuracy_interval(gain[self.early].mean(axis=1), self.n_test, difference=True),
            **self._fig7_claim(fig7, nad_result),
        )

    # ------------------------------------------------------------------ the paper's network
    def campaign(self, figure: str = "fig7"):
        """Fig. 7 or Fig. 8 (``figure``) of the paper's own networks from the committed bundle of
        the chapter's ``campaign``: ``(study, runs)``, a Study on the campaign's settings (chapter
        4's profile of the figure's stages) whose networks are those the campaign trains for the
        figure, each at its width (Fig. 7: one network, the study's model; Fig. 8: its
        ``flip_models``), and the bundle's runs as :meth:`train` gives them. A network's seed
        enters once it has every run of the figure (Fig. 7: the clean baseline and every carrier;
        Fig. 8: both representations); a network without one is left out. Per network name the
        study holds the NADs the runs were poisoned or flipped with (``published``: the authors'
        published NADs of the full network), its claims' suffix (``tags``) and where its runs
        come from (``sources``)."""
        name = self.cfg["campaign"]
        archs = campaigns.networks(name, figure)
        if figure == "fig7" and len(archs) != 1:
            raise ValueError(f"campaign {name!r} trains {archs} for Fig. 7: the chapter draws one network")
        cfg, found = campaigns.committed_runs(name, figure)
        view = copy.copy(self)
        view.cfg, view.early, view.late = cfg, cfg["early"], cfg["late"]
        view.load_data()  # as the campaign loaded it
        view.figure = figure
        view.published, view.tags, view.sources, specs, parts = {}, {}, {}, [], []
        for arch, (rows, source) in found.items():
            net = source["network"]
            specs.append(campaigns.spec_of(arch, source["settings"]["width"]))
            view.published[net], view.tags[net], view.sources[net] = load_published_nads(arch), f"-{arch}", source
            parts.append(
                pd.DataFrame(
                    {
                        "model": net,
                        "experiment": rows["experiment"].to_numpy(),
                        "index": rows["nad_index"].to_numpy() if "nad_index" in rows else np.nan,
                        "epochs": rows["epochs"].to_numpy(),
                        "seed": rows["seed"].to_numpy(),
                        "train_acc": rows["train_acc"].to_numpy(),
                        "test_acc": rows["test_acc"].to_numpy(),
                        "carrier_test_acc": rows["carrier_test_acc"].to_numpy()
                        if "carrier_test_acc" in rows
                        else np.nan,
                        "l2_change": np.nan,
                    }
                )
            )
        view.flip_models, view.flip_names = specs, list(view.sources)
        view.model, view.name = specs[0], view.flip_names[0]
        return view, pd.concat(parts, ignore_index=True)

    def fig7_evidence(self, fig7: pd.DataFrame) -> dict:
        """The keywords of the three Fig. 7 claims on the campaign's network, by claim id (ending
        in its tag)."""
        nads = self.published[self.name]
        return {
            f"fig7-early-carriers-hurt{self.tag}": self.share_lost_early(fig7, nads),
            f"fig7-late-carriers-harmless{self.tag}": self.share_lost_late(fig7, nads),
            f"fig7-carrier-learned{self.tag}": self.carrier_gain(fig7, nads),
        }

    # ------------------------------------------------------------------ Fig. 8
    def fig8(self, runs: pd.DataFrame) -> pd.DataFrame:
        """Fig. 8: every Fig. 8 model on the original and the flipped representation, one row
        per seed, with ``representation`` ("original" or "flipped")."""
        fig8 = runs[
            runs.model.isin(self.flip_names)
            & (runs.epochs == self.cfg["flip_epochs"])
            & runs.experiment.isin(["clean", "flip"])
        ]
        return fig8.assign(representation=fig8.experiment.map({"clean": "original", "flip": "flipped"}))

    def fig8_summary(self, fig8: pd.DataFrame) -> str:
        """Fig. 8 as a table: per model and representation, mean and lowest final training and
        test accuracy over the seeds."""
        summary = fig8.groupby(["model", "representation"], sort=False)[["train_acc", "test_acc"]].agg(["mean", "min"])
        seeds = (
            f"seeds {self.flip_seeds} (controls: {self.control_seeds})"
            if not self.sources
            else "seeds "
            + "; ".join(f"{m}: {sorted(map(int, fig8[fig8.model == m].seed.unique()))}" for m in self.flip_names)
        )
        return f"{self.n_train:,} training images, {self.cfg['flip_epochs']} epochs, {seeds}\n" + summary.to_string(
            float_format=_f3
        )

    def draw_fig8(self, fig8: pd.DataFrame):
        """Fig. 8: test accuracy on both representations per model (and the runs as data)."""
        fig = plots.flip_accuracies(
            fig8,
            title=f"CIFAR-10: original vs NAD-flipped representation, {self.cfg['flip_epochs']} epochs"
            + (f" ({next(iter(self.sources.values()))['profile']})" if self.sources else ""),
        )
        self.ch.figure_data(
            "fig8-campaign" if self.sources else "fig8",
            fig8[["model", "representation", "seed", "train_acc", "test_acc"]],
        )
        return fig

    def flip_loss(self, fig8: pd.DataFrame, model: str) -> pd.Series:
        """Per seed, ``model``'s test accuracy on the original minus on the flipped representation."""
        t = fig8[fig8.model == model].pivot(index="seed", columns="representation", values="test_acc")
        return t["original"] - t["flipped"]

    def flip_loss_per_seed(self, fig8: pd.DataFrame) -> pd.DataFrame:
        """:meth:`flip_loss` of every Fig. 8 model, one column each."""
        return pd.DataFrame({m: self.flip_loss(fig8, m) for m in self.flip_names})

    def _fig8_claim(self, fig8: pd.DataFrame, model: str, nad_result) -> dict:
        """What the Fig. 8 claims share: the interval of :meth:`flip_loss`, the budget, the
        NAD estimate's networks, the settings (and, for a campaign's network, the bundle, the
        width and the seeds)."""
        cfg, src = self.cfg, self.sources.get(model, {})
        return dict(
            interval=accuracy_interval(self.flip_loss(fig8, model), self.n_test, difference=True),
            **self.budget("flip_epochs"),
            networks=nad_result.meta["networks"],
            hours_per_unit=self.seed_hours(fig8[fig8.model == model], src),
            **({"profile": src["profile"], "network": model} if src else {}),
            settings={
                "model": model,
                "epochs": cfg["flip_epochs"],
                "n_train": self.n_train,
                "fit": cfg["fit"],
                **src.get("settings", {}),
            },
        )

    def _above_chance(self, fig8: pd.DataFrame, model: str) -> dict:
        original = fig8[(fig8.model == model) & (fig8.representation == "original")]
        return {"original above chance (mean test accuracy >= 0.2)": bool(original.test_acc.mean() >= 0.2)}

    def flip_loss_cnn(self, fig8: pd.DataFrame, nad_result, name: str | None = None) -> dict:
        """Claim fig8-flip-hurts-cnn: the :meth:`flip_loss` of CNN ``name`` (default: the
        chapter's model), if it learned and every network of the pair fitted its training set
        (``fit``)."""
        name, fit = name or self.name, self.cfg["fit"]
        fits = bool(fig8[fig8.model == name].train_acc.min() >= fit)
        return dict(
            model=name,
            **self._fig8_claim(fig8, name, nad_result),
            preconditions={
                **self._above_chance(fig8, name),
                f"both {name} networks fit their training sets (final train accuracy >= {fit} for every seed)": fits,
            },
        )

    def fig8_evidence(self, fig8: pd.DataFrame) -> dict:
        """The keywords of the Fig. 8 claim on each of the campaign's networks, by claim id (ending
        in the network's tag)."""
        return {
            f"fig8-flip-hurts-cnn{self.tags[m]}": self.flip_loss_cnn(fig8, self.published[m], m)
            for m in self.flip_names
        }

    def flip_loss_mlp(self, fig8: pd.DataFrame, nad_result) -> dict:
        """Claim fig8-flip-mlp-unaffected: the MLP control's :meth:`flip_loss`, if it learned."""
        return dict(**self._fig8_claim(fig8, "mlp", nad_result), preconditions=self._above_chance(fig8, "mlp"))

    # ------------------------------------------------------------------ reading
    def reading(self, fig7: pd.DataFrame, fig8: pd.DataFrame) -> str:
        """The closing paragraph (:func:`nadcore.chapters.cifar10.runs.reading`), every number
        from this run's Figs. 7 and 8."""
        base, acc, gain = self.poisoned(fig7)
        early, late = self.early, self.late
        return cifar10.reading(
            name=self.name,
            early=early,
            late=late,
            base=base,
            acc_early=acc[early].mean(axis=1),
            acc_late=acc[late].mean(axis=1),
            gain_early=gain[early].mean(axis=1),
            gain_late=gain[late].mean(axis=1),
            flip={m: self.flip_loss(fig8, m) for m in self.flip_names},
            flipped_fit=fig8[fig8.model == self.name].train_acc.min(),
            fit=self.cfg["fit"],
        )
