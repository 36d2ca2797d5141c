"""Campaigns: the paper's big networks trained off-build, resumably, into committed result bundles.

``scripts/run_campaign.py`` is the command line; the campaigns are defined in
:mod:`nadcore.book.settings.campaigns` (``cpu``: the 2-core machine at a reduced width, ``paper``:
a lent GPU at full width, ``tiny``: tests of the machinery).

* :func:`plan` turns a campaign's stages into :class:`Task` s, one per (figure, network, width,
  recipe, noise level), each a list of jobs of the chapters' own job function
  (:func:`nadcore.experiments.separability.directional_job`) with chapter 3's ``paper`` settings;
  a job trains ``chunk`` runs (one cell or NAD index and one seed each).
* :func:`run` runs the missing jobs in stage order, through the job runner
  (:func:`nadcore.experiments.run_jobs`: each finished job is in the cache at once), in-process
  or through an executor (a process pool, a Dask cluster, Slurm through submitit), and after
  every finished job rewrites the bundle. A kill loses at most the jobs in flight; ``budget``
  seconds stops before a job that would not end in time.
* the bundle (:func:`export`): ``results/<campaign>/<chapter>/<figure>.csv``, one row per run
  with the network's ``model`` (registry name), ``width``, ``recipe`` (and Fig. 6's ``sigma``),
  and ``provenance.json``: every session (commit, CPU model, GPU, torch version, arguments,
  start and end), the campaign and chapter settings, per figure and network the runs done and
  planned, and per job its wall time, date and session (the ledger).

A job counts as done when the cache holds it, or when the ledger holds it with its rows in the
bundle: a session that starts without the earlier cache, or with edited code (which changes the
cache keys), keeps what earlier sessions committed. A job's identity in the ledger is its
figure, network and config (model spec with its width, runs, data and training settings), so
the same job is never run twice, whichever stage asks for it.
"""
from __future__ import annotations

import copy
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from nadcore import kernels
from nadcore.book import profiles
from nadcore.book.settings import campaigns as defs
from nadcore.data import fourier_basis_vector, fourier_grid
from nadcore.experiments import separability as sep
from nadcore.experiments.cache import Cache
from nadcore.experiments.runner import Job, as_completed, run_jobs
from nadcore.nads.published import load_published_nads
from nadcore.nets import OPTIONS, REGISTRY, registry_spec, spec_width
from nadcore.runtime import (canonical, commit_info, digest, machine_info, resolve_device, utc_now,
                             write_json_atomic)

__all__ = ["CAMPAIGNS", "CHAPTER", "NOT_WIRED", "PROVENANCE", "COLUMNS", "Task", "campaign_settings",
           "plan", "run", "export", "load_provenance", "distinct_cells", "row_cells", "mirror",
           "stage_cells", "results_root"]

CAMPAIGNS = tuple(defs.CAMPAIGNS)
#: the chapter whose settings and figure data the campaign's figures follow
CHAPTER = "03_linear_separability"
#: figures of the papers not wired into campaigns yet, and their chapters
NOT_WIRED = {"fig7": "04_cifar10", "fig8": "04_cifar10", "us-fig2": "05_underspecification",
             "us-fig3": "05_underspecification"}
PROVENANCE = "provenance.json"
_RUN = ["model", "width", "recipe"]
COLUMNS = {"fig1": _RUN + ["k1", "k2", "seed", "test_acc", "train_acc"],
           "fig2": _RUN + ["k1", "k2", "seed", "iters_to_loss", "test_acc", "train_acc", "budget"],
           "fig3": _RUN + ["k1", "k2", "seed", "test_acc", "train_acc"],
           "fig6": _RUN + ["sigma", "estimator", "nad_index", "seed", "test_acc", "train_acc", "eigenvalue",
                           "eigenvalue_ratio"]}
#: the columns that identify a run (a bundle has one row per run)
_KEYS = {"fig1": _RUN + ["k1", "k2", "seed"], "fig2": _RUN + ["k1", "k2", "seed"],
         "fig3": _RUN + ["k1", "k2", "seed"], "fig6": _RUN + ["sigma", "nad_index", "seed"]}


def results_root() -> Path:
    """``results/`` of this checkout (``$NADBOOK_RESULTS`` elsewhere, for tests)."""
    env = os.environ.get("NADBOOK_RESULTS")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "results"


def campaign_settings(name: str) -> dict:
    """The campaign ``name`` of :mod:`nadcore.book.settings.campaigns` (a deep copy)."""
    if name not in defs.CAMPAIGNS:
        raise ValueError(f"unknown campaign {name!r}; choose one of {', '.join(CAMPAIGNS)}")
    return copy.deepcopy(defs.CAMPAIGNS[name])


# --------------------------------------------------------------------------------------------
# Cells
# --------------------------------------------------------------------------------------------
def mirror(k1: int, k2: int) -> tuple[int, int]:
    """The cell (k2, k1): the transposed direction, the same problem in distribution (see
    :func:`nadcore.experiments.separability.grid_sweep`)."""
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
    """Every cell of the rows ``k1 in rows`` of ``grid``, coarse to fine in k2, row by row within
    each level (all of them: a cell and its transpose on the rows are both trained, a free check
    of the transposition symmetry)."""
    cells = [(int(a), int(b)) for a, b in grid.frequencies if int(a) in rows]
    return _coarse_to_fine(cells, grid)


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
@dataclass
class Task:
    """The jobs of one stage for one width (and Fig. 6 noise level): ``rows(job, arrays)`` gives
    the bundle rows of a finished job."""

    figure: str
    arch: str
    spec: str
    width: int | None
    recipe: str
    jobs: list
    rows: Callable
    runs: int
    stage: int
    meta: dict = field(default_factory=dict)

    @property
    def label(self) -> str:
        extra = f" sigma={self.meta['sigma']:g}" if "sigma" in self.meta else ""
        return f"{self.figure} {self.spec} ({self.recipe}){extra}"


def _train(cfg: dict, camp: dict, figure: str, recipe: str, arch: str) -> dict:
    if recipe not in cfg["recipes"]:
        raise ValueError(f"unknown recipe {recipe!r}; chapter 3 knows {', '.join(cfg['recipes'])}")
    s = dict(cfg["recipes"][recipe]) | camp["train"]
    data = {k: cfg[k] for k in ("sigma", "epsilon", "signal", "n_test")}
    if figure == "fig2":
        s.update(cfg["fig2_train"])
        data.update(sigma=cfg["fig2_sigma"], loss_threshold=cfg["fig2_threshold"])
    return data | s


def _fourier_rows(task_fields: dict, keys, budget: bool):
    def rows(job, arrays):
        out = []
        for j, (label, seed) in enumerate(job.config["runs"]):
            r = {**task_fields, "k1": int(label[0]), "k2": int(label[1]), "seed": int(seed),
                 **{k: np.asarray(arrays[k])[j].item() for k in keys}}
            if budget:
                r["budget"] = int(np.asarray(arrays["iter_loss"]).shape[-1])
            out.append(r)
        return out
    return rows


def _fig6_rows(task_fields: dict, eigenvalues):
    ev = np.asarray(eigenvalues, dtype=np.float64)

    def rows(job, arrays):
        return [{**task_fields, "estimator": "published NADs", "nad_index": int(i), "seed": int(seed),
                 "test_acc": float(arrays["test_acc"][j]), "train_acc": float(arrays["train_acc"][j]),
                 "eigenvalue": float(ev[i]), "eigenvalue_ratio": float(ev[i] / ev[0]) if ev[0] > 0 else float("nan")}
                for j, (i, seed) in enumerate(job.config["runs"])]
    return rows


def _spec(arch: str, width) -> str:
    if arch not in REGISTRY:
        raise ValueError(f"unknown architecture {arch!r}; the registry has {', '.join(sorted(REGISTRY))}")
    if width is None:
        return arch
    if arch not in OPTIONS:
        raise ValueError(f"{arch!r} has no width option (those with one: {', '.join(OPTIONS)})")
    (key, _), = OPTIONS[arch].items()
    return registry_spec(arch, **{key: int(width)})


def plan(campaign: str, *, figures=None, archs=None, stages=None, device: str | None = None) -> tuple[list[Task], dict]:
    """The tasks of ``campaign`` in stage order (only ``figures`` / ``archs`` / stage numbers
    ``stages`` where given) and the settings they use (the campaign's and chapter 3's)."""
    camp = campaign_settings(campaign)
    cfg = profiles.resolve(CHAPTER, "paper", camp.get("overrides"))
    grid = fourier_grid(32, cfg["grid"])
    dev = device or camp["device"]
    tasks = []
    for n, st in enumerate(camp["stages"]):
        fig, arch = st["figure"], st["arch"]
        if fig not in COLUMNS:
            raise ValueError(f"stage {n}: unknown figure {fig!r}; campaigns run {', '.join(COLUMNS)}")
        if (figures and fig not in figures) or (archs and arch not in archs) or (stages and n not in stages):
            continue
        recipe = st.get("recipe", "authors")
        seeds = [int(s) for s in st.get("seeds", [0])]
        widths = st.get("widths") or [camp["widths"].get(arch)]
        for width in widths:
            spec = _spec(arch, width)
            w = spec_width(spec)
            fields = {"model": arch, "width": w, "recipe": recipe}
            train = _train(cfg, camp, fig, recipe, arch)
            if fig == "fig6":
                nads = load_published_nads(arch)
                idx = [int(i) for i in st["indices"]]
                V = nads.nads[idx].reshape(len(idx), *nads.input_shape)
                for sigma in st["sigmas"]:
                    jobs = sep.direction_jobs(V, idx, seeds, model=spec, settings=train | {"sigma": float(sigma)},
                                              chunk=camp["chunk"], tag="nad-published", device=dev,
                                              outputs=cfg["outputs"])
                    f = fields | {"sigma": float(sigma)}
                    tasks.append(Task(fig, arch, spec, w, recipe, jobs, _fig6_rows(f, nads.eigenvalues),
                                      len(idx) * len(seeds), n, {"sigma": float(sigma)}))
                continue
            cells = stage_cells(st["cells"], grid)[:st.get("limit")]
            V = np.stack([fourier_basis_vector(a, b, 32).numpy() for a, b in cells])
            jobs = sep.direction_jobs(V, [list(c) for c in cells], seeds, model=spec, settings=train,
                                      chunk=camp["chunk"], tag="fourier", device=dev, outputs=cfg["outputs"])
            keys = ("iters_to_loss", "test_acc", "train_acc") if fig == "fig2" else ("test_acc", "train_acc")
            tasks.append(Task(fig, arch, spec, w, recipe, jobs, _fourier_rows(fields, keys, fig == "fig2"),
                              len(cells) * len(seeds), n))
    if not tasks:
        raise ValueError(f"campaign {campaign!r} has no stage for figures={figures} archs={archs} stages={stages}")
    return tasks, {"campaign": {k: v for k, v in camp.items()}, CHAPTER: cfg}


# --------------------------------------------------------------------------------------------
# Ledger and bundle
# --------------------------------------------------------------------------------------------
def load_provenance(out) -> dict:
    p = Path(out) / PROVENANCE
    return json.loads(p.read_text()) if p.is_file() else {"sessions": [], "jobs": {}, "figures": {}}


def _bundle_id(task: Task, job: Job) -> str:
    """A job's identity across code versions: its figure, network and config."""
    return digest({"figure": task.figure, "arch": task.arch, "config": canonical(job.config)}, 20)


def _old_rows(out: Path, figure: str) -> pd.DataFrame | None:
    p = out / CHAPTER / f"{figure}.csv"
    return pd.read_csv(p) if p.is_file() else None


def _rows_of(old: pd.DataFrame | None, task: Task, job: Job):
    """The rows of ``job`` in an existing bundle CSV, or None unless every run has exactly one."""
    if old is None:
        return None
    want = []
    for label, seed in job.config["runs"]:
        probe = task.rows(Job({"runs": [[label, seed]]}), _PROBE)[0]
        sel = np.ones(len(old), dtype=bool)
        for k in _KEYS[task.figure]:
            sel &= (old[k] == probe[k]).to_numpy()
        part = old[sel]
        if len(part) != 1:
            return None
        want.append(part.iloc[0][COLUMNS[task.figure]].to_dict())
    return want


class _Probe(dict):
    """Arrays of NaNs: enough for a task's ``rows`` to give a run's identifying columns."""

    def __missing__(self, key):
        return np.full(1, np.nan)


_PROBE = _Probe()


def export(tasks: list[Task], cache: Cache, out, prov: dict, settings: dict) -> dict:
    """Rewrite every figure's CSV from the done jobs (the cache, or the ledger and the existing
    CSV) and ``provenance.json``; returns the provenance."""
    out = Path(out)
    status = prov.setdefault("figures", {})
    for fig in dict.fromkeys(t.figure for t in tasks):
        old = _old_rows(out, fig)
        rows, fstat = [], status.setdefault(fig, {"chapter": CHAPTER, "tasks": {}})
        for t in (t for t in tasks if t.figure == fig):
            done_jobs = done_runs = 0
            for job in t.jobs:
                hit = cache.load("directional_job", job.config)
                got = t.rows(job, hit[0]) if hit is not None else (
                    _rows_of(old, t, job) if _bundle_id(t, job) in prov["jobs"] else None)
                if got is not None:
                    rows += got
                    done_jobs += 1
                    done_runs += len(job.config["runs"])
            fstat["tasks"][t.label] = {"model": t.arch, "width": t.width, "recipe": t.recipe, "stage": t.stage,
                                       "runs_done": done_runs, "runs_planned": t.runs, "jobs_done": done_jobs,
                                       "jobs_planned": len(t.jobs), "complete": done_runs >= t.runs > 0}
        if old is not None:  # rows of tasks outside this plan (other stages, filters) stay
            rows = old.to_dict("records") + rows
        frame = pd.DataFrame(rows, columns=COLUMNS[fig])
        if not frame.empty:
            frame = frame.drop_duplicates(subset=_KEYS[fig], keep="last").sort_values(_KEYS[fig], kind="stable")
            frame = frame.assign(kernel_path=kernels.path()) if "kernel_path" not in frame else frame
            frame["kernel_path"] = frame["kernel_path"].fillna(kernels.path())
            (out / CHAPTER).mkdir(parents=True, exist_ok=True)
            p = out / CHAPTER / f"{fig}.csv"
            tmp = p.with_name(f".{p.name}.{os.getpid()}")
            frame.to_csv(tmp, index=False, float_format="%.6g")
            os.replace(tmp, p)
        fstat["runs_done"] = int(len(frame))
        fstat["complete"] = all(t["complete"] for t in fstat["tasks"].values())
    prov["settings"] = canonical(settings)
    prov["not_wired"] = sorted(NOT_WIRED)
    prov["updated"] = utc_now()
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / PROVENANCE, prov)
    return prov


# --------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------
def _pending(tasks, cache, prov, out):
    """(task, job) pairs still to run, in stage order, each job once."""
    olds, seen, todo = {}, set(), []
    for t in tasks:
        if t.figure not in olds:
            olds[t.figure] = _old_rows(out, t.figure)
        for job in t.jobs:
            bid = _bundle_id(t, job)
            if bid in seen or ("directional_job", job.config) in cache:
                continue
            seen.add(bid)
            if bid in prov["jobs"] and _rows_of(olds[t.figure], t, job) is not None:
                continue
            todo.append((t, job))
    return todo


def run(tasks: list[Task], settings: dict, *, cache: Cache, out, device: str = "cpu",
        budget: float | None = None, executor=None, window: int = 1, argv=None, log=print,
        root: Path | None = None) -> dict:
    """Run the tasks' missing jobs in order, ``window`` at a time through ``executor`` (None:
    in-process, one at a time), saving each to ``cache`` and rewriting the bundle in ``out``
    after each; start no job that would end after ``budget`` seconds (estimated from the longest
    job of the same task so far, or of an earlier session). Returns the provenance."""
    t_start = time.perf_counter()
    dev = resolve_device(device)
    out = Path(out)
    prov = load_provenance(out)
    camp = settings["campaign"]
    if prov.get("campaign_device") not in (None, camp["device"]):
        raise ValueError(f"{out} holds a bundle made on {prov['campaign_device']!r}; write this campaign elsewhere")
    prov["campaign_device"] = camp["device"]
    session = {**commit_info(root or Path(__file__).resolve().parents[2]), **machine_info(dev),
               "argv": list(argv or []), "started": utc_now(), "jobs_computed": 0,
               "executor": type(executor).__name__ if executor is not None else None, "window": int(window)}
    prov["sessions"].append(session)
    sid = len(prov["sessions"]) - 1
    export(tasks, cache, out, prov, settings)
    todo = _pending(tasks, cache, prov, out)
    estimates = prov.setdefault("estimates", {})
    stopped = None
    running: dict = {}

    def est(t):
        return float(estimates.get(f"{t.figure}:{t.spec}:{t.recipe}", 0.0))

    def finish(t, job, secs, meta):
        estimates[f"{t.figure}:{t.spec}:{t.recipe}"] = round(max(est(t), secs) if est(t) else secs, 1)
        prov["jobs"][_bundle_id(t, job)] = {
            "figure": t.figure, "model": t.spec, "width": t.width, "recipe": t.recipe, "stage": t.stage,
            "cache_key": cache.key("directional_job", job.config)[0], "runs": len(job.config["runs"]),
            "labels": [r[0] for r in job.config["runs"]], "seeds": sorted({int(r[1]) for r in job.config["runs"]}),
            "seconds": round(secs, 1), "date": utc_now(), "session": sid, "trainer": meta.get("trainer"),
            "threads": meta.get("threads"), "device": meta.get("device")}
        session["jobs_computed"] += 1
        session["finished"] = utc_now()
        export(tasks, cache, out, prov, settings)
        log(f"{t.label} job {len(prov['jobs'])}: {secs:.0f} s ({meta.get('device', '?')})")

    try:
        if executor is None:
            for t, job in todo:
                if budget is not None and time.perf_counter() - t_start + est(t) > budget:
                    stopped = f"{t.label}: ~{est(t):.0f} s would pass the budget"
                    break
                t0 = time.perf_counter()
                (arrays, meta), = run_jobs([job], sep.directional_job, cache=cache)
                finish(t, job, time.perf_counter() - t0, meta)
        else:
            queue = list(todo)
            while queue or running:
                while queue and len(running) < window:
                    t, job = queue[0]
                    if budget is not None and time.perf_counter() - t_start + est(t) > budget:
                        stopped = f"{t.label}: ~{est(t):.0f} s would pass the budget"
                        queue = []
                        break
                    queue.pop(0)
                    fut = executor.submit(sep.directional_job, job.config, **job.data)
                    running[fut] = (t, job, time.perf_counter())
                if not running:
                    break
                fut = _first_done(list(running))
                t, job, t0 = running.pop(fut)
                arrays, meta = fut.result()
                cache.save("directional_job", job.config, {k: np.asarray(v) for k, v in arrays.items()}, meta)
                finish(t, job, float(meta.get("seconds", time.perf_counter() - t0)), meta)
    finally:
        for fut in running:
            fut.cancel()
        session["finished"] = utc_now()
        session["stopped"] = stopped
        session["seconds"] = round(time.perf_counter() - t_start, 1)
        prov = export(tasks, cache, out, prov, settings)
    if stopped:
        log(f"stopped: {stopped}")
    return prov


def _first_done(futures):
    """The first of ``futures`` to finish (concurrent.futures, Dask or submitit futures)."""
    return next(iter(as_completed(futures)))
