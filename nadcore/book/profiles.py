"""Execution profiles, nanoGPT-style: one base dict per chapter plus small overrides.

Each chapter has a package in :mod:`nadcore.chapters`, named after the chapter's stem without its
number (``nadcore/chapters/linear_separability/`` for ``03_linear_separability``), whose
``settings`` module defines

* ``PAPER``: every setting, at the papers' scale (the ``paper`` profile, meant for a GPU);
* ``CPU``: only what the ``cpu`` profile (the default build, a 2-core laptop) changes;
* ``SMOKE``: only what the ``smoke`` profile (the tests, seconds per chapter) changes on top of
  ``CPU``.

``resolve(chapter, profile, knobs)`` applies them in that order, then the reader's ``knobs``
(which must name existing settings). Values are replaced whole: a nested dict in an override
replaces the base's dict.
"""

from __future__ import annotations

import copy
import difflib

PROFILES = ("smoke", "cpu", "paper")

#: each chapter's modules by part (``settings``, ``claims``), registered by the chapters themselves
#: (``nadcore/chapters/__init__.py``): the book machinery never imports a chapter
_CHAPTERS: dict[str, dict] = {}


def _package(chapter: str) -> str:
    return chapter.split("_", 1)[1] if chapter[:2].isdigit() else chapter


def register_chapter(chapter: str, **parts) -> None:
    """Record ``chapter``'s modules (``settings=...``, ``claims=...``) under the name of its
    package (``"linear_separability"`` for ``03_linear_separability``)."""
    _CHAPTERS.setdefault(_package(chapter), {}).update(parts)


def chapter_module(chapter: str, part: str):
    """The module ``part`` (``settings``, ``claims``) that ``chapter`` registered, e.g.
    ``nadcore.chapters.linear_separability.claims`` for ``("03_linear_separability", "claims")``;
    ModuleNotFoundError where there is none."""
    name = _package(chapter)
    if not _CHAPTERS:
        raise ModuleNotFoundError(
            "no chapter is registered with the book: import nadcore.chapters (its package registers "
            "every chapter's settings and claims)",
            name=f"nadcore.chapters.{name}",
        )
    if part not in _CHAPTERS.get(name, {}):
        raise ModuleNotFoundError(
            f"chapter {chapter!r} registered no {part} module (registered: {', '.join(sorted(_CHAPTERS))})",
            name=f"nadcore.chapters.{name}.{part}",
        )
    return _CHAPTERS[name][part]


def _module(chapter: str):
    try:
        return chapter_module(chapter, "settings")
    except ModuleNotFoundError as e:
        name = chapter.split("_", 1)[1] if chapter[:2].isdigit() else chapter
        raise KeyError(f"no settings for chapter {chapter!r} (expected nadcore/chapters/{name}/settings.py)") from e


def resolve(chapter: str, profile: str, knobs: dict | None = None) -> dict:
    """The settings of ``chapter`` on ``profile`` with ``knobs`` applied (unknown knobs raise)."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILES)}")
    mod = _module(chapter)
    cfg = copy.deepcopy(mod.PAPER)
    layers = {"paper": [], "cpu": [mod.CPU], "smoke": [mod.CPU, mod.SMOKE]}[profile]
    for layer in layers:
        unknown = set(layer) - set(cfg)
        if unknown:
            raise KeyError(f"{mod.__name__}: profile override of unknown settings {sorted(unknown)}")
        cfg.update(copy.deepcopy(layer))
    for k, v in (knobs or {}).items():
        if k not in cfg:
            close = difflib.get_close_matches(k, list(cfg), n=3)
            hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            raise ValueError(f"unknown knob {k!r} for chapter {chapter}.{hint} Valid knobs: {', '.join(sorted(cfg))}.")
        cfg[k] = copy.deepcopy(v)
    return cfg


def knob_names(chapter: str) -> list[str]:
    """The settings a reader may override with ``-p knobs '{...}'``."""
    return sorted(_module(chapter).PAPER)
