"""Evidence: intervals, criteria written in code, verdicts computed from them.

A *claim* is one statement that the book tests, e.g. "LeNet's test accuracy on the low
frequencies exceeds its accuracy on the high ones by at least ..." (Fig. 1). Every claim is
written down as a :class:`ClaimSpec` (in each chapter's ``claims.py``, gathered by
:mod:`nadcore.book.claims`): what is claimed and where, its *kind*, the quantity that tests it,
a comparison and a threshold, the range the quantity lives in, and the papers' own number where
they state one. After the run the quantity comes with a 95% :class:`Interval`
(:mod:`nadcore.book.intervals`: over seeds, binomial test-set noise, Fisher's z, a jackknife over
Monte Carlo groups, an exact value; its names are importable from here as well).

:meth:`Criterion.verdict` then says

* ``"reproduced"``: the whole interval satisfies the criterion;
* ``"not reproduced"``: the whole interval violates it;
* ``"inconclusive"``: the interval straddles the threshold, a precondition failed (the network
  did not fit its training set, or sits at chance where the claim needs it to have learned), or
  there are too few seeds for an interval.

The same code and seeds must give the same verdict on every CPU (:func:`cpu_margin`). Another
CPU's kernels round differently, and SGD carries that rounding into every trained run, which then
moves as a run of a new seed does; so an interval decides a verdict only when it clears the
criterion's bound by the distance its edge would move on another CPU: for runs trained in this
build, the spread of the edge between two draws of the runs (3.4 standard errors for 3 seeds,
1.6 for 10); for values read from a committed bundle or not trained, which another CPU moves by
rounding only, one standard error. An interval that ends nearer to the bound than that is
inconclusive on every CPU. The margin keeps a claim from being reproduced on one CPU and not
reproduced on another, but a claim that clears its bound by about its margin is still decided on
one and inconclusive on the next; so where a claim's run is one the committed reference build ran
and its interval moved by no more than another CPU's rounding, the claim keeps that build's
verdict (:func:`anchored`, :mod:`nadcore.book.reference_build`). An exact
value (a closed form, no interval) is compared with the bound up to float rounding
(:data:`ROUNDING`): a closed form equal to its bound is equal to it on every CPU.

An inconclusive row says what would decide it (:mod:`nadcore.book.settling`): how many seeds, cells or
Monte Carlo groups the measured spread says would take the interval, and its CPU margin, clear of
the bound, and what they cost where the cost per run is known.

Comparisons between two quantities (which estimator predicts better?) are criteria on their
paired per-seed difference: a winner is named only when the difference's interval excludes 0.

:class:`Claim` is one row of the reproduction scorecard (``book/executed/scorecard.json``).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from scipy.stats import t as student_t

from nadcore.book.intervals import (
    UNBOUNDED,
    Interval,
    accuracy_interval,
    auc_interval,
    correlation_interval,
    difference_interval,
    exact_value,
    fisher_interval,
    format_fixed,
    jackknife_interval,
    number,
    paired_gap_interval,
    runs_interval,
    seed_mean_halfwidth,
    seed_summary,
    spearman,
    t_interval,
)
from nadcore.book.settling import (
    ANCHOR_SPAN,
    ROUNDING,
    SETTLE_CAP,
    VERDICTS,
    anchored,
    cpu_margin,
    fixed_group_floor,
    redraw_factor,
    runs_to_decide,
)

__all__ = [
    "VERDICTS",
    "KINDS",
    "EVIDENCE",
    "MUCH",
    "Interval",
    "t_interval",
    "accuracy_interval",
    "fisher_interval",
    "auc_interval",
    "jackknife_interval",
    "exact_value",
    "runs_interval",
    "stratified_interval",
    "difference_interval",
    "paired_gap_interval",
    "correlation_interval",
    "spearman",
    "Criterion",
    "ClaimSpec",
    "Claim",
    "CLAIM_KEYS",
    "write_claims",
    "read_claims",
    "seed_mean_halfwidth",
    "format_fixed",
    "seed_summary",
    "number",
    "fill_placeholders",
    "UNBOUNDED",
    "ROUNDING",
    "cpu_margin",
    "anchored",
    "ANCHOR_SPAN",
    "redraw_factor",
    "runs_to_decide",
    "fixed_group_floor",
    "SETTLE_CAP",
]

#: what a claim is: a statement of the NAD paper, of its follow-up, a question a reviewer asked,
#: a prediction this book makes beyond the papers, a check of the book's own machinery
#: ("sanity check"), exact algebra or a property that holds by construction ("check": it cannot
#: fail short of a bug, so it is no evidence), or a comparison with published data that one of
#: the book's settings was fitted to ("calibration": it says how well the fit went, not whether
#: the paper reproduces). Only "paper" and "follow-up" claims make the headline.
KINDS = ("paper", "follow-up", "reviewer question", "extension", "sanity check", "check", "calibration")
#: the kinds of claim that count as evidence that the papers reproduce
EVIDENCE = ("paper", "follow-up")
#: the book's one reading of the papers' "much" (much longer, much slower, much larger): at least
#: an order of magnitude, a ratio of 10 (the papers give no number for any of them)
MUCH = 10.0
#: the keys of a scorecard claim, in order (the schema of book/executed/scorecard.json)
CLAIM_KEYS = (
    "id",
    "chapter",
    "kind",
    "source",
    "paper",
    "paper_value",
    "paper_value_source",
    "value",
    "ci_low",
    "ci_high",
    "seeds",
    "groups",
    "trained",
    "budget_fraction",
    "mc_fraction",
    "verdict",
    "settings",
    "criterion",
    "band",
    "interval",
    "note",
    "kernel_path",
    "profile",
    "at_paper_settings",
    "reduced",
    "to_settle",
    "revised",
    "reading",
    "run",
)


def stratified_interval(values, strata, weights: dict, bounds=UNBOUNDED, what: str = "cells") -> Interval:
    """The mean of a quantity over a population from a sample that does not hold the population's
    strata in proportion: ``sum_h W_h mean_h`` over the strata ``h`` of population share ``W_h``
    (``weights``, summing to 1), with the variance ``sum_h W_h^2 s_h^2 / n_h`` and Student's t at
    ``n - H`` degrees of freedom (``n`` values in ``H`` strata). ``strata`` labels each value. The
    value is NaN where a stratum of the population has no value, the interval NaN where one has
    fewer than 2 (no spread to go by): a mean over a sample that misses part of the population
    says nothing about that part."""
    v = np.asarray(values, dtype=float).ravel()
    labels = np.asarray(strata).ravel()
    if v.shape != labels.shape:
        raise ValueError(f"{v.size} values but {labels.size} stratum labels")
    total = float(sum(weights.values()))
    if not math.isclose(total, 1.0, abs_tol=1e-9):
        raise ValueError(f"the strata's population shares sum to {total}, not 1")
    groups = {h: v[(labels == h) & np.isfinite(v)] for h, w in weights.items() if w > 0}
    n, big = v.size, len(groups)
    if any(g.size == 0 for g in groups.values()):
        return Interval(float("nan"), float("nan"), float("nan"), n, f"a stratum without {what}", "groups")
    value = float(sum(weights[h] * g.mean() for h, g in groups.items()))
    if any(g.size < 2 for g in groups.values()):
        return Interval(value, float("nan"), float("nan"), n, f"a stratum with one of its {what}", "groups")
    se = math.sqrt(sum(weights[h] ** 2 * g.var(ddof=1) / g.size for h, g in groups.items()))
    half = float(student_t.ppf(0.975, n - big)) * se
    method = f"stratified t-interval over {n} {what} in {big} strata"
    return Interval(value, value - half, value + half, n, method, "groups").clipped(bounds)


# --------------------------------------------------------------------------------------------
# Criteria and claims
# --------------------------------------------------------------------------------------------
_OPS = {
    ">=": lambda a, b: a >= b,
    ">": lambda a, b: a > b,
    "<=": lambda a, b: a <= b,
    "<": lambda a, b: a < b,
    # "within": |value - center| <= threshold (the paper's value +- a stated tolerance)
    "within": None,
}


@dataclass(frozen=True)
class Criterion:
    """``quantity op threshold`` must hold for the claim to be reproduced, e.g.
    ``Criterion("low-frequency minus high-frequency accuracy", ">=", 0.05)``; with op ``"within"``,
    the quantity must lie within ``center +- threshold`` (``center``: the paper's value)."""

    quantity: str
    op: str
    threshold: float
    center: float | None = None

    def __post_init__(self):
        if self.op not in _OPS:
            raise ValueError(f"op must be one of {sorted(_OPS)}, got {self.op!r}")
        if self.op == "within" and self.center is None:
            raise ValueError("a 'within' criterion needs the center (the paper's value) it is within threshold of")

    def __str__(self) -> str:
        if self.op == "within":
            return f"{self.quantity} within {number(self.center)} +- {number(self.threshold)}"
        return f"{self.quantity} {self.op} {number(self.threshold)}"

    @property
    def band(self) -> tuple[float, float]:
        """The values that satisfy the criterion, as an interval (open ends: +-inf)."""
        t = float(self.threshold)
        if self.op == "within":
            return (self.center - t, self.center + t)
        return (t, math.inf) if self.op in (">=", ">") else (-math.inf, t)

    def verdict(
        self, iv: Interval, preconditions: dict[str, bool] | None = None, redrawn: bool = False
    ) -> tuple[str, str]:
        """``(verdict, reason)`` for the interval ``iv`` (see the module docstring): decided only
        where the whole interval clears the bound by :func:`cpu_margin` (``redrawn``: over runs
        this build trained)."""
        failed = [name for name, ok in (preconditions or {}).items() if not ok]
        if failed:
            return "inconclusive", "precondition not met: " + "; ".join(failed)
        lo, hi = iv.low, iv.high
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return "inconclusive", "no interval (fewer than 2 independent values)"
        m = cpu_margin(iv, redrawn)
        exact = lo == hi
        what = "the value" if exact else "the whole interval"
        size = (
            f"{number(redraw_factor(int(iv.n)))} standard errors: runs of this build"
            if redrawn
            else "one standard error"
        )
        near = "" if exact else f" by less than its CPU margin ({number(m)}, {size})"
        if self.op == "within":
            a, b = self.band
            if exact:
                lo = hi = _snap(_snap(lo, a), b)
            if a <= lo - m and hi + m <= b:
                return "reproduced", f"{what} lies within the paper's value +- the tolerance"
            if hi + m < a or lo - m > b:
                return "not reproduced", f"{what} lies outside the paper's value +- the tolerance"
            if (a <= lo and hi <= b) or hi < a or lo > b:
                return "inconclusive", f"the interval clears the edge of the tolerance band{near}"
            return "inconclusive", "the interval overlaps the edge of the tolerance band"
        holds, t = _OPS[self.op], float(self.threshold)
        if exact:
            lo = hi = _snap(lo, t)
        if holds(lo - m, t) and holds(lo + m, t) and holds(hi - m, t) and holds(hi + m, t):
            return "reproduced", f"{what} satisfies the criterion"
        if not any(holds(x, t) for x in (lo - m, lo + m, hi - m, hi + m)):
            return "not reproduced", f"{what} violates the criterion"
        if holds(lo, t) == holds(hi, t):
            return "inconclusive", f"the interval {'satisfies' if holds(lo, t) else 'violates'} the criterion{near}"
        return "inconclusive", "the interval straddles the threshold"


def _snap(x: float, bound: float) -> float:
    """``x``, or ``bound`` where ``x`` equals it up to float rounding (:data:`ROUNDING`)."""
    return bound if math.isfinite(bound) and abs(x - bound) <= ROUNDING * max(1.0, abs(bound)) else x


def fill_placeholders(text, values: dict):
    """``text`` with ``{name}`` placeholders filled from ``values`` (numbers as :func:`number`
    writes them); non-strings pass through."""
    if not isinstance(text, str):
        return text
    return text.format_map(
        {
            k: number(v) if isinstance(v, (int, float, np.number)) and not isinstance(v, bool) else v
            for k, v in values.items()
        }
    )


@dataclass(frozen=True)
class ClaimSpec:
    """A claim as written down for the run (see the module docstring).

    ``statement``, ``quantity`` and ``paper_value_source`` may hold ``{name}`` placeholders
    (the chapter's settings and parameters, or values the chapter passes); ``threshold`` and
    ``paper_value`` may be a number or the name of such a value (``"{name}"``). ``bounds``: the
    range of the quantity (an accuracy (0, 1), a difference of accuracies (-1, 1), a
    correlation (-1, 1), an overlap (0, 1), a spread (0, inf)); intervals are kept inside it.
    ``tolerance``: for a criterion "within the paper's value", how far from it still counts, and
    why (stated, not computed). ``fitted``: for a calibration claim, the setting that was chosen
    by matching the very data the claim compares with, and how.

    What "at the paper's settings" means for the row (:meth:`Claim.evaluate`): ``network``, the
    registry name of the architecture whose width the paper fixes (a row's ``width`` setting is
    compared with its full width); ``paper_settings``, the chapter settings that the claim's runs
    use beyond SGD steps and random networks (their values on this profile are compared with the
    paper profile's). ``revised``: why the criterion was changed from an earlier reading of the
    sentence, shown on the Scorecard."""

    id: str
    kind: str
    source: str
    statement: str
    quantity: str
    op: str
    threshold: float | str
    bounds: tuple = UNBOUNDED
    paper_value: float | str | None = None
    paper_value_source: str = ""
    tolerance: str = ""
    trained: bool = True
    fitted: str = ""
    network: str = ""
    paper_settings: tuple = ()
    revised: str = ""

    def __post_init__(self):
        if self.kind == "calibration" and not self.fitted:
            raise ValueError(f"claim {self.id}: a calibration claim says which setting was fitted to what (fitted)")
        if self.kind not in KINDS:
            raise ValueError(f"claim {self.id}: kind must be one of {KINDS}, got {self.kind!r}")
        if self.op not in _OPS:
            raise ValueError(f"claim {self.id}: op must be one of {sorted(_OPS)}, got {self.op!r}")
        if self.kind in ("paper", "follow-up") and not self.source:
            raise ValueError(f"claim {self.id}: a {self.kind} claim names where the papers state it (source)")

    def _number(self, v, values: dict):
        if v is None or isinstance(v, (int, float)):
            return None if v is None else float(v)
        key = v.strip("{}")
        if key not in values:
            raise KeyError(f"claim {self.id}: {v!r} needs the value {key!r} (pass {key}=... to ch.claim)")
        return None if values[key] is None else float(values[key])

    def criterion(self, values: dict) -> Criterion:
        center = self.resolved_paper_value(values) if self.op == "within" else None
        return Criterion(
            fill_placeholders(self.quantity, values), self.op, self._number(self.threshold, values), center
        )

    def resolved_paper_value(self, values: dict) -> float | None:
        return self._number(self.paper_value, values)


@dataclass
class Claim:
    """One row of the scorecard (see :data:`CLAIM_KEYS`)."""

    id: str
    chapter: str
    paper: str
    paper_value: float | None
    value: float
    ci_low: float
    ci_high: float
    seeds: int
    trained: bool
    budget_fraction: float | None
    verdict: str
    settings: dict = field(default_factory=dict)
    criterion: str = ""
    interval: str = ""
    note: str = ""
    kernel_path: str = ""
    kind: str = "paper"
    source: str = ""
    paper_value_source: str = ""
    groups: int | None = None
    mc_fraction: float | None = None
    profile: str = ""
    #: the values that satisfy the criterion, [low, high] (None: unbounded on that side)
    band: list = field(default_factory=lambda: [None, None])
    #: True only where samples, SGD steps, random networks, network and width are the paper's
    at_paper_settings: bool = False
    #: what is below the paper's settings, one phrase each ("width 16 (paper 64)", ...)
    reduced: list = field(default_factory=list)
    #: on an inconclusive row, what would decide it (:func:`runs_to_decide`); else None
    to_settle: dict | None = None
    #: why the criterion was changed from an earlier reading of the sentence ("" if never)
    revised: str = ""
    #: how the criterion reads the sentence's words (the spec's tolerance: "'a few' read as ...")
    reading: str = ""
    #: the key of the run that computed it, the same on every machine (``reference_build.run_key``)
    run: str = ""

    @classmethod
    def evaluate(
        cls,
        id: str,
        chapter: str,
        paper: str,
        criterion: Criterion,
        interval: Interval,
        *,
        trained: bool,
        budget_fraction: float | None = None,
        paper_value: float | None = None,
        preconditions: dict | None = None,
        settings: dict | None = None,
        kernel_path: str = "",
        kind: str = "paper",
        source: str = "",
        paper_value_source: str = "",
        mc_fraction: float | None = None,
        profile: str = "",
        bounds=UNBOUNDED,
        reduced=None,
        hours_per_unit: float | None = None,
        revised: str = "",
        reading: str = "",
        settle_floor: tuple | None = None,
        run: str = "",
        reference: dict | None = None,
        reference_about: str = "",
    ) -> "Claim":
        """The claim's verdict computed from ``criterion`` and ``interval`` (kept in ``bounds``).
        ``reduced``: the settings below the paper's (None: not known, so not at the paper's
        settings); the SGD budget and the Monte Carlo fraction below 1 are added to it here.
        ``hours_per_unit``: CPU hours of one more seed, cell or group, for ``to_settle``;
        ``settle_floor``: the part of the interval more of them cannot shrink
        (:func:`runs_to_decide`'s ``floor``). ``run``: the key of the run that computed it
        (:func:`nadcore.book.reference_build.run_key`); ``reference``: the reference build's row of
        this claim where that build ran the same key (:func:`anchored`), described by
        ``reference_about``."""
        interval = interval.clipped(bounds)
        redrawn = bool(trained) and not str(profile).startswith("campaign")
        verdict, reason = criterion.verdict(interval, preconditions, redrawn)
        verdict, reason = anchored(verdict, reason, interval, redrawn, reference, reference_about)
        known = reduced is not None
        reduced = list(reduced or [])
        if budget_fraction is not None and budget_fraction < 0.999:
            reduced.append(f"{number(budget_fraction)} of the paper's SGD steps")
        elif trained and budget_fraction is None:
            known = False
        if mc_fraction is not None and mc_fraction < 0.999:
            reduced.append(f"{number(mc_fraction)} of the paper's random networks")
        if profile == "smoke":
            reduced.append("smoke profile")
        if not known:
            reduced.append("settings not recorded against the paper's")
        settle = (
            runs_to_decide(interval, criterion, preconditions, hours_per_unit, floor=settle_floor, redrawn=redrawn)
            if verdict == "inconclusive"
            else None
        )
        return cls(
            id=id,
            chapter=chapter,
            paper=paper,
            paper_value=paper_value,
            value=interval.value,
            ci_low=interval.low,
            ci_high=interval.high,
            seeds=int(interval.n) if interval.unit == "seeds" else 0,
            groups=int(interval.n) if interval.unit == "groups" else None,
            trained=bool(trained),
            budget_fraction=None if budget_fraction is None else float(budget_fraction),
            mc_fraction=None if mc_fraction is None else float(mc_fraction),
            verdict=verdict,
            settings=dict(settings or {}),
            criterion=str(criterion),
            interval=interval.method,
            note=reason,
            kernel_path=kernel_path,
            kind=kind,
            source=source,
            paper_value_source=paper_value_source,
            profile=profile,
            band=[_finite_or_none(float(b)) for b in criterion.band],
            at_paper_settings=not reduced,
            reduced=reduced,
            to_settle=settle,
            revised=revised,
            reading=reading,
            run=run,
        )

    def measured(self) -> Interval:
        """The measured value and its interval."""
        nan = float("nan")
        unit, n = ("groups", self.groups) if self.groups else ("seeds", self.seeds) if self.seeds else ("values", 1)
        return Interval(
            self.value,
            nan if self.ci_low is None else self.ci_low,
            nan if self.ci_high is None else self.ci_high,
            n,
            self.interval,
            unit,
        )

    def sentence(self) -> str:
        """One line for the page: the claim, the criterion, what was measured, the verdict."""
        iv = self.measured()
        how = self.interval if iv.low == iv.high or iv.n < 2 else f"{self.interval}, {iv.n} {iv.unit}"
        extra = []
        if self.budget_fraction is not None:
            extra.append(f"budget {self.budget_fraction:.2g} of the paper's SGD steps")
        if self.mc_fraction is not None:
            extra.append(f"{self.mc_fraction:.2g} of the paper's random networks")
        if self.kind in EVIDENCE:
            extra += [r for r in self.reduced if "of the paper's" not in r]
            if self.at_paper_settings:
                extra.append("at the paper's settings")
        paper = "" if self.paper_value is None else f" (paper: {number(self.paper_value)})"
        where = f"{self.source}: " if self.source else ""
        return (
            f"**{self.verdict}** - {where}{self.paper} Criterion: {self.criterion}. Measured {iv}{paper} "
            f"({'; '.join([how] + extra)}); {self.note}."
        )

    def to_json(self) -> dict:
        d = asdict(self)
        return {k: _finite_or_none(d[k]) for k in CLAIM_KEYS}


def _finite_or_none(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def write_claims(path, chapter: str, claims) -> Path:
    """Write a chapter's claims to ``path`` (JSON ``{"chapter": ..., "claims": [...]}``), atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps({"chapter": chapter, "claims": [c.to_json() for c in claims]}, indent=1, default=float))
    os.replace(tmp, path)
    return path


def read_claims(paths) -> dict:
    """Merge chapters' claim files into the scorecard ``{"claims": [...]}`` (chapter order)."""
    claims = []
    for p in sorted(Path(p) for p in paths):
        claims += json.loads(p.read_text())["claims"]
    return {"claims": claims}
