"""Chapter 6's experiments on one chapter run's settings: the page calls one method per paper
quantity (``study.fig1_maps()``, ``study.dynamics(...)``) and one evidence method per claim,
which returns the keywords of ``ch.claim`` (the measured values or interval, the values the
claim's placeholders name, the budget, the preconditions, the settings).

:class:`Study` holds what every run of the chapter shares (the settings on the profile and on
the paper's, the seeds, the executor, the cache, the device) so that the page shows the science
and not the plumbing. The runs and summaries are those of :mod:`nadcore.chapters.open_questions.runs`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from nadcore import nads
from nadcore.book.evidence import accuracy_interval, exact_value, fisher_interval
from nadcore.book.nad_jobs import cached_nads
from nadcore.book.runner import Job, run_jobs
from nadcore.book.settling import hours_per_run
from nadcore.chapters.linear_separability.runs import grid_sweep
from nadcore.chapters.nads import figures as nadplots
from nadcore.chapters.open_questions import figures as plots
from nadcore.chapters.open_questions import runs as oq
from nadcore.data import cifar, fourier_basis_vector, fourier_directions
from nadcore.nets import build_model, spec_key
from nadcore.runtime import generator
from nadcore.train.budget import cifar_budget, steps_per_run

__all__ = ["Study", "Bases", "stack", "D", "LEMMA2_KS"]

#: the number of pixels of a one-channel 32x32 image
D = 32 * 32
#: the subspace sizes k at which the two bases of Lemma 2 are compared
LEMMA2_KS = [1, 4, 16, 64]
#: the NAD indices drawn in the NAD figures
FIRST_FOUR = (0, 1, 2, 3)


class Bases(NamedTuple):
    """Per seed, one basis of the input space (rows); ``hours_per_seed``: what one more seed's
    estimate costs, measured by its jobs when they ran (None where this build did not run them)."""

    vectors: list
    hours_per_seed: float | None


def stack(res, key: str) -> np.ndarray:
    """The arrays ``key`` of per-seed job results ``res`` stacked: (seeds, epochs + 1, ...)."""
    return np.stack([a[key] for a in res])


class Study:
    """Chapter 6 on the settings of ``ch`` (a :class:`nadcore.book.Chapter`) with the chapter's
    ``model`` in LeNet's place for questions 2, 3 and 5; ``data_root`` and ``subset_root``: where
    CIFAR-10 is found (:func:`nadcore.data.cifar.load_cifar10`)."""

    def __init__(self, ch, model: str = "lenet", data_root=None, subset_root=None):
        self.ch, self.cfg, self.model = ch, ch.cfg, model
        self.data_root, self.subset_root = data_root, subset_root
        self.run = dict(executor=ch.executor(), cache=ch.cache)
        self.grid = oq.quadrant_grid(self.cfg["grid_ticks"])

    # ------------------------------------------------------------------ shared
    def gradient_nads(self, spec: str, seed: int, networks: int | None = None):
        """Gradient NADs of a one-channel ``spec``: ``networks`` (default ``nad_networks``)
        networks of ``seed`` (cached)."""
        n = self.cfg["nad_networks"] if networks is None else networks
        return cached_nads(spec, "gradient", n, seed=seed, device=self.ch.device, cache=self.ch.cache)

    def dv_settings(self, paper: bool = False) -> dict:
        """D(v) and its SGD recipe on this profile, or on the paper's (``paper=True``)."""
        c = self.ch.paper_cfg if paper else self.cfg
        return {**c["dv"], **c["dv_train"]}

    def budget(self) -> dict:
        """SGD steps of one D(v) run here and in the paper (a claim's ``steps``, ``paper_steps``)."""
        return dict(steps=steps_per_run(self.dv_settings()), paper_steps=steps_per_run(self.dv_settings(True)))

    def cifar_budget(self, data) -> dict:
        """The budget of one binary CIFAR-10 run on ``data`` here and in the paper
        (:func:`nadcore.train.budget.cifar_budget`)."""
        train = self.cfg["cifar_train"], self.ch.paper_cfg["cifar_train"]
        return cifar_budget(*train, data.description, self.cfg.get("max_train"))

    # ------------------------------------------------------------------ Q1: downsampling
    def variants_table(self) -> pd.DataFrame:
        """The LeNet variants of question 1: label, model spec and number of parameters."""
        return pd.DataFrame(
            [
                {"variant": label, "model": spec, "parameters": sum(p.numel() for p in build_model(spec).parameters())}
                for label, spec in self.cfg["variants"].items()
            ]
        )

    def variant_nads(self) -> dict:
        """Gradient NADs of every LeNet variant (the chapter's seed)."""
        return {label: self.gradient_nads(spec, self.ch.seed) for label, spec in self.cfg["variants"].items()}

    def draw_variant_nads(self, nad_sets: dict):
        fig = nadplots.nad_grid(
            nad_sets, indices=FIRST_FOUR, title=f"First gradient NADs of the LeNet variants (seed {self.ch.seed})"
        )
        self.ch.figure_data("nads_variants", oq.nad_table(nad_sets, FIRST_FOUR, seed=self.ch.seed))
        return fig

    def draw_variant_spectra(self, nad_sets: dict):
        fig = nadplots.spectra(nad_sets, title="Normalised eigenvalues of the gradient covariance")
        self.ch.figure_data("nad_spectra", oq.spectra_table({k: [r] for k, r in nad_sets.items()}, [self.ch.seed]))
        return fig

    def fig1_maps(self) -> dict:
        """Fig.-1 maps of every variant on the quadrant grid (transposed cells mirrored): the
        :func:`grid_sweep` result per variant."""
        maps = {
            label: grid_sweep(
                spec,
                self.grid,
                self.dv_settings(),
                seeds=self.ch.seeds,
                chunk=self.cfg["chunk"],
                device=str(self.ch.device),
                transpose_symmetric=True,
                balance=self.cfg["workers"],
                **self.run,
            )
            for label, spec in self.cfg["variants"].items()
        }
        return maps

    def map_hours(self, maps: dict) -> float | None:
        """Hours of one more seed of the max-pool map (the runs behind the alpha(v) claims)."""
        return hours_per_run(maps["max-pool"]["compute_seconds"], len(self.ch.seeds))

    def draw_fig1_maps(self, maps: dict):
        fig = plots.quadrant_maps(
            {label: r["test_acc"].mean(0) for label, r in maps.items()},
            self.grid,
            title=f"Test accuracy on D(v), v a Fourier direction ({self.ch.profile} profile)",
        )
        self.ch.figure_data("fig1_maps", oq.map_table(maps, self.grid, self.ch.seeds))
        return fig

    def map_summaries(self, maps: dict) -> dict:
        """:func:`runs.map_summary` of every variant's map (off-centre cells and islands as set)."""
        return {
            label: oq.map_summary(r["test_acc"], self.grid, self.cfg["off_centre"], self.cfg["island"])
            for label, r in maps.items()
        }

    # ------------------------------------------------------------------ Q1 evidence
    def maxpool_islands(self, summ: dict) -> dict:
        mp = summ["max-pool"]
        return dict(
            values=mp["islands"],
            **self.budget(),
            preconditions={"max-pool learned some direction in every seed": bool(mp["learned"].all())},
        )

    def blur_removes_islands(self, summ: dict) -> dict:
        mp, blur = summ["max-pool"], summ["blur-pool"]
        return dict(
            values=blur["islands"],
            **self.budget(),
            preconditions={
                "max-pool has islands to remove (mean share >= 0.05)": bool(mp["islands"].mean() >= 0.05),
                "blur-pool learned some direction in every seed": bool(blur["learned"].all()),
            },
        )

    def blur_below_avg(self, summ: dict) -> dict:
        return dict(values=summ["blur-pool"]["off_centre"] - summ["average pool"]["off_centre"], **self.budget())

    def strided_islands(self, summ: dict) -> dict:
        mp, strided = summ["max-pool"], summ["strided conv"]
        learned = bool(strided["learned"].all()) and bool(mp["learned"].all())
        return dict(
            values=strided["islands"] - mp["islands"],
            **self.budget(),
            preconditions={"both networks learned some direction": learned},
        )

    def strided_isotropic(self, summ: dict) -> dict:
        strided = summ["strided conv"]
        return dict(
            values=strided["gap"],
            **self.budget(),
            preconditions={"the strided network learned some direction": bool(strided["learned"].all())},
        )

    # ------------------------------------------------------------------ Q2: NADs during training
    def dynamics_direction(self) -> np.ndarray:
        """The Fourier direction v of question 2's D(v)."""
        return fourier_basis_vector(*self.cfg["dynamics_direction"]).numpy()

    def data_spec(self) -> dict:
        """How a worker loads the chapter's CIFAR-10."""
        return {
            "root": self.data_root,
            "subset_root": self.subset_root,
            "max_train": self.cfg["max_train"],
            "max_test": self.cfg["max_test"],
        }

    def cifar_data(self):
        """CIFAR-10's images, at most ``max_train``/``max_test`` of them."""
        return cifar.load_cifar10(
            self.data_root, self.subset_root, max_train=self.cfg["max_train"], max_test=self.cfg["max_test"]
        )

    def reference_nads(self):
        """The architecture's NADs (``reference_nads`` source) and where they come from."""
        return self.ch.nads(self.model, source=self.cfg["reference_nads"])

    def dynamics(self, basis, data) -> tuple[list, list]:
        """The per-seed results of :func:`runs.dv_dynamics_job` (D(v), compared with the first
        NADs of ``basis``) and :func:`runs.cifar_dynamics_job` (binary CIFAR-10 ``data``, the
        complete basis removed from its test images)."""
        U = nads.complete_basis(basis.nads)
        reference = U[: max(self.cfg["overlap_ks"])]
        dv_jobs, cifar_jobs = oq.dynamics_jobs(
            self.model,
            self.ch.seeds,
            self.cfg,
            self.dynamics_direction(),
            reference,
            U,
            data,
            device=str(self.ch.device),
            data_spec=self.data_spec(),
        )
        dv_res = [a for a, _ in run_jobs(dv_jobs, oq.dv_dynamics_job, **self.run)]
        cf_res = [a for a, _ in run_jobs(cifar_jobs, oq.cifar_dynamics_job, **self.run)]
        return dv_res, cf_res

    def tasks(self, dv_res: list, cf_res: list) -> dict:
        """The two tasks of question 2 by name: D(v) first, then binary CIFAR-10."""
        return {f"D(v), v = Fourier {tuple(self.cfg['dynamics_direction'])}": dv_res, "binary CIFAR-10": cf_res}

    def draw_dynamics(self, tasks: dict):
        ks = self.cfg["overlap_ks"]
        dims = {name: d for name, d in zip(tasks, (D, 3 * D))}
        fig = plots.dynamics_curves(
            {name: stack(res, "overlap_initial") for name, res in tasks.items()},
            ks,
            chance={name: [k / dims[name] for k in ks] for name in tasks},
            ylabel="overlap with the initial NADs",
            title="How far the network's NADs move from those at initialisation",
        )
        self.ch.figure_data("nads_during_training", oq.dynamics_table(tasks, self.ch.seeds, ks))
        return fig

    def draw_dv_dynamics(self, tasks: dict):
        """The share of v in the first NADs and their overlap with the architecture's NADs."""
        dv_res = next(iter(tasks.values()))
        ks = self.cfg["overlap_ks"]
        return plots.dynamics_curves(
            {
                "share of v in the top-k NADs": stack(dv_res, "captured_v"),
                "overlap with the architecture's NADs": stack(dv_res, "overlap_reference"),
            },
            ks,
            chance=[k / D for k in ks],
            ylabel="share / overlap",
            title=next(iter(tasks)),
        )

    def dynamics_summary(self, tasks: dict) -> pd.DataFrame:
        """:func:`runs.dynamics_summary` at the ``overlap_ks``."""
        return oq.dynamics_summary(tasks, self.cfg["overlap_ks"])

    def dv_turns_to_v(self, dv_res: list) -> dict:
        return dict(
            values=stack(dv_res, "captured_v")[:, -1, 0],
            **self.budget(),
            preconditions={
                "D(v) learned (test accuracy >= 0.6 for every seed)": bool(
                    stack(dv_res, "test_acc")[:, -1].min() >= 0.6
                )
            },
        )

    def cifar_nads_persist(self, cf_res: list, data) -> dict:
        return dict(
            values=stack(cf_res, "overlap_initial")[:, -1, -1],
            **self.cifar_budget(data),
            k_max=max(self.cfg["overlap_ks"]),
            preconditions={
                "the network learned (test accuracy >= 0.55 for every seed)": bool(
                    stack(cf_res, "test_acc")[:, -1].min() >= 0.55
                )
            },
        )

    # ------------------------------------------------------------------ Q3: removing directions
    def removal(self, cf_res: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per seed: the accuracy and the energy removed (seeds, len(REMOVALS), len(removal_ks))
        and the clean test accuracy (seeds,)."""
        return tuple(stack(cf_res, k) for k in ("removal_acc", "removal_energy", "clean_acc"))

    def removal_summary(self, removal, energy) -> pd.DataFrame:
        """:func:`runs.removal_summary` at the ``removal_ks``."""
        return oq.removal_summary(removal, energy, self.cfg["removal_ks"])

    def draw_removal(self, removal, energy, clean):
        rk = self.cfg["removal_ks"]
        fig = plots.removal_curves(
            rk,
            {n: removal[:, i] for i, n in enumerate(oq.REMOVALS)},
            {n: energy[:, i] for i, n in enumerate(oq.REMOVALS)},
            clean,
            title=f"Trained {self.model} on binary CIFAR-10: removing directions from the test images",
        )
        self.ch.figure_data("removal", oq.removal_table(removal, energy, self.ch.seeds, rk))
        return fig

    def _removal_evidence(self, cf_res: list, k: int, basis, data, control: str) -> dict:
        """The accuracy after removing ``k`` of the ``control`` directions minus that after
        removing the first ``k`` NADs, as a claim's keywords."""
        removal, _, clean = self.removal(cf_res)
        j = self.cfg["removal_ks"].index(k)
        first, other = (removal[:, oq.REMOVALS.index(n), j] for n in ("first NADs", control))
        above = {"the trained network beats chance (clean accuracy >= 0.55 for every seed)": bool(clean.min() >= 0.55)}
        return dict(
            interval=accuracy_interval(other - first, data.description["n_test"], difference=True),
            **self.cifar_budget(data),
            networks=basis.meta.get("networks"),
            k_removed=k,
            preconditions=above,
        )

    def first_vs_last(self, cf_res: list, k: int, basis, data) -> dict:
        return self._removal_evidence(cf_res, k, basis, data, "last NADs")

    def beyond_energy(self, cf_res: list, k: int, basis, data) -> dict:
        return self._removal_evidence(cf_res, k, basis, data, "data PCs")

    # ------------------------------------------------------------------ Q4: skip connections
    def skip_nads(self) -> dict:
        """Gradient NADs of the networks with and without skips, one per seed
        (``skip_nad_networks`` networks each)."""
        n = self.cfg["skip_nad_networks"]
        return {
            label: [self.gradient_nads(spec, s, n) for s in self.ch.seeds]
            for label, spec in self.cfg["resnets"].items()
        }

    def draw_skip_nads(self, res_nads: dict):
        firsts = {label: r[0] for label, r in res_nads.items()}
        fig = nadplots.nad_grid(
            firsts,
            indices=FIRST_FOUR,
            title=f"First gradient NADs with and without skip connections (seed {self.ch.seed})",
        )
        self.ch.figure_data("nads_skip", oq.nad_table(firsts, FIRST_FOUR, seed=self.ch.seed))
        return fig

    def draw_skip_spectra(self, res_nads: dict):
        fig = nadplots.spectra(
            {label: r[0] for label, r in res_nads.items()},
            title="Normalised NAD spectra with and without skip connections",
        )
        self.ch.figure_data("skip_spectra", oq.spectra_table(res_nads, self.ch.seeds, name="network"))
        return fig

    def skip_spectra(self, res_nads: dict) -> pd.DataFrame:
        """:func:`runs.spectrum_summary` per network and seed."""
        return pd.DataFrame(
            [
                {"network": label, "seed": s, **oq.spectrum_summary(r.eigenvalues, r.nads)}
                for label, rs in res_nads.items()
                for s, r in zip(self.ch.seeds, rs)
            ]
        )

    def skip_overlap(self, res_nads: dict) -> np.ndarray:
        """Per seed, the overlap of the NADs with and without skips at ``nads.OVERLAP_KS``."""
        return np.array(
            [[nads.subspace_overlap(a.nads, b.nads, k) for k in nads.OVERLAP_KS] for a, b in zip(*res_nads.values())]
        )

    def split_half(self, res_nads: dict) -> dict:
        """Per network, the split-half overlaps of its NAD estimates (seeds, len(OVERLAP_KS))."""
        return {label: np.array([r.extras["split_half"] for r in rs]) for label, rs in res_nads.items()}

    def skip_spectrum_table(self, spectra: pd.DataFrame) -> pd.DataFrame:
        """Means over seeds of the spectrum summaries, per network."""
        return (
            spectra.groupby("network")[["top_k", "low_frequency", "first_low"]]
            .mean()
            .rename(
                columns={
                    "top_k": "share in top 16",
                    "low_frequency": "low-frequency share",
                    "first_low": "NAD 0 low-frequency share",
                }
            )
        )

    def skip_overlap_table(self, skip_overlap, split_half: dict) -> pd.DataFrame:
        """Means over seeds of the overlaps with and without skips beside the split-half ones and
        chance, one column per k."""
        return pd.DataFrame(
            {
                "with vs without skips": skip_overlap.mean(0),
                **{f"split-half, {label}": sh.mean(0) for label, sh in split_half.items()},
                "chance k/D": np.array(nads.OVERLAP_KS) / D,
            },
            index=[f"k={k}" for k in nads.OVERLAP_KS],
        ).T

    def skip_high_frequency(self, spectra: pd.DataFrame) -> dict:
        low = {
            label: spectra.loc[spectra["network"] == label, "low_frequency"].to_numpy() for label in self.cfg["resnets"]
        }
        labels = list(self.cfg["resnets"])
        return dict(values=low[labels[0]] - low[labels[1]], trained=False, networks=self.cfg["skip_nad_networks"])

    def skip_changes_nads(self, skip_overlap, split_half: dict) -> dict:
        n = self.cfg["skip_nad_networks"]
        with_skip = list(self.cfg["resnets"])[0]
        return dict(
            values=skip_overlap[:, 2] - split_half[with_skip][:, 2],
            trained=False,
            networks=n,
            settings={"skip_nad_networks": n},
        )

    # ------------------------------------------------------------------ Q5: the mixed Hessian
    def linear_pooling_check(self) -> dict:
        """:func:`runs.linear_pooling_check` on the profile's linear model of pooling."""
        c = self.cfg
        return oq.linear_pooling_check(
            c["linear_D"], c["linear_S"], c["linear_sigmas"], c["linear_draws"], generator(self.ch.seed, 61)
        )

    def eq4_eq5_exact(self, check: dict) -> dict:
        return dict(interval=exact_value(check["exact"], "exact (autograd sums over basis vectors)"))

    def eq4_eq5_monte_carlo(self, check: dict) -> dict:
        draws = self.cfg["linear_draws"]
        return dict(
            interval=exact_value(check["monte_carlo"], "Monte Carlo average"),
            mc_tolerance=round(12 / np.sqrt(draws), 4),
            settings={"linear_draws": draws},
        )

    def mixed_hessian_bases(self) -> Bases:
        """Per seed, the top eigenvectors of the mixed-Hessian Gram of the chapter's model from
        ``hessian_networks`` networks (:func:`runs.mixed_moments_job`)."""
        jobs = [
            Job(
                {
                    **spec_key(self.model),
                    "networks": self.cfg["hessian_networks"],
                    "seed": s,
                    "input_shape": [1, 32, 32],
                }
            )
            for s in self.ch.seeds
        ]
        res = run_jobs(jobs, oq.mixed_moments_job, **self.run)
        return Bases(
            [nads.top_eigenvectors(a["mixed"], max(LEMMA2_KS))[1] for a, _ in res],
            hours_per_run([m.get("seconds", np.nan) for _, m in res], len(res)),
        )

    def gradient_bases(self) -> Bases:
        """Per seed, the gradient NADs of the chapter's model."""
        found = [self.gradient_nads(self.model, s) for s in self.ch.seeds]
        seconds = [r.meta.get("sampling_seconds", np.nan) for r in found]
        return Bases([r.nads for r in found], hours_per_run(seconds, len(found)))

    def lemma2_overlap(self, mixed_basis: Bases, grad_basis: Bases) -> np.ndarray:
        """Per seed, the overlap of the two bases of Lemma 2 at :data:`LEMMA2_KS`."""
        pairs = zip(mixed_basis.vectors, grad_basis.vectors)
        return np.array([[nads.subspace_overlap(M, G, k) for k in LEMMA2_KS] for M, G in pairs])

    def draw_lemma2_bases(self, mixed_basis: Bases, grad_basis: Bases):
        bases = {"gradient NADs": grad_basis.vectors[0], "mixed Hessian": mixed_basis.vectors[0]}
        fig = nadplots.nad_grid(
            bases, indices=FIRST_FOUR, title=f"{self.model}: the two bases of Lemma 2 (seed {self.ch.seed})"
        )
        self.ch.figure_data("lemma2_bases", oq.nad_table(bases, FIRST_FOUR, seed=self.ch.seed))
        return fig

    def draw_lemma2_overlap(self, hess_overlap):
        fig = plots.overlap_vs_k(
            {"mixed Hessian vs gradient NADs": (LEMMA2_KS, hess_overlap)},
            D,
            title=f"{self.model}: overlap of the two bases of Lemma 2 (one line per seed)",
        )
        self.ch.figure_data("mixed_hessian_overlap", oq.overlap_table(hess_overlap, self.ch.seeds, LEMMA2_KS, D))
        return fig

    def lemma2_overlap_table(self, hess_overlap) -> pd.DataFrame:
        """The overlap of the two bases per k (mean over seeds) beside chance k/D."""
        return pd.DataFrame(
            {"k": LEMMA2_KS, "overlap (mean over seeds)": hess_overlap.mean(0), "chance k/D": np.array(LEMMA2_KS) / D}
        )

    def _hessian_evidence(self, values, hours, **settings) -> dict:
        n = self.cfg["hessian_networks"]
        return dict(
            values=values,
            hours_per_unit=None if None in hours else sum(hours),
            trained=False,
            networks=n,
            paper_networks=self.ch.paper_cfg["hessian_networks"],
            settings={"hessian_networks": n, **settings},
        )

    def lenet_aligned(self, hess_overlap, mixed_basis: Bases, grad_basis: Bases) -> dict:
        hours = [mixed_basis.hours_per_seed, grad_basis.hours_per_seed]
        return self._hessian_evidence(hess_overlap[:, 1], hours, nad_networks=self.cfg["nad_networks"])

    def stability_table(self, k: int = 4) -> pd.DataFrame:
        """:func:`runs.stability_table` of the chapter's model (``hessian_networks`` networks)."""
        return oq.stability_table(self.model, self.cfg["hessian_networks"], self.ch.seeds, k=k, **self.run)

    def gradient_more_stable(self, stability: pd.DataFrame, mixed_basis: Bases, k: int = 4) -> dict:
        twice = [mixed_basis.hours_per_seed] * 2  # two estimates of both bases per seed
        return self._hessian_evidence(stability["gradient"] - stability["mixed Hessian"], twice, k=k)

    # ------------------------------------------------------------------ Q6: alpha(v)
    def alphas(self, nad_sets: dict, lenet_ref) -> dict:
        """alpha(v) (eq. (2)) on every cell of the grid for every variant's gradient NADs and for
        max-pool LeNet's ``reference_nads`` (``lenet_ref``)."""
        cells = fourier_directions(self.grid).numpy().reshape(len(self.grid.frequencies), -1)
        alphas = {label: oq.alpha(r.eigenvalues, r.nads, cells) for label, r in nad_sets.items()}
        alphas["max-pool, " + self.cfg["reference_nads"]] = oq.alpha(lenet_ref.eigenvalues, lenet_ref.nads, cells)
        return alphas

    def alpha_accuracies(self, alphas: dict, maps: dict) -> dict:
        """The test accuracy (seeds, cells) of the network behind each set of ``alphas``."""
        return {label: maps[label.split(",")[0]]["test_acc"].reshape(len(self.ch.seeds), -1) for label in alphas}

    def draw_alpha(self, alphas: dict, accs: dict):
        fig = plots.alpha_scatter(
            {label: (alphas[label], accs[label].mean(0)) for label in alphas},
            title="Eq. (2) of the underspecification paper against the Fig.-1 maps",
        )
        self.ch.figure_data("alpha_vs_accuracy", oq.alpha_table(alphas, accs, self.ch.seeds, self.grid))
        return fig

    def alpha_rho(self, alphas: dict, accs: dict) -> dict:
        """Per NAD set, Spearman's correlation of alpha(v) and the accuracy over the grid, per seed."""
        return {label: np.array([oq.spearman(alphas[label], a) for a in accs[label]]) for label in alphas}

    def pooled_rho(self, alphas: dict, accs: dict, nad_sets: dict) -> list:
        """Per seed, Spearman's correlation over the cells of all variants pooled (gradient alpha)."""
        return [
            oq.spearman(
                np.concatenate([alphas[name] for name in nad_sets]),
                np.concatenate([accs[name][i] for name in nad_sets]),
            )
            for i in range(len(self.ch.seeds))
        ]

    def alpha_gradient(self, rho: dict, maps: dict) -> dict:
        return dict(
            interval=fisher_interval(rho["max-pool"]),
            **self.budget(),
            hours_per_unit=self.map_hours(maps),
            cells=len(self.grid.frequencies),
            networks=self.cfg["nad_networks"],
        )

    def alpha_secant(self, rho: dict, lenet_ref, maps: dict) -> dict:
        return dict(
            interval=fisher_interval(rho["max-pool, " + self.cfg["reference_nads"]]),
            **self.budget(),
            hours_per_unit=self.map_hours(maps),
            cells=len(self.grid.frequencies),
            networks=lenet_ref.meta.get("networks"),
        )
