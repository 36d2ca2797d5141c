"""Chapter 1's quantities on one chapter run's settings: the page calls one function per paper
quantity (the Monte Carlo check of Theorem 1, Fig. 4b's training runs, their convergence table)
and one evidence function per claim, named after the claim, which returns the keywords of
``ch.claim`` (the measured value or values, the values the claim's placeholders name, the
budget, the settings).

The closed forms are those of :mod:`nadcore.theory.pooling` and
:mod:`nadcore.theory.linear_pooling`, the simulation that of
:mod:`nadcore.chapters.pooling.runs`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from nadcore.book.evidence import exact_value
from nadcore.chapters.pooling.runs import compare_theorem1_monte_carlo
from nadcore.runtime import generator
from nadcore.theory.linear_pooling import convergence_iteration, train_linear_pooling_model

__all__ = [
    "rounding_bound",
    "thm1_anisotropic",
    "thm1_blind",
    "fig4a_monte_carlo",
    "monte_carlo_table",
    "thm1_monte_carlo",
    "lemma1_hessian",
    "fig4b_runs",
    "fig4b_curves",
    "convergence_iterations",
    "fig4b_table",
    "fig4b_zeta_speed",
    "escape_slope",
    "fig4b_summary",
]

#: the columns of the Monte Carlo check of Theorem 1 the chapter prints (one noise level)
MC_COLUMNS = ["ell", "closed_form", "exact", "mc", "stderr", "z"]


def rounding_bound(residual: float) -> str:
    """A residual of exact algebra shown as a bound: rounding errors (about 1e-15, a little
    different on every CPU) print as "< 1e-12", anything larger as its value."""
    return "< 1e-12" if residual < 1e-12 else f"{residual:.1e}"


# ---------------------------------------------------------------------------- Theorem 1
def thm1_anisotropic(closed) -> dict:
    """Claim ``thm1-anisotropic``: the range (max - min over l) of Theorem 1's closed form."""
    return dict(interval=exact_value(closed.max() - closed.min(), "closed form"))


def thm1_blind(exact, blind) -> dict:
    """Claim ``thm1-blind``: the largest exact Bayes accuracy at the frequencies ``blind`` where
    the prefilter vanishes (the nonzero multiples of M)."""
    return dict(
        interval=exact_value(exact[blind].max(), "exact optimum for any linear layer"), blind=[int(l) for l in blind]
    )


def fig4a_monte_carlo(cfg: dict, seed: int) -> list[dict]:
    """Fig. 4a's simulation: :func:`~nadcore.chapters.pooling.runs.compare_theorem1_monte_carlo`
    rows at every frequency of ``mc_ells`` for every noise level of ``sigmas`` and
    ``table_sigma`` (each once, in that order; the k-th with the generator ``(seed, 1, k)``)."""
    sigmas = list(dict.fromkeys(list(cfg["sigmas"]) + [cfg["table_sigma"]]))
    rows = []
    for k, s in enumerate(sigmas):
        rows += compare_theorem1_monte_carlo(
            cfg["mc_ells"],
            cfg["D"],
            cfg["S"],
            cfg["eps"],
            s,
            cfg["mc_samples"],
            generator(seed, 1, k),
            phase=cfg["phase"],
        )
    return rows


def monte_carlo_table(mc: pd.DataFrame, sigma: float) -> pd.DataFrame:
    """Theorem 1, the exact optimum and the simulation (with its standard error and z-score) at
    the noise level ``sigma``, one row per frequency."""
    return mc[mc.sigma == sigma][MC_COLUMNS]


def thm1_monte_carlo(mc: pd.DataFrame, mc_samples: int) -> dict:
    """Claim ``thm1-monte-carlo``: the largest z-score of the simulation against the exact
    optimum over every (frequency, sigma) pair."""
    return dict(interval=exact_value(mc.z.max(), "largest z-score"), pairs=len(mc), settings={"mc_samples": mc_samples})


# ---------------------------------------------------------------------------- Lemma 1
def lemma1_hessian(rel: float, hessian_samples: int) -> dict:
    """Claim ``lemma1-hessian``: the sampled Hessian's largest deviation from Lemma 1 relative
    to Lemma 1's largest entry, with the tolerance ``12 / sqrt(hessian_samples)``."""
    return dict(
        interval=exact_value(rel, "Monte Carlo average"),
        hessian_tolerance=round(12 / np.sqrt(hessian_samples), 4),
        settings={"hessian_samples": hessian_samples},
    )


# ---------------------------------------------------------------------------- Fig. 4b
def fig4b_runs(cfg: dict, m, seed: int, device, repeats: int) -> list[dict]:
    """Fig. 4b: the deep linear model of pooling with prefilter magnitude ``m`` trained by SGD at
    every frequency of ``lemma_ells``, ``repeats`` runs each (one per seed), with the generator
    ``(seed, 3, l)`` on ``device``: :func:`~nadcore.theory.linear_pooling.train_linear_pooling_model`
    results."""
    s_init = cfg["lemma_init"]
    return [
        train_linear_pooling_model(
            l,
            cfg["D"],
            cfg["S"],
            m,
            cfg["lemma_eps"],
            cfg["lemma_sigma"],
            cfg["lemma_train"],
            cfg["lemma_iters"],
            cfg["lemma_lr"],
            cfg["lemma_batch"],
            generator(seed, 3, l, device=device),
            s_theta=s_init,
            s_phi=s_init,
            repeats=repeats,
        )
        for l in cfg["lemma_ells"]
    ]


def fig4b_curves(runs: list[dict], seeds, iters: int) -> pd.DataFrame:
    """Fig. 4b's data: the training loss of every run (frequency, seed) at about 200 iterations
    of the ``iters`` (every ``iters // 200``-th, and the first)."""
    return pd.DataFrame(
        [
            {"ell": r["ell"], "seed": s, "iteration": i, "loss": r["losses"][k, i]}
            for r in runs
            for k, s in enumerate(seeds)
            for i in range(0, iters + 1, max(1, iters // 200))
        ]
    )


def convergence_iterations(runs: list[dict], level: float, censored: int) -> np.ndarray:
    """``(frequencies, seeds)``: the first iteration at which each run's training loss falls below
    ``level``, ``censored`` for a run that never does."""
    first = [[convergence_iteration(l, level) for l in r["losses"]] for r in runs]
    return np.array([[censored if t is None else t for t in f] for f in first])


def fig4b_table(runs: list[dict], m, t_conv: np.ndarray, censored: int) -> pd.DataFrame:
    """One row per frequency l: the prefilter magnitude m[l], Lemma 1's curvature ratio zeta,
    the median of ``t_conv`` over seeds, how many seeds never got there (``censored``) and the
    final training loss (mean over seeds)."""
    ells = [r["ell"] for r in runs]
    return pd.DataFrame(
        {
            "l": ells,
            "m[l]": m[ells],
            "zeta": [r["zeta"] for r in runs],
            "median iterations": np.median(t_conv, 1),
            "never (of seeds)": (t_conv == censored).sum(1),
            "final loss": [r["loss"][-1] for r in runs],
        }
    )


def fig4b_zeta_speed(runs: list[dict], t_conv: np.ndarray, ch) -> dict:
    """Claim ``fig4b-zeta-speed``: log10 of the iterations (``t_conv``, frequencies x seeds) at the
    frequency with the smallest zeta over those at the largest, once per seed, with the SGD budget
    of the chapter ``ch`` here and in the paper."""
    zetas = [r["zeta"] for r in runs]
    best, worst = int(np.argmax(zetas)), int(np.argmin(zetas))
    cfg = ch.cfg
    return dict(
        values=np.log10(t_conv[worst] / t_conv[best]),
        steps=cfg["lemma_iters"],
        paper_steps=ch.paper_cfg["lemma_iters"],
        settings={"lemma_lr": cfg["lemma_lr"]},
        slow_ell=runs[worst]["ell"],
        fast_ell=runs[best]["ell"],
    )


def escape_slope(table: pd.DataFrame, t_conv: np.ndarray, censored: int) -> float:
    """The slope of log(median iterations) against log m[l] over the frequencies every seed
    reached within the budget (-1 for escape times like 1/m[l], -2 for 1/zeta; NaN with fewer
    than two such frequencies)."""
    med = table["median iterations"].to_numpy()
    reached = (t_conv < censored).all(1)
    return np.polyfit(np.log(table["m[l]"][reached]), np.log(med[reached]), 1)[0] if reached.sum() > 1 else float("nan")


def fig4b_summary(runs: list[dict], table: pd.DataFrame, t_conv: np.ndarray, censored: int, seeds: int) -> str:
    """What the run measured about Fig. 4b, in words (markdown): the median iterations at the
    largest and the smallest zeta and their ratio, the Spearman correlation of zeta with the
    median iterations, the :func:`escape_slope` and the range of the final losses."""
    best, worst = int(np.argmax(table.zeta)), int(np.argmin(table.zeta))
    med = table["median iterations"].to_numpy()
    reached = (t_conv < censored).all(1)  # frequencies that every seed got to within the budget
    slope = escape_slope(table, t_conv, censored)
    return (
        f"The median number of iterations goes from {med[best]:.0f} at $\\ell = {runs[best]['ell']}$ "
        f"($\\zeta = {table.zeta[best]:.2g}$) to {med[worst]:.0f} at $\\ell = {runs[worst]['ell']}$ "
        f"($\\zeta = {table.zeta[worst]:.2g}$; seeds that did not get there within {censored - 1} "
        f"iterations: {table['never (of seeds)'][worst]} of {seeds}), a factor of "
        f"{med[worst] / med[best]:.1f}. The Spearman "
        f"correlation of $\\zeta$ with the median iterations over the {len(runs)} frequencies is "
        f"{pd.Series(table.zeta).corr(pd.Series(med), method='spearman'):.2f} (-1: the order follows $\\zeta$). "
        f"Over the {reached.sum()} frequencies every seed reached, log(iterations) against log $m[\\ell]$ has "
        f"slope {slope:.2f} (-1 for $1/m[\\ell]$, -2 for $1/\\zeta$). The final losses lie between "
        f"{table['final loss'].min():.3f} and {table['final loss'].max():.3f} (best linear loss "
        f"{runs[0]['bayes_loss']:.3f})."
    )
