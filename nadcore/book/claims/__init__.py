"""The claims each chapter tests, registered before any experiment runs.

One module per chapter, named like its settings module (``claims/linear_separability.py`` for
``03_linear_separability``), defines ``CLAIMS``: a list of
:class:`nadcore.book.evidence.ClaimSpec`. A chapter records the measured quantity with one short
call, ``ch.claim("fig1-frequency-gap", values=per_seed_gap, ...)``; the statement, its kind, the
criterion and the papers' own number come from here, so the criteria are fixed in the repository
before a run and a reader finds all of a chapter's in one place.
"""
from __future__ import annotations

import importlib

from nadcore.book.evidence import ClaimSpec

__all__ = ["specs", "spec"]


def specs(chapter: str) -> dict[str, ClaimSpec]:
    """The registered claims of ``chapter`` (e.g. "03_linear_separability"), by id; none for a
    chapter without a claims module."""
    name = chapter.split("_", 1)[1] if chapter[:2].isdigit() else chapter
    try:
        mod = importlib.import_module(f"nadcore.book.claims.{name}")
    except ModuleNotFoundError as e:
        if e.name != f"nadcore.book.claims.{name}":
            raise
        return {}
    out = {}
    for s in mod.CLAIMS:
        if s.id in out:
            raise ValueError(f"{mod.__name__}: claim {s.id!r} is registered twice")
        out[s.id] = s
    return out


def spec(chapter: str, id: str) -> ClaimSpec:
    """The registered claim ``id`` of ``chapter``; a clear error if there is none."""
    found = specs(chapter)
    if id not in found:
        name = chapter.split("_", 1)[1] if chapter[:2].isdigit() else chapter
        raise KeyError(f"claim {id!r} is not registered for chapter {chapter}: add a ClaimSpec to "
                       f"nadcore/book/claims/{name}.py (registered: {', '.join(found) or 'none'})")
    return found[id]
