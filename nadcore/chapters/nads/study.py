"""Chapter 2's computations on one chapter run's settings: the page calls one method per paper
quantity (``study.model_estimates()``, ``study.overlap_table(...)``) and one evidence method per
claim, which returns the keywords of ``ch.claim`` (the measured interval, the networks behind it,
the settings).

:class:`Study` holds what every estimate of the chapter shares (the settings, the model under
study, the networks per estimator, the seed, the cache, the device) so that the page shows the
science and not the plumbing. The NADs are cached jobs (:func:`nadcore.book.nad_jobs.cached_nads`),
the Fig. 5 against Fig. 1 summaries and the width study those of
:mod:`nadcore.chapters.nads.quantities`, the figures those of :mod:`nadcore.chapters.nads.figures`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from nadcore import nads
from nadcore.book.evidence import exact_value, jackknife_interval
from nadcore.book.nad_jobs import cached_nads
from nadcore.book.settling import hours_per_run
from nadcore.chapters.nads import figures as plots
from nadcore.chapters.nads import quantities as nq
from nadcore.data import low_frequency_fraction
from nadcore.nads.published import PUBLISHED_NETWORKS, load_published_nads
from nadcore.nets import PUBLISHED_NAMES

__all__ = ["Study", "SUPPORT_NETWORKS"]

#: the networks whose published NADs are read against their published Fig. 1 maps
SUPPORT_NETWORKS = ("lenet", "resnet18", "vgg11", "densenet121")


class Study:
    """Chapter 2 on the settings of ``ch`` (a :class:`nadcore.book.Chapter`) with the chapter's
    ``model`` as the model under study."""

    def __init__(self, ch, model: str = "lenet"):
        self.ch, self.cfg, self.model = ch, ch.cfg, model
        cfg = ch.cfg
        #: networks per estimator for the model under study (LeNet's where the settings do not name it)
        self.counts = {
            m: cfg[f"{m}_networks"].get(model, cfg[f"{m}_networks"]["lenet"]) for m in ("secant", "gradient")
        }
        self.ks = list(nads.OVERLAP_KS)
        #: the fresh networks of eq. (6): ``volume_networks``, at most the gradient estimate's
        self.fresh_networks = min(cfg["volume_networks"], self.counts["gradient"])

    # ------------------------------------------------------------------ estimates
    def estimate(
        self, arch: str, method: str, n: int, points: int = 1, running: bool = False, precision: str | None = None
    ):
        """Chapter 2's NADs (cached); ``running``: with running estimates at the checkpoints; the
        secant in the profile's ``secant_precision`` for ``arch`` unless ``precision`` is given."""
        ch = self.ch
        return cached_nads(
            arch,
            method,
            n,
            ch.seed,
            cache=ch.cache,
            device=ch.device,
            points=points,
            checkpoints=[c for c in self.cfg["convergence"] if c < n] if running else None,
            precision=precision or ch.nad_precision(arch, method),
        )

    def model_estimates(self) -> dict:
        """The model's secant NADs and exact-gradient NADs at the authors' single evaluation point
        and the exact-gradient NADs over ``gradient_points`` points, with running estimates:
        name -> NADResult."""
        points = self.cfg["gradient_points"]
        secant = self.estimate(self.model, "secant", self.counts["secant"], running=True)
        gradient = self.estimate(self.model, "gradient", self.counts["gradient"], running=True)
        gradient_pts = self.estimate(self.model, "gradient", self.counts["gradient"], points, running=True)
        return {"secant": secant, "gradient": gradient, f"gradient, {points} points": gradient_pts}

    @staticmethod
    def cost_table(estimates: dict) -> pd.DataFrame:
        """Per estimate: networks, evaluation points, networks per second and device."""
        return pd.DataFrame(
            {
                name: {
                    "networks": r.meta["networks"],
                    "points": r.meta["points"],
                    "networks/s": round(r.meta["networks_per_second"], 1),
                    "device": r.meta["device"],
                }
                for name, r in estimates.items()
            }
        ).T

    def published(self, arch: str | None = None):
        """The authors' published NADs of ``arch`` (default: the model), None if there are none."""
        arch = arch or self.model
        return load_published_nads(arch) if arch in PUBLISHED_NAMES else None

    @staticmethod
    def views(estimates: dict, published=None) -> dict:
        """The model's estimates, labelled as ours, and the published NADs (if any)."""
        views = {f"{name} (ours)": r for name, r in estimates.items()}
        if published is not None:
            views["published (authors)"] = published
        return views

    def draw_model_nads(self, views: dict, indices=(0, 1, 2, 3, 4)):
        """The model's first NADs in pixel space and Fourier energy (figure data "fig5_model")."""
        fig = plots.nad_grid(
            views, indices=indices, title=f"First NADs of {self.model}: pixel space (top) and Fourier energy (bottom)"
        )
        self.ch.figure_data("fig5_model", plots.nads_table(views, indices))
        return fig

    # ------------------------------------------------------------------ overlaps and convergence
    def overlap_row(self, r, other) -> dict:
        """Top-k overlaps of the estimate ``r`` with the NADs ``other``, with 95% jackknife
        intervals over ``r``'s Monte Carlo groups (NaN where k exceeds ``r``'s networks), as text."""
        out = {}
        for k in self.ks:
            v, lo, hi = nads.overlap_interval(r, other, k) if k <= r.meta["networks"] else (np.nan,) * 3
            out[f"k={k}"] = f"{v:.3f} [{lo:.3f}, {hi:.3f}]" if np.isfinite(lo) else f"{v:.3f}"
        return out

    def overlap_table(self, estimates: dict, published=None) -> pd.DataFrame:
        """Top-k subspace overlaps: secant against gradient, every estimate against the published
        NADs (with jackknife intervals) and the chance level k/D, as text."""
        secant, gradient = estimates["secant"], estimates["gradient"]
        ks = self.ks
        rows = {"secant vs gradient": {f"k={k}": f"{nads.identifiable_overlap(secant, gradient, k):.3f}" for k in ks}}
        if published is not None:
            rows.update({f"{name} vs published": self.overlap_row(r, published.nads) for name, r in estimates.items()})
        rows["chance (k/D)"] = {f"k={k}": f"{k / secant.nads.shape[1]:.3f}" for k in ks}
        return pd.DataFrame(rows).T

    @staticmethod
    def published_overlap(r, published):
        """The top-16 overlap of ``r`` with the published NADs, with its jackknife interval."""
        return jackknife_interval(*nads.overlap_interval(r, published.nads, 16), nads.GROUPS, bounds=(0, 1))

    @staticmethod
    def group_hours(r) -> float | None:
        """The hours of one more Monte Carlo group of the estimate ``r`` (its sampling time over
        its groups, as measured when it ran)."""
        return hours_per_run(r.meta.get("sampling_seconds", np.nan), nads.GROUPS)

    def secant_published(self, secant, published) -> dict:
        """The keywords of ``fig5-secant-published``."""
        n = self.counts["secant"]
        return dict(
            interval=self.published_overlap(secant, published),
            networks=n,
            settings={"networks": n},
            hours_per_unit=self.group_hours(secant),
        )

    def gradient_published(self, gradient_pts, published) -> dict:
        """The keywords of ``sec3-gradient-published`` (the gradient over several points)."""
        n = self.counts["gradient"]
        return dict(
            interval=self.published_overlap(gradient_pts, published),
            networks=n,
            hours_per_unit=self.group_hours(gradient_pts),
            settings={"networks": n, "points": self.cfg["gradient_points"]},
        )

    def convergence_curves(self, estimates: dict, published=None) -> dict:
        """Split-half overlaps of each estimate as networks accumulate (networks per half) and,
        with the published NADs, the running secant estimate's overlap with them."""
        ks = self.ks
        curves = {
            f"{name}: split halves": (r.extras["checkpoint_networks"] // 2, r.extras["checkpoint_split_half"])
            for name, r in estimates.items()
        }
        if published is not None:
            secant = estimates["secant"]
            curves["secant: running vs published"] = (
                secant.extras["checkpoint_networks"],
                [[nads.subspace_overlap(V, published.nads, k) for k in ks] for V in secant.extras["checkpoint_nads"]],
            )
        return curves

    def dipole_volumes(self, gradient) -> pd.DataFrame:
        """Eq. (6) along the model's exact-gradient NADs ``gradient``
        (:func:`nadcore.chapters.nads.quantities.dipole_volumes`), on ``volume_networks`` fresh
        networks (:attr:`fresh_networks`): those after the estimate's, of the same seed, at the
        same evaluation point."""
        n = gradient.meta["networks"]
        fresh = range(n, n + self.fresh_networks)
        grads = nq.network_gradients(self.model, gradient.input_shape, self.ch.seed, fresh, self.ch.device)
        return nq.dipole_volumes(gradient, grads)

    def draw_dipole_volumes(self, volumes: pd.DataFrame):
        """The share of fresh networks reaching eta along the NADs, beside Markov's bound (figure
        data "eq6_volumes")."""
        self.ch.figure_data("eq6_volumes", volumes.reset_index())
        eta = float(volumes["eta"].iloc[0])
        return plots.dipole_volumes(volumes, f"Eq. (6) for {self.model}: dipole scores above eta = {eta:.3g}")

    def volume_evidence(self, volumes: pd.DataFrame) -> dict:
        """The keywords of ``eq6-volume-falls``."""
        fresh = self.fresh_networks
        return dict(
            **nq.volume_evidence(volumes, self.counts["gradient"]),
            volume_networks=fresh,
            settings={"fresh networks": fresh},
        )

    def draw_convergence(self, curves: dict):
        """The convergence panels (figure data "convergence")."""
        ks = self.ks
        fig = plots.convergence(curves, ks, xlabel="networks per estimate")
        self.ch.figure_data(
            "convergence",
            pd.DataFrame(
                [
                    {"curve": name, "networks": int(n), **{f"overlap_k{k}": float(v) for k, v in zip(ks, row)}}
                    for name, (ns, ov) in curves.items()
                    for n, row in zip(ns, ov)
                ]
            ),
        )
        return fig

    def split_half_table(self, estimates: dict) -> pd.DataFrame:
        """Split-half overlaps at the full number of networks, with the networks per half."""
        split = pd.DataFrame(
            {
                name: dict(zip([f"k={k}" for k in self.ks], r.extras["checkpoint_split_half"][-1]))
                for name, r in estimates.items()
            }
        ).T
        split.insert(0, "networks per half", [r.meta["networks"] // 2 for r in estimates.values()])
        return split

    # ------------------------------------------------------------------ the five architectures
    def gallery(self) -> tuple[dict, dict, dict]:
        """Fig. 5's architectures: secant NADs (ours where ``secant_networks`` names the
        architecture, else the published ones), exact-gradient NADs, and where each secant comes
        from: ``(secant, gradient, secant source)``, each arch -> value."""
        cfg = self.cfg
        gallery_secant, gallery_gradient, secant_source = {}, {}, {}
        for arch in cfg["architectures"]:
            n_s = cfg["secant_networks"].get(arch)
            if n_s:
                gallery_secant[arch], secant_source[arch] = self.estimate(arch, "secant", n_s), f"ours, {n_s} networks"
            elif arch in PUBLISHED_NAMES:
                gallery_secant[arch] = load_published_nads(arch)
                secant_source[arch] = f"published (authors), {PUBLISHED_NETWORKS} networks"
            gallery_gradient[arch] = self.estimate(arch, "gradient", cfg["gradient_networks"][arch])
        return gallery_secant, gallery_gradient, secant_source

    @staticmethod
    def gallery_sources(secant_source: dict, gallery_gradient: dict) -> pd.DataFrame:
        """Where each architecture's secant and gradient NADs come from."""
        return pd.DataFrame(
            {
                "secant NADs": secant_source,
                "gradient NADs": {a: f"ours, {r.meta['networks']} networks" for a, r in gallery_gradient.items()},
            }
        )

    def precision_check(self) -> str:
        """The secants that the profile runs in another precision than float32, against float32
        on the first ``precision_check_networks`` networks: their top-k overlap beside the
        float32 estimate's split-half overlap, as the text the chapter prints."""
        cfg, ks = self.cfg, self.ks
        low = {a: p for a, p in cfg["secant_precision"].items() if p != "float32" and cfg["secant_networks"].get(a)}
        if not low:
            return "every secant runs in float32 on this profile"
        n_chk, rows = cfg["precision_check_networks"], {}
        for arch, p in low.items():
            a = self.estimate(arch, "secant", n_chk, precision="float32")
            b = self.estimate(arch, "secant", n_chk, precision=p)
            rows[f"{arch}: {p} vs float32"] = {f"k={k}": nads.identifiable_overlap(a, b, k) for k in ks}
            rows[f"{arch}: float32 split halves"] = dict(zip([f"k={k}" for k in ks], a.extras["split_half"]))
        return f"{n_chk} networks per estimate\n" + pd.DataFrame(rows).T.to_string(float_format="{:.3f}".format)

    def draw_gallery(self, gallery: dict, figure: str, title: str):
        """The first three NADs of every architecture of ``gallery`` (figure data ``figure``)."""
        fig = plots.nad_grid(gallery, indices=(0, 1, 2), title=title)
        self.ch.figure_data(figure, plots.nads_table(gallery, (0, 1, 2)))
        return fig

    @staticmethod
    def spectra(gallery_secant: dict, gallery_gradient: dict) -> dict:
        """Every NAD estimate of the gallery, labelled "<arch> (secant)" or "<arch> (gradient)"."""
        return {
            **{f"{a} (secant)": r for a, r in gallery_secant.items()},
            **{f"{a} (gradient)": r for a, r in gallery_gradient.items()},
        }

    def draw_spectra(self, spectra: dict) -> tuple:
        """The normalised spectra, one figure per estimator (figure data "spectra")."""
        figs = (
            plots.spectra(
                {k: v for k, v in spectra.items() if k.endswith("(secant)")},
                title="Normalised spectra, secant estimator",
            ),
            plots.spectra(
                {k: v for k, v in spectra.items() if k.endswith("(gradient)")},
                title="Normalised spectra, gradient estimator",
            ),
        )
        self.ch.figure_data(
            "spectra",
            pd.DataFrame(
                [
                    {"set": k, "index": i, "normalised_eigenvalue": float(e)}
                    for k, r in spectra.items()
                    for i, e in enumerate(r.normalized_spectrum())
                ]
            ),
        )
        return figs

    # ------------------------------------------------------------------ Fig. 5 against Fig. 1
    def support_table(self, gallery_secant: dict) -> pd.DataFrame:
        """:func:`quantities.support_table` of the published NADs of :data:`SUPPORT_NETWORKS`,
        with a row for our secant NADs of the model where it has a published map."""
        support = nq.support_table({a: load_published_nads(a) for a in SUPPORT_NETWORKS})
        if self.model in SUPPORT_NETWORKS and self.model in gallery_secant:
            support.loc[self.ours] = nq.support_row(gallery_secant[self.model], self.model)
        return support

    @property
    def ours(self) -> str:
        """The support table's row of our secant NADs of the model."""
        return f"{self.model}, ours (secant)"

    def support_ours(self, support: pd.DataFrame) -> dict:
        """The keywords of ``fig5-support-ours``: our secant NADs of the model against its map."""
        return nq.support_evidence(support, self.ours, method="secant", network=self.model)

    @staticmethod
    def resnet_comb() -> dict:
        """The keywords of ``fig5-resnet-comb`` on the published NADs of ResNet-18."""
        return nq.comb_evidence(load_published_nads("resnet18"))

    # ------------------------------------------------------------------ sparse NADs and their order
    def own_estimate(self, arch: str, gallery_secant: dict, gallery_gradient: dict) -> tuple:
        """This build's best NADs of ``arch``: its secant NADs (the authors' procedure) where the
        profile computes them, else its exact-gradient NADs: ``(NADResult, method)``."""
        if self.cfg["secant_networks"].get(arch):
            return gallery_secant[arch], "secant"
        return gallery_gradient[arch], "gradient"

    def sparsity_table(self, gallery_secant: dict, gallery_gradient: dict) -> pd.DataFrame:
        """:func:`quantities.sparsity_table` of the published NADs of :data:`SUPPORT_NETWORKS`
        and of this build's best NADs of each (:meth:`own_estimate`)."""
        own = {a: self.own_estimate(a, gallery_secant, gallery_gradient) for a in SUPPORT_NETWORKS}
        return nq.sparsity_table(
            {
                **{f"{a} (published)": load_published_nads(a) for a in SUPPORT_NETWORKS},
                **{f"{a} (ours, {m})": r for a, (r, m) in own.items()},
            }
        )

    def not_all_sparse(self, gallery_secant: dict) -> dict:
        """The keywords of ``fig5-not-all-sparse``: the least sparse of the networks whose secant
        NADs this build computes (LogReg aside: its NADs are noise)."""
        ours = {a: r for a, r in gallery_secant.items() if a != "logreg" and self.cfg["secant_networks"].get(a)}
        return dict(nq.sparsity_evidence(ours), method="secant")

    def densenet_ordering(self, gallery_secant: dict, gallery_gradient: dict) -> dict:
        """The keywords of ``fig5-ordering-densenet121`` on this build's best DenseNet-121 NADs."""
        r, method = self.own_estimate("densenet121", gallery_secant, gallery_gradient)
        return nq.ordering_evidence(r, "densenet121", method)

    @staticmethod
    def published_ordering() -> dict:
        """The keywords of ``fig5-ordering-published`` (a check on the authors' NADs)."""
        return nq.ordering_evidence(load_published_nads("densenet121"), "densenet121", "published")

    # ------------------------------------------------------------------ reduced widths
    def width_study(self) -> dict:
        """:func:`quantities.width_study` on the profile's ``width_study`` and ``gradient_networks``."""
        return nq.width_study(self.ch, self.cfg["width_study"], self.cfg["gradient_networks"])

    @staticmethod
    def width_report(widths: dict) -> str:
        """Each big network's width table under a line that says what it holds."""
        return "\n".join(
            f"{arch}: top-k overlaps with a full-width estimate ({table.attrs['networks']} "
            f"networks each; chance k/D)\n{table.round(3).to_string()}\n"
            for arch, table in widths.items()
        )

    def width_nads(self, arch: str, table: pd.DataFrame) -> dict:
        """The keywords of ``width-nads-<arch>`` at top ``width_k``."""
        return nq.width_evidence(self.ch, arch, table, self.cfg["width_k"])

    # ------------------------------------------------------------------ logistic regression
    @staticmethod
    def marchenko_pastur(lr) -> dict:
        """LogReg's eigenvalues in units of the true covariance's (I / (3 D) for
        U(-1/sqrt(D), 1/sqrt(D)) weights) and the Marchenko-Pastur edges of its networks:
        ``lam``, ``lo_edge``, ``hi_edge``."""
        ratio = np.sqrt(1024 / lr.meta["networks"])
        lam = lr.eigenvalues * 3 * 1024
        return dict(lam=lam, lo_edge=max(0, 1 - ratio) ** 2, hi_edge=(1 + ratio) ** 2)

    def marchenko_pastur_report(self, lr) -> str:
        """One line: the span of LogReg's eigenvalues beside the Marchenko-Pastur edges."""
        mp = self.marchenko_pastur(lr)
        return (
            f"LogReg, {lr.meta['networks']} networks: eigenvalues / (1/3D) span "
            f"[{mp['lam'].min():.2f}, {mp['lam'].max():.2f}]; "
            f"Marchenko-Pastur edges [{mp['lo_edge']:.2f}, {mp['hi_edge']:.2f}]"
        )

    def logreg_isotropic(self, lr) -> dict:
        """The keywords of ``logreg-isotropic``: the largest eigenvalue over the upper edge."""
        mp = self.marchenko_pastur(lr)
        return dict(
            interval=exact_value(mp["lam"].max() / mp["hi_edge"], "spectrum edge"),
            networks=lr.meta["networks"],
            settings={"networks": lr.meta["networks"]},
        )

    # ------------------------------------------------------------------ secant or gradient
    def estimator_comparison(self, gallery_secant: dict, gallery_gradient: dict, secant_source: dict) -> pd.DataFrame:
        """Per architecture: where its secant NADs come from, the top-k overlaps of the secant and
        gradient NADs, and the low-frequency share of the first three NADs of each."""
        return pd.DataFrame(
            {
                arch: {
                    "secant source": secant_source.get(arch, "-"),
                    **{
                        f"overlap k={k}": (
                            nads.identifiable_overlap(gallery_secant[arch], g, k) if arch in gallery_secant else np.nan
                        )
                        for k in self.ks
                    },
                    "low-freq secant": (
                        np.mean([low_frequency_fraction(gallery_secant[arch].nads[i]) for i in range(3)])
                        if arch in gallery_secant
                        else np.nan
                    ),
                    "low-freq gradient": np.mean([low_frequency_fraction(g.nads[i]) for i in range(3)]),
                }
                for arch, g in gallery_gradient.items()
            }
        ).T

    @staticmethod
    def logreg_agreement(gallery_secant: dict, gallery_gradient: dict) -> dict:
        """The keywords of ``logreg-secant-equals-gradient``: LogReg's top-16 overlap of the two
        estimators (the same networks)."""
        return dict(
            networks=gallery_secant["logreg"].meta["networks"],
            interval=exact_value(
                nads.subspace_overlap(gallery_secant["logreg"].nads, gallery_gradient["logreg"].nads, 16),
                "same networks",
            ),
        )
