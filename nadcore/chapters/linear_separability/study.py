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

from nadcore.chapters.linear_separability.big_networks import BigNetworks
from nadcore.chapters.linear_separability.drawing import Drawing
from nadcore.chapters.linear_separability.quantities import BLIND, seed_mean
from nadcore.chapters.linear_separability.setting_checks import SettingChecks
from nadcore.chapters.linear_separability.sweep_evidence import SweepEvidence
from nadcore.chapters.linear_separability.sweeps import Sweeps
from nadcore.data import fourier_grid

__all__ = ["Study", "seed_mean", "BLIND"]


class Study(Sweeps, SweepEvidence, BigNetworks, SettingChecks, Drawing):
    """Chapter 3 on the settings of ``ch`` (a :class:`nadcore.book.Chapter`) with the chapter's
    ``model`` in LeNet's place: the live sweeps (:class:`Sweeps`) and their claims
    (:class:`SweepEvidence`), the big networks of the campaign bundles (:class:`BigNetworks`), the
    checks of the campaign's settings (:class:`SettingChecks`) and the figures (:class:`Drawing`)."""

    def __init__(self, ch, model: str = "lenet"):
        self.ch, self.cfg, self.model = ch, ch.cfg, model
        cfg = ch.cfg
        self.grid = fourier_grid(32, cfg["grid"])
        self.grid1 = self.grid.subgrid(cfg["fig1_every"]) if cfg["fig1_every"] > 1 else self.grid
        self.low, self.high = cfg["low"], cfg["high"]
        self.convention = f"{cfg['signal']}' D(v)".replace("paper'", "paper's") + f", {cfg['outputs']} output(s)"
        #: Fig. 2's seeds (``fig2_seeds`` of them, from the chapter's seed)
        self.fig2_seeds = ch.seeds_of("fig2_seeds")
        self.run = dict(
            seeds=ch.seeds,
            chunk=cfg["chunk"],
            balance=cfg["workers"],
            executor=ch.executor(),
            cache=ch.cache,
            device=str(ch.device),
            outputs=cfg["outputs"],
        )
