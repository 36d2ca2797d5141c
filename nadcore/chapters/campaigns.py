"""The campaigns and their plans: what the 30-minute cpu build cannot afford, run off-build by
``scripts/run_campaign.py`` (the machinery: :mod:`nadcore.book.campaign`) into committed result
bundles under ``results/<campaign>/``.

A campaign trains the paper's big networks with chapter 3's ``paper`` settings (10,000 samples,
10,000 test samples, sigma 3, the authors' released recipe: 20 epochs, max_lr 0.5, no momentum,
gradient clipping 0.5), on its ``device``, at its ``widths`` (registry options, see
:data:`nadcore.nets.OPTIONS`; a missing name is trained at full width), with its ``train``
overrides (the trainer and speed-only options). Its ``stages`` run in order, job by job; a stage
is a dict:

* ``figure``: the bundle CSV it writes (``fig1``, ``fig2``, ``fig3``, ``fig6`` under chapter 3,
  ``fig7`` and ``fig8`` under chapter 4, the follow-up's ``us-fig2`` and ``us-fig3`` under
  chapter 5);
* ``arch``: a registry name; ``widths``: the widths to train it at (default: the campaign's);
* ``cells`` (Figs. 1-3): a list of ``[k1, k2]``, or ``"rows:0,2"`` (every cell of those rows of
  the 16x16 grid, coarse to fine: every 8th frequency first, then every 4th, then the rest), or
  ``"grid"`` (every cell distinct under the transposition, coarse to fine); ``limit``: only the
  first N of them (a later stage with the same cells continues where this one stopped: a job is
  never run twice);
* ``seeds``: the seeds (default ``[0]``); ``recipe``: a name of chapter 3's ``recipes``
  (default ``"authors"``); ``autocast``: ``"bf16"`` to train in bf16 autocast, or None for
  float32 (default: the campaign's ``train``). Each bundle row records its ``precision``
  (``"fp32"`` or ``"bf16"``), which is part of the run's identity: a cell trained in both is a
  check of the precision (:func:`nadcore.chapters.linear_separability.bundled.precision_check`);
* ``sigmas`` and ``indices`` (Fig. 6): the noise levels and NAD indices; the NADs are
  ``fig6_nads`` (``"published"``: the authors' published NADs of the full-width network);
* ``profile`` and ``overrides`` (Figs. 7 and 8): chapter 4's profile whose data, carriers,
  epochs and recipe the runs take (with those settings replaced), in float32, with the authors'
  published NADs of the full-width network: Fig. 7 on CIFAR-10 poisoned along them (``epochs``),
  one job per seed and carrier, the clean baseline first; Fig. 8 on the original and on the
  NAD-flipped representation (``flip_epochs``), one job per seed and representation;
* ``profile`` and ``overrides`` (the follow-up's Figs. 2 and 3): chapter 5's profile whose grid
  of NAD pairs, NAD indices, data and per-network recipe the runs take, with the published NADs
  of the full-width network (chapter 5's ``nad_source`` of the network must say so), in float32,
  one job per seed and NAD pair (or NAD index); their rows' ``recipe`` is ``follow-up``.

The order is the issue's plan: the width study's diagnostic cells first (they decide whether the
reduced widths are usable), then the two full rows k1 = 0 and k1 = 2 of Fig. 1 for each network
(ResNet-18's checkerboard, DenseNet-121's cross and VGG-11's diamond all cross them), Fig. 6 at
the paper's sigma and at the sigma chapter 3 fitted on LeNet, then Figs. 3 and 2, more cells,
more seeds.
"""

from __future__ import annotations

import copy
from itertools import zip_longest
from pathlib import Path

import numpy as np
import pandas as pd

from nadcore.book import bundles, profiles
from nadcore.book.campaign import Task, equal_to, read_rows
from nadcore.chapters.cifar10 import runs as cifar10
from nadcore.chapters.linear_separability import bundled
from nadcore.chapters.linear_separability import runs as sep
from nadcore.chapters.linear_separability.quantities import first_and_beyond
from nadcore.chapters.linear_separability.settings import ABLATION as BUILD_ABLATION
from nadcore.chapters.linear_separability.settings import CPU as BUILD_CPU
from nadcore.chapters.linear_separability.settings import PAPER as BUILD_PAPER
from nadcore.chapters.nad_atlas.prediction import ATLAS_CELLS
from nadcore.chapters.nad_atlas.settings import PAPER as ATLAS_PAPER
from nadcore.chapters.underspecification import runs as ux
from nadcore.chapters.underspecification.settings import CAMPAIGN_CPU as US_CAMPAIGN_CPU
from nadcore.data import fourier_basis_vector, fourier_grid
from nadcore.data.cifar import cifar_data_key, load_cifar10
from nadcore.nads import complete_basis
from nadcore.nads.published import load_published_nads, published_fig1_map
from nadcore.nets import REGISTRY, spec_width, width_name, width_spec
from nadcore.runtime import digest
from nadcore.train.recipe import AUTOCAST

__all__ = [
    "CAMPAIGNS",
    "CPU",
    "PAPER",
    "TINY",
    "CHAPTER",
    "CIFAR_CHAPTER",
    "US_CHAPTER",
    "PROFILE_FIGURES",
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
    "CIFAR_EPOCHS",
    "width_table",
    "figure_width",
    "coverage",
    "coverage_lines",
    "PAPER_FIGURES",
    "NAMES",
    "distinct_cells",
    "row_cells",
    "stage_cells",
    "mirror",
    "DIAGNOSTIC",
    "RECIPE_CELLS",
]

ROWS = "rows:0,2"
#: the width study's diagnostic cells: per network, a cell the published map has at chance and
#: one it has well above (ResNet-18: both frequencies 2 mod 4 against one of them 0 mod 4; VGG-11
#: also two cells in between, 0.84 and 0.61 published, the most sensitive to a change)
DIAGNOSTIC = {
    "resnet18": [[2, 2], [2, 4]],
    "vgg11": [[4, 4], [0, 4], [0, 6], [0, -10]],
    "densenet121": [[2, 2], [2, 0]],
}
#: the recipe check's cells: ResNet-18's diagnostic cells, then more of its row k1 = 2, where the
#: published map alternates between chance (both frequencies 2 mod 4) and 0.97, a chance cell
#: and a learned one in turn
RECIPE_CELLS = {"resnet18": DIAGNOSTIC["resnet18"] + [[2, 6], [2, 8], [2, -6], [2, -4], [2, 10], [2, 12]]}
#: the recipe ablation's cells: two of the recipe cells where the published map is at chance and
#: the follow-up's recipe learns the problem while the authors' does not
ABLATION_CELLS = {"resnet18": [[2, 2], [2, 6]]}
#: Fig. 6 indices (chapter 3's cpu indices)
FIG6_INDICES = [0, 3, 6, 9, 20, 40, 64, 90, 110, 125, 133, 145, 160, 300, 720, 1000]
#: Fig. 6's two ends, what its first-vs-beyond claims compare (four first NADs and two past 700
#: in FIG6_INDICES): chapter 3's paper indices there, every index 0-9 and every 40th past 700
FIG6_ENDS = [
    int(i)
    for i in np.asarray(BUILD_PAPER["fig6_indices"])[np.logical_or(*first_and_beyond(BUILD_PAPER["fig6_indices"]))]
]
#: the same indices, the two ends alternating (0, 720, 1, 760, ...): for a network whose jobs are
#: slow, every two jobs give both ends a point, so a campaign stopped early still has both
_FIRST, _BEYOND = (
    np.asarray(BUILD_PAPER["fig6_indices"])[m].tolist() for m in first_and_beyond(BUILD_PAPER["fig6_indices"])
)
FIG6_ENDS_ALTERNATING = [int(i) for pair in zip_longest(_FIRST, _BEYOND) for i in pair if i is not None]
#: Fig. 3 and Fig. 2 cells: on the rows, coarse, both sides of ResNet-18's checkerboard
FIG3_CELLS = [[0, 0], [0, 8], [0, -16], [2, 2], [2, 4], [2, -6], [2, 8], [2, -16]]
FIG2_CELLS = [[0, 4], [2, 4], [2, 2], [0, -16], [2, -6], [2, 8]]

#: The cpu campaign's widths, chosen from the width study's first two widths on its first cells
#: (VGG-11 at width 8 within 0.03 of the published accuracies on (0, 4) and (4, 4); ResNet-18 at
#: width 8 off by 0.10-0.15 on both of its cells, so width 16). On all the diagnostic cells, mean
#: |ours - published| falls with width: VGG-11 0.105 / 0.073 / 0.026 and ResNet-18 0.128 / 0.065
#: / 0.026 at widths 8 / 16 / 32 (VGG-11's (0, 6) and ResNet-18's (2, 4) need width 32); over 2
#: and 4 cells the intervals are wide, and only VGG-11 at width 32 has its whole interval within
#: 0.05. The maps at the narrow widths are weaker stand-ins on those cells. DenseNet-121 at
#: growth rate 8 (what a CPU can afford: about 23 minutes a cell), its rows checked against the
#: published map.
CPU = dict(
    device="cpu",
    widths={"resnet18": 16, "resnet18_nopool": 16, "vgg11": 8, "densenet121": 8},
    train=dict(trainer="many", channels_last=True),
    chunk=1,
    fig6_nads="published",
    stages=[
        # 1. the width study: the diagnostic cells at two widths each (DenseNet-121: the book's)
        dict(figure="fig1", arch="vgg11", cells=DIAGNOSTIC["vgg11"], widths=[8, 16]),
        dict(figure="fig1", arch="resnet18", cells=DIAGNOSTIC["resnet18"], widths=[8, 16]),
        # 2. VGG-11, the cheapest: Fig. 1's two full rows k1 = 0 and k1 = 2 (32 cells), and Fig. 6
        #    on the published NADs at the paper's sigma and at the one fitted on LeNet
        dict(figure="fig1", arch="vgg11", cells=ROWS),
        dict(figure="fig6", arch="vgg11", sigmas=[3.0, 1.0], indices=FIG6_INDICES),
        # 3. the same rows for ResNet-18, 8 of DenseNet-121's, then ResNet-18's Fig. 6
        dict(figure="fig1", arch="resnet18", cells=ROWS),
        dict(figure="fig1", arch="densenet121", cells=ROWS, limit=8, autocast="bf16"),
        dict(figure="fig6", arch="resnet18", sigmas=[3.0, 1.0], indices=FIG6_INDICES),
        # 4. the recipe: the follow-up's on ResNet-18's recipe cells, against the authors'
        dict(figure="fig1", arch="resnet18", cells=RECIPE_CELLS["resnet18"], recipe="follow-up"),
        # 5. Fig. 3 (ResNet-18 without its average pool) and Fig. 2 (iterations to fit)
        dict(figure="fig3", arch="resnet18_nopool", cells=FIG3_CELLS),
        dict(figure="fig2", arch="resnet18", cells=FIG2_CELLS),
        # 6. the width study: more seeds on the diagnostic cells, a third width; DenseNet-121's
        #    rows to the end
        dict(figure="fig1", arch="vgg11", cells=DIAGNOSTIC["vgg11"], widths=[8, 16], seeds=[1, 2]),
        dict(figure="fig1", arch="resnet18", cells=DIAGNOSTIC["resnet18"], widths=[8, 16], seeds=[1, 2]),
        dict(figure="fig1", arch="vgg11", cells=DIAGNOSTIC["vgg11"], widths=[32]),
        dict(figure="fig1", arch="densenet121", cells=ROWS, autocast="bf16"),
        dict(figure="fig1", arch="resnet18", cells=DIAGNOSTIC["resnet18"], widths=[32]),
        # 7. the rest of the grid, coarse to fine, then more seeds
        dict(figure="fig1", arch="vgg11", cells="grid"),
        dict(figure="fig1", arch="resnet18", cells="grid"),
        dict(figure="fig1", arch="vgg11", cells=ROWS, seeds=[1, 2]),
        dict(figure="fig1", arch="resnet18", cells=ROWS, seeds=[1, 2]),
        dict(figure="fig1", arch="densenet121", cells="grid", autocast="bf16"),
        # 8. LeNet without its pooling layers on the cpu build's Fig. 3 cells and seeds: six times
        #    a pooled LeNet's cost, so the build takes these runs from here (where its settings
        #    and seeds are the campaign's) and re-runs two of the cells live
        dict(figure="fig3", arch="lenet_nopool", cells=BUILD_CPU["fig3_cells"], seeds=[0, 1, 2]),
        # 9. Fig. 7 with the paper's network: the narrow ResNet-18 on the CIFAR-10 subset poisoned
        #    along the published ResNet-18 NADs, with chapter 4's cpu carriers, data and recipe
        #    (those of its LeNet), seed by seed
        dict(figure="fig7", arch="resnet18", profile="cpu", seeds=[0, 1, 2]),
        # 10. Fig. 8 with the paper's CNNs: the narrow networks on the original and the flipped
        #     CIFAR-10 subset (flipped with the published NADs of each full network), with chapter
        #     4's cpu data, recipe and flip_epochs (those of its LeNet), seed by seed. VGG-11 at
        #     width 16: at the campaign's width 8 it fits neither representation in 50 epochs
        #     (final train accuracy 0.92-0.93 original, 0.72-0.76 flipped; jobs 217-222), which
        #     the paper's comparison at equal fit needs; at width 16 it fits the original
        #     (0.993-0.997) but not yet the flipped one (0.859-0.870; jobs 229-234); at width 32
        #     both (0.999-1.000 and 0.989-0.996; jobs 235-240)
        dict(figure="fig8", arch="vgg11", profile="cpu", seeds=[0, 1, 2], widths=[32]),
        dict(figure="fig8", arch="resnet18", profile="cpu", seeds=[0, 1, 2]),
        dict(figure="fig8", arch="densenet121", profile="cpu", seeds=[0, 1, 2]),
        # 11. the follow-up's ResNet-18 (its Figs. 2 and 3): the narrow network on chapter 5's cpu
        #     grid of NAD pairs and NAD indices, data and seeds, with the published NADs
        dict(figure="us-fig2", arch="resnet18", profile="cpu", overrides=US_CAMPAIGN_CPU, seeds=[0, 1, 2]),
        dict(figure="us-fig3", arch="resnet18", profile="cpu", overrides=US_CAMPAIGN_CPU, seeds=[0, 1, 2]),
        # 12. DenseNet-121's Fig. 6 (bf16, about 20 minutes a NAD index per worker): first every
        #     other index of the sequence at the paper's sigma, the two ends first (its claims
        #     need a first NAD and one past 700: the first two jobs already span the sequence),
        #     then every index at both noise levels
        dict(
            figure="fig6", arch="densenet121", sigmas=[3.0], indices=[0, 720, 6, 160, 20, 133, 64, 110], autocast="bf16"
        ),
        dict(figure="fig6", arch="densenet121", sigmas=[3.0, 1.0], indices=FIG6_INDICES, autocast="bf16"),
        # 13. Fig. 6's two ends at every index chapter 3's paper profile has there (0-9, and every
        #     40th past 700), the cheapest network first: ten first NADs and nine past 700
        #     against four and two, for the intervals of the first-vs-beyond claims; DenseNet-121
        #     (14 minutes a job) with the ends alternating, sigma 1 first once its first NADs at
        #     sigma 3 had run: every index it then trains pairs with a sigma-3 run, which its
        #     sigma validation compares
        dict(figure="fig6", arch="vgg11", sigmas=[3.0, 1.0], indices=FIG6_ENDS),
        dict(figure="fig6", arch="resnet18", sigmas=[3.0, 1.0], indices=FIG6_ENDS),
        dict(figure="fig6", arch="densenet121", sigmas=[1.0, 3.0], indices=FIG6_ENDS_ALTERNATING, autocast="bf16"),
        # 14. the recipe ablation, on ResNet-18's ablation cells (about 5 minutes a job per worker,
        #     7-8 with 30 epochs): each of the follow-up recipe's four changes alone on top of the
        #     authors' recipe, then the follow-up's recipe without each of them, then the two
        #     it could not do without together: which of them erases the checkerboard
        *[dict(figure="fig1", arch="resnet18", cells=ABLATION_CELLS["resnet18"], recipe=r) for r in BUILD_ABLATION],
        # 15. chapter 7's test of the Fig. 1 predicted from the NADs on architectures nobody has
        #     mapped: each atlas architecture of predict_models on its 12 cells spread over its
        #     predicted range (chosen before training), with the authors' recipe, as Fig. 1
        *[
            dict(figure="atlas-fig1", arch=slug, spec=ATLAS_PAPER["architectures"][label], cells=ATLAS_CELLS[label])
            for label, slug in ATLAS_PAPER["predict_models"].items()
        ],
    ],
)

#: the GPU campaign: full width, every big network side by side with bf16 autocast
PAPER = dict(
    device="cuda",
    widths={},
    train=dict(trainer="side_by_side", autocast="bf16"),
    chunk=8,
    fig6_nads="published",  # 8 runs side by side: a job ends well inside a lease's 10-minute command
    stages=[
        # the width study's diagnostic cells first, at full width: they settle whether the cpu
        # campaign's narrow networks stand in for the full ones where the published map is decisive
        dict(figure="fig1", arch="resnet18", cells=DIAGNOSTIC["resnet18"]),
        dict(figure="fig1", arch="densenet121", cells=DIAGNOSTIC["densenet121"]),
        dict(figure="fig1", arch="vgg11", cells=DIAGNOSTIC["vgg11"]),
        dict(figure="fig1", arch="resnet18", cells="grid"),
        dict(figure="fig1", arch="vgg11", cells="grid"),
        dict(figure="fig1", arch="densenet121", cells="grid"),
        dict(figure="fig6", arch="resnet18", sigmas=[3.0, 1.0], indices=FIG6_INDICES),
        dict(figure="fig6", arch="vgg11", sigmas=[3.0, 1.0], indices=FIG6_INDICES),
        dict(figure="fig6", arch="densenet121", sigmas=[3.0, 1.0], indices=FIG6_INDICES),
        dict(figure="fig3", arch="resnet18_nopool", cells="grid"),
        dict(figure="fig2", arch="resnet18", cells="grid"),
    ],
)

#: tiny networks and sizes, for CPU tests of the machinery (never results)
TINY = dict(
    device="cpu",
    widths={"resnet18": 4, "resnet18_nopool": 4, "vgg11": 4, "densenet121": 2},
    train=dict(trainer="many"),
    chunk=2,
    fig6_nads="published",
    overrides=dict(
        n_test=64,
        recipes={
            r: dict(n_train=64, epochs=1, max_lr=0.05, momentum=0.0, weight_decay=0.0, batch_size=32)
            for r in ("authors", "follow-up")
        },
        fig2_train=dict(n_train=64, epochs=1),
    ),
    stages=[
        dict(figure="fig1", arch="resnet18", cells=ROWS, limit=5),
        dict(figure="fig6", arch="resnet18", sigmas=[3.0, 1.0], indices=[0, 1, 500, 1000]),
        dict(figure="fig1", arch="vgg11", cells=[[0, 4]], widths=[2, 4]),
        dict(figure="fig1", arch="vgg11", cells=[[0, 4]], widths=[4], autocast="bf16"),
        dict(figure="fig3", arch="lenet_nopool", cells=[[0, 4]]),  # a network without a width
        dict(figure="fig7", arch="resnet18", profile="smoke", overrides=dict(max_train=64, max_test=64, epochs=1)),
        dict(
            figure="fig8",
            arch="vgg11",
            profile="smoke",
            overrides=dict(max_train=64, max_test=64, flip_epochs=1),
            seeds=[0, 1],
        ),
        dict(
            figure="us-fig2",
            arch="resnet18",
            profile="smoke",
            overrides=dict(n_test=64, resolution=5, concat_train={"resnet18": dict(n_train=64, epochs=1, max_lr=0.1)}),
        ),
        dict(
            figure="us-fig3",
            arch="resnet18",
            profile="smoke",
            overrides=dict(max_train=64, max_test=64, cifar_train={"resnet18": dict(epochs=1, max_lr=0.1)}),
        ),
    ],
)

CAMPAIGNS = {"cpu": CPU, "paper": PAPER, "tiny": TINY}

#: the chapter whose settings, runs and figure data the campaigns' figures follow
CHAPTER = "03_linear_separability"
_RUN = ["model", "width", "recipe", "precision"]
COLUMNS = {
    "fig1": _RUN + ["k1", "k2", "seed", "test_acc", "train_acc"],
    "fig2": _RUN + ["k1", "k2", "seed", "iters_to_loss", "test_acc", "train_acc", "budget"],
    "fig3": _RUN + ["k1", "k2", "seed", "test_acc", "train_acc"],
    "fig6": _RUN
    + ["sigma", "estimator", "nad_index", "seed", "test_acc", "train_acc", "eigenvalue", "eigenvalue_ratio"],
    "fig7": _RUN + ["experiment", "nad_index", "seed", "epochs", "train_acc", "test_acc", "carrier_test_acc"],
    "fig8": _RUN + ["experiment", "seed", "epochs", "train_acc", "test_acc"],
    "us-fig2": _RUN + ["v1_index", "v2_index", "seed", *ux.CONCAT_KEYS],
    "us-fig3": _RUN + ["sigma", "nad_index", "seed", *ux.CIFAR_KEYS],
}
COLUMNS["atlas-fig1"] = COLUMNS["fig1"]
#: the columns that identify a run (a bundle has one row per run)
KEYS = {
    "fig1": _RUN + ["k1", "k2", "seed"],
    "fig2": _RUN + ["k1", "k2", "seed"],
    "fig3": _RUN + ["k1", "k2", "seed"],
    "fig6": _RUN + ["sigma", "nad_index", "seed"],
    "fig7": _RUN + ["experiment", "nad_index", "seed"],
    "fig8": _RUN + ["experiment", "seed"],
    "us-fig2": _RUN + ["v1_index", "v2_index", "seed"],
    "us-fig3": _RUN + ["nad_index", "seed"],
}
KEYS["atlas-fig1"] = KEYS["fig1"]
#: the chapter of Figs. 7 and 8 (CIFAR-10 poisoned along NADs, and flipped), whose settings their
#: campaign runs follow
CIFAR_CHAPTER = "04_cifar10"
#: the figures on CIFAR-10, and the setting of chapter 4 that gives their runs' epochs
CIFAR_EPOCHS = {"fig7": "epochs", "fig8": "flip_epochs"}
#: the chapter of the follow-up's Figs. 2 and 3 (D(v1) (+) D(v2), binary CIFAR-10 (+) D(v))
US_CHAPTER = "05_underspecification"
#: the figures whose stages train with a chapter's own settings (a ``profile`` of it), and that chapter
PROFILE_FIGURES = {"fig7": CIFAR_CHAPTER, "fig8": CIFAR_CHAPTER, "us-fig2": US_CHAPTER, "us-fig3": US_CHAPTER}
#: the chapter of the atlas architectures' Fig. 1 cells (trained as chapter 3's Fig. 1, on a stage's
#: own model ``spec``)
ATLAS_CHAPTER = "07_nad_atlas"
#: the bundle folder of each figure trained on chapter 3's settings (chapter 3's, unless named here)
FIGURE_CHAPTER = {"atlas-fig1": ATLAS_CHAPTER}


def campaign_settings(name: str) -> dict:
    """The campaign ``name`` (a deep copy, with its name)."""
    if name not in CAMPAIGNS:
        raise ValueError(f"unknown campaign {name!r}; choose one of {', '.join(CAMPAIGNS)}")
    return {"name": name, **copy.deepcopy(CAMPAIGNS[name])}


# --------------------------------------------------------------------------------------------
# Cells
# --------------------------------------------------------------------------------------------
def mirror(k1: int, k2: int) -> tuple[int, int]:
    """The cell (k2, k1): the transposed direction, the same problem in distribution (see
    :func:`nadcore.chapters.linear_separability.runs.grid_sweep`)."""
    return (int(k2), int(k1))


def _coarse_to_fine(cells, grid) -> list[tuple[int, int]]:
    order = []
    for every in (8, 4, 2):
        sub = set(grid.subgrid(every).frequencies)
        order += [c for c in cells if c in sub and c not in order]
    return order + [c for c in cells if c not in order]


def distinct_cells(grid) -> list[tuple[int, int]]:
    """One representative of every class of cells of ``grid`` under (k1, k2) -> (k2, k1) (the
    first in row-major order), coarse to fine: the cells of ``grid.subgrid(8)``, then
    ``subgrid(4)``, ``subgrid(2)``, then the rest."""
    seen, reps = set(), []
    for k1, k2 in grid.frequencies:
        key = frozenset({(k1, k2), (k2, k1)})
        if key not in seen:
            seen.add(key)
            reps.append((k1, k2))
    return _coarse_to_fine(reps, grid)


def row_cells(grid, rows) -> list[tuple[int, int]]:
    """Every cell of the rows ``k1 in rows`` of ``grid``, coarse to fine in k2 (every 8th
    frequency of the grid first, then every 4th, every 2nd, the rest), the rows interleaved at
    each level, so that the first cells already span both rows (all of them: a cell and its
    transpose on the rows are both trained, a free check of the transposition symmetry)."""
    ks = [int(k) for k in grid.ticks]
    order = []
    for every in (8, 4, 2, 1):
        level = [k for k in ks[::every] if all((r, k) not in order for r in rows)]
        order += [(int(r), k) for k in level for r in sorted(rows)]
    return list(dict.fromkeys(order))


def stage_cells(cells, grid) -> list[tuple[int, int]]:
    """A stage's ``cells``: ``"grid"``, ``"rows:K1,K1'..."`` or a list of [k1, k2]."""
    if cells == "grid":
        return distinct_cells(grid)
    if isinstance(cells, str) and cells.startswith("rows:"):
        return row_cells(grid, {int(k) for k in cells[5:].split(",")})
    out = [(int(a), int(b)) for a, b in cells]
    bad = [c for c in out if c not in set(grid.frequencies)]
    if bad:
        raise ValueError(f"cells {bad} are not on the {grid.grid}x{grid.grid} Fourier grid")
    return out


# --------------------------------------------------------------------------------------------
# Tasks
# --------------------------------------------------------------------------------------------
#: a run's ``precision`` column, by the ``autocast`` setting it was trained with
PRECISION = {a: a or "fp32" for a in AUTOCAST}


def _train(cfg: dict, camp: dict, figure: str, recipe: str, arch: str, autocast: str | None = None) -> dict:
    if recipe not in cfg["recipes"]:
        raise ValueError(f"unknown recipe {recipe!r}; chapter 3 knows {', '.join(cfg['recipes'])}")
    if autocast not in PRECISION:
        raise ValueError(f"autocast must be one of {', '.join(map(repr, PRECISION))}, got {autocast!r}")
    s = {k: v for k, v in (dict(cfg["recipes"][recipe]) | camp["train"]).items() if k != "autocast"}
    if autocast:  # float32 jobs keep the settings they always had (and their identity)
        s["autocast"] = autocast
    data = {k: cfg[k] for k in ("sigma", "epsilon", "signal", "n_test")}
    if figure == "fig2":
        s.update(cfg["fig2_train"])
        data.update(sigma=cfg["fig2_sigma"], loss_threshold=cfg["fig2_threshold"])
    return data | s


def _fourier_rows(task_fields: dict, keys, budget: bool):
    def rows(job, arrays):
        out = []
        for j, (label, seed) in enumerate(job.config["runs"]):
            r = {
                **task_fields,
                "k1": int(label[0]),
                "k2": int(label[1]),
                "seed": int(seed),
                **{k: np.asarray(arrays[k])[j].item() for k in keys},
            }
            if budget:
                r["budget"] = int(np.asarray(arrays["iter_loss"]).shape[-1])
            out.append(r)
        return out

    return rows


def _fig6_rows(task_fields: dict, eigenvalues):
    ev = np.asarray(eigenvalues, dtype=np.float64)

    def rows(job, arrays):
        return [
            {
                **task_fields,
                "estimator": "published NADs",
                "nad_index": int(i),
                "seed": int(seed),
                "test_acc": float(arrays["test_acc"][j]),
                "train_acc": float(arrays["train_acc"][j]),
                "eigenvalue": float(ev[i]),
                "eigenvalue_ratio": float(ev[i] / ev[0]) if ev[0] > 0 else float("nan"),
            }
            for j, (i, seed) in enumerate(job.config["runs"])
        ]

    return rows


def _cifar_rows(task_fields: dict, epochs: int):
    def rows(job, arrays):
        out, carrier = [], arrays["carrier_test_acc"] if "carrier_test_acc" in arrays else None
        for j, (label, seed) in enumerate(job.config["runs"]):
            experiment, index = _experiment(label)
            out.append(
                {
                    **task_fields,
                    "experiment": experiment,
                    "nad_index": float("nan") if index is None else index,
                    "seed": int(seed),
                    "epochs": int(epochs),
                    "train_acc": float(np.asarray(arrays["train_acc"])[j]),
                    "test_acc": float(np.asarray(arrays["test_acc"])[j]),
                    "carrier_test_acc": float("nan") if carrier is None else float(np.asarray(carrier)[j]),
                }
            )
        return out

    return rows


#: the Fig. 7 and Fig. 8 runs without a carrier, labelled by their experiment; every other run is
#: a poisoning, labelled by its carrier's NAD index
_NO_CARRIER = ("clean", "flip")


def _experiment(label) -> tuple[str, int | None]:
    """A Fig. 7 or Fig. 8 run's label as its experiment and carrier index (the inverse of
    :func:`_label`)."""
    return (label, None) if label in _NO_CARRIER else ("poison", int(label))


def _label(experiment: str, index) -> str | int:
    """A Fig. 7 or Fig. 8 run's label from its experiment and carrier index."""
    return experiment if experiment in _NO_CARRIER else int(index)


def profile_settings(name: str, figure: str, arch: str) -> tuple[dict, int | None]:
    """The settings of its chapter that campaign ``name`` trains ``arch`` with for ``figure`` (one
    of :data:`PROFILE_FIGURES`: its stage's profile and overrides) and the network's width there."""
    stage = next((st for st in CAMPAIGNS[name]["stages"] if st["figure"] == figure and st["arch"] == arch), None)
    if stage is None:
        raise ValueError(f"campaign {name!r} has no {figure} stage for {arch!r}")
    widths = stage_widths(CAMPAIGNS[name], stage)
    if len(widths) != 1:
        raise ValueError(f"campaign {name!r} trains {arch!r} for {figure} at widths {widths}: the chapter draws one")
    return _profile_cfg(stage), spec_width(spec_of(arch, widths[0]))


def _figure_runs(figure: str, cfg: dict) -> list:
    """The labels of the runs one seed of ``figure`` has, on its chapter's settings ``cfg``."""
    if figure == "fig7":
        return ["clean", *[int(i) for i in cfg["indices"]]]
    if figure == "fig8":
        return ["clean", "flip"]
    if figure == "us-fig2":
        return [(int(a), int(b)) for a in cfg["concat_indices"] for b in cfg["concat_indices"]]
    return [int(i) for i in cfg["cifar_indices"]]


def _row_runs(figure: str, rows: pd.DataFrame) -> list:
    """The label of each bundle row's run, as :func:`_figure_runs` gives them."""
    if figure in CIFAR_EPOCHS:
        index = rows["nad_index"] if "nad_index" in rows else pd.Series(np.nan, index=rows.index)
        return [_label(e, i) for e, i in zip(rows["experiment"], index)]
    if figure == "us-fig2":
        return [(int(a), int(b)) for a, b in zip(rows["v1_index"], rows["v2_index"])]
    return [int(i) for i in rows["nad_index"]]


def committed_runs(name: str, figure: str) -> tuple[dict, dict]:
    """The committed runs of campaign ``name`` for ``figure`` (one of :data:`PROFILE_FIGURES`):
    ``(cfg, {arch: (rows, source)})``. ``cfg``: the chapter's settings that every stage of the
    figure trains with; per network that has one, ``rows``: its bundle rows at the width of its
    stage, of the seeds that have every run of the figure (and only those runs), and ``source``:
    where they come from, for a claim (``profile``, ``network`` with its width, ``settings``: the
    width, the number of seeds, the bundle). Raises FileNotFoundError where no network has a seed
    with every run, saying which command makes them."""
    b = bundles.load(name)
    frame = b.frame(PROFILE_FIGURES[figure], figure) if b is not None else None
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
        want = _figure_runs(figure, cfg)
        rows = rows[np.array([r in want for r in _row_runs(figure, rows)], dtype=bool)]
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
    """The width at which campaign ``name``'s ``figure`` results of ``arch`` count: for the
    :data:`PROFILE_FIGURES` its stage's (the chapter draws one), else the campaign's width of the
    network."""
    if figure in PROFILE_FIGURES and arch in networks(name, figure):
        return profile_settings(name, figure, arch)[1]
    return spec_width(spec_of(arch, CAMPAIGNS[name]["widths"].get(arch)))


def stage_widths(camp: dict, stage: dict) -> list:
    """The widths a campaign's ``stage`` trains its network at: the stage's own ``widths``, else
    the campaign's width of the network (None: the network has no width)."""
    return stage.get("widths") or [camp["widths"].get(stage["arch"])]


def _profile_cfg(stage: dict) -> dict:
    return profiles.resolve(PROFILE_FIGURES[stage["figure"]], stage.get("profile", "cpu"), stage.get("overrides"))


def _cifar_task(stage: dict, n: int, fields: dict, spec: str, seeds: list[int], device: str) -> tuple[Task, dict]:
    """Fig. 7 or Fig. 8 (the stage's ``figure``) for ``spec``, with the authors' published NADs of
    the full-width network (completed to a basis) and chapter 4's data and recipe on the stage's
    ``profile`` (and ``overrides``): Fig. 7 on CIFAR-10 clean and poisoned at each of chapter 4's
    carrier ``indices``, one job per (seed, carrier), the clean baseline first; Fig. 8 on the
    original and the flipped representation, one job per (seed, representation). Returns the
    task and chapter 4's settings."""
    cfg, figure = _profile_cfg(stage), stage["figure"]
    epochs = cfg[CIFAR_EPOCHS[figure]]
    arch = fields["model"]
    data_spec = dict(root=None, subset_root=None, download=False, max_train=cfg["max_train"], max_test=cfg["max_test"])
    data_key = cifar_data_key(load_cifar10(**data_spec))
    published = load_published_nads(arch).nads
    U = complete_basis(published)
    # the jobs name the basis by its source, the same on every machine (see cifar10.cifar_jobs)
    source = {"published": arch, "published_digest": digest(np.asarray(published)), "completed": "complete_basis"}
    train = {"epochs": epochs, **{k: cfg[k] for k in ("max_lr", "momentum", "weight_decay", "batch_size")}}
    jobs = []
    for seed in seeds:
        for label in _figure_runs(figure, cfg):
            experiment, index = _experiment(label)
            (job,) = cifar10.cifar_jobs(
                spec,
                [experiment if index is None else (experiment, index)],
                seeds=[seed],
                nads=U,
                data_spec=data_spec,
                data_key=data_key,
                train=train,
                eps=cfg["eps"],
                nads_key=source,
                device=device,
            )
            job.config["runs"] = [[label, int(seed)]]
            jobs.append(job)
    task = Task(
        figure=figure,
        chapter=CIFAR_CHAPTER,
        arch=arch,
        spec=spec,
        width=fields["width"],
        recipe=fields["recipe"],
        fn=cifar10.cifar_job,
        jobs=jobs,
        rows=_cifar_rows(fields, epochs),
        columns=COLUMNS[figure],
        keys=KEYS[figure],
        runs=len(jobs),
        stage=n,
        meta={"precision": fields["precision"]},
    )
    return task, cfg


def _underspec_task(stage: dict, n: int, fields: dict, spec: str, seeds: list[int], device: str) -> tuple[Task, dict]:
    """The follow-up's Fig. 2 or Fig. 3 (the stage's ``figure``, "us-fig2" or "us-fig3") for
    ``spec``, with chapter 5's settings on the stage's ``profile`` (and ``overrides``) for the
    network, whose NADs must be the authors' published ones (``nad_source``; completed to a
    basis): D(v1) (+) D(v2) on the chapter's grid of NAD pairs, or binary CIFAR-10 (+) D(v) at its
    NAD indices, one job per run. Returns the task and chapter 5's settings."""
    cfg, figure, arch = _profile_cfg(stage), stage["figure"], fields["model"]
    if ux.per_model(cfg, "nad_source", arch) != "published":
        raise ValueError(
            f"stage {n}: the campaign trains {figure} on the published NADs; chapter 5's "
            f"nad_source of {arch!r} is {ux.per_model(cfg, 'nad_source', arch)!r}"
        )
    U = complete_basis(load_published_nads(arch).nads).astype(np.float32)
    if figure == "us-fig2":
        train = dict(ux.per_model(cfg, "concat_train", arch))
        idx = cfg["concat_indices"]
        jobs, _ = ux.concat_jobs(
            spec,
            U,
            idx,
            idx,
            seeds=seeds,
            n_train=train.pop("n_train"),
            n_test=cfg["n_test"],
            train=train,
            device=device,
            chunk=1,
            **{k: cfg[k] for k in ("eps1", "eps2", "sigma", "extent", "resolution")},
        )
        keys, fn = ux.CONCAT_KEYS, ux.concat_job
    else:
        data_spec = dict(root=None, subset_root=None, max_train=cfg["max_train"], max_test=cfg["max_test"])
        sigma = float(ux.per_model(cfg, "cifar_sigma", arch))
        jobs, _ = ux.cifar_dv_jobs(
            spec,
            U,
            cfg["cifar_indices"],
            seeds=seeds,
            data_spec=data_spec,
            data_key=cifar_data_key(load_cifar10(**data_spec)),
            sigma=sigma,
            train=ux.per_model(cfg, "cifar_train", arch),
            eps=cfg["cifar_eps"],
            device=device,
            chunk=1,
        )
        keys, fn, fields = ux.CIFAR_KEYS, ux.cifar_dv_job, {**fields, "sigma": sigma}

    for job in jobs:  # a run's label: its pair of NAD indices (Fig. 2) or its NAD index (Fig. 3)
        job.config["runs"] = [[p, job.config["seed"]] for p in job.config.get("pairs", job.config.get("indices"))]

    def rows(job, arrays):
        return [
            {
                **fields,
                **(dict(v1_index=int(p[0]), v2_index=int(p[1])) if figure == "us-fig2" else dict(nad_index=int(p))),
                "seed": int(seed),
                **{k: float(np.asarray(arrays[k])[j]) for k in keys},
            }
            for j, (p, seed) in enumerate(job.config["runs"])
        ]

    task = Task(
        figure=figure,
        chapter=US_CHAPTER,
        arch=arch,
        spec=spec,
        width=fields["width"],
        recipe=fields["recipe"],
        fn=fn,
        jobs=jobs,
        rows=rows,
        columns=COLUMNS[figure],
        keys=KEYS[figure],
        runs=len(jobs),
        stage=n,
        meta={"precision": fields["precision"]},
    )
    return task, cfg


#: training options that change only the speed (the same numbers up to float rounding)
SPEED_ONLY = ("trainer", "channels_last")


def run_settings(name: str, figure: str, arch: str, recipe: str = "authors") -> dict:
    """The D(v) settings, SGD recipe and ``outputs`` that campaign ``name`` trains ``arch`` with
    for ``figure`` in float32, without its :data:`SPEED_ONLY` options: what a chapter compares
    its own settings with before it takes the campaign's runs as its own."""
    camp = campaign_settings(name)
    cfg = profiles.resolve(CHAPTER, "paper", camp.get("overrides"))
    s = _train(cfg, camp, figure, recipe, arch)
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
    ``stages`` where given) and the settings they use (the campaign's and chapter 3's);
    ``trainer`` ("many" or "side_by_side") replaces the campaign's ("many" implies ``float32``);
    ``float32`` trains every stage in float32, its bf16 stages too (on a CPU that emulates bf16;
    their rows say ``fp32``, a run of its own beside any bf16 run of the same cell)."""
    camp = campaign_settings(campaign)
    if trainer is not None:
        sep.check_trainer(trainer)
        camp["train"]["trainer"] = trainer
        float32 = float32 or trainer == "many"
    if float32:
        camp["train"].pop("autocast", None)
    cfg = profiles.resolve(CHAPTER, "paper", camp.get("overrides"))
    grid = fourier_grid(32, cfg["grid"])
    dev = device or camp["device"]
    tasks, extra = [], {}
    for n, st in enumerate(camp["stages"]):
        fig, arch = st["figure"], st["arch"]
        if fig not in COLUMNS:
            raise ValueError(f"stage {n}: unknown figure {fig!r}; campaigns run {', '.join(COLUMNS)}")
        if (figures and fig not in figures) or (archs and arch not in archs) or (stages and n not in stages):
            continue
        recipe = st.get("recipe", "authors")
        seeds = [int(s) for s in st.get("seeds", [0])]
        autocast = None if float32 else st.get("autocast", camp["train"].get("autocast"))
        for width in stage_widths(camp, st):
            spec = st.get("spec") or spec_of(arch, width)
            w = spec_width(spec)
            if fig in CIFAR_EPOCHS:  # chapter 4's recipe and data, in float32
                if recipe != "authors" or st.get("autocast"):
                    raise ValueError(f"stage {n}: {fig} trains with chapter 4's recipe, in float32")
                task, extra[CIFAR_CHAPTER] = _cifar_task(
                    st, n, {"model": arch, "width": w, "recipe": recipe, "precision": "fp32"}, spec, seeds, dev
                )
                tasks.append(task)
                continue
            if fig in PROFILE_FIGURES:  # chapter 5's settings: the follow-up's recipe, in float32
                if "recipe" in st or st.get("autocast"):
                    raise ValueError(f"stage {n}: {fig} trains with chapter 5's settings, in float32")
                task, extra[US_CHAPTER] = _underspec_task(
                    st, n, {"model": arch, "width": w, "recipe": "follow-up", "precision": "fp32"}, spec, seeds, dev
                )
                tasks.append(task)
                continue
            train = _train(cfg, camp, fig, recipe, arch, autocast)
            precision = PRECISION[train.get("autocast")]
            fields = {"model": arch, "width": w, "recipe": recipe, "precision": precision}
            common = dict(
                chapter=FIGURE_CHAPTER.get(fig, CHAPTER),
                arch=arch,
                spec=spec,
                width=w,
                recipe=recipe,
                fn=sep.directional_job,
                columns=COLUMNS[fig],
                keys=KEYS[fig],
                stage=n,
            )
            if fig == "fig6":
                nads = load_published_nads(arch)
                idx = [int(i) for i in st["indices"]]
                V = nads.nads[idx].reshape(len(idx), *nads.input_shape)
                for sigma in st["sigmas"]:
                    jobs = sep.direction_jobs(
                        V,
                        idx,
                        seeds,
                        model=spec,
                        settings=train | {"sigma": float(sigma)},
                        chunk=camp["chunk"],
                        tag="nad-published",
                        device=dev,
                        outputs=cfg["outputs"],
                    )
                    f = fields | {"sigma": float(sigma)}
                    tasks.append(
                        Task(
                            figure=fig,
                            jobs=jobs,
                            rows=_fig6_rows(f, nads.eigenvalues),
                            runs=len(idx) * len(seeds),
                            meta={"sigma": float(sigma), "precision": precision},
                            **common,
                        )
                    )
                continue
            cells = stage_cells(st["cells"], grid)[: st.get("limit")]
            V = np.stack([fourier_basis_vector(a, b, 32).numpy() for a, b in cells])
            jobs = sep.direction_jobs(
                V,
                [list(c) for c in cells],
                seeds,
                model=spec,
                settings=train,
                chunk=camp["chunk"],
                tag="fourier",
                device=dev,
                outputs=cfg["outputs"],
            )
            keys = ("iters_to_loss", "test_acc", "train_acc") if fig == "fig2" else ("test_acc", "train_acc")
            tasks.append(
                Task(
                    figure=fig,
                    jobs=jobs,
                    rows=_fourier_rows(fields, keys, fig == "fig2"),
                    runs=len(cells) * len(seeds),
                    meta={"precision": precision},
                    **common,
                )
            )
    if not tasks:
        raise ValueError(f"campaign {campaign!r} has no stage for figures={figures} archs={archs} stages={stages}")
    return tasks, {"campaign": camp, CHAPTER: cfg, **extra}


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
                df = b.frame(chapter, fig) if fig in COLUMNS else None
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
