"""The ``paper`` profile's runs, made to survive a GPU lease: planned, run job by job through
the cache, exported as committed result bundles with their provenance.

``scripts/run_paper.py`` is the command line. What it does:

* :func:`plan` lists the jobs of the figures asked for, from the chapters' ``paper`` settings
  (:mod:`nadcore.book.settings`) and the chapters' own job functions
  (:func:`nadcore.experiments.separability.direction_jobs`, :func:`nadcore.experiments.nads.nad_job`),
  in a sensible order: figure by figure, architecture by architecture, seed by seed, and within a
  seed the Fourier cells coarse to fine (every 8th frequency first, then every 4th, 2nd, 1st), so
  a partly done map already covers the grid. Fig. 1 (and Figs. 2, 3) train every cell of the
  16 x 16 grid that is distinct under the transposition (k1, k2) -> (k2, k1): 136 cells; the
  book draws a cell's mirror from it. Transposing the images maps D(v(k1, k2)) to D(v(k2, k1))
  and each of the paper's networks (square kernels and pooling windows, i.i.d. initialisation)
  to an equally likely one, so the two cells are the same problem in distribution
  (:func:`nadcore.experiments.separability.grid_sweep`). (k1, k2) -> (-k1, -k2) is not a
  symmetry here: with the real directions cos + sin those two cells are orthogonal directions,
  not v and -v.
* :func:`run` runs them one job at a time through :func:`nadcore.experiments.run_jobs` (each
  finished job is in the cache at once), and after every job rewrites the bundle: so a kill loses
  at most the job in flight, and a ``budget`` in seconds stops before a job that would not fit.
* the bundle (:func:`export`): ``<out>/<chapter>/<figure>.csv`` with the columns of the cpu
  build's figure data (``Chapter.figure_data``) and ``<out>/provenance.json``: every session
  (commit, GPU, driver, CUDA, cuDNN and torch versions, arguments, start and end), the settings,
  per figure and architecture the runs and jobs done and still missing, and per job its wall
  time, date and session.

A job counts as done when the cache holds it, or when an earlier session's ledger
(``provenance.json``) holds it with its rows in the bundle: a lease that starts without the
previous cache, or with edited code (which changes the cache keys), keeps what earlier leases
committed.
"""
from __future__ import annotations

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
from nadcore.data import fourier_basis_vector, fourier_grid
from nadcore.experiments import separability as sep
from nadcore.experiments.cache import Cache
from nadcore.experiments.nads import nad_config, nad_job
from nadcore.experiments.runner import Job, run_jobs
from nadcore.nads.covariance import NADResult
from nadcore.nets import REGISTRY
from nadcore.nets.variants import TINY
from nadcore.runtime import (canonical, commit_info, digest, machine_info, resolve_device, utc_now,
                             write_json_atomic)

__all__ = ["FIGURES", "NOT_WIRED", "CHAPTERS", "distinct_cells", "mirror", "Task", "plan", "run", "export",
           "PROVENANCE", "figure_columns", "tiny_knobs", "default_archs"]

#: figure -> the chapter whose settings and figure data it follows
CHAPTERS = {"fig1": "03_linear_separability", "fig2": "03_linear_separability",
            "fig3": "03_linear_separability", "fig6": "03_linear_separability"}
FIGURES = tuple(CHAPTERS)
#: figures of the paper-scale campaign without runs wired here yet (issue 27, item 4)
NOT_WIRED = {"fig7": "04_cifar10", "fig8": "04_cifar10", "us-fig2": "05_underspecification",
             "us-fig3": "05_underspecification"}
PROVENANCE = "provenance.json"
_COLUMNS = {"fig1": ["model", "k1", "k2", "seed", "test_acc", "train_acc"],
            "fig2": ["model", "k1", "k2", "seed", "iters_to_loss", "test_acc", "train_acc", "budget"],
            "fig3": ["model", "k1", "k2", "seed", "test_acc", "train_acc"],
            "fig6": ["model", "estimator", "nad_index", "seed", "test_acc", "train_acc", "eigenvalue",
                     "eigenvalue_ratio"]}
_MODELS_KEY = {"fig1": "fig1_models", "fig2": "fig2_models", "fig3": "fig3_models", "fig6": "fig6_models"}


def figure_columns(figure: str) -> list[str]:
    """The columns of a figure's CSV (those of the cpu build's, ``kernel_path`` last)."""
    return _COLUMNS[figure] + ["kernel_path"]


def default_archs(figure: str, settings: dict) -> list[str]:
    """The architectures the paper profile trains for ``figure``, those the cpu build cannot
    train (LogReg and LeNet are trained there) first."""
    names = list(settings[_MODELS_KEY[figure]])
    return [a for a in names if a not in ("logreg", "lenet")] + [a for a in names if a in ("logreg", "lenet")]


def tiny_knobs(figure: str) -> dict:
    """Settings of ``--tiny`` (CPU tests of the machinery, never results): a few cells, a few
    NAD indices, 64 samples, one epoch, tiny networks (:data:`nadcore.nets.variants.TINY`)."""
    small = dict(n_train=64, epochs=1, max_lr=0.05, momentum=0.9, weight_decay=1e-5, batch_size=32)
    return {"n_test": 64, "chunk": 3, "train": {"default": dict(small, trainer="side_by_side"),
                                                 "logreg": small, "lenet": small, "lenet_nopool": small},
            "fig2_train": dict(n_train=64, epochs=1), "fig6_indices": [0, 1, 500, 1000]}


# --------------------------------------------------------------------------------------------
# The grid's distinct cells
# --------------------------------------------------------------------------------------------
def distinct_cells(grid) -> list[tuple[int, int]]:
    """One representative of every class of cells of ``grid`` under (k1, k2) -> (k2, k1), coarse
    to fine: the cells of ``grid.subgrid(8)``,
    then ``subgrid(4)``, ``subgrid(2)``, then the rest, each in row-major order. The
    representative is the first cell of its class in row-major order."""
    seen, reps = set(), []
    for k1, k2 in grid.frequencies:
        key = frozenset({(k1, k2), (k2, k1)})
        if key not in seen:
            seen.add(key)
            reps.append((k1, k2))
    order = []
    for every in (8, 4, 2, 1):
        if grid.grid % every or every >= grid.grid:
            continue
        sub = set(grid.subgrid(every).frequencies) if every > 1 else set(grid.frequencies)
        order += [c for c in reps if c in sub and c not in order]
    return order + [c for c in reps if c not in order]


def mirror(k1: int, k2: int, size: int = 32) -> tuple[int, int]:
    """The cell (k2, k1): the transposed direction, the same problem in distribution (``size``
    is kept for callers; a transposed cell of the grid is always on the grid)."""
    return (int(k2), int(k1))


# --------------------------------------------------------------------------------------------
# Tasks and jobs
# --------------------------------------------------------------------------------------------
@dataclass
class Task:
    """The jobs of one figure and architecture. ``build()`` returns the jobs, or None while they
    wait on another task (Fig. 6's training waits on its NADs). ``rows(job, arrays)``: the
    figure's rows of a finished job."""

    figure: str
    arch: str
    name: str
    fn: Callable
    build: Callable[[], list | None]
    rows: Callable | None
    planned_jobs: int
    planned_runs: int
    meta: dict = field(default_factory=dict)


def _spec(arch: str, tiny: bool) -> str:
    if arch not in REGISTRY:
        raise ValueError(f"unknown architecture {arch!r}; the paper's are {', '.join(sorted(REGISTRY))}")
    return TINY.get(arch, arch) if tiny else arch


def _train_settings(cfg: dict, arch: str, **over) -> dict:
    s = cfg["train"].get(arch, cfg["train"]["default"])
    return {k: cfg[k] for k in ("sigma", "epsilon", "signal", "n_test")} | s | over


def _fourier_rows(arch, keys, extra=None):
    def rows(job, arrays):
        out = []
        for j, (label, seed) in enumerate(job.config["runs"]):
            out.append({"model": arch, "k1": int(label[0]), "k2": int(label[1]), "seed": int(seed),
                        **{k: np.asarray(arrays[k])[j].item() for k in keys}, **(extra(arrays) if extra else {})})
        return out
    return rows


def _fourier_task(figure, arch, cfg, seeds, device, tiny, cells, **over) -> Task:
    spec = _spec(arch, tiny)
    V = np.stack([fourier_basis_vector(a, b, 32).numpy() for a, b in cells])
    jobs = sep.direction_jobs(V, [list(c) for c in cells], seeds, model=spec,
                              settings=_train_settings(cfg, arch, **over), chunk=cfg["chunk"], tag="fourier",
                              device=device, outputs=cfg["outputs"])
    keys = ("iters_to_loss", "test_acc", "train_acc") if figure == "fig2" else ("test_acc", "train_acc")
    extra = (lambda a: {"budget": int(np.asarray(a["iter_loss"]).shape[-1])}) if figure == "fig2" else None
    return Task(figure, arch, "directional_job", sep.directional_job, lambda: jobs,
                _fourier_rows(arch, keys, extra), len(jobs), len(cells) * len(seeds))


def _fig6_tasks(arch, cfg, ch2, seeds, device, tiny, cache: Cache, seed0: int) -> list[Task]:
    spec = _spec(arch, tiny)
    networks = 3 if tiny else int(ch2["secant_networks"][arch])
    precision = "float32" if tiny else ch2["secant_precision"].get(arch, "float32")
    nconf = nad_config(spec, "secant", networks, seed0, precision=precision)
    nad = Job(nconf, {"device": str(device)})
    idx = [int(i) for i in cfg["fig6_indices"]]
    chunk = int(cfg["chunk"])
    n_train_jobs = -(-len(idx) * len(seeds) // chunk)
    state = {}

    def nads_done():
        hit = cache.load("nads", nconf)
        if hit is None:
            return None
        arrays = dict(hit[0])
        return NADResult(arrays.pop("eigenvalues"), arrays.pop("nads"), hit[1], arrays)

    def build():
        r = state.get("nads") or nads_done()
        if r is None:
            return None
        state["nads"] = r
        V = r.nads[idx].reshape(len(idx), *r.input_shape)
        return sep.direction_jobs(V, idx, seeds, model=spec, settings=_train_settings(cfg, arch), chunk=chunk,
                                  tag=f"nad-secant-{networks}-1", device=device, outputs=cfg["outputs"])

    def rows(job, arrays):
        ev = np.asarray(state["nads"].eigenvalues, dtype=np.float64)
        return [{"model": arch, "estimator": "secant", "nad_index": int(i), "seed": int(seed),
                 "test_acc": float(arrays["test_acc"][j]), "train_acc": float(arrays["train_acc"][j]),
                 "eigenvalue": float(ev[i]), "eigenvalue_ratio": float(ev[i] / ev[0]) if ev[0] > 0 else float("nan")}
                for j, (i, seed) in enumerate(job.config["runs"])]

    return [Task("fig6", arch, "nads", nad_job, lambda: [nad], None, 1, 0,
                 {"networks": networks, "precision": precision, "what": "secant NADs"}),
            Task("fig6", arch, "directional_job", sep.directional_job, build, rows, n_train_jobs,
                 len(idx) * len(seeds), {"needs": "NADs"})]


def plan(figures, archs=None, *, seeds: int | None = None, seed: int = 0, tiny: bool = False,
         device: str = "cuda", cache: Cache | None = None, cells: int | None = None) -> tuple[list[Task], dict]:
    """The tasks of ``figures`` (any of :data:`FIGURES`) for ``archs`` (default: each figure's
    paper-profile architectures, see :func:`default_archs`; an architecture a figure does not
    train is skipped for it), ``seeds`` seeds from ``seed`` (default: the profile's), and the
    resolved settings by chapter. ``tiny``: :func:`tiny_knobs` and tiny networks (CPU tests);
    ``cells``: only the first ``cells`` distinct cells (tests)."""
    bad = [f for f in figures if f not in CHAPTERS]
    if bad:
        wired = ", ".join(FIGURES)
        later = [f for f in bad if f in NOT_WIRED]
        raise ValueError(f"figures {bad} are not wired for paper-scale runs yet"
                         if later and len(later) == len(bad) else f"unknown figures {bad}; choose from {wired}")
    for a in archs or []:
        if a not in REGISTRY:
            raise ValueError(f"unknown architecture {a!r}; the paper's are {', '.join(sorted(REGISTRY))}")
    cache = cache if cache is not None else Cache()
    tasks, settings = [], {}
    for fig in figures:
        chapter = CHAPTERS[fig]
        cfg = profiles.resolve(chapter, "paper", tiny_knobs(fig) if tiny else None)
        settings[chapter] = cfg
        seed_list = [seed + k for k in range(int(seeds if seeds is not None else cfg["seeds"]))]
        grid = fourier_grid(32, cfg["grid"])
        want = [a for a in (archs or default_archs(fig, cfg)) if a in cfg[_MODELS_KEY[fig]]]
        if not want:
            raise ValueError(f"{fig}: none of {archs} is trained for it at paper scale; it trains "
                             f"{', '.join(cfg[_MODELS_KEY[fig]])}")
        all_cells = distinct_cells(grid)
        cl = all_cells[:cells] if cells else all_cells
        for arch in want:
            if fig == "fig1":
                tasks.append(_fourier_task(fig, arch, cfg, seed_list, device, tiny, cl))
            elif fig == "fig2":
                c2 = cl if cfg["fig2_cells"] is None else [tuple(c) for c in cfg["fig2_cells"]]
                tasks.append(_fourier_task(fig, arch, cfg, seed_list, device, tiny, c2,
                                           sigma=cfg["fig2_sigma"], loss_threshold=cfg["fig2_threshold"],
                                           **cfg["fig2_train"]))
            elif fig == "fig3":
                c3 = cl if cfg["fig3_cells"] is None else [tuple(c) for c in cfg["fig3_cells"]]
                tasks.append(_fourier_task(fig, arch, cfg, seed_list, device, tiny, c3))
            elif fig == "fig6":
                ch2 = profiles.resolve("02_nads", "paper")
                settings["02_nads"] = ch2
                tasks += _fig6_tasks(arch, cfg, ch2, seed_list, device, tiny, cache, seed)
    return tasks, settings


# --------------------------------------------------------------------------------------------
# Provenance
# --------------------------------------------------------------------------------------------
def load_provenance(out: Path) -> dict:
    p = Path(out) / PROVENANCE
    return json.loads(p.read_text()) if p.is_file() else {"sessions": [], "jobs": {}, "figures": {}}


def _bundle_id(task: Task, job: Job) -> str:
    """A job's identity across code versions: its figure, architecture and config."""
    return digest({"figure": task.figure, "arch": task.arch, "name": task.name, "config": canonical(job.config)}, 20)


# --------------------------------------------------------------------------------------------
# Export and run
# --------------------------------------------------------------------------------------------
def _old_rows(out: Path, chapter: str, figure: str) -> pd.DataFrame | None:
    p = out / chapter / f"{figure}.csv"
    return pd.read_csv(p) if p.is_file() else None


def export(tasks: list[Task], cache: Cache, out, prov: dict, settings: dict, tiny: bool) -> dict:
    """Write every figure's CSV from the done jobs and ``provenance.json``; returns the
    provenance. Rows of jobs done in earlier sessions and no longer in the cache are kept from
    the existing CSV."""
    out = Path(out)
    by_fig: dict[str, list] = {}
    status = prov.setdefault("figures", {})
    for fig in dict.fromkeys(t.figure for t in tasks):
        chapter = CHAPTERS[fig]
        old = _old_rows(out, chapter, fig)
        rows, fstat = [], status.setdefault(fig, {"chapter": chapter, "archs": {}})
        for t in (t for t in tasks if t.figure == fig):
            jobs = t.build() or []
            done_jobs = done_runs = 0
            for job in jobs:
                bid = _bundle_id(t, job)
                hit = cache.load(t.name, job.config)
                if hit is not None:
                    done_jobs += 1
                    if t.rows is not None:
                        rows += t.rows(job, hit[0])
                        done_runs += len(job.config["runs"])
                elif bid in prov["jobs"] and t.rows is not None and old is not None:
                    got = _rows_of(old, fig, t.arch, job)
                    if got is not None:
                        rows += got
                        done_jobs += 1
                        done_runs += len(job.config["runs"])
            if t.rows is None:
                fstat.setdefault("nads", {})[t.arch] = {"done": bool(done_jobs), **t.meta}
                continue
            fstat["archs"][t.arch] = {"runs_done": done_runs, "runs_planned": t.planned_runs,
                                      "jobs_done": done_jobs, "jobs_planned": t.planned_jobs,
                                      "complete": done_runs >= t.planned_runs > 0}
        if fig == "fig3":  # the pooled networks on the same cells come from Fig. 1
            rows += _pooled_rows(out, rows)
        frame = pd.DataFrame(rows, columns=_COLUMNS[fig]).assign(kernel_path=kernels.path())
        if not frame.empty:
            frame = frame.drop_duplicates(subset=[c for c in _COLUMNS[fig][:4]], keep="last")
            (out / chapter).mkdir(parents=True, exist_ok=True)
            p = out / chapter / f"{fig}.csv"
            tmp = p.with_name(f".{p.name}.{os.getpid()}")
            frame.to_csv(tmp, index=False, float_format="%.6g")
            os.replace(tmp, p)
        arch_stat = fstat["archs"]
        required = [a for a in default_archs(fig, settings[chapter]) if a not in ("logreg", "lenet")]
        fstat["required"] = required  # the big networks the cpu build cannot train
        fstat["complete"] = all(a in arch_stat and arch_stat[a]["complete"] for a in required)
        fstat["runs_done"] = sum(a["runs_done"] for a in arch_stat.values())
        fstat["runs_planned"] = sum(a["runs_planned"] for a in arch_stat.values())
        by_fig[fig] = frame
    prov["settings"] = {**prov.get("settings", {}), **canonical(settings)}
    prov["tiny"] = bool(tiny)
    prov["not_wired"] = sorted(NOT_WIRED)
    prov["updated"] = utc_now()
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / PROVENANCE, prov)
    return prov


def _rows_of(old: pd.DataFrame, fig: str, arch: str, job: Job):
    want = []
    for label, seed in job.config["runs"]:
        sel = old["model"] == arch
        if fig == "fig6":
            sel &= (old["nad_index"] == int(label)) & (old["seed"] == int(seed))
        else:
            sel &= (old["k1"] == int(label[0])) & (old["k2"] == int(label[1])) & (old["seed"] == int(seed))
        part = old[sel]
        if len(part) != 1:
            return None
        want.append(part.iloc[0][_COLUMNS[fig]].to_dict())
    return want


def _pooled_rows(out: Path, rows: list) -> list:
    fig1 = _old_rows(out, CHAPTERS["fig1"], "fig1")
    if fig1 is None or not rows:
        return []
    extra = []
    for r in rows:
        pooled = r["model"].replace("_nopool", "")
        m = fig1[(fig1["model"] == pooled) & (fig1["k1"] == r["k1"]) & (fig1["k2"] == r["k2"]) & (fig1["seed"] == r["seed"])]
        extra += [row[_COLUMNS["fig3"]].to_dict() for _, row in m.iterrows()]
    return extra


def run(tasks: list[Task], settings: dict, *, cache: Cache, out, device: str = "cuda",
        budget: float | None = None, tiny: bool = False, argv=None, log=print, root: Path | None = None) -> dict:
    """Run every task's missing jobs, one at a time, saving each to ``cache`` and rewriting the
    bundle in ``out`` after each; stop before a job that would not end within ``budget``
    seconds (estimated from the longest job of the same task so far). Returns the provenance."""
    t_start = time.perf_counter()
    dev = resolve_device(device)
    out = Path(out)
    prov = load_provenance(out)
    if prov.get("tiny") is not None and bool(prov.get("tiny")) != bool(tiny) and prov.get("jobs"):
        raise ValueError(f"{out} holds a {'tiny' if prov['tiny'] else 'paper-scale'} bundle; "
                         f"write {'tiny' if tiny else 'paper-scale'} runs elsewhere (--out)")
    session = {**commit_info(root or Path(__file__).resolve().parents[2]), **machine_info(dev),
               "argv": list(argv or []), "started": utc_now(), "jobs_computed": 0}
    prov["sessions"].append(session)
    sid = len(prov["sessions"]) - 1
    export(tasks, cache, out, prov, settings, tiny)
    stopped = None
    for t in tasks:
        jobs = t.build()
        if jobs is None:
            log(f"{t.figure} {t.arch}: waiting for {t.meta.get('needs', 'another task')}")
            continue
        longest = 0.0
        for i, job in enumerate(jobs):
            bid = _bundle_id(t, job)
            if (t.name, job.config) in cache or (bid in prov["jobs"] and _is_exported(out, t, job)):
                continue
            est = max(longest, float(prov.setdefault("estimates", {}).get(f"{t.figure}:{t.arch}:{t.name}", 0.0)))
            elapsed = time.perf_counter() - t_start
            if budget is not None and elapsed + est > budget:
                stopped = f"{t.figure} {t.arch} job {i + 1}/{len(jobs)}: ~{est:.0f} s would pass the budget"
                break
            t0 = time.perf_counter()
            (arrays, meta), = run_jobs([job], t.fn, cache=cache, name=t.name)
            secs = time.perf_counter() - t0
            longest = max(longest, secs)
            prov["estimates"][f"{t.figure}:{t.arch}:{t.name}"] = round(longest, 3)
            prov["jobs"][bid] = {"figure": t.figure, "arch": t.arch, "function": t.name,
                                 "cache_key": cache.key(t.name, job.config)[0],
                                 "runs": len(job.config.get("runs", [])) or None,
                                 "labels": [r[0] for r in job.config.get("runs", [])] or None,
                                 "seconds": round(secs, 3), "date": utc_now(), "session": sid,
                                 "trainer": meta.get("trainer"), "autocast": meta.get("autocast")}
            session["jobs_computed"] += 1
            session["finished"] = utc_now()
            export(tasks, cache, out, prov, settings, tiny)
            log(f"{t.figure} {t.arch} {t.name} job {i + 1}/{len(jobs)}: {secs:.1f} s")
        if stopped:
            break
    session["finished"] = utc_now()
    session["stopped"] = stopped
    session["seconds"] = round(time.perf_counter() - t_start, 1)
    prov = export(tasks, cache, out, prov, settings, tiny)
    if stopped:
        log(f"stopped: {stopped}")
    return prov


def _is_exported(out: Path, task: Task, job: Job) -> bool:
    old = _old_rows(out, CHAPTERS[task.figure], task.figure)
    return task.rows is not None and old is not None and _rows_of(old, task.figure, task.arch, job) is not None
