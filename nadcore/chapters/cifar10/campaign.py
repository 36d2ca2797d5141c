"""Chapter 4's figures in a campaign (:mod:`nadcore.chapters.campaigns`): Fig. 7 (CIFAR-10
poisoned along the NADs) and Fig. 8 (CIFAR-10 in the NAD-flipped representation) for the paper's
big networks, with the authors' published NADs of the full-width network (completed to a basis)
and chapter 4's data, carriers and recipe on the ``profile`` each stage names (and its
``overrides``), in float32: Fig. 7 one job per seed and carrier, the clean baseline first;
Fig. 8 one job per seed and representation.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from nadcore.book.campaign import Figure, Task
from nadcore.chapters.cifar10 import runs as cifar10
from nadcore.chapters.linear_separability.campaign import RUN
from nadcore.data.cifar import cifar_data_key, load_cifar10
from nadcore.nads import complete_basis
from nadcore.nads.published import load_published_nads
from nadcore.runtime import digest

__all__ = ["CHAPTER", "EPOCHS", "FIG7", "FIG8"]

#: the chapter of Figs. 7 and 8, whose settings their campaign runs follow
CHAPTER = "04_cifar10"
#: the setting of chapter 4 that gives each figure's epochs
EPOCHS = {"fig7": "epochs", "fig8": "flip_epochs"}
#: the Fig. 7 and Fig. 8 runs without a carrier, labelled by their experiment; every other run is
#: a poisoning, labelled by its carrier's NAD index
_NO_CARRIER = ("clean", "flip")


def _experiment(label) -> tuple[str, int | None]:
    """A run's label as its experiment and carrier index (the inverse of :func:`_label`)."""
    return (label, None) if label in _NO_CARRIER else ("poison", int(label))


def _label(experiment: str, index) -> str | int:
    """A run's label from its experiment and carrier index."""
    return experiment if experiment in _NO_CARRIER else int(index)


def _row_runs(rows: pd.DataFrame) -> list:
    """The label of each bundle row's run."""
    index = rows["nad_index"] if "nad_index" in rows else pd.Series(np.nan, index=rows.index)
    return [_label(e, i) for e, i in zip(rows["experiment"], index)]


def _rows(task_fields: dict, epochs: int):
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


def _figure(name: str, seed_runs, run_columns: list, results: list) -> Figure:
    """Fig. 7 or Fig. 8: the runs of one seed (``seed_runs(cfg)``), the columns that tell a run
    apart within a seed (``run_columns``) and its ``results``."""
    columns = RUN + run_columns + ["seed", "epochs", *results]
    keys = RUN + run_columns + ["seed"]

    def tasks(st) -> list[Task]:
        if st.stage.get("recipe", "authors") != "authors" or st.stage.get("autocast"):
            raise ValueError(f"stage {st.n}: {name} trains with chapter 4's recipe, in float32")
        cfg, epochs = st.cfg, st.cfg[EPOCHS[name]]
        fields = {"model": st.arch, "width": st.width, "recipe": "authors", "precision": "fp32"}
        data_spec = dict(
            root=None, subset_root=None, download=False, max_train=cfg["max_train"], max_test=cfg["max_test"]
        )
        data_key = cifar_data_key(load_cifar10(**data_spec))
        published = load_published_nads(st.arch).nads
        U = complete_basis(published)
        # the jobs name the basis by its source, the same on every machine (see cifar10.cifar_jobs)
        source = {
            "published": st.arch,
            "published_digest": digest(np.asarray(published)),
            "completed": "complete_basis",
        }
        train = {"epochs": epochs, **{k: cfg[k] for k in ("max_lr", "momentum", "weight_decay", "batch_size")}}
        jobs = []
        for seed in st.seeds:
            for label in seed_runs(cfg):
                experiment, index = _experiment(label)
                (job,) = cifar10.cifar_jobs(
                    st.spec,
                    [experiment if index is None else (experiment, index)],
                    seeds=[seed],
                    nads=U,
                    data_spec=data_spec,
                    data_key=data_key,
                    train=train,
                    eps=cfg["eps"],
                    nads_key=source,
                    device=st.device,
                )
                job.config["runs"] = [[label, int(seed)]]
                jobs.append(job)
        return [
            Task(
                figure=name,
                chapter=CHAPTER,
                arch=st.arch,
                spec=st.spec,
                width=st.width,
                recipe="authors",
                fn=cifar10.cifar_job,
                jobs=jobs,
                rows=_rows(fields, epochs),
                columns=columns,
                keys=keys,
                runs=len(jobs),
                stage=st.n,
                meta={"precision": "fp32"},
            )
        ]

    return Figure(
        name,
        CHAPTER,
        CHAPTER,
        tuple(columns),
        tuple(keys),
        tasks,
        own_profile=True,
        seed_runs=seed_runs,
        row_runs=_row_runs,
    )


FIG7 = _figure(
    "fig7",
    lambda cfg: ["clean", *[int(i) for i in cfg["indices"]]],
    ["experiment", "nad_index"],
    ["train_acc", "test_acc", "carrier_test_acc"],
)
FIG8 = _figure("fig8", lambda cfg: ["clean", "flip"], ["experiment"], ["train_acc", "test_acc"])
