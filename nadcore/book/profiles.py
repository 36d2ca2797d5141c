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


#: the keys of a training recipe or data record (a dict of these only is a record: an unknown key
#: in it is a misspelling, not a new model)
RECORD_KEYS = frozenset(
    {
        "n_train",
        "n_test",
        "epochs",
        "max_lr",
        "momentum",
        "weight_decay",
        "batch_size",
        "clip_grad_norm",
        "schedule",
        "trainer",
        "autocast",
        "channels_last",
        "loss_threshold",
        "sigma",
        "epsilon",
    }
)


def _kind(value) -> str:
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, dict):
        return "dict"
    return type(value).__name__


def _allowed(references) -> set[str]:
    """The kinds a setting may take: those of its values on every profile (an int where a float
    is, a None where the setting is optional)."""
    kinds = {_kind(r) for r in references}
    if "float" in kinds:
        kinds.add("int")
    return kinds


def _check(value, references: list, where: str) -> None:
    """Raise ValueError unless ``value`` has the kind of the setting's values on the profiles
    (``references``), recursively: a record (a dict of :data:`RECORD_KEYS`) takes only the keys
    its profiles use; a mapping of records (per model: ``{"lenet": {...}, "default": {...}}``)
    takes any key, and each value as a record of the keys any of them uses; a mapping of
    values (per model: ``{"default": 1.0}``) takes any key, its values of the kinds of theirs."""
    kinds = _allowed(references)
    if "None" in kinds or not references:
        return
    kind = _kind(value)
    if kind not in kinds:
        raise ValueError(
            f"{where} must be {' or '.join(sorted(kinds - {'int'} if 'float' in kinds else kinds))}, "
            f"got {value!r} ({kind})"
        )
    if kind != "dict":
        return
    dicts = [r for r in references if isinstance(r, dict)]
    keys = set().union(*dicts)
    if keys and keys <= RECORD_KEYS:  # a record: its keys are fixed
        unknown = sorted(set(value) - keys)
        if unknown:
            close = {k: difflib.get_close_matches(k, sorted(keys), n=1) for k in unknown}
            hint = "".join(f" Did you mean {c[0]!r} for {k!r}?" for k, c in close.items() if c)
            raise ValueError(f"{where}: unknown key(s) {unknown}.{hint} Valid keys: {', '.join(sorted(keys))}.")
        for k, v in value.items():
            _check(v, [d[k] for d in dicts if k in d], f"{where}[{k!r}]")
        return
    for k, v in value.items():  # a mapping (per model, per label): any key, values alike
        same = [d[k] for d in dicts if k in d]
        _check(v, same or [x for d in dicts for x in d.values()], f"{where}[{k!r}]")


def resolve(chapter: str, profile: str, knobs: dict | None = None) -> dict:
    """The settings of ``chapter`` on ``profile`` with ``knobs`` applied. An unknown knob, or one
    of another kind than the setting has on the profiles (a string for a number, a misspelled key
    of a training recipe), raises ValueError here, naming the valid ones, before anything runs."""
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
        refs = [m[k] for m in (mod.PAPER, mod.CPU, mod.SMOKE) if k in m]
        _check(v, refs, f"knob {k!r} of chapter {chapter}")
        cfg[k] = copy.deepcopy(v)
    return cfg


def knob_names(chapter: str) -> list[str]:
    """The settings a reader may override with ``-p knobs '{...}'``."""
    return sorted(_module(chapter).PAPER)
