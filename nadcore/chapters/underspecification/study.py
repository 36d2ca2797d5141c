"""Chapter 5's experiments on one chapter run's settings: the page calls one method per paper
quantity (``study.fig2(bases)``, ``study.fig3(bases, data)``, the tables beside them) and one
evidence method per claim, which returns the keywords of ``ch.claim`` (the measured values or
interval, the values the claim's placeholders name, the budget, the networks behind the NADs and
the preconditions).

:class:`Study` holds what every run of the chapter shares (the settings of each network on the
profile and on the paper's, the seeds, the NAD indices the claims call "early" and "late", the
executor, the cache, the device) so that the page shows the science and not the plumbing. The
runs are those of :mod:`nadcore.chapters.underspecification.runs` (cached jobs).
"""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd

from nadcore.book.claims import specs
from nadcore.book.evidence import accuracy_interval, seed_summary
from nadcore.book.settling import hours_per_run
from nadcore.chapters import campaigns
from nadcore.chapters.underspecification import runs as ux
from nadcore.data import cifar
from nadcore.data.cifar_budget import CIFAR10_TRAIN_IMAGES
from nadcore.data.directions import low_frequency_fraction
from nadcore.nads import complete_basis
from nadcore.train.budget import cifar_budget, steps_per_run

__all__ = ["Study", "FIT"]

#: training accuracy (over the last epoch) of a network that "fitted its training set"
FIT = 0.95
#: the test accuracy at which a network counts as having learned a binary problem (chance 0.5):
#: a claim that a network ignores one input needs it to have learned through the others
LEARNED = 0.6
FIG2_COLUMNS = {"acc_both": "both", "acc_first": "ch1 only", "acc_second": "ch2 only", "train_acc": "train"}
FIG3_COLUMNS = {"acc_all": "all", "acc_cifar": "CIFAR only", "acc_dv": "D(v) only", "train_acc": "train"}


def _concat_from_bundle(rows, network: str, cfg: dict):
    return ux.ConcatGridResult.from_frame(rows, network, {"n_test": cfg["n_test"]})


def _cifar_from_bundle(rows, network: str, cfg: dict):
    data = cifar.load_cifar10(max_train=cfg["max_train"], max_test=cfg["max_test"])
    return ux.CifarDVResult.from_frame(rows, network, {"data": cifar.cifar_data_key(data)})


#: each of the chapter's campaign figures, read back from its bundle rows as the chapter's own runs
_FROM_BUNDLE = {"us-fig2": _concat_from_bundle, "us-fig3": _cifar_from_bundle}


class Study:
    """Chapter 5 on the settings of ``ch`` (a :class:`nadcore.book.Chapter` whose parameters
    name ``data_root`` and ``subset_root``)."""

    def __init__(self, ch):
        self.ch, self.paper = ch, ch.paper_cfg
        self._use(ch.cfg)
        #: spec -> random networks behind its NADs (a claim's mc_fraction), filled by nad_bases
        self.networks = {}
        #: a campaign's view (:meth:`campaign`): its figure, and per network where its runs come from
        self.figure, self.sources = None, {}

    def _use(self, cfg: dict):
        """Take the settings ``cfg``: the NAD indices the claims call early and late, the specs."""
        self.cfg = cfg
        self.early, self.late = cfg["concat_indices"][0], cfg["concat_indices"][-1]
        self.first, self.last = cfg["cifar_indices"][0], cfg["cifar_indices"][-1]
        #: the values of the claims' placeholders {early}, {late}, {first} and {last}
        self.fill = dict(early=self.early, late=self.late, first=self.first, last=self.last)
        #: the model spec of each CIFAR-10 (+) D(v) network ("mlp": the appendix's wider MLP)
        self.cifar_specs = {m: ux.cifar_spec(m) for m in cfg["cifar_models"]}

    # ------------------------------------------------------------------ settings
    def setting(self, name: str, model: str, paper: bool = False):
        """The per-model setting ``name`` of ``model`` on this profile, or on the paper's."""
        return ux.per_model(self.paper if paper else self.cfg, name, model)

    def claim_ids(self) -> list[str]:
        """The registered claims about the models this run trains (a campaign's view: about its
        networks, on its figure)."""
        models = self.sources or set(self.cfg["concat_models"]) | set(self.cfg["cifar_models"])
        return [
            i
            for i in specs(self.ch.name)
            if any(f"-{m}-" in i or i.endswith(f"-{m}") for m in models)
            and (self.figure is None or i.startswith(f"{self.figure}-"))
        ]

    # ------------------------------------------------------------------ a campaign's runs
    def campaign(self, figure: str):
        """The follow-up's ``figure`` ("us-fig2" or "us-fig3") for the networks that the committed
        campaign ``campaign`` trains for it, read from its bundle: ``(view, runs)``. ``view`` is
        this study on the settings of the campaign's stages (chapter 5's profile there), whose
        claims name the bundle, the width and the seeds; ``runs`` maps a network to its result, as
        :meth:`fig2` and :meth:`fig3` give them (Fig. 2 without cross-sections: the bundle keeps
        their tilt). A seed enters once it has every run of the figure (every NAD pair of the
        grid, or every NAD index); a network without one is left out. The runs are the page's
        figure data ``<figure>-campaign``."""
        cfg, found = campaigns.committed_runs(self.cfg["campaign"], figure)
        view, runs = copy.copy(self), {}
        view.figure, view.sources, view.networks = figure, {}, dict(self.networks)
        view._use(cfg)
        for arch, (rows, source) in found.items():
            view.nad_estimate(arch)  # the networks behind its NADs
            view.sources[arch] = source
            runs[arch] = _FROM_BUNDLE[figure](rows, source["network"], cfg)
        self.ch.figure_data(f"{figure}-campaign", self.runs_frame(runs))
        return view, runs

    def registered(self, claim: str) -> bool:
        """Whether ``claim`` is one of the chapter's registered claims."""
        return claim in specs(self.ch.name)

    # ------------------------------------------------------------------ NADs
    def nad_estimate(self, spec: str):
        """The NADs of ``spec`` as ``Chapter.nads`` gives them (from its ``nad_source`` setting) and
        where they come from; records how many networks they rest on."""
        source = self.setting("nad_source", spec)
        r, where = self.ch.nads(
            spec, source=source, networks=self.cfg["gradient_networks"] if source == "gradient" else None
        )
        self.networks[spec] = r.meta["networks"]
        return r, where

    def nad_basis(self, spec: str):
        """The full NAD basis of ``spec`` (rows, completed with the orthogonal complement) and where
        its NADs come from (:meth:`nad_estimate`)."""
        r, where = self.nad_estimate(spec)
        return complete_basis(r.nads).astype(np.float32), where

    def nad_bases(self) -> dict:
        """``spec -> (basis, where)`` for every network of both experiments."""
        specs_ = dict.fromkeys([*self.cfg["concat_models"], *self.cifar_specs.values()])
        return {spec: self.nad_basis(spec) for spec in specs_}

    def nad_summary(self, bases: dict) -> str:
        """Per basis: where its NADs come from, its shape, and the share of Fourier energy near
        the zero frequency (radius 8) of each NAD the experiments use as v."""
        used = sorted({*self.cfg["concat_indices"], *self.cfg["cifar_indices"]})
        lines = []
        for spec, (U, where) in bases.items():
            low = ", ".join(f"u_{i} {low_frequency_fraction(U[i]):.3f}" for i in used)
            lines.append(f"{spec}: {where}; basis {U.shape[0]} x {U.shape[1]}\n  low-frequency energy: {low}")
        return "\n".join(lines)

    @staticmethod
    def nad_sources(bases: dict) -> dict:
        """Where each basis's NADs come from, for the reproducibility block."""
        return {f"NADs of {s}": where for s, (_, where) in bases.items()}

    # ------------------------------------------------------------------ Fig. 2: D(v1) (+) D(v2)
    def concat_budget(self, m: str) -> dict:
        """SGD steps of one D(v1) (+) D(v2) run of model ``m``, here and in the paper."""
        return dict(
            steps=steps_per_run(self.setting("concat_train", m)),
            paper_steps=steps_per_run(self.setting("concat_train", m, paper=True)),
        )

    def fig2_budget_table(self) -> pd.DataFrame:
        """Samples, epochs and SGD steps of the D(v1) (+) D(v2) networks, here and in the paper."""
        rows = []
        for m in self.cfg["concat_models"]:
            here, there = self.setting("concat_train", m), self.setting("concat_train", m, paper=True)
            rows.append(
                {
                    "model": m,
                    "NAD indices": str(self.cfg["concat_indices"]),
                    "samples": here["n_train"],
                    "epochs": here["epochs"],
                    "paper: samples": there["n_train"],
                    "paper: epochs": there["epochs"],
                    **self.concat_budget(m),
                }
            )
        return pd.DataFrame(rows)

    def sample_sizes(self) -> str:
        """The seeds and test samples per run, here and in the paper."""
        return (
            f"seeds: {len(self.ch.seeds)} (paper: {self.paper['seeds']}); test samples per run: "
            f"{self.cfg['n_test']:,} (paper: {self.paper['n_test']:,})"
        )

    def fig2(self, bases: dict) -> dict:
        """Fig. 2: ``model -> ConcatGridResult`` of every D(v1) (+) D(v2) network on the grid of
        NAD pairs (:func:`runs.concat_grid_experiment`)."""
        ch, cfg, out = self.ch, self.cfg, {}
        for m in cfg["concat_models"]:
            t = dict(self.setting("concat_train", m))
            out[m] = ux.concat_grid_experiment(
                m,
                bases[m][0],
                cfg["concat_indices"],
                seeds=ch.seeds,
                n_train=t.pop("n_train"),
                train=t,
                **{k: cfg[k] for k in ("n_test", "eps1", "eps2", "sigma", "extent", "resolution")},
                device=ch.device,
                chunk=cfg["concat_chunk"],
                cache=ch.cache,
                executor=ch.executor(),
            )
        return out

    @staticmethod
    def runs_frame(runs: dict) -> pd.DataFrame:
        """Tidy table of a figure's runs (model -> result): one row per model, seed and NAD pair
        (Fig. 2) or NAD index (Fig. 3)."""
        return pd.concat([r.frame().assign(model=m) for m, r in runs.items()], ignore_index=True)

    def label(self, m: str) -> str:
        """What a table or figure calls model ``m``: a campaign's network with its width."""
        return self.sources.get(m, {}).get("network", m)

    def fig2_summary(self, concat: dict) -> str:
        """Per network of ``concat``: its seeds, then its :meth:`fig2_table`."""
        frame = self.runs_frame(concat)
        what = "test accuracy (%) with both channels / channel 1 only / channel 2 only, train accuracy (%)"
        return "\n\n".join(
            f"{self.label(m)}, seeds {r.seeds}: {what}\n" + self.fig2_table(frame, m).to_string(index=False)
            for m, r in concat.items()
        )

    @staticmethod
    def fig2_table(frame: pd.DataFrame, m: str) -> pd.DataFrame:
        """Model ``m``'s three test accuracies and training accuracy in percent and the tilt of its
        boundary in degrees, per NAD pair: mean +- half-width of the 95% t-interval over seeds."""
        f, grid = frame[frame.model == m], ["v1_index", "v2_index"]
        table = seed_summary(f, grid, list(FIG2_COLUMNS)).rename(columns=FIG2_COLUMNS)
        table["tilt (deg)"] = seed_summary(f, grid, ["angle"], scale=1, digits=0)["angle"]
        return table

    def section_pairs(self, r) -> list[tuple]:
        """The NAD pairs of ``section_pairs`` whose cross-sections the result ``r`` holds."""
        pairs = [tuple(p) for p in self.cfg["section_pairs"]]
        return [p for p in pairs if p[0] in r.indices1 and p[1] in r.indices2]

    # ------------------------------------------------------------------ Fig. 2 evidence
    def fig2_cnns(self, concat: dict) -> list[str]:
        """The CNNs of Fig. 2 whose claims are registered."""
        return [m for m in concat if m != "mlp" and self.registered(f"us-fig2-{m}-switch")]

    def fig2_evidence(self, concat: dict) -> dict:
        """``claim id -> ch.claim's keywords`` of every registered claim of Sec. 3 on the networks
        of ``concat`` (the MLP's, then each CNN's)."""
        out = {}
        if "mlp" in concat:
            r = concat["mlp"]
            out |= {
                "us-fig2-mlp-perfect": self.mlp_perfect(r),
                "us-fig2-mlp-uniform": self.mlp_uniform(r),
                "us-fig2-mlp-tilt": self.mlp_tilt(r),
                "us-fig2-mlp-ch1-smaller-drop": self.mlp_smaller_drop(r),
                "us-fig2-mlp-tilt-first": self.mlp_tilt_first(r),
            }
        for m in self.fig2_cnns(concat):
            r = concat[m]
            out |= {
                f"us-fig2-{m}-{c}": f(m, r)
                for c, f in (
                    ("ch1-early", self.ch1_early),
                    ("ch1-late", self.ch1_late),
                    ("switch", self.switch),
                    ("max-margin", self.max_margin),
                    ("tilt-range", self.tilt_range),
                    ("late-poorer", self.late_poorer),
                )
            }
        return out

    def _acc_interval(self, values) -> dict:
        """An accuracy's interval over the seeds, with the binomial noise of the n_test test samples."""
        return dict(interval=accuracy_interval(values, self.cfg["n_test"]))

    def _fig2_common(self, m: str, r) -> dict:
        return dict(networks=self.networks[m], **self.concat_budget(m), **self._priced(m, r))

    def _priced(self, m: str, r) -> dict:
        """What every claim on ``m``'s runs ``r`` shares: the fill, the source, the hours of a seed."""
        return dict(**self.fill, hours_per_unit=hours_per_run(r.seconds, len(r.seeds)), **self.sources.get(m, {}))

    def _fitted_at(self, m: str, r, cells) -> dict:
        """The precondition that model ``m`` fitted its training sets at the NAD pairs ``cells``."""
        name = f"{m} fitted its training sets at (v1, v2) = " + ", ".join(f"(u_{a}, u_{b})" for a, b in cells)
        return {"preconditions": {name: r.fitted(cells, FIT)}}

    def _mlp_common(self, r) -> dict:
        return dict(
            preconditions={"the MLPs fitted their training sets": r.fitted(threshold=FIT)},
            **self._fig2_common("mlp", r),
        )

    def mlp_perfect(self, r) -> dict:
        """The MLP's smallest test accuracy with both channels over the NAD grid."""
        worst = np.asarray(r.acc_both).reshape(len(self.ch.seeds), -1).min(1)
        return dict(**self._acc_interval(worst), **self._mlp_common(r))

    def mlp_uniform(self, r) -> dict:
        """The MLP's largest spread over the NAD grid of its three test accuracies."""
        return dict(
            **self._mlp_common(r), values=np.max([r.spread(k) for k in ("acc_both", "acc_first", "acc_second")], axis=0)
        )

    def mlp_tilt(self, r) -> dict:
        """The spread over the NAD grid of the MLP's boundary tilt."""
        return dict(values=r.spread("angle"), **self._mlp_common(r))

    def mlp_smaller_drop(self, r) -> dict:
        """The MLP's channel-1-only minus channel-2-only accuracy, mean over the NAD grid."""
        diff = (np.asarray(r.acc_first) - np.asarray(r.acc_second)).reshape(len(self.ch.seeds), -1).mean(1)
        return dict(interval=accuracy_interval(diff, self.cfg["n_test"], difference=True), **self._mlp_common(r))

    def mlp_tilt_first(self, r) -> dict:
        """The MLP's boundary tilt from v1, mean over the NAD grid."""
        return dict(values=np.asarray(r.angle).reshape(len(self.ch.seeds), -1).mean(1), **self._mlp_common(r))

    def ch1_early(self, m: str, r) -> dict:
        """Channel-1-only accuracy with v1 = u_early, mean over v2."""
        row = [(self.early, i2) for i2 in r.indices2]
        return dict(
            **self._fitted_at(m, r, row),
            **self._fig2_common(m, r),
            **self._acc_interval(np.mean([r.values("acc_first", *c) for c in row], axis=0)),
        )

    def ch1_late(self, m: str, r) -> dict:
        """Channel-1-only accuracy at (v1, v2) = (u_late, u_early); it says the network neglects
        channel 1 only where it learned the problem with both channels."""
        kw = self._fitted_at(m, r, [(self.late, self.early)])
        both = float(np.mean(r.values("acc_both", self.late, self.early)))
        kw["preconditions"][
            f"{m} learned at (u_{self.late}, u_{self.early}): mean test accuracy with both channels >= {LEARNED}"
        ] = both >= LEARNED
        return dict(**kw, **self._acc_interval(r.values("acc_first", self.late, self.early)), **self._fig2_common(m, r))

    def switch(self, m: str, r) -> dict:
        """Channel-2-only accuracy at (v1, v2) = (u_late, u_early)."""
        return dict(
            **self._fitted_at(m, r, [(self.late, self.early)]),
            **self._acc_interval(r.values("acc_second", self.late, self.early)),
            **self._fig2_common(m, r),
        )

    def max_margin(self, m: str, r) -> dict:
        """The boundary's tilt at v1 = v2 = u_early."""
        return dict(
            **self._fitted_at(m, r, [(self.early, self.early)]),
            **self._fig2_common(m, r),
            values=r.values("angle", self.early, self.early),
        )

    def tilt_range(self, m: str, r) -> dict:
        """The tilt at (u_late, u_early) minus the tilt at (u_early, u_late)."""
        early, late = self.early, self.late
        return dict(
            **self._fitted_at(m, r, [(late, early), (early, late)]),
            **self._fig2_common(m, r),
            values=r.values("angle", late, early) - r.values("angle", early, late),
        )

    def late_poorer(self, m: str, r) -> dict:
        """Accuracy with both channels at (u_early, u_early) minus at (u_late, u_late)."""
        early, late = self.early, self.late
        diff = r.values("acc_both", early, early) - r.values("acc_both", late, late)
        return dict(
            **self._fitted_at(m, r, [(early, early), (late, late)]),
            **self._fig2_common(m, r),
            interval=accuracy_interval(diff, self.cfg["n_test"], difference=True),
        )

    # ------------------------------------------------------------------ Fig. 3: CIFAR-10 (+) D(v)
    def cifar10(self):
        """CIFAR-10 (the full set under ``data_root``, else the project's genuine subset), cut to
        ``max_train`` / ``max_test`` images."""
        p = self.ch.params
        return cifar.load_cifar10(
            p.get("data_root"), p.get("subset_root"), max_train=self.cfg["max_train"], max_test=self.cfg["max_test"]
        )

    @staticmethod
    def label_counts(data) -> str:
        """How many test images the binary problem labels +1 and -1."""
        y = cifar.binarise_labels(data.y_test)
        return f"binary test labels: {int((y > 0).sum()):,} of +1 / {int((y < 0).sum()):,} of -1"

    def cifar_budget(self, m: str, data: dict) -> dict:
        """The budget of one CIFAR-10 (+) D(v) run of model ``m`` on the CIFAR-10 data of
        ``data`` (its description), here and in the paper
        (:func:`nadcore.train.budget.cifar_budget`)."""
        train = self.setting("cifar_train", m), self.setting("cifar_train", m, paper=True)
        return cifar_budget(*train, data, self.cfg["max_train"])

    def fig3_budget_table(self, data) -> pd.DataFrame:
        """Noise level, images, epochs and SGD steps of the CIFAR-10 (+) D(v) networks, here and
        in the paper."""
        n = data.description["n_train"]
        return pd.DataFrame(
            [
                {
                    "model": m,
                    "sigma": self.setting("cifar_sigma", m),
                    "NAD indices": str(self.cfg["cifar_indices"]),
                    "images": n,
                    "epochs": self.setting("cifar_train", m)["epochs"],
                    "paper: images": CIFAR10_TRAIN_IMAGES,
                    "paper: epochs": self.setting("cifar_train", m, paper=True)["epochs"],
                    **{k: v for k, v in self.cifar_budget(m, data.description).items() if k != "samples"},
                }
                for m in self.cfg["cifar_models"]
            ]
        )

    def fig3(self, bases: dict, data) -> dict:
        """Fig. 3: ``model -> CifarDVResult`` of every binary CIFAR-10 (+) D(v) network at every NAD
        index (:func:`runs.cifar_dv_experiment`); worker processes load the images ``data`` was
        loaded from, and the cache key names them."""
        ch, cfg, p = self.ch, self.cfg, self.ch.params
        data_spec = dict(
            root=p.get("data_root"),
            subset_root=p.get("subset_root"),
            max_train=cfg["max_train"],
            max_test=cfg["max_test"],
        )
        data_key = cifar.cifar_data_key(data)
        out = {}
        for m, spec in self.cifar_specs.items():
            out[m] = ux.cifar_dv_experiment(
                spec,
                bases[spec][0],
                cfg["cifar_indices"],
                seeds=ch.seeds,
                data_spec=data_spec,
                data_key=data_key,
                sigma=self.setting("cifar_sigma", m),
                train=self.setting("cifar_train", m),
                eps=cfg["cifar_eps"],
                device=ch.device,
                chunk=cfg["cifar_chunk"],
                cache=ch.cache,
                executor=ch.executor(),
            )
        return out

    def fig3_summary(self, runs: dict, transitions: dict) -> str:
        """Per network of ``runs``: its seeds, its :meth:`fig3_table` and its phase transition
        (``transitions``, :meth:`phase_transitions`)."""
        frame = self.runs_frame(runs)
        what = "test accuracy (%) with all channels / CIFAR only / D(v) only, train accuracy (%)"
        return "\n\n".join(
            f"{self.label(m)}, seeds {r.seeds}: {what}\n"
            + self.fig3_table(frame, m).to_string(index=False)
            + "\n"
            + self.transition_text(transitions[m])
            for m, r in runs.items()
        )

    @staticmethod
    def fig3_table(frame: pd.DataFrame, m: str) -> pd.DataFrame:
        """Model ``m``'s three test accuracies and training accuracy in percent per NAD index: mean
        +- half-width of the 95% t-interval over seeds."""
        table = seed_summary(frame[frame.model == m], ["nad_index"], list(FIG3_COLUMNS))
        return table.rename(columns=FIG3_COLUMNS)

    @staticmethod
    def phase_transitions(runs: dict, chance: float) -> dict:
        """``model -> (index or None, threshold)``: the first NAD index where the mean D(v)-only
        accuracy falls below the midpoint between ``chance`` and its maximum."""
        return {m: ux.phase_transition_index(r.indices, r.acc_dv.mean(0), chance) for m, r in runs.items()}

    @staticmethod
    def transition_text(transition) -> str:
        """A phase transition ``(index or None, threshold)`` in words."""
        idx, thr = transition
        return (
            f"  phase transition (first index where the mean D(v)-only accuracy < {100 * thr:.1f}%, midway "
            f"between chance and its maximum): {'none within the tested range' if idx is None else idx}"
        )

    # ------------------------------------------------------------------ Fig. 3 evidence
    def _fig3_common(self, m: str, r) -> dict:
        return dict(
            networks=self.networks[self.cifar_specs.get(m, m)],
            **self.cifar_budget(m, r.settings["data"]),
            **self._priced(m, r),
        )

    @staticmethod
    def _fig3_interval(r, values, difference: bool = False) -> dict:
        """An accuracy's interval over the seeds, with the binomial noise of the CIFAR test set."""
        return dict(interval=accuracy_interval(values, r.settings["data"]["n_test"], difference=difference))

    @staticmethod
    def _fig3_fitted(m: str, r, i: int) -> dict:
        return {"preconditions": {f"{m} fitted its training sets at u_{i}": r.fitted([i], FIT)}}

    def fig3_evidence(self, runs: dict) -> dict:
        """``claim id -> ch.claim's keywords`` of every registered claim of Sec. 4 on the networks
        of ``runs``."""
        out = {}
        for m, r in runs.items():
            if m == "mlp":
                out["us-fig3-mlp-simplicity"] = self.mlp_simplicity(r)
            elif self.registered(f"us-fig3-{m}-dv-early"):
                out |= {
                    f"us-fig3-{m}-{c}": f(m, r)
                    for c, f in (
                        ("dv-early", self.dv_early),
                        ("cifar-early", self.cifar_early),
                        ("dv-late", self.dv_late),
                        ("exclusive", self.exclusive),
                        ("cifar-late", self.cifar_late),
                    )
                }
        return out

    def mlp_simplicity(self, r) -> dict:
        """The MLP's smallest margin, over the NAD indices, of its D(v)-only accuracy over its
        CIFAR-only accuracy (per seed)."""
        margin = (np.asarray(r.acc_dv) - np.asarray(r.acc_cifar)).min(axis=1)
        return dict(
            **self._fig3_interval(r, margin, difference=True),
            **self._fig3_common("mlp", r),
            preconditions={"the MLPs fitted their training sets": r.fitted(threshold=FIT)},
        )

    def _fig3_learned(self, m: str, r, i: int) -> dict:
        """The preconditions that ``m`` fitted its training sets at u_i and learned the problem:
        its mean test accuracy with all channels at least :data:`LEARNED`."""
        kw = self._fig3_fitted(m, r, i)
        kw["preconditions"][f"{m} learned at u_{i}: mean test accuracy with all channels >= {LEARNED}"] = bool(
            np.mean(r.values("acc_all", i)) >= LEARNED
        )
        return kw

    def dv_early(self, m: str, r) -> dict:
        """Accuracy with all channels minus D(v)-only accuracy at v = u_first: what the CIFAR-10
        channels add to the D(v) channel."""
        diff = r.values("acc_all", self.first) - r.values("acc_dv", self.first)
        return dict(
            **self._fig3_interval(r, diff, difference=True),
            **self._fig3_common(m, r),
            **self._fig3_learned(m, r, self.first),
        )

    def cifar_early(self, m: str, r) -> dict:
        """CIFAR-only accuracy at v = u_first."""
        return dict(
            **self._fig3_interval(r, r.values("acc_cifar", self.first)),
            **self._fig3_common(m, r),
            **self._fig3_fitted(m, r, self.first),
        )

    def dv_late(self, m: str, r) -> dict:
        """D(v)-only accuracy at v = u_last (ignoring the D(v) channel means something only for a
        network that learned the problem)."""
        return dict(
            **self._fig3_interval(r, r.values("acc_dv", self.last)),
            **self._fig3_common(m, r),
            **self._fig3_learned(m, r, self.last),
        )

    def exclusive(self, m: str, r) -> dict:
        """The largest, over the NAD indices, of the smaller single-channel accuracy (D(v) only or
        CIFAR only), per seed: at chance when every index is solved by one channel alone. Needs
        the network to have used each channel at some index (a single-channel accuracy >= 0.6 on
        average over the seeds), else it never switched and the claim says nothing."""
        dv, cifar = np.asarray(r.acc_dv), np.asarray(r.acc_cifar)
        return dict(
            **self._fig3_interval(r, np.minimum(dv, cifar).max(axis=1)),
            **self._fig3_common(m, r),
            preconditions={
                f"{m} fitted its training sets at every NAD index": r.fitted(threshold=FIT),
                f"{m} used the D(v) channel alone at some index (mean accuracy >= 0.6)": bool(dv.mean(0).max() >= 0.6),
                f"{m} used the CIFAR-10 channels alone at some index (mean accuracy >= 0.6)": bool(
                    cifar.mean(0).max() >= 0.6
                ),
            },
        )

    def cifar_late(self, m: str, r) -> dict:
        """Accuracy with all channels minus CIFAR-only accuracy at v = u_last (for a network that
        learned the problem: one at chance with and without D(v) passes the difference trivially)."""
        diff = r.values("acc_all", self.last) - r.values("acc_cifar", self.last)
        return dict(
            **self._fig3_interval(r, diff, difference=True),
            **self._fig3_common(m, r),
            **self._fig3_learned(m, r, self.last),
        )
