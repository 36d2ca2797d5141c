"""Intervals: a measured quantity with its 95% interval, and summaries over seeds.

* :func:`t_interval`: the mean of independent per-seed values and its Student-t interval, kept
  inside the quantity's range; :func:`accuracy_interval` adds the binomial uncertainty of a fixed
  finite test set, which the spread over seeds does not contain;
* :func:`fisher_interval`: correlations averaged in Fisher's z, so the interval stays in (-1, 1);
  :func:`correlation_interval`: one correlation over many points, Fisher-z;
* :func:`jackknife_interval`: a delete-one-group jackknife over Monte Carlo groups of networks;
* :func:`runs_interval`, :func:`difference_interval`, :func:`paired_gap_interval`: independent
  runs, and differences of them; :func:`auc_interval`: an area under the ROC curve;
* :func:`exact_value`: a closed form, or a statistic that already holds its own noise.

:mod:`nadcore.book.evidence` turns an interval into a verdict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import spearmanr
from scipy.stats import t as student_t

__all__ = [
    "UNBOUNDED",
    "Interval",
    "number",
    "t_interval",
    "accuracy_interval",
    "fisher_interval",
    "auc_interval",
    "jackknife_interval",
    "exact_value",
    "runs_interval",
    "difference_interval",
    "paired_gap_interval",
    "correlation_interval",
    "spearman",
    "seed_mean_halfwidth",
    "format_fixed",
    "seed_summary",
]

#: no bound on a quantity's range
UNBOUNDED = (-math.inf, math.inf)


def number(v) -> str:
    """A number as a reader writes it: 3 significant digits, integers as integers (no numpy
    reprs such as ``np.int64(32)``)."""
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    v = float(v)
    return f"{v:.0f}" if v.is_integer() and abs(v) < 1e6 else f"{v:.3g}"


# --------------------------------------------------------------------------------------------
# Intervals
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Interval:
    """A value with a 95% interval: ``method`` says how it was obtained, ``n`` from how many
    independent values, and ``unit`` what they are: "seeds" (independent training runs),
    "groups" (Monte Carlo groups of random networks, for a jackknife, or independent runs that
    make up one quantity, such as the cells of a one-seed map) or "values" (1 for an
    exact value)."""

    value: float
    low: float
    high: float
    n: int
    method: str
    unit: str = "seeds"

    def __str__(self) -> str:
        if self.low == self.high or not (math.isfinite(self.low) and math.isfinite(self.high)):
            return number(self.value)
        return f"{number(self.value)} [{number(self.low)}, {number(self.high)}]"

    def clipped(self, bounds) -> "Interval":
        """The value and the interval kept inside the quantity's range ``bounds = (lo, hi)`` (an
        overlap computed as 1.0000000007 by float rounding is 1)."""
        lo, hi = bounds
        value = min(max(self.value, lo), hi) if math.isfinite(self.value) else self.value
        if not (math.isfinite(self.low) and math.isfinite(self.high)):
            return Interval(value, self.low, self.high, self.n, self.method, self.unit)
        return Interval(value, min(max(self.low, lo), hi), max(min(self.high, hi), lo), self.n, self.method, self.unit)


def _finite(values) -> np.ndarray:
    a = np.asarray(values, dtype=float).ravel()
    return a[np.isfinite(a)]


def t_interval(values, level: float = 0.95, bounds=UNBOUNDED, extra_variance: float = 0.0) -> Interval:
    """Mean of independent per-seed values and its Student-t interval,
    ``mean +- t_{n-1, (1+level)/2} * sqrt(sd^2 / n + extra_variance)``, intersected with the
    quantity's range ``bounds``; NaN bounds for fewer than 2 values."""
    a = _finite(values)
    n = a.size
    if n == 0:
        return Interval(float("nan"), float("nan"), float("nan"), 0, "t-interval over seeds")
    m = float(a.mean())
    if n < 2:
        return Interval(m, float("nan"), float("nan"), 1, "t-interval over seeds")
    se = math.sqrt(float(a.var(ddof=1)) / n + float(extra_variance))
    half = float(student_t.ppf(0.5 + level / 2, n - 1)) * se
    return Interval(m, m - half, m + half, n, "t-interval over seeds").clipped(bounds)


def accuracy_interval(accuracies, n_test: int, level: float = 0.95, difference: bool = False) -> Interval:
    """:func:`t_interval` of per-seed accuracies (or, with ``difference``, of per-seed
    differences of two accuracies on the same test set) measured on one fixed test set of
    ``n_test`` examples: the spread over seeds does not contain the test set's own binomial
    sampling noise, ``p (1 - p) / n_test`` per accuracy (twice that for a difference, an upper
    bound for paired accuracies), which is added to the variance of the mean. Kept in [0, 1]
    (or [-1, 1] for a difference)."""
    a = _finite(accuracies)
    if a.size == 0:
        return t_interval(a)
    p = 0.5 if difference else float(np.clip(a.mean(), 0, 1))  # p(1-p) <= 1/4 for a difference
    extra = (2 if difference else 1) * p * (1 - p) / max(int(n_test), 1) / a.size
    iv = t_interval(a, level, (-1.0, 1.0) if difference else (0.0, 1.0), extra)
    return Interval(
        iv.value, iv.low, iv.high, iv.n, f"t-interval over seeds + test-set binomial (n_test={int(n_test)})", "seeds"
    )


def fisher_interval(correlations, level: float = 0.95) -> Interval:
    """Per-seed correlations averaged in Fisher's z = atanh(r): the mean of z with its
    Student-t interval over the seeds, mapped back with tanh, so value and interval stay in
    (-1, 1)."""
    r = np.clip(_finite(correlations), -0.999999, 0.999999)
    if r.size == 0:
        return Interval(float("nan"), float("nan"), float("nan"), 0, "Fisher z over seeds")
    z = t_interval(np.arctanh(r), level)
    lo, hi = (math.tanh(z.low), math.tanh(z.high)) if r.size > 1 else (float("nan"), float("nan"))
    return Interval(math.tanh(z.value), lo, hi, int(r.size), "t-interval of Fisher's z over seeds")


def jackknife_interval(value: float, low: float, high: float, groups: int, bounds=UNBOUNDED) -> Interval:
    """An interval from a delete-one-group jackknife (e.g. :func:`nadcore.nads.overlap_interval`)."""
    return Interval(
        float(value), float(low), float(high), int(groups), f"jackknife over {groups} Monte Carlo groups", "groups"
    ).clipped(bounds)


def runs_interval(values, bounds=UNBOUNDED, what: str = "runs") -> Interval:
    """Mean of independent runs' values (one seed: each run is its own cell or NAD index, with
    its own data and initialisation) and its Student-t interval, labelled by ``what`` they are."""
    iv = t_interval(values, bounds=bounds)
    return Interval(iv.value, iv.low, iv.high, iv.n, f"t-interval over {iv.n} {what}", "groups").clipped(bounds)


def difference_interval(a, b, bounds=UNBOUNDED, what: str = "runs") -> Interval:
    """mean(a) - mean(b) of two sets of independent runs, with Welch's t-interval."""
    a, b = _finite(a), _finite(b)
    if a.size < 2 or b.size < 2:
        return Interval(
            float(a.mean() - b.mean()) if a.size and b.size else float("nan"),
            float("nan"),
            float("nan"),
            int(a.size + b.size),
            "too few runs",
            "groups",
        )
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    se = math.sqrt(va + vb)
    dof = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1)) if se > 0 else a.size + b.size - 2
    d = float(a.mean() - b.mean())
    half = float(student_t.ppf(0.975, dof)) * se
    return Interval(
        d, d - half, d + half, int(a.size + b.size), f"Welch t-interval over {a.size} + {b.size} {what}", "groups"
    ).clipped(bounds)


def paired_gap_interval(ours, published, first, second, bounds=UNBOUNDED, what: str = "points") -> Interval:
    """The gap mean(ours[first]) - mean(ours[second]) over fixed points that were each measured
    once (the cells of a one-seed map, the NAD indices of a one-seed curve), with an interval from
    the paired differences d = ours - published at the same points: the published gap plus
    Welch's t-interval of mean(d[first]) - mean(d[second]). The points are fixed and the same on
    both sides, so the spread between them is not noise of the gap and cancels in d; what remains
    is the run-to-run noise of both and any real disagreement between them."""
    ours, ref = np.asarray(ours, dtype=float).ravel(), np.asarray(published, dtype=float).ravel()
    first, second = np.asarray(first, dtype=bool).ravel(), np.asarray(second, dtype=bool).ravel()
    d = difference_interval((ours - ref)[first], (ours - ref)[second], what=what)
    ref_gap = float(ref[first].mean() - ref[second].mean())
    value = float(ours[first].mean() - ours[second].mean())
    return Interval(
        value,
        ref_gap + d.low,
        ref_gap + d.high,
        d.n,
        f"the published gap + Welch t-interval of (ours - published) over {int(first.sum())} + "
        f"{int(second.sum())} {what}, paired per point",
        "groups",
    ).clipped(bounds)


def spearman(a, b) -> float:
    """Spearman's rank correlation of two equal-length sequences (ties get average ranks; NaN
    pairs are left out; NaN when either side is constant)."""
    a, b = np.ravel(np.asarray(a, dtype=np.float64)), np.ravel(np.asarray(b, dtype=np.float64))
    ok = np.isfinite(a) & np.isfinite(b)
    if ok.sum() < 2 or np.ptp(a[ok]) == 0 or np.ptp(b[ok]) == 0:
        return float("nan")
    return float(spearmanr(a[ok], b[ok])[0])


def correlation_interval(r: float, n: int, spearman: bool = False, what: str = "points") -> Interval:
    """One correlation over ``n`` points with its Fisher-z interval: standard error
    ``1 / sqrt(n - 3)`` for Pearson, ``1.03 / sqrt(n - 3)`` for Spearman (Fieller et al. 1957)."""
    if n <= 3 or not np.isfinite(r):
        return Interval(float(r), float("nan"), float("nan"), int(n), f"too few {what}", "groups")
    z, se = math.atanh(min(max(r, -0.999999), 0.999999)), (1.03 if spearman else 1.0) / math.sqrt(n - 3)
    return Interval(
        float(r),
        math.tanh(z - 1.96 * se),
        math.tanh(z + 1.96 * se),
        int(n),
        f"Fisher-z interval over {n} {what}",
        "groups",
    )


def auc_interval(scores, positive, what: str = "cells") -> Interval:
    """The area under the ROC curve of ``scores`` separating the ``positive`` points (a boolean
    array) from the others: the probability that a positive point scores above a negative one
    (ties count half), with the Hanley-McNeil (1982) normal interval. Its standard error is
    taken at the AUC shrunk by half a pair, ``(n1 n0 AUC + 1/2) / (n1 n0 + 1)``: at a perfect
    separation the plain formula gives an interval of width zero, however few the points.
    NaN without both classes."""
    s, y = np.ravel(np.asarray(scores, dtype=np.float64)), np.ravel(np.asarray(positive, dtype=bool))
    n1, n0 = int(y.sum()), int((~y).sum())
    if n1 == 0 or n0 == 0:
        return Interval(float("nan"), float("nan"), float("nan"), n1 + n0, f"one class only among the {what}", "groups")
    greater = (s[y][:, None] > s[~y][None, :]).sum() + 0.5 * (s[y][:, None] == s[~y][None, :]).sum()
    a = float(greater / (n1 * n0))
    b = (n1 * n0 * a + 0.5) / (n1 * n0 + 1)
    q1, q2 = b / (2 - b), 2 * b * b / (1 + b)
    se = math.sqrt(max(b * (1 - b) + (n1 - 1) * (q1 - b * b) + (n0 - 1) * (q2 - b * b), 0.0) / (n1 * n0))
    return Interval(
        a, a - 1.96 * se, a + 1.96 * se, n1 + n0, f"Hanley-McNeil interval over {n1} + {n0} {what}", "groups"
    ).clipped((0.0, 1.0))


def exact_value(value: float, method: str = "exact") -> Interval:
    """A value without sampling noise (a closed form, or a test statistic that already includes
    its noise, such as a largest z-score)."""
    return Interval(float(value), float(value), float(value), 1, method, "values")


# --------------------------------------------------------------------------------------------
# Summaries over seeds, for tables and figures
# --------------------------------------------------------------------------------------------
def seed_mean_halfwidth(values, axis: int = 0):
    """Mean over independent seeds (``axis``) and the half-width of its 95% Student-t interval
    (:func:`t_interval`), elementwise over the other axes: ``(mean, half)``;
    the half-width is NaN with a single seed."""
    a = np.moveaxis(np.asarray(values, dtype=float), axis, -1)
    flat = a.reshape(-1, a.shape[-1])
    ivs = [t_interval(v) for v in flat]
    mean = np.array([iv.value for iv in ivs]).reshape(a.shape[:-1])
    half = np.array([iv.high - iv.value for iv in ivs]).reshape(a.shape[:-1])
    return mean, half


def format_fixed(x, digits: int) -> str:
    """``x`` with ``digits`` decimals, never "-0" (a tiny negative value prints as 0)."""
    return f"{float(np.round(x, digits)) + 0.0:.{digits}f}"


def seed_summary(frame, by, columns, scale: float = 100.0, digits: int = 1):
    """A table of ``mean +- half-width`` strings (95% t-interval over the rows of each group, one
    row per seed), grouping the tidy ``frame`` by ``by`` and summarising ``columns``, each
    multiplied by ``scale`` (100: accuracies in percent)."""
    rows = []
    for key, g in frame.groupby(list(by), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(by, key))
        for c in columns:
            m, h = seed_mean_halfwidth(scale * g[c].to_numpy())
            row[c] = format_fixed(m, digits) + ("" if not np.isfinite(h) else f" ± {format_fixed(h, digits)}")
        rows.append(row)
    return pd.DataFrame(rows)
