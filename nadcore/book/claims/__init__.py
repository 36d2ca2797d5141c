"""The claims each chapter tests, registered before any experiment runs.

One module per chapter, named like its settings module (``claims/linear_separability.py`` for
``03_linear_separability``), defines ``CLAIMS``: a list of
:class:`nadcore.book.evidence.ClaimSpec`. A chapter records the measured quantity with one short
call, ``ch.claim("fig1-frequency-gap", values=per_seed_gap, ...)``; the statement, its kind, the
criterion and the papers' own number come from here, so the criteria are fixed in the repository
before a run and a reader finds all of a chapter's in one place. The claims of the results run at
the paper's scale on a GPU (``profile="paper"``, :mod:`nadcore.book.paper_results`) are in
``claims/paper_scale.py``, ``CLAIMS`` by chapter.
"""
from __future__ import annotations

import importlib

from nadcore.book.claims import paper_scale
from nadcore.book.evidence import ClaimSpec

__all__ = ["specs", "spec"]


def specs(chapter: str, profile: str | None = None) -> dict[str, ClaimSpec]:
    """The registered claims of ``chapter`` (e.g. "03_linear_separability"), by id; none for a
    chapter without a claims module. ``profile="paper"``: the claims of the paper-scale bundles
    (``claims/paper_scale.py``) instead."""
    name = chapter.split("_", 1)[1] if chapter[:2].isdigit() else chapter
    if profile == "paper":
        listed = paper_scale.CLAIMS.get(chapter, [])
    else:
        try:
            mod = importlib.import_module(f"nadcore.book.claims.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"nadcore.book.claims.{name}":
                raise
            return {}
        listed = mod.CLAIMS
    out = {}
    for s in listed:
        if s.id in out:
            raise ValueError(f"claims of {chapter}: claim {s.id!r} is registered twice")
        out[s.id] = s
    return out


def spec(chapter: str, id: str, profile: str | None = None) -> ClaimSpec:
    """The registered claim ``id`` of ``chapter`` (of the paper-scale bundles with
    ``profile="paper"``); a clear error if there is none."""
    found = specs(chapter, profile)
    if id not in found:
        name = "paper_scale" if profile == "paper" else (chapter.split("_", 1)[1] if chapter[:2].isdigit() else chapter)
        raise KeyError(f"claim {id!r} is not registered for chapter {chapter}: add a ClaimSpec to "
                       f"nadcore/book/claims/{name}.py (registered: {', '.join(found) or 'none'})")
    return found[id]
