"""The campaigns and their plans: what the 30-minute cpu build cannot afford, run off-build by
``scripts/run_campaign.py`` (the machinery: :mod:`nadcore.book.campaign`) into committed result
bundles under ``results/<campaign>/``.

A campaign trains its stages in order, job by job, on its ``device``, at its ``widths``
(registry options, see :data:`nadcore.nets.OPTIONS`; a missing name is trained at full width),
with its ``train`` overrides (the trainer and speed-only options). A stage is a dict: its
``figure``, one of :data:`FIGURES`, each defined by the chapter it belongs to (chapter 3's Figs.
1, 2, 3 and 6, :mod:`nadcore.chapters.linear_separability.campaign`; chapter 4's Figs. 7 and 8,
:mod:`nadcore.chapters.cifar10.campaign`; the follow-up's Figs. 2 and 3,
:mod:`nadcore.chapters.underspecification.campaign`; the atlas's Fig. 1 cells,
:mod:`nadcore.chapters.nad_atlas.campaign`), which say what else a stage names; ``arch``, a
registry name (``spec``: a model spec of its own, for a network outside the registry);
``widths``: the widths to train it at (default: the campaign's); ``seeds`` (default ``[0]``);
``autocast``: ``"bf16"`` to train in bf16 autocast, or None for float32 (default: the
campaign's ``train``). Each bundle row records its ``precision`` (``"fp32"`` or ``"bf16"``),
which is part of the run's identity: a cell trained in both is a check of the precision
(:func:`nadcore.chapters.linear_separability.bundled.precision_check`). A figure whose stages
take a ``profile`` of its own chapter (and ``overrides``) trains on that chapter's settings;
the others on chapter 3's ``paper`` settings with the campaign's ``overrides``.

The plans themselves (each campaign's stages, in order) are in
:mod:`nadcore.chapters.campaign_plans`.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pandas as pd

from nadcore.book import bundles, profiles
from nadcore.book.campaign import Figure, Stage, Task, equal_to, read_rows
from nadcore.chapters.campaign_plans import CPU, PAPER, TINY
from nadcore.chapters.cifar10.campaign import FIG7, FIG8
from nadcore.chapters.linear_separability import bundled
from nadcore.chapters.linear_separability import runs as sep
from nadcore.chapters.linear_separability.campaign import (
    CHAPTER,
    DIAGNOSTIC,
    FIG1,
    FIG2,
    FIG3,
    FIG6,
)
from nadcore.chapters.nad_atlas.campaign import ATLAS_FIG1
from nadcore.chapters.underspecification.campaign import US_FIG2, US_FIG3
from nadcore.nads.published import published_fig1_map
from nadcore.nets import REGISTRY, spec_width, width_name, width_spec

__all__ = [
    "CAMPAIGNS",
    "CPU",
    "PAPER",
    "TINY",
    "CHAPTER",
    "CIFAR_CHAPTER",
    "US_CHAPTER",
    "FIGURES",
    "stage_settings",
    "figure_of",
    "COLUMNS",
    "KEYS",
    "campaign_settings",
    "plan",
    "run_settings",
    "committed_runs",
    "SPEED_ONLY",
    "spec_of",
    "cells_figure",
    "profile_settings",
    "networks",
    "width_table",
    "figure_width",
    "coverage",
    "coverage_lines",
    "PAPER_FIGURES",
    "NAMES",
]

CAMPAIGNS = {"cpu": CPU, "paper": PAPER, "tiny": TINY}

#: the figures a campaign trains, by name
FIGURES: dict[str, Figure] = {f.name: f for f in (FIG1, FIG2, FIG3, FIG6, FIG7, FIG8, US_FIG2, US_FIG3, ATLAS_FIG1)}
#: each figure's CSV columns, and the columns that identify a run (a bundle has one row per run)
COLUMNS = {name: list(f.columns) for name, f in FIGURES.items()}
KEYS = {name: list(f.keys) for name, f in FIGURES.items()}
#: the chapters of Figs. 7 and 8, and of the follow-up's Figs. 2 and 3
CIFAR_CHAPTER, US_CHAPTER = FIG7.chapter, US_FIG2.chapter


def campaign_settings(name: str) -> dict:
    """The campaign ``name`` (a deep copy, with its name)."""
    if name not in CAMPAIGNS:
        raise ValueError(f"unknown campaign {name!r}; choose one of {', '.join(CAMPAIGNS)}")
    return {"name": name, **copy.deepcopy(CAMPAIGNS[name])}


def profile_settings(name: str, figure: str, arch: str) -> tuple[dict, int | None]:
    """The settings of its chapter that campaign ``name`` trains ``arch`` with for ``figure`` (a
    figure whose stages take a profile of their own: its stage's profile and overrides) and the
    network's width there."""
    camp = CAMPAIGNS[name]
    stage = next((st for st in camp["stages"] if st["figure"] == figure and st["arch"] == arch), None)
    if stage is None:
        raise ValueError(f"campaign {name!r} has no {figure} stage for {arch!r}")
    widths = stage_widths(camp, stage)
    if len(widths) != 1:
        raise ValueError(f"campaign {name!r} trains {arch!r} for {figure} at widths {widths}: the chapter draws one")
    return stage_settings(camp, stage), spec_width(spec_of(arch, widths[0]))


def committed_runs(name: str, figure: str) -> tuple[dict, dict]:
    """The committed runs of campaign ``name`` for ``figure`` (a figure whose stages take a profile of their own):
    ``(cfg, {arch: (rows, source)})``. ``cfg``: the chapter's settings that every stage of the
    figure trains with; per network that has one, ``rows``: its bundle rows at the width of its
    stage, of the seeds that have every run of the figure (and only those runs), and ``source``:
    where they come from, for a claim (``profile``, ``network`` with its width, ``settings``: the
    width, the number of seeds, the bundle). Raises FileNotFoundError where no network has a seed
    with every run, saying which command makes them."""
    b = bundles.load(name)
    fig = FIGURES[figure]
    frame = b.frame(fig.chapter, figure) if b is not None else None
    archs = networks(name, figure)
    settings = {arch: profile_settings(name, figure, arch) for arch in archs}
    cfgs = [c for c, _ in settings.values()]
    if any(c != cfgs[0] for c in cfgs):
        raise ValueError(f"campaign {name!r}: every {figure} stage must train with the same chapter settings")
    found = {}
    for arch, (cfg, width) in settings.items():
        rows = (
            frame[(frame["model"] == arch).to_numpy() & equal_to(frame["width"], width)]
            if frame is not None
            else pd.DataFrame(columns=COLUMNS[figure])
        )
        want = fig.seed_runs(cfg)
        rows = rows[np.array([r in want for r in fig.row_runs(rows)], dtype=bool)]
        complete = [s for s, n in rows.groupby("seed").size().items() if n == len(want)]
        rows = rows[rows["seed"].isin(complete)]
        if not rows.empty:
            network = bundled.width_label(NAMES[arch], arch, width)
            found[arch] = (
                rows,
                {
                    "profile": f"campaign {b.name}",
                    "network": network,
                    "settings": {"width": width, "seeds": len(complete), "bundle": b.title()},
                },
            )
    if not found:
        raise FileNotFoundError(
            f"the bundle of campaign {name!r} (results/{name}) holds no seed with every "
            f"{figure} run of {', '.join(archs) or 'any network'}: run `python "
            f"scripts/run_campaign.py --campaign {name} --figures {figure}`"
        )
    return cfgs[0], found


def networks(name: str, figure: str) -> list[str]:
    """The networks campaign ``name`` trains for ``figure``, in stage order."""
    return list(dict.fromkeys(st["arch"] for st in CAMPAIGNS[name]["stages"] if st["figure"] == figure))


def figure_width(name: str, figure: str, arch: str) -> int | None:
    """The width at which campaign ``name``'s ``figure`` results of ``arch`` count: for a figure
    whose stages take a profile of their own, its stage's (the chapter draws one), else the
    campaign's width of the network."""
    if FIGURES[figure].own_profile and arch in networks(name, figure):
        return profile_settings(name, figure, arch)[1]
    return spec_width(spec_of(arch, CAMPAIGNS[name]["widths"].get(arch)))


def stage_widths(camp: dict, stage: dict) -> list:
    """The widths a campaign's ``stage`` trains its network at: the stage's own ``widths``, else
    the campaign's width of the network (None: the network has no width)."""
    return stage.get("widths") or [camp["widths"].get(stage["arch"])]


def stage_settings(camp: dict, stage: dict) -> dict:
    """The settings of the chapter a ``stage``'s figure follows: the ``profile`` the stage names
    (and its ``overrides``) for a figure with a profile of its own, else chapter 3's ``paper``
    settings with the campaign's ``overrides``."""
    fig = figure_of(stage)
    if fig.own_profile:
        return profiles.resolve(fig.settings_chapter, stage.get("profile", "cpu"), stage.get("overrides"))
    return profiles.resolve(fig.settings_chapter, "paper", camp.get("overrides"))


def figure_of(stage: dict) -> Figure:
    """The :class:`nadcore.book.campaign.Figure` a stage trains, or a clear error."""
    if stage["figure"] not in FIGURES:
        raise ValueError(f"unknown figure {stage['figure']!r}; campaigns run {', '.join(FIGURES)}")
    return FIGURES[stage["figure"]]


#: training options that change only the speed (the same numbers up to float rounding)
SPEED_ONLY = ("trainer", "channels_last")


def run_settings(name: str, figure: str, arch: str, recipe: str = "authors") -> dict:
    """The D(v) settings, SGD recipe and ``outputs`` that campaign ``name`` trains ``arch`` with
    for ``figure`` (one of chapter 3's) in float32, without its :data:`SPEED_ONLY` options: what a
    chapter compares its own settings with before it takes the campaign's runs as its own."""
    camp = campaign_settings(name)
    fig = FIGURES[figure]
    cfg = profiles.resolve(fig.settings_chapter, "paper", camp.get("overrides"))
    s = fig.train_settings(cfg, camp, recipe)
    return {k: v for k, v in s.items() if k not in SPEED_ONLY} | {"outputs": int(cfg["outputs"])}


def cells_figure(name: str, arch: str) -> str:
    """The figure on Fourier cells (Fig. 1, else Fig. 3) that campaign ``name`` trains ``arch``
    for: the bundle rows a spot check of ``arch`` re-runs."""
    figures = {s["figure"] for s in CAMPAIGNS[name]["stages"] if s["arch"] == arch}
    for figure in ("fig1", "fig3"):
        if figure in figures:
            return figure
    raise ValueError(f"campaign {name!r} trains {arch!r} on no Fourier cells (Fig. 1 or Fig. 3)")


def spec_of(arch: str, width) -> str:
    if arch not in REGISTRY:
        raise ValueError(f"unknown architecture {arch!r}; the registry has {', '.join(sorted(REGISTRY))}")
    if width is None:
        return arch
    return width_spec(arch, width)


def plan(
    campaign: str,
    *,
    figures=None,
    archs=None,
    stages=None,
    device: str | None = None,
    trainer: str | None = None,
    float32: bool = False,
) -> tuple[list[Task], dict]:
    """The tasks of ``campaign`` in stage order (only ``figures`` / ``archs`` / stage numbers
    ``stages`` where given) and the settings they use (the campaign's, and by chapter the settings
    its figures follow); ``trainer`` ("many" or "side_by_side") replaces the campaign's ("many"
    implies ``float32``); ``float32`` trains every stage in float32, its bf16 stages too (on a CPU
    that emulates bf16; their rows say ``fp32``, a run of its own beside any bf16 run of the same
    cell). Each stage's figure builds its tasks (:class:`nadcore.book.campaign.Figure`)."""
    camp = campaign_settings(campaign)
    if trainer is not None:
        sep.check_trainer(trainer)
        camp["train"]["trainer"] = trainer
        float32 = float32 or trainer == "many"
    if float32:
        camp["train"].pop("autocast", None)
    dev = device or camp["device"]
    tasks, settings = [], {CHAPTER: profiles.resolve(CHAPTER, "paper", camp.get("overrides"))}
    for n, st in enumerate(camp["stages"]):
        fig = figure_of(st)
        if (figures and fig.name not in figures) or (archs and st["arch"] not in archs) or (stages and n not in stages):
            continue
        cfg = settings[fig.settings_chapter] = stage_settings(camp, st)
        autocast = None if float32 else st.get("autocast", camp["train"].get("autocast"))
        for width in stage_widths(camp, st):
            spec = st.get("spec") or spec_of(st["arch"], width)
            tasks += fig.tasks(
                Stage(
                    n=n,
                    stage=st,
                    campaign=camp,
                    cfg=cfg,
                    arch=st["arch"],
                    spec=spec,
                    width=spec_width(spec),
                    seeds=[int(s) for s in st.get("seeds", [0])],
                    device=dev,
                    autocast=autocast,
                )
            )
    if not tasks:
        raise ValueError(f"campaign {campaign!r} has no stage for figures={figures} archs={archs} stages={stages}")
    return tasks, {"campaign": camp, **settings}


# --------------------------------------------------------------------------------------------
# Coverage: which of the paper's networks each figure has, and where from
# --------------------------------------------------------------------------------------------
#: the papers' figures, their chapter and the networks each shows
PAPER_FIGURES = {
    "fig1": ("03_linear_separability", "Fig. 1", ["logreg", "lenet", "resnet18", "vgg11", "densenet121"]),
    "fig2": ("03_linear_separability", "Fig. 2", ["lenet", "resnet18"]),
    "fig3": ("03_linear_separability", "Fig. 3", ["lenet_nopool", "resnet18_nopool"]),
    "fig6": ("03_linear_separability", "Fig. 6", ["lenet", "resnet18", "vgg11", "densenet121"]),
    "fig7": ("04_cifar10", "Fig. 7", ["resnet18"]),
    "fig8": ("04_cifar10", "Fig. 8", ["lenet", "resnet18", "vgg11", "densenet121"]),
    "us-fig2": ("05_underspecification", "follow-up Fig. 2", ["mlp", "lenet", "resnet18"]),
    "us-fig3": ("05_underspecification", "follow-up Fig. 3", ["mlp", "lenet", "resnet18"]),
}
#: where the cpu build trains each figure's networks: (chapter, settings key of its list, the
#: chapter's default model where the figure trains it)
_BUILD = {
    "fig1": ("fig1_models", None),
    "fig2": ("fig2_models", None),
    "fig3": ("fig3_models", None),
    "fig6": ("fig6_models", "lenet"),
    "fig7": (None, "lenet"),
    "fig8": ("flip_models", "lenet"),
    "us-fig2": ("concat_models", None),
    "us-fig3": ("cifar_models", None),
}
NAMES = {
    "logreg": "LogReg",
    "lenet": "LeNet",
    "lenet_nopool": "LeNet without pooling",
    "mlp": "MLP",
    "resnet18": "ResNet-18",
    "resnet18_nopool": "ResNet-18 without pooling",
    "vgg11": "VGG-11",
    "densenet121": "DenseNet-121",
}


def coverage(profile: str = "cpu", root=None) -> list[dict]:
    """Per paper figure: its networks, and for each the source of its results, the ``profile``
    build's chapter or the committed campaign bundles that have it (each with its width and
    number of runs), or None where nothing computes it yet."""
    found = {name: b for name in CAMPAIGNS if name != "tiny" and (b := bundles.load(name, root)) is not None}
    out = []
    for fig, (chapter, label, nets) in PAPER_FIGURES.items():
        key, model = _BUILD[fig]
        cfg = profiles.resolve(chapter, profile)
        built = set(cfg.get(key) or []) | ({model} if model else set())
        where = {}
        for arch in nets:
            sources = []
            for name, b in found.items():
                df = b.frame(chapter, fig) if fig in FIGURES else None
                if df is None:
                    continue
                width = figure_width(name, fig, arch)
                part = df[(df["model"] == arch).to_numpy() & equal_to(df["width"], width)]
                if len(part):
                    sources.append(
                        f"campaign {name} ("
                        + (f"{width_name(arch)} {width}, " if width is not None else "")
                        + f"{len(part)} runs)"
                    )
            if arch in built:  # the build trains it, or takes the bundle's runs where they match its settings
                where[arch] = f"{profile} build" + (f" or {' and '.join(sources)}" if sources else "")
                continue
            where[arch] = " and ".join(sources) or None
        out.append({"figure": fig, "label": label, "chapter": chapter, "networks": where})
    return out


def coverage_lines(profile: str = "cpu", root=None) -> tuple[list[str], list[str]]:
    """(one line per figure: how many of the paper's networks it has and from where; one line
    per figure still missing networks, naming them)."""
    have, missing = [], []
    for c in coverage(profile, root):
        nets = c["networks"]
        done = {a: w for a, w in nets.items() if w}
        have.append(
            f"{c['label']}: {len(done)} of {len(nets)} networks"
            + (" (" + "; ".join(f"{NAMES.get(a, a)}: {w}" for a, w in done.items()) + ")" if done else "")
        )
        lack = [NAMES.get(a, a) for a, w in nets.items() if not w]
        if lack:
            missing.append(f"{c['label']}: {', '.join(lack)}")
    return have, missing


def width_table(out) -> "pd.DataFrame":
    """The width study's diagnostic cells in a bundle folder ``out``: per network and cell, the
    test accuracy at each width trained (seed mean, with the number of seeds) and the published
    accuracy of the full network."""
    df = read_rows(Path(out) / CHAPTER / "fig1.csv")
    if df is None:
        return pd.DataFrame()
    rows = []
    for arch, cells in DIAGNOSTIC.items():
        # one row per run (float32 where a run has both precisions)
        part = bundled.on_cells(bundled.select(df, arch), cells)
        if part.empty:
            continue
        for (k1, k2), g in part.groupby(["k1", "k2"]):
            row = {"network": NAMES[arch], "cell": f"({k1}, {k2})"}
            for w, gw in g.groupby("width"):
                row[f"width {int(w)}"] = f"{gw['test_acc'].mean():.3f} [{len(gw)}]"
            row["published (full width)"] = f"{published_fig1_map(arch, [(k1, k2)])[0]:.3f}"
            rows.append(row)
    if not rows:
        return pd.DataFrame()
    t = pd.DataFrame(rows).set_index(["network", "cell"])
    widths = sorted((c for c in t.columns if c.startswith("width ")), key=lambda c: int(c.split()[1]))
    return t[widths + ["published (full width)"]].fillna("-")
