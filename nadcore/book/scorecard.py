"""The Scorecard page: every claim's verdict at a glance (``book/executed/scorecard.md``).

:func:`write_page` turns the merged claims (``scorecard.json``, rows as in
:data:`nadcore.book.evidence.CLAIM_KEYS`) into one MyST page:

1. the headline, "Paper claims reproduced: x of y" (the NAD paper's own claims only; the
   follow-up's beside it), a paragraph computed from the rows saying what it leaves out and how
   many of its claims rest on reduced settings, and the verdicts counted per kind of claim (and
   per profile or campaign, when some rows come from a committed bundle); checks, calibrations,
   extensions and sanity checks are counted apart from the papers' claims;
2. :func:`coverage_section`: for each of the papers' figures, how many of the networks it shows
   the book has computed and where (the build or a committed campaign bundle), and which are
   still missing;
3. one section per chapter: one short line per claim, grouped by kind (a verdict badge first,
   the claim's id linking to the cell that states its verdict, the measured value with its 95%
   interval, the criterion's threshold, the paper's number), each folding out to the paper's
   sentence, the criterion, the interval method, seeds or Monte Carlo groups, budget, Monte
   Carlo fraction and kernel path; then a forest plot of the chapter's claims (PNG, its data as
   CSV beside it in ``scorecard_files/``).

Badges are ``<span class="nad-verdict nad-verdict-<verdict>">`` styled by
``book/static/scorecard.css``; their text says the verdict, so they read without colour too.
Rows of an older schema (no ``kind``, ``groups``, ``profile``, ...) are shown with defaults. The
page writer needs no book build; ``scripts/preview_scorecard.py`` renders it alone.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from nadcore.book.claim_rows import (
    FILES_DIR,
    KIND_TITLES,
    OPS_TEXT,
    VERDICT_SIGNS,
    clean_text,
    counts,
    headline,
    kind_of,
    limits,
    measured_text,
    num_or_none,
    parse_criterion,
    profile_of,
    reduced_of,
    revisions,
    settled_text,
)
from nadcore.book.evidence import VERDICTS, number
from nadcore.book.forest import FOREST_COLUMNS, forest_plot

__all__ = [
    "write_page",
    "page_text",
    "coverage_section",
    "forest_plot",
    "FOREST_COLUMNS",
    "clean_text",
    "parse_criterion",
    "kind_of",
    "profile_of",
    "counts",
    "FILES_DIR",
]

# --------------------------------------------------------------------------------------------
# Markdown pieces
# --------------------------------------------------------------------------------------------
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|$~])")


def md_escape(text) -> str:
    """Plain text made safe for MyST (no emphasis, roles, math or HTML from its characters)."""
    return _MD_SPECIAL.sub(r"\\\1", clean_text(text)).replace("\n", " ")


def _html_escape(text) -> str:
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def badge(verdict: str, text: str | None = None) -> str:
    """The verdict as an inline HTML badge (its class colours it; its text names it)."""
    slug = re.sub(r"[^a-z]+", "-", verdict.lower()).strip("-")
    sign = VERDICT_SIGNS.get(verdict, "")
    label = _html_escape(text if text is not None else verdict)
    return (
        f'<span class="nad-verdict nad-verdict-{slug}" data-verdict="{_html_escape(verdict)}">{sign} {label}</span>'
        if sign
        else f'<span class="nad-verdict nad-verdict-{slug}" data-verdict="{_html_escape(verdict)}">{label}</span>'
    )


def _fraction(v) -> str:
    v = num_or_none(v)
    return "" if v is None else number(v)


def claim_title(c: dict) -> str:
    """The claim's one line: badge, linked id, measured value, what the criterion needs, the
    paper's number."""
    _, op, thr = parse_criterion(c.get("criterion", ""))
    parts = [measured_text(c)]
    band = c.get("band") or [None, None]
    if op == "within" and None not in band:
        parts.append(f"needs\u00a0{number(band[0])}\u2013{number(band[1])}")
    elif op is not None and thr is not None:
        parts.append(f"needs\u00a0{OPS_TEXT[op]}\u00a0{number(thr)}")  # no break inside
    pv = num_or_none(c.get("paper_value"))
    if pv is not None:
        parts.append(f"paper\u00a0{number(pv)}")
    if profile_of(c) == "paper":
        parts.append("paper\u00a0scale")
    if kind_of(c) in ("paper", "follow-up"):
        parts.append(
            "at\u00a0the\u00a0paper's\u00a0settings" if c.get("at_paper_settings") else "reduced\u00a0settings"
        )
    return f"{badge(c.get('verdict', 'inconclusive'))} {{ref}}`{c['id']} <claim-{c['id']}>` \u00b7 " + " \u00b7 ".join(
        parts
    )


def claim_details(c: dict) -> list[str]:
    """What folds out under a claim's line (a bullet list)."""
    kind = kind_of(c)
    source = clean_text(c.get("source") or "")
    paper = clean_text(c.get("paper") or "").replace("\n", " ")
    if source and paper.startswith(source):  # older rows wrote the source into the sentence
        source = ""
    lines = [
        f"- **{'The papers say' if kind in ('paper', 'follow-up') else 'Claim'}**"
        + (f" ({md_escape(source)})" if source else "")
        + f": {paper}",
        f"- **Criterion**, fixed before the run: {md_escape(c.get('criterion', ''))}"
        + (f"; {md_escape(c['note'])}" if c.get("note") else ""),
    ]
    if c.get("reading"):
        lines.append(f"- **Reading of the sentence**: {md_escape(c['reading'])}")
    how = [md_escape(c.get("interval") or "")] if c.get("interval") else []
    seeds, groups = c.get("seeds") or 0, c.get("groups")
    said = (c.get("interval") or "").lower()
    if groups:
        if f"{int(groups)} monte carlo groups" not in said and f"{int(groups)} groups" not in said:
            how.append(f"{int(groups)} Monte Carlo groups")
    elif seeds and seeds > 1:
        how.append(f"{int(seeds)} seeds")
    elif seeds == 1:
        how.append("1 value")
    lines.append(f"- **Measured**: {md_escape(measured_text(c))}" + (f" ({'; '.join(how)})" if how else ""))
    fitted = (c.get("settings") or {}).get("fitted")
    if fitted:
        lines.append(f"- **Calibration, not evidence**: {md_escape(fitted)}")
    pv = num_or_none(c.get("paper_value"))
    if pv is not None:
        src = c.get("paper_value_source")
        lines.append(f"- **The paper's value**: {number(pv)}" + (f" ({md_escape(src)})" if src else ""))
    cost = []
    if c.get("trained") is False:
        cost.append("no training (random networks or a closed form)")
    b = _fraction(c.get("budget_fraction"))
    if b:
        cost.append(f"{b} of the paper's SGD steps")
    m = _fraction(c.get("mc_fraction"))
    if m:
        cost.append(f"{m} of the paper's random networks")
    if cost:
        lines.append("- **Budget**: " + "; ".join(cost))
    reduced = reduced_of(c)
    lines.append(
        "- **At the paper's settings**: "
        + (
            "yes (samples, SGD steps, random networks, network and width)"
            if c.get("at_paper_settings") and not reduced
            else "no: " + md_escape("; ".join(reduced))
        )
    )
    settle = c.get("to_settle")
    if settle:
        lines.append("- **To settle**: " + md_escape(settle_text(settle)))
    if c.get("revised"):
        lines.append(f"- **Criterion revised**: {md_escape(c['revised'])}")
    run = [f"kind: {md_escape(kind)}"]
    if profile_of(c):
        run.append(f"profile: {md_escape(profile_of(c))}")
    if c.get("kernel_path"):
        run.append(f"kernel path: {md_escape(c['kernel_path'])}")
    settings = {k: v for k, v in (c.get("settings") or {}).items() if k not in ("profile", "fitted")}
    if settings:
        run.append("settings: " + ", ".join(f"{md_escape(k)}={md_escape(_setting(v))}" for k, v in settings.items()))
    lines.append("- **Run**: " + "; ".join(run))
    return lines


def settle_text(settle: dict) -> str:
    """A row's ``to_settle`` in words."""
    need, hours = settle.get("need"), num_or_none(settle.get("hours"))
    if need is None:
        return str(settle.get("why") or "")
    cost = (
        f", about {number(hours)} hours on {settle.get('on') or 'the machine that made it'}"
        if hours is not None
        else ", hours not measured for this row (the build records no cost per run)"
    )
    return (
        f"{int(need)} {settle.get('unit', 'values')} in all (have {int(settle.get('have') or 0)}){cost}: "
        f"{settle.get('why', '')}"
    )


def revisions_section(claims) -> list[str]:
    """The criteria revised from an earlier reading of their sentences, with the reasons."""
    rows = revisions(claims)
    if not rows:
        return []
    lines = [
        "## Criteria revised",
        "",
        "Each criterion tests its sentence at the sentence's strength. These were changed from an "
        "earlier reading, for the reason given:",
        "",
    ]
    return lines + [f"- {{ref}}`{c['id']} <claim-{c['id']}>`: {md_escape(c['revised'])}" for c in rows] + [""]


def _setting(v) -> str:
    if isinstance(v, float):
        return number(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_setting(x) for x in v) + "]"
    return clean_text(v)


def claim_block(c: dict) -> list[str]:
    """A claim as a MyST dropdown: the title line shows, the details fold out."""
    return [f"::::{{dropdown}} {claim_title(c)}", ":class-container: nad-claim", ""] + claim_details(c) + ["::::", ""]


def coverage_section(coverage) -> list[str]:
    """The section on the papers' networks: ``coverage = (have, missing)``, one line per figure
    (how many of its networks are computed, and where) and one per figure still missing some
    (MyST allowed); nothing when both are empty."""
    have, missing = ([str(x).strip() for x in part or [] if str(x).strip()] for part in (coverage or ((), ())))
    if not have and not missing:
        return []
    lines = (
        [
            "## The papers' networks",
            "",
            "For each of the papers' figures, the networks it shows that this book has computed, and "
            "where: this build, or a committed campaign bundle (the paper's big networks, trained "
            "off-build at the width stated).",
            "",
        ]
        + [f"- {clean_text(f)}" for f in have]
        + [""]
    )
    if missing:
        lines += ["Not yet computed:", ""] + [f"- {clean_text(f)}" for f in missing] + [""]
    return lines


def _count_cells(counter: Counter) -> list[str]:
    return [str(counter.get(v, 0)) for v in VERDICTS] + [str(sum(counter.values()))]


def summary(claims) -> list[str]:
    """The headline (the NAD paper's own claims), the follow-up's beside it, what the headline
    leaves out (a paragraph computed from the rows) and the counts per kind: the papers' claims
    first, then the kinds that are no evidence that the papers reproduce."""
    lines = []
    by_kind = counts(claims)
    heads = [headline(claims, k) for k in ("paper", "follow-up") if k in by_kind]
    if heads:
        lines += [f'<p class="nad-headline">{_html_escape(heads[0])}</p>', ""]
        lines += [f"**{h}**" for h in heads[1:]] + ([""] if heads[1:] else [])
        lines += [f"- {md_escape(settled_text(claims, k))}" for k in ("paper", "follow-up") if k in by_kind] + [""]
        lines += [md_escape(limits(claims)), ""]
    head = "| kind | " + " | ".join(badge(v) for v in VERDICTS) + " | total |"
    rows = [head, "|---|" + "---:|" * (len(VERDICTS) + 1)]
    for kind, n in by_kind.items():
        rows.append(f"| {KIND_TITLES.get(kind, md_escape(kind))} | " + " | ".join(_count_cells(n)) + " |")
    lines += rows + [""]
    profiles = counts(claims, profile_of)
    if len(profiles) > 1:
        lines += [
            "| computed on | kind | " + " | ".join(VERDICTS) + " | total |",
            "|---|---|" + "---:|" * (len(VERDICTS) + 1),
        ]
        for prof in profiles:
            for kind, n in counts([c for c in claims if profile_of(c) == prof]).items():
                lines.append(
                    f"| {md_escape(prof or '-')} | {KIND_TITLES.get(kind, md_escape(kind))} | "
                    + " | ".join(_count_cells(n))
                    + " |"
                )
        lines.append("")
    return lines


def chapter_title(executed: Path | None, stem: str) -> str:
    """The chapter's first heading in its executed notebook, else a title made from its stem."""
    if executed is not None:
        try:
            nb = json.loads((Path(executed) / f"{stem}.ipynb").read_text())
            for cell in nb.get("cells", []):
                if cell.get("cell_type") == "markdown":
                    src = "".join(cell.get("source", []))
                    m = re.search(r"^#\s+(.+)$", src, re.M)
                    if m:
                        return m.group(1).strip()
        except (OSError, ValueError):
            pass
    num, _, rest = stem.partition("_")
    return f"{int(num)}. {rest.replace('_', ' ').capitalize()}" if num.isdigit() and rest else stem


# --------------------------------------------------------------------------------------------
# The page
# --------------------------------------------------------------------------------------------
INTRO = (
    "Every claim this book tests, with its verdict computed from the measured value's 95% "
    "interval and a criterion fixed in the repository before the run: "
    "{r} the whole interval satisfies the criterion, {n} the whole interval violates it, "
    "{i} it straddles the threshold or a precondition (such as fitting the training set) "
    "failed. Each line shows the verdict, the claim (linked to the chapter's cell that states "
    "it), the measured value [95% interval], what the criterion needs and the paper's number "
    "where the papers give one; click a line for the paper's sentence, the criterion, the "
    "interval method, the seeds or Monte Carlo groups and the budget. The same rows as JSON: "
    "{{download}}`scorecard.json <scorecard.json>`."
)


def reference_section(ref: dict | None) -> list[str]:
    """A paragraph on the reference build (:func:`nadcore.book.reference_build.anchoring`): how
    many rows it ran, and which keep its verdict where this CPU's intervals alone give another."""
    if not ref:
        return []
    if not ref.get("build"):
        return ["No reference build is committed: every verdict is this build's own.", ""]
    kept = ref.get("kept") or []
    text = (
        f"Reference build ({ref['build']}): it ran {ref['ran']} of these {ref['of']} rows with the same "
        "code and parameters. A row whose interval moved from that build's by no more than another CPU's "
        "rounding keeps that build's verdict, so that every CPU shows the same ones"
    )
    text += (
        f"; {len(kept)} row(s) keep it where this build's interval alone would give another: " + ", ".join(kept) + "."
        if kept
        else "; no row's own verdict differs from it."
    )
    return [md_escape(text), ""]


def page_text(
    card: dict, executed: Path | None = None, profile: str | None = None, coverage=None, plots: dict | None = None
) -> str:
    """The page's MyST source. ``plots``: ``{chapter: (png, csv)}`` paths relative to the page."""
    claims = [dict(c) for c in card.get("claims", [])]
    lines = ["# Reproduction scorecard", ""]
    if not claims:
        return "\n".join(lines + ["No chapter has been executed yet, so there are no claims to show.", ""])
    lines += summary(claims)
    lines += [
        INTRO.format(r=badge("reproduced"), n=badge("not reproduced"), i=badge("inconclusive"))
        + (f" Profile of this build: {md_escape(profile)}." if profile else ""),
        "",
    ]
    lines += reference_section(card.get("build", {}).get("reference"))
    lines += coverage_section(coverage)
    lines += revisions_section(claims)
    chapters = list(dict.fromkeys(c.get("chapter", "") for c in claims))
    for stem in chapters:
        mine = [c for c in claims if c.get("chapter", "") == stem]
        n = Counter(c.get("verdict") for c in mine)
        lines += [
            f"## {md_escape(chapter_title(executed, stem))}",
            "",
            f"{len(mine)} claim(s): "
            + ", ".join(f"{n.get(v, 0)} {v}" for v in VERDICTS)
            + (
                f" \u00b7 {{doc}}`the chapter <{stem}>`"
                if executed is not None and (Path(executed) / f"{stem}.ipynb").exists()
                else ""
            ),
            "",
        ]
        for kind in counts(mine):
            lines += [f"**{KIND_TITLES.get(kind, md_escape(kind))}**", ""]
            for c in mine:
                if kind_of(c) == kind:
                    lines += claim_block(c)
        if plots and stem in plots:
            png, data = plots[stem]
            lines += [
                f"![Forest plot of the claims of {stem}: each claim's value and 95% interval on its "
                f"own scale, the criterion's threshold dashed, the paper's value as a diamond]({png})",
                "",
                f"Forest plot: each claim on its own scale. {{download}}`data <{data}>`",
                "",
            ]
    return "\n".join(lines)


def write_page(
    card: dict, executed: Path, name: str = "scorecard", profile: str | None = None, coverage=None, plots: bool = True
) -> Path:
    """Write ``executed/<name>.md`` (and the forest plots in ``executed/scorecard_files/``)."""
    executed = Path(executed)
    files = executed / FILES_DIR
    drawn = {}
    if files.is_dir():
        for old in files.glob("forest-*"):
            old.unlink()
    claims = card.get("claims", [])
    if plots and claims:
        files.mkdir(parents=True, exist_ok=True)
        for stem in dict.fromkeys(c.get("chapter", "") for c in claims):
            mine = [c for c in claims if c.get("chapter", "") == stem]
            slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", stem) or "chapter"
            forest_plot(mine, files / f"forest-{slug}.png", files / f"forest-{slug}.csv")
            drawn[stem] = (f"{FILES_DIR}/forest-{slug}.png", f"{FILES_DIR}/forest-{slug}.csv")
    path = executed / f"{name}.md"
    path.write_text(page_text(card, executed, profile, coverage, drawn) + "\n")
    return path
