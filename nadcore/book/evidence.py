"""Evidence: intervals over seeds, criteria stated before a run, verdicts computed from them.

A *claim* is one statement of the papers that the book tests, e.g. "LeNet's mean accuracy on
|k| <= 4 exceeds its mean on |k| >= 8 by at least 0.05" (Fig. 1). Its :class:`Criterion` is
written in code before the experiment runs: a quantity, a comparison and a threshold. After the
run, the quantity is measured once per seed; :func:`t_interval` gives its mean and a 95%
t-interval over the seeds (or another :class:`Interval` where the quantity is not a mean over
seeds: a jackknife over Monte Carlo groups, an exact value). :meth:`Criterion.verdict` then says

* ``"reproduced"``: the whole interval satisfies the criterion;
* ``"not reproduced"``: the whole interval violates it;
* ``"inconclusive"``: the interval straddles the threshold, a precondition failed (the network
  did not fit its training set, or sits at chance where the claim needs it to have learned), or
  there are too few seeds for an interval.

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
import pandas as pd
from scipy.stats import t as student_t

__all__ = ["VERDICTS", "Interval", "t_interval", "jackknife_interval", "exact_value", "Criterion",
           "Claim", "CLAIM_KEYS", "write_claims", "read_claims", "seed_mean_halfwidth", "format_fixed",
           "seed_summary"]

VERDICTS = ("reproduced", "not reproduced", "inconclusive")
#: the keys of a scorecard claim, in order (the schema of book/executed/scorecard.json)
CLAIM_KEYS = ("id", "chapter", "paper", "paper_value", "value", "ci_low", "ci_high", "seeds",
              "trained", "budget_fraction", "verdict", "settings", "criterion", "interval",
              "note", "kernel_path")


@dataclass(frozen=True)
class Interval:
    """A value with a 95% interval: ``method`` says how it was obtained, ``n`` from how many
    independent values (seeds, jackknife groups, 1 for an exact value)."""

    value: float
    low: float
    high: float
    n: int
    method: str

    def __str__(self) -> str:
        if self.low == self.high or not (math.isfinite(self.low) and math.isfinite(self.high)):
            return f"{self.value:.3g}"
        return f"{self.value:.3g} [{self.low:.3g}, {self.high:.3g}]"


def t_interval(values, level: float = 0.95) -> Interval:
    """Mean of independent per-seed values and its Student-t interval,
    ``mean +- t_{n-1, (1+level)/2} * sd / sqrt(n)``; NaN bounds for fewer than 2 values."""
    a = np.asarray(values, dtype=float).ravel()
    a = a[np.isfinite(a)]
    n = a.size
    if n == 0:
        return Interval(float("nan"), float("nan"), float("nan"), 0, "t-interval over seeds")
    m = float(a.mean())
    if n < 2:
        return Interval(m, float("nan"), float("nan"), 1, "t-interval over seeds")
    half = float(student_t.ppf(0.5 + level / 2, n - 1)) * float(a.std(ddof=1)) / math.sqrt(n)
    return Interval(m, m - half, m + half, n, "t-interval over seeds")


def jackknife_interval(value: float, low: float, high: float, groups: int) -> Interval:
    """An interval from a delete-one-group jackknife (e.g. :func:`nadcore.nads.overlap_interval`)."""
    return Interval(float(value), float(low), float(high), int(groups),
                    f"jackknife over {groups} Monte Carlo groups")


def exact_value(value: float, method: str = "exact") -> Interval:
    """A value without sampling noise (a closed form, or a test statistic that already includes
    its noise, such as a largest z-score)."""
    return Interval(float(value), float(value), float(value), 1, method)


_OPS = {">=": lambda a, b: a >= b, ">": lambda a, b: a > b,
        "<=": lambda a, b: a <= b, "<": lambda a, b: a < b}


@dataclass(frozen=True)
class Criterion:
    """``quantity op threshold`` must hold for the claim to be reproduced, e.g.
    ``Criterion("low-frequency minus high-frequency accuracy", ">=", 0.05)``."""

    quantity: str
    op: str
    threshold: float

    def __post_init__(self):
        if self.op not in _OPS:
            raise ValueError(f"op must be one of {sorted(_OPS)}, got {self.op!r}")

    def __str__(self) -> str:
        return f"{self.quantity} {self.op} {self.threshold:g}"

    def verdict(self, iv: Interval, preconditions: dict[str, bool] | None = None) -> tuple[str, str]:
        """``(verdict, reason)`` for the interval ``iv`` (see the module docstring)."""
        failed = [name for name, ok in (preconditions or {}).items() if not ok]
        if failed:
            return "inconclusive", "precondition not met: " + "; ".join(failed)
        lo, hi = iv.low, iv.high
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return "inconclusive", "no interval (fewer than 2 independent values)"
        holds = _OPS[self.op]
        what = "the value" if lo == hi else "the whole interval"
        if holds(lo, self.threshold) and holds(hi, self.threshold):
            return "reproduced", f"{what} satisfies the criterion"
        if not holds(lo, self.threshold) and not holds(hi, self.threshold):
            return "not reproduced", f"{what} violates the criterion"
        return "inconclusive", "the interval straddles the threshold"


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

    @classmethod
    def evaluate(cls, id: str, chapter: str, paper: str, criterion: Criterion, interval: Interval,
                 *, seeds: int, trained: bool, budget_fraction: float | None = None,
                 paper_value: float | None = None, preconditions: dict | None = None,
                 settings: dict | None = None, kernel_path: str = "") -> "Claim":
        """The claim's verdict computed from ``criterion`` and ``interval``."""
        verdict, reason = criterion.verdict(interval, preconditions)
        return cls(id=id, chapter=chapter, paper=paper, paper_value=paper_value,
                   value=interval.value, ci_low=interval.low, ci_high=interval.high, seeds=int(seeds),
                   trained=bool(trained),
                   budget_fraction=None if budget_fraction is None else float(budget_fraction),
                   verdict=verdict, settings=dict(settings or {}), criterion=str(criterion),
                   interval=interval.method, note=reason, kernel_path=kernel_path)

    def measured(self) -> Interval:
        """The measured value and its interval."""
        nan = float("nan")
        return Interval(self.value, nan if self.ci_low is None else self.ci_low,
                        nan if self.ci_high is None else self.ci_high, self.seeds, self.interval)

    def sentence(self) -> str:
        """One line for the page: the claim, the criterion, what was measured, the verdict."""
        iv = self.measured()
        how = self.interval if iv.low == iv.high or self.seeds < 2 else \
            f"{self.interval}, {self.seeds} {'seeds' if self.trained else 'values'}"
        budget = "" if self.budget_fraction is None else f"; budget {self.budget_fraction:.2g} of the paper's SGD steps"
        paper = "" if self.paper_value is None else f" (paper: {self.paper_value:.3g})"
        return (f"**{self.verdict}** - {self.paper} Criterion: {self.criterion}. Measured {iv}{paper} "
                f"({how}{budget}); {self.note}.")

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
    tmp.write_text(json.dumps({"chapter": chapter, "claims": [c.to_json() for c in claims]},
                              indent=1, default=float))
    os.replace(tmp, path)
    return path


def read_claims(paths) -> dict:
    """Merge chapters' claim files into the scorecard ``{"claims": [...]}`` (chapter order)."""
    claims = []
    for p in sorted(Path(p) for p in paths):
        claims += json.loads(p.read_text())["claims"]
    return {"claims": claims}


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
