"""Verdicts that hold on every CPU, and what would settle an inconclusive claim.

An interval decides a verdict only when it clears the criterion's bound by its CPU margin
(:func:`cpu_margin`: one standard error of the value, or what a redraw of
the runs would move the interval's edge where the build trained them). For a row that does
not, :func:`runs_to_decide` says how many more seeds, cells, NAD indices or Monte Carlo groups of
the same spread would take it, margin included, clear of the nearest bound, and what they cost
where the cost of one run is known; :func:`fixed_group_floor` says how near the bound a value can
be decided at all when one side of a difference is already measured in full. :func:`anchored`
keeps the verdict of the reference build where a claim's run is that build's and its interval moved
by no more than another CPU's rounding (:mod:`nadcore.book.reference_build`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import t as student_t

from nadcore.book.intervals import Interval, number

__all__ = [
    "VERDICTS",
    "KEPT",
    "ROUNDING",
    "ANCHOR_SPAN",
    "EXACT_SPAN",
    "cpu_margin",
    "anchored",
    "SETTLE_CAP",
    "UNIT_CAPS",
    "quantile",
    "redraw_factor",
    "runs_to_decide",
    "hours_per_run",
    "fixed_group_floor",
]

#: the most independent values :func:`runs_to_decide` proposes; past it a claim is called
#: undecidable by more runs of the same kind
SETTLE_CAP = 1000
#: the most there are of some units: the cells of the paper's 16x16 Fourier grid, the NAD indices
#: of a 32x32 input
UNIT_CAPS = {"cells": 256, "indices": 1024}
#: the verdicts a criterion gives (:meth:`nadcore.book.evidence.Criterion.verdict`)
VERDICTS = ("reproduced", "not reproduced", "inconclusive")
#: how the note of a row that keeps the reference build's verdict names it (:func:`anchored`)
KEPT = " as in the reference build"


def quantile(n: int) -> float:
    """The two-sided 95% quantile behind an interval of ``n`` independent values (Student's t with
    n - 1 degrees of freedom; the normal 1.96 where n is unknown)."""
    return float(student_t.ppf(0.975, n - 1)) if n and n >= 2 else 1.959963984540054


def redraw_factor(n: int) -> float:
    """The CPU margin of an interval over ``n`` runs that another CPU redraws, in standard errors
    (:func:`cpu_margin`)."""
    q = quantile(n)
    return math.sqrt(2.0) * math.sqrt(1.0 + q * q / (2.0 * (n - 1))) if n >= 2 else math.sqrt(2.0)


#: relative float rounding within which an exact value counts as equal to its bound (closed forms
#: and Monte Carlo statistics differ between CPUs by far less; trained values by far more)
ROUNDING = 1e-9
#: how many CPU margins an interval's edge may move between two runs of the same code and
#: parameters on two CPUs and still count as one result (:func:`anchored`), in the larger of the
#: two runs' margins: under a redraw an edge moves by about one margin in standard deviation, so 4
#: is a 4-sigma move (a margin from 3 seeds is itself uncertain, hence the larger of the two)
ANCHOR_SPAN = 4.0
#: the relative move of an exact value (no interval) that still counts as one result on two CPUs:
#: float32 rounding carried through a computation (NADs estimated in float32 moved by up to 3e-5)
EXACT_SPAN = 1e-4


def cpu_margin(iv: "Interval", redrawn: bool = False) -> float:
    """How far an interval must clear a criterion's bound for its verdict to hold on every CPU; 0
    for an exact value, which :data:`ROUNDING` covers instead (see :mod:`nadcore.book.evidence`).

    ``redrawn``: the interval is over runs that this build trained, which another CPU's rounding
    redraws as new seeds would be: both the mean and the spread of the runs change, so the edge
    ``mean -+ q s / sqrt(n)`` of the other CPU's interval differs from this one's by about
    ``sqrt(2) SE sqrt(1 + q^2 / (2 (n - 1)))`` (``SE = s / sqrt(n)``, ``q`` the t quantile; the
    sample sd of n runs has a spread of ``s / sqrt(2 (n - 1))``), and the margin is that: 3.4 SE
    for 3 seeds, 1.6 for 10. Otherwise (runs read from a committed bundle, Monte Carlo and closed
    forms, which another CPU moves only by rounding) one standard error, ``half-width / q``."""
    lo, hi = iv.low, iv.high
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo == hi:
        return 0.0
    n = int(iv.n)
    q = quantile(n)
    se = (hi - lo) / 2 / q
    if not redrawn:
        return se
    return se * redraw_factor(n)


def anchored(verdict: str, reason: str, iv: "Interval", redrawn: bool, reference: dict | None, about: str = ""):
    """``(verdict, reason)`` of a claim whose run the reference build also ran
    (:mod:`nadcore.book.reference_build`): that build's verdict where both edges of ``iv`` lie
    within :data:`ANCHOR_SPAN` CPU margins (:func:`cpu_margin`, the larger of the two intervals';
    :data:`EXACT_SPAN` for an exact value) of that build's interval, the same result up to another
    CPU's rounding; else the claim's own ``(verdict, reason)``, with a note where the two differ.
    ``reference``: the reference build's row (``verdict``, ``ci_low``, ``ci_high``), or None."""
    theirs = (reference or {}).get("verdict")
    if theirs is None or theirs == verdict or theirs not in VERDICTS:
        return verdict, reason
    about = f" ({about})" if about else ""
    where = f"the reference build{about}"
    ends = [(iv.low, reference.get("ci_low")), (iv.high, reference.get("ci_high"))]
    if not all(a is not None and b is not None and math.isfinite(a) and math.isfinite(b) for a, b in ends):
        return verdict, f"{reason}; {where} found {theirs}"
    theirs_iv = Interval(iv.value, reference["ci_low"], reference["ci_high"], iv.n, iv.method, iv.unit)
    margin = max(cpu_margin(iv, redrawn), cpu_margin(theirs_iv, redrawn))
    move = max(abs(a - b) for a, b in ends)
    span = ANCHOR_SPAN * margin + EXACT_SPAN * max(1.0, *(abs(a) for a, _ in ends))
    if move > span:
        return (
            verdict,
            f"{reason}; {where} found {theirs}, with an edge {number(move)} away: more than another CPU's rounding moves it",
        )
    lo, hi = reference["ci_low"], reference["ci_high"]
    moved = f"{number(move / margin)} CPU margins" if margin > 0 else "float rounding"
    return theirs, (
        f"{theirs}{KEPT}{about}: this run's interval is that build's [{number(lo)}, {number(hi)}] moved by "
        f"{moved} (at most {number(ANCHOR_SPAN)}), what another CPU's rounding does; on its own it would be "
        f"{verdict} ({reason})"
    )


def runs_to_decide(
    iv: Interval,
    criterion,
    preconditions: dict | None = None,
    hours_per_unit: float | None = None,
    cap: int = SETTLE_CAP,
    floor: tuple | None = None,
    redrawn: bool = False,
) -> dict:
    """What would decide an inconclusive claim, from its measured spread (a power calculation):
    ``{"unit", "have", "need", "more", "hours", "why"}``. ``need``: the fewest independent values
    (seeds, cells, indices or Monte Carlo groups, as ``iv.unit`` and its method say) at which the
    interval, with the same mean and spread per value, would clear the criterion's nearest bound
    by its CPU margin too (``(quantile(n) + r) * sd / sqrt(n) < distance``, ``r`` the margin in
    standard errors: 1, or :func:`redraw_factor` where ``redrawn``); None where no number
    up to ``cap`` does (the value sits on the bound) or where there is no spread to go by.
    ``hours``: ``more * hours_per_unit`` (3 significant digits) where the cost of one more value
    is known. ``floor``:
    ``(values, most, what)`` where part of the interval cannot shrink with more values of the unit
    (a group that can hold ``most`` values at most, ``what`` naming it); a value no farther from
    the bound than :func:`fixed_group_floor` of that group, at the same margin, is then
    undecidable by more of them."""
    unit = "seeds" if iv.unit == "seeds" else "values" if iv.unit == "values" else _unit_name(iv.method)
    out = {"unit": unit, "have": int(iv.n), "need": None, "more": None, "hours": None, "why": ""}
    failed = [name for name, ok in (preconditions or {}).items() if not ok]
    if failed:
        out["why"] = "meet the precondition first: " + "; ".join(failed)
        return out
    lo, hi, v, n = iv.low, iv.high, iv.value, int(iv.n)
    if not (math.isfinite(lo) and math.isfinite(hi)) or n < 2 or lo == hi:
        out["why"] = "a spread to go by: at least 2 independent values (more seeds, cells or groups)"
        return out
    a, b = criterion.band
    edges = [e for e in (a, b) if math.isfinite(e)]
    distance = min(abs(v - e) for e in edges)
    sd = (hi - lo) / 2 / quantile(n) * math.sqrt(n)
    if distance <= 0 or sd <= 0:
        out["why"] = "the value lies on the bound: more runs of the same kind cannot decide it"
        return out
    fixed = fixed_group_floor(floor[0], floor[1], redrawn) if floor is not None else -math.inf
    if distance <= fixed:
        out["why"] = (
            f"the value lies {number(distance)} from the bound, and {floor[2]} keep the interval and its "
            f"CPU margin {number(fixed)} wide on that side however many more {unit} come: more runs of "
            "the same kind cannot decide it"
        )
        return out
    cap = min(cap, UNIT_CAPS.get(unit, cap))
    r = redraw_factor if redrawn else (lambda k: 1.0)
    need = next((k for k in range(n, cap + 1) if (quantile(k) + r(k)) * sd / math.sqrt(k) < distance), None)
    if need is None:
        out["why"] = (
            f"the value lies {number(distance)} from the bound, within the spread of {cap} "
            f"{unit}"
            + (" (all there are)" if unit in UNIT_CAPS and cap == UNIT_CAPS[unit] else "")
            + ": more runs of the same kind cannot decide it"
        )
        return out
    more = max(need - n, 1)
    out.update(
        need=max(need, n + 1),
        more=more,
        hours=None if hours_per_unit is None else float(f"{more * float(hours_per_unit):.3g}"),
        why=f"{more} more {_SINGULAR.get(unit, unit) if more == 1 else unit} at the measured spread (sd {number(sd)} per value, "
        f"{number(distance)} from the bound)",
    )
    return out


def hours_per_run(seconds, runs) -> float | None:
    """CPU hours of one more seed, cell or group (``hours_per_unit`` of :func:`runs_to_decide`):
    ``seconds`` that ``runs`` of them took, as their jobs measured when they ran (one core each);
    None where nothing was measured."""
    seconds = float(np.nansum(np.asarray(seconds, dtype=np.float64)))
    return seconds / int(runs) / 3600 if runs and seconds > 0 else None


_SINGULAR = {
    "seeds": "seed",
    "cells": "cell",
    "indices": "index",
    "groups": "group",
    "runs": "run",
    "points": "point",
    "monte carlo groups": "Monte Carlo group",
    "values": "value",
}


def fixed_group_floor(values, most: int | None = None, redrawn: bool = False) -> float:
    """The least distance from a criterion's bound at which a Welch interval of ``mean(values) -
    mean(other)`` (:func:`difference_interval`) still clears it by its CPU margin, however many
    values the other side gets, where ``values`` can grow to ``most`` values at most (default:
    every one is measured): ``(t_{m-1} + r) * sd / sqrt(m)`` at ``m = most`` and the measured
    spread, the interval's half-width and the margin of ``r`` standard errors (1, or
    :func:`redraw_factor` where the build trained the runs: ``redrawn``)."""
    v = np.asarray(values, dtype=np.float64).ravel()
    v = v[np.isfinite(v)]
    m = max(int(most or 0), v.size)
    if v.size < 2:
        return math.inf
    return (quantile(m) + (redraw_factor(m) if redrawn else 1.0)) * float(v.std(ddof=1)) / math.sqrt(m)


def _unit_name(method: str) -> str:
    m = (method or "").lower()
    for word in ("cells", "indices", "monte carlo groups", "points", "runs", "groups"):
        if word in m:
            return word
    return "groups"
