"""Chapter 3's figures in a campaign (:mod:`nadcore.chapters.campaigns`): Figs. 1, 2 and 3 on
cells of the Fourier grid, Fig. 6 on the authors' published NADs, all on chapter 3's ``paper``
settings (the authors' released recipe, 10,000 samples, sigma 3), and the cells and NAD indices
the campaign's stages name.

A stage's ``cells`` (Figs. 1-3) is a list of ``[k1, k2]``, ``"rows:0,2"`` (every cell of those rows
of the 16x16 grid, coarse to fine) or ``"grid"`` (every cell distinct under the transposition,
coarse to fine), ``limit`` takes only the first N; ``recipe`` names one of chapter 3's
``recipes`` (default ``"authors"``); ``sigmas`` and ``indices`` (Fig. 6): the noise levels and
NAD indices.
"""

from __future__ import annotations

from itertools import zip_longest

import numpy as np

from nadcore.book.campaign import Figure, Task
from nadcore.chapters.linear_separability import runs as sep
from nadcore.chapters.linear_separability.quantities import first_and_beyond
from nadcore.chapters.linear_separability.settings import PAPER as BUILD_PAPER
from nadcore.data import fourier_basis_vector, fourier_grid
from nadcore.nads.published import load_published_nads
from nadcore.train.recipe import AUTOCAST

__all__ = [
    "CHAPTER",
    "RUN",
    "PRECISION",
    "ROWS",
    "DIAGNOSTIC",
    "RECIPE_CELLS",
    "ABLATION_CELLS",
    "FIG6_INDICES",
    "FIG6_ENDS",
    "FIG6_ENDS_ALTERNATING",
    "FIG3_CELLS",
    "FIG2_CELLS",
    "mirror",
    "distinct_cells",
    "row_cells",
    "stage_cells",
    "train_settings",
    "fourier_figure",
    "FIG1",
    "FIG2",
    "FIG3",
    "FIG6",
]

#: the chapter whose settings, runs and figure data these figures follow
CHAPTER = "03_linear_separability"
#: the columns every campaign row starts with: what identifies the network and its training
RUN = ["model", "width", "recipe", "precision"]
#: a run's ``precision`` column, by the ``autocast`` setting it was trained with
PRECISION = {a: a or "fp32" for a in AUTOCAST}

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
#: the rest of chapter 3's paper indices (10-700), for a Spearman over the whole sequence
FIG6_MIDDLE = [int(i) for i in BUILD_PAPER["fig6_indices"] if i not in set(FIG6_ENDS) | set(FIG6_INDICES)]


def _coarse_to_fine(n: int, finest: int = 1, coarsest: int = 64) -> list[int]:
    """0, ..., n - 1 coarse to fine: every ``coarsest``-th first, then every half as many down to
    every ``finest``-th, so that a campaign stopped early still spreads its runs over the whole
    range."""
    steps = [coarsest >> i for i in range(coarsest.bit_length()) if coarsest >> i >= finest]
    return list(dict.fromkeys(i for step in steps for i in range(0, n, step)))


#: every 4th NAD index of a 32x32 input, coarse to fine (every 64th first, then every 32nd, 16th, 8th
#: and 4th): a campaign stopped early still spreads its indices over the whole sequence (what a
#: Spearman over the NAD index needs)
FIG6_SPREAD = _coarse_to_fine(1024, finest=4)
#: the NAD indices halfway between those (2 mod 4), spread the same way: with FIG6_SPREAD every
#: other index of the sequence, the cap of VGG-11's Fig. 6 on the cpu campaign
FIG6_SPREAD_HALVES = [4 * k + 2 for k in _coarse_to_fine(256)]
#: Fig. 3 and Fig. 2 cells: on the rows, coarse, both sides of ResNet-18's checkerboard
FIG3_CELLS = [[0, 0], [0, 8], [0, -16], [2, 2], [2, 4], [2, -6], [2, 8], [2, -16]]
FIG2_CELLS = [[0, 4], [2, 4], [2, 2], [0, -16], [2, -6], [2, 8]]
#: the cells of the rows k1 = 0 and k1 = 2 not in FIG3_CELLS where the pooled ResNet-18's published
#: accuracy is above BLIND (0.55), one of each mirror pair ((0, k2) and (0, -k2) are one frequency)
FIG3_SEEN_ROWS = [[2, -12], [2, -8], [2, -4], [2, 0], [2, 12], [0, 2], [0, 4], [0, 6], [0, 10], [0, 12], [0, 14]]


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
# Settings and rows
# --------------------------------------------------------------------------------------------
def train_settings(cfg: dict, camp: dict, recipe: str, autocast: str | None = None, train=None, data=None) -> dict:
    """The D(v) data settings and SGD recipe ``recipe`` of chapter 3's settings ``cfg`` with the
    campaign ``camp``'s training options, in ``autocast`` precision, then the figure's own
    ``train`` and ``data`` settings on top."""
    if recipe not in cfg["recipes"]:
        raise ValueError(f"unknown recipe {recipe!r}; chapter 3 knows {', '.join(cfg['recipes'])}")
    if autocast not in PRECISION:
        raise ValueError(f"autocast must be one of {', '.join(map(repr, PRECISION))}, got {autocast!r}")
    s = {k: v for k, v in (dict(cfg["recipes"][recipe]) | camp["train"]).items() if k != "autocast"}
    if autocast:  # float32 jobs keep the settings they always had (and their identity)
        s["autocast"] = autocast
    return {k: cfg[k] for k in ("sigma", "epsilon", "signal", "n_test")} | (data or {}) | s | (train or {})


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


def _common(st, name: str, chapter: str, columns, keys, recipe: str) -> dict:
    return dict(
        figure=name,
        chapter=chapter,
        arch=st.arch,
        spec=st.spec,
        width=st.width,
        recipe=recipe,
        fn=sep.directional_job,
        columns=list(columns),
        keys=list(keys),
        stage=st.n,
    )


# --------------------------------------------------------------------------------------------
# The figures
# --------------------------------------------------------------------------------------------
def fourier_figure(
    name: str, chapter: str, results=("test_acc", "train_acc"), budget: bool = False, extra=None
) -> Figure:
    """A figure of D(v) runs on cells of the Fourier grid (Figs. 1-3, and the atlas's Fig. 1): one
    job per ``chunk`` runs of the stage's ``cells``, rows with the job's ``results`` (and, with
    ``budget``, the run's number of SGD steps); ``extra(cfg)``: the figure's own ``(train,
    data)`` settings (Fig. 2: its samples, epochs, sigma and loss threshold)."""
    columns = RUN + ["k1", "k2", "seed", *results] + (["budget"] if budget else [])
    keys = RUN + ["k1", "k2", "seed"]

    def settings(cfg, camp, recipe, autocast=None):
        train, data = extra(cfg) if extra else (None, None)
        return train_settings(cfg, camp, recipe, autocast, train, data)

    def tasks(st) -> list[Task]:
        recipe = st.stage.get("recipe", "authors")
        train = settings(st.cfg, st.campaign, recipe, st.autocast)
        precision = PRECISION[train.get("autocast")]
        fields = {"model": st.arch, "width": st.width, "recipe": recipe, "precision": precision}
        cells = stage_cells(st.stage["cells"], fourier_grid(32, st.cfg["grid"]))[: st.stage.get("limit")]
        V = np.stack([fourier_basis_vector(a, b, 32).numpy() for a, b in cells])
        jobs = sep.direction_jobs(
            V,
            [list(c) for c in cells],
            st.seeds,
            model=st.spec,
            settings=train,
            chunk=st.campaign["chunk"],
            tag="fourier",
            device=st.device,
            outputs=st.cfg["outputs"],
        )
        return [
            Task(
                jobs=jobs,
                rows=_fourier_rows(fields, results, budget),
                runs=len(cells) * len(st.seeds),
                meta={"precision": precision},
                **_common(st, name, chapter, columns, keys, recipe),
            )
        ]

    return Figure(name, chapter, CHAPTER, tuple(columns), tuple(keys), tasks, train_settings=settings)


def _fig6_tasks(st) -> list[Task]:
    """Fig. 6 on the authors' published NADs of the full-width network: one task per noise level
    of the stage's ``sigmas``, its ``indices`` in jobs of ``chunk`` runs."""
    recipe = st.stage.get("recipe", "authors")
    train = train_settings(st.cfg, st.campaign, recipe, st.autocast)
    precision = PRECISION[train.get("autocast")]
    fields = {"model": st.arch, "width": st.width, "recipe": recipe, "precision": precision}
    nads = load_published_nads(st.arch)
    idx = [int(i) for i in st.stage["indices"]]
    V = nads.nads[idx].reshape(len(idx), *nads.input_shape)
    tasks = []
    for sigma in st.stage["sigmas"]:
        jobs = sep.direction_jobs(
            V,
            idx,
            st.seeds,
            model=st.spec,
            settings=train | {"sigma": float(sigma)},
            chunk=st.campaign["chunk"],
            tag="nad-published",
            device=st.device,
            outputs=st.cfg["outputs"],
        )
        tasks.append(
            Task(
                jobs=jobs,
                rows=_fig6_rows(fields | {"sigma": float(sigma)}, nads.eigenvalues),
                runs=len(idx) * len(st.seeds),
                meta={"sigma": float(sigma), "precision": precision},
                **_common(st, "fig6", CHAPTER, FIG6.columns, FIG6.keys, recipe),
            )
        )
    return tasks


FIG1 = fourier_figure("fig1", CHAPTER)
FIG2 = fourier_figure(
    "fig2",
    CHAPTER,
    ("iters_to_loss", "test_acc", "train_acc"),
    budget=True,
    extra=lambda cfg: (cfg["fig2_train"], {"sigma": cfg["fig2_sigma"], "loss_threshold": cfg["fig2_threshold"]}),
)
FIG3 = fourier_figure("fig3", CHAPTER)
FIG6 = Figure(
    "fig6",
    CHAPTER,
    CHAPTER,
    tuple(RUN + ["sigma", "estimator", "nad_index", "seed", "test_acc", "train_acc", "eigenvalue", "eigenvalue_ratio"]),
    tuple(RUN + ["sigma", "nad_index", "seed"]),
    _fig6_tasks,
    train_settings=lambda cfg, camp, recipe, autocast=None: train_settings(cfg, camp, recipe, autocast),
)
