"""The claims each chapter tests, registered in its package.

Each chapter's package has a ``claims`` module (``nadcore/chapters/linear_separability/claims.py``
for ``03_linear_separability``) that defines ``CLAIMS``: a list of
:class:`nadcore.book.evidence.ClaimSpec`. A chapter records the measured quantity with one short
call, ``ch.claim("fig1-frequency-gap", values=per_seed_gap, ...)``; the statement, its kind, the
criterion and the papers' own number come from the registry, so a reader finds all of a
chapter's criteria in one place and a criterion changes only by a commit that says why (the
history of the claims modules is the history of the criteria).
"""

from __future__ import annotations

from dataclasses import replace

from nadcore.book.evidence import ClaimSpec
from nadcore.book.profiles import chapter_module
from nadcore.nets.registry import OPTIONS

__all__ = ["specs", "spec"]


def specs(chapter: str) -> dict[str, ClaimSpec]:
    """The registered claims of ``chapter`` (e.g. "03_linear_separability"), by id; none for a
    chapter without a claims module."""
    name = chapter.split("_", 1)[1] if chapter[:2].isdigit() else chapter
    try:
        mod = chapter_module(chapter, "claims")
    except ModuleNotFoundError as e:
        if e.name not in (f"nadcore.chapters.{name}.claims", f"nadcore.chapters.{name}"):
            raise
        return {}
    out = {}
    for s in mod.CLAIMS:
        if s.id in out:
            raise ValueError(f"claims of {chapter}: claim {s.id!r} is registered twice")
        out[s.id] = _with_network(s)
    return out


def _with_network(s: ClaimSpec) -> ClaimSpec:
    """``s`` with its ``network``: where the spec names none, the registry network with a width
    option that its id names (``fig1-train-fit-resnet18`` -> ``resnet18``), whose full width a
    row's ``width`` setting is compared with."""
    if s.network:
        return s
    found = next((t for t in s.id.split("-") if t in OPTIONS), "")
    return replace(s, network=found) if found else s


def spec(chapter: str, id: str) -> ClaimSpec:
    """The registered claim ``id`` of ``chapter``; a clear error if there is none."""
    found = specs(chapter)
    if id not in found:
        name = chapter.split("_", 1)[1] if chapter[:2].isdigit() else chapter
        raise KeyError(
            f"claim {id!r} is not registered for chapter {chapter}: add a ClaimSpec to "
            f"nadcore/chapters/{name}/claims.py (registered: {', '.join(found) or 'none'})"
        )
    return found[id]
