"""Chapter 5's figures in a campaign (:mod:`nadcore.chapters.campaigns`): the follow-up's Fig. 2
(D(v1) (+) D(v2) on chapter 5's grid of NAD pairs) and Fig. 3 (binary CIFAR-10 (+) D(v) at its NAD
indices) for a network whose NADs chapter 5 takes from the authors' published ones
(``nad_source``; completed to a basis), with chapter 5's settings on the ``profile`` each stage
names (and its ``overrides``), in float32, one job per run; their rows' ``recipe`` is
``follow-up``.
"""

from __future__ import annotations

import numpy as np

from nadcore.book.campaign import Figure, Task
from nadcore.chapters.linear_separability.campaign import RUN
from nadcore.chapters.underspecification import runs as ux
from nadcore.data.cifar import cifar_data_key, load_cifar10
from nadcore.nads import complete_basis
from nadcore.nads.published import load_published_nads

__all__ = ["CHAPTER", "US_FIG2", "US_FIG3"]

#: the chapter of the follow-up's Figs. 2 and 3
CHAPTER = "05_underspecification"
_FIELDS = {"recipe": "follow-up", "precision": "fp32"}


def _basis(st) -> np.ndarray:
    """The published NADs of the stage's network, completed to a basis (chapter 5's source)."""
    if st.stage.get("recipe") or st.stage.get("autocast"):
        raise ValueError(f"stage {st.n}: {st.stage['figure']} trains with chapter 5's settings, in float32")
    source = ux.per_model(st.cfg, "nad_source", st.arch)
    if source != "published":
        raise ValueError(
            f"stage {st.n}: the campaign trains {st.stage['figure']} on the published NADs; chapter "
            f"5's nad_source of {st.arch!r} is {source!r}"
        )
    return complete_basis(load_published_nads(st.arch).nads).astype(np.float32)


def _labelled(jobs) -> list:
    """The jobs, each run labelled by its pair of NAD indices (Fig. 2) or its NAD index (Fig. 3)."""
    for job in jobs:
        job.config["runs"] = [[p, job.config["seed"]] for p in job.config.get("pairs", job.config.get("indices"))]
    return jobs


def _rows(fields: dict, label_columns, keys):
    def rows(job, arrays):
        return [
            {**fields, **label_columns(p), "seed": int(seed), **{k: float(np.asarray(arrays[k])[j]) for k in keys}}
            for j, (p, seed) in enumerate(job.config["runs"])
        ]

    return rows


def _task(st, figure: Figure, fn, jobs, rows) -> Task:
    """The task of ``jobs`` of ``figure`` (one run each, labelled by its NAD pair or index)."""
    return Task(
        figure=figure.name,
        chapter=CHAPTER,
        arch=st.arch,
        spec=st.spec,
        width=st.width,
        recipe="follow-up",
        fn=fn,
        jobs=_labelled(jobs),
        rows=rows,
        columns=list(figure.columns),
        keys=list(figure.keys),
        runs=len(jobs),
        stage=st.n,
        meta={"precision": "fp32"},
    )


def _fig2_tasks(st) -> list[Task]:
    U, cfg = _basis(st), st.cfg
    train = dict(ux.per_model(cfg, "concat_train", st.arch))
    idx = cfg["concat_indices"]
    jobs, _ = ux.concat_jobs(
        st.spec,
        U,
        idx,
        idx,
        seeds=st.seeds,
        n_train=train.pop("n_train"),
        n_test=cfg["n_test"],
        train=train,
        device=st.device,
        chunk=1,
        **{k: cfg[k] for k in ("eps1", "eps2", "sigma", "extent", "resolution")},
    )
    fields = {"model": st.arch, "width": st.width, **_FIELDS}
    rows = _rows(fields, lambda p: dict(v1_index=int(p[0]), v2_index=int(p[1])), ux.CONCAT_KEYS)
    return [_task(st, US_FIG2, ux.concat_job, jobs, rows)]


def _fig3_tasks(st) -> list[Task]:
    U, cfg = _basis(st), st.cfg
    data_spec = dict(root=None, subset_root=None, max_train=cfg["max_train"], max_test=cfg["max_test"])
    sigma = float(ux.per_model(cfg, "cifar_sigma", st.arch))
    jobs, _ = ux.cifar_dv_jobs(
        st.spec,
        U,
        cfg["cifar_indices"],
        seeds=st.seeds,
        data_spec=data_spec,
        data_key=cifar_data_key(load_cifar10(**data_spec)),
        sigma=sigma,
        train=ux.per_model(cfg, "cifar_train", st.arch),
        eps=cfg["cifar_eps"],
        device=st.device,
        chunk=1,
    )
    fields = {"model": st.arch, "width": st.width, **_FIELDS, "sigma": sigma}
    rows = _rows(fields, lambda p: dict(nad_index=int(p)), ux.CIFAR_KEYS)
    return [_task(st, US_FIG3, ux.cifar_dv_job, jobs, rows)]


US_FIG2 = Figure(
    "us-fig2",
    CHAPTER,
    CHAPTER,
    tuple(RUN + ["v1_index", "v2_index", "seed", *ux.CONCAT_KEYS]),
    tuple(RUN + ["v1_index", "v2_index", "seed"]),
    _fig2_tasks,
    own_profile=True,
    seed_runs=lambda cfg: [(int(a), int(b)) for a in cfg["concat_indices"] for b in cfg["concat_indices"]],
    row_runs=lambda rows: [(int(a), int(b)) for a, b in zip(rows["v1_index"], rows["v2_index"])],
)
US_FIG3 = Figure(
    "us-fig3",
    CHAPTER,
    CHAPTER,
    tuple(RUN + ["sigma", "nad_index", "seed", *ux.CIFAR_KEYS]),
    tuple(RUN + ["nad_index", "seed"]),
    _fig3_tasks,
    own_profile=True,
    seed_runs=lambda cfg: [int(i) for i in cfg["cifar_indices"]],
    row_runs=lambda rows: [int(i) for i in rows["nad_index"]],
)
