"""Reading the scorecard's claim rows (``scorecard.json``, rows as in
:data:`nadcore.book.evidence.CLAIM_KEYS`): criteria parsed back into quantity, comparison and
threshold, kinds and profiles with the defaults of older rows, numbers, measured intervals and
verdict counts. Shared by the Scorecard page (:mod:`nadcore.book.scorecard`) and its forest
plots (:mod:`nadcore.book.forest`)."""

from __future__ import annotations

import math
import re
from collections import Counter

from nadcore.book.evidence import KINDS, number

__all__ = [
    "FILES_DIR",
    "KIND_TITLES",
    "VERDICT_SIGNS",
    "VERDICT_COLOURS",
    "VERDICT_MARKERS",
    "OPS_TEXT",
    "clean_text",
    "parse_criterion",
    "kind_of",
    "profile_of",
    "num_or_none",
    "has_interval",
    "measured_text",
    "counts",
    "headline",
    "limits",
    "settled_counts",
    "settled_text",
    "reduced_of",
    "revisions",
]

#: folder (beside scorecard.md) for the forest plots and their data
FILES_DIR = "scorecard_files"
#: what each kind is called in the summary (plural)
KIND_TITLES = {
    "paper": "Paper claims",
    "follow-up": "Follow-up claims",
    "reviewer question": "Reviewer questions",
    "extension": "Extensions",
    "sanity check": "Sanity checks",
    "check": "Checks (exact by construction)",
    "calibration": "Calibrations (against data a setting was fitted to)",
}
#: a sign beside the verdict's word, so that the badge reads in grey scale too
VERDICT_SIGNS = {"reproduced": "\u2713", "not reproduced": "\u2717", "inconclusive": "?"}
VERDICT_COLOURS = {"reproduced": "#1a7f37", "not reproduced": "#cf222e", "inconclusive": "#9a6700"}
VERDICT_MARKERS = {"reproduced": "o", "not reproduced": "X", "inconclusive": "s"}
OPS_TEXT = {">=": "\u2265", "<=": "\u2264", ">": ">", "<": "<"}


# --------------------------------------------------------------------------------------------
# Reading rows
# --------------------------------------------------------------------------------------------
_NP_SCALAR = re.compile(r"np\.(?:u?int|float|complex)(?:8|16|32|64|128)?\(\s*([^()]*?)\s*\)")
_NP_BOOL = re.compile(r"np\.(True|False)_")
_NP_STR = re.compile(r"np\.str_\(\s*(['\"])(.*?)\1\s*\)")


def clean_text(text) -> str:
    """``text`` with numpy scalar reprs written as numbers (``np.int64(32)`` -> ``32``,
    ``np.float64(0.12345)`` -> ``0.123``, ``np.True_`` -> ``True``)."""
    if text is None:
        return ""
    text = str(text)

    def scalar(m):
        try:
            return number(float(m.group(1)))
        except ValueError:
            return m.group(1)

    text = _NP_SCALAR.sub(scalar, text)
    text = _NP_BOOL.sub(r"\1", text)
    return _NP_STR.sub(r"\2", text)


_CRITERION = re.compile(
    r"^(?P<quantity>.*\S)\s+(?P<op>>=|<=|>|<)\s+(?P<threshold>[-+]?(?:\d[\d.]*(?:e[-+]?\d+)?|inf|nan))\s*$",
    re.IGNORECASE,
)


_WITHIN = re.compile(
    r"^(?P<quantity>.*\S)\s+within\s+(?P<center>[-+]?\d[\d.]*(?:e[-+]?\d+)?)\s+\+-\s+"
    r"(?P<threshold>\d[\d.]*(?:e[-+]?\d+)?)\s*$",
    re.IGNORECASE,
)


def parse_criterion(text) -> tuple[str, str | None, float | None]:
    """``(quantity, op, threshold)`` of a criterion written as ``quantity op threshold``
    (:class:`nadcore.book.evidence.Criterion`); ``(text, None, None)`` when it is not. For a
    ``quantity within center +- tolerance`` criterion: ``(quantity, "within", tolerance)`` (the
    center is the claim's ``paper_value``; its ``band`` holds both ends)."""
    text = clean_text(text)
    w = _WITHIN.match(text)
    if w:
        return w["quantity"], "within", float(w["threshold"])
    m = _CRITERION.match(text)
    if not m:
        return text, None, None
    return m["quantity"], m["op"], float(m["threshold"])


def kind_of(c: dict) -> str:
    """The claim's kind (rows written before kinds existed are the papers' claims, as
    :class:`nadcore.book.evidence.Claim` defaults)."""
    return c.get("kind") or "paper"


def profile_of(c: dict) -> str:
    """The profile a claim was computed with ("" when the row does not say)."""
    return c.get("profile") or (c.get("settings") or {}).get("profile") or ""


def num_or_none(v) -> float | None:
    try:
        v = float(v)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def has_interval(c: dict) -> bool:
    lo, hi = num_or_none(c.get("ci_low")), num_or_none(c.get("ci_high"))
    return lo is not None and hi is not None and lo != hi


def measured_text(c: dict) -> str:
    """``value [low, high]`` (just the value when it is exact; "no value" when missing)."""
    v = num_or_none(c.get("value"))
    if v is None:
        return "no value"
    if not has_interval(c):
        return number(v)
    return f"{number(v)} [{number(c['ci_low'])}, {number(c['ci_high'])}]"


def counts(claims, key=kind_of) -> dict:
    """``{group: Counter(verdict)}`` with groups as ``key`` gives them, kinds in KINDS order."""
    out: dict = {}
    for c in claims:
        out.setdefault(key(c), Counter())[c.get("verdict", "inconclusive")] += 1
    order = {k: i for i, k in enumerate(KINDS)}
    return dict(sorted(out.items(), key=lambda kv: (order.get(kv[0], len(order)), str(kv[0]))))


def headline(claims, kind: str = "paper") -> str:
    """``"Paper claims reproduced: x of y"``: the claims of ``kind`` only (checks, calibrations,
    extensions and sanity checks never count)."""
    mine = [c for c in claims if kind_of(c) == kind]
    return f"{KIND_TITLES[kind]} reproduced: {sum(c.get('verdict') == 'reproduced' for c in mine)} of {len(mine)}"


def reduced_of(c: dict) -> list[str]:
    """What of the row's settings is below the paper's (rows of an older schema: their budget
    and Monte Carlo fractions, and "settings not recorded")."""
    if "at_paper_settings" in c:
        return list(c.get("reduced") or [])
    return [
        f"{number(v)} of the paper's {w}"
        for k, w in (("budget_fraction", "SGD steps"), ("mc_fraction", "random networks"))
        if (v := num_or_none(c.get(k))) is not None and v < 0.999
    ] + ["settings not recorded against the paper's"]


def settled_counts(claims, kind: str = "paper") -> dict:
    """The five counts of the headline for the claims of ``kind``: reproduced and not reproduced,
    each at the paper's settings (``at_paper_settings``) and at reduced ones (keys
    ``reproduced_paper``, ``reproduced_reduced``, ``not_reproduced_paper``,
    ``not_reproduced_reduced``), and ``undecided``
    (inconclusive); with the hours their ``to_settle`` rows give (on the machines that made the
    rows), how many of the undecided
    have such a cost, and how many more runs of the same kind cannot decide."""
    mine = [c for c in claims if kind_of(c) == kind]
    at = [bool(c.get("at_paper_settings")) for c in mine]
    out = {
        f"{v.replace(' ', '_')}_{where}": sum(
            c.get("verdict") == v and a == (where == "paper") for c, a in zip(mine, at)
        )
        for v in ("reproduced", "not reproduced")
        for where in ("paper", "reduced")
    }
    undecided = [c for c in mine if c.get("verdict") not in ("reproduced", "not reproduced")]
    settle = [c.get("to_settle") or {} for c in undecided]
    hours = [num_or_none(t.get("hours")) for t in settle]
    out.update(
        {
            "undecided": len(undecided),
            "total": len(mine),
            "hours": round(sum(h for h in hours if h is not None), 1),
            "priced": sum(h is not None for h in hours),
            "decidable": sum(t.get("need") is not None for t in settle),
        }
    )
    return out


def settled_text(claims, kind: str = "paper") -> str:
    """The five counts in one sentence (:func:`settled_counts`)."""
    n = settled_counts(claims, kind)
    title = KIND_TITLES[kind]
    undecided = f"{n['undecided']} undecided"
    if n["undecided"]:
        bits = [f"{n['decidable']} of them decidable by more seeds, cells or groups at the measured spread"]
        if n["priced"]:
            bits.append(
                f"about {number(n['hours'])} hours, on the machines that made them, for the {n['priced']} "
                "whose cost per run is known"
            )
        undecided += " (" + "; ".join(bits) + ")"
    return (
        f"{title}: {n['reproduced_paper']} reproduced at the paper's settings, "
        f"{n['reproduced_reduced']} at reduced settings; "
        f"{n['not_reproduced_paper']} not reproduced at the paper's settings, "
        f"{n['not_reproduced_reduced']} at reduced settings; {undecided}"
    )


def revisions(claims) -> list[dict]:
    """The rows whose criterion was revised from an earlier reading of the sentence."""
    return [c for c in claims if c.get("revised")]


_NOUNS = {
    "check": ("check", "checks"),
    "calibration": ("calibration", "calibrations"),
    "extension": ("extension", "extensions"),
    "sanity check": ("sanity check", "sanity checks"),
    "reviewer question": ("reviewer question", "reviewer questions"),
    "follow-up": ("claim of the follow-up", "claims of the follow-up"),
}


def _count(n: int, kind: str) -> str:
    return f"{n} {_NOUNS[kind][n != 1]}"


def limits(claims) -> str:
    """What the headline does and does not say, in one paragraph computed from the rows: the
    kinds it leaves out, how many of its claims ran below the paper's budget or Monte Carlo
    sample, rest on networks narrower than the paper's or on a campaign bundle, and how many are
    inconclusive."""
    paper = [c for c in claims if kind_of(c) == "paper"]
    apart = [
        _count(n, k)
        for k in ("follow-up", "reviewer question", "extension", "sanity check", "check", "calibration")
        if (n := sum(kind_of(c) == k for c in claims))
    ]
    out = [
        f"The headline counts the NAD paper's own claims, {len(paper)} of them"
        + (
            f"; the {', '.join(apart[:-1]) + ' and ' + apart[-1] if len(apart) > 1 else apart[0]} are "
            "counted apart (checks and calibrations are no evidence that the paper reproduces)."
            if apart
            else "."
        )
    ]
    if paper:
        below = [reduced_of(c) for c in paper]  # the rows' own phrases (Claim.evaluate's)
        reduced = sum(
            any(r.endswith(("of the paper's SGD steps", "of the paper's random networks")) for r in b) for b in below
        )
        narrow = sum(any(r.startswith("width ") for r in b) for b in below)
        bundled = sum(profile_of(c).startswith("campaign") for c in paper)
        unsure = sum(c.get("verdict") == "inconclusive" for c in paper)
        out.append(
            f"Of those, {reduced} ran with fewer SGD steps or random networks than the paper's, {narrow} "
            f"rest on networks narrower than the paper's, {bundled} come from a committed campaign bundle "
            f"rather than from this build, and {unsure} are inconclusive."
        )
    return " ".join(out)
