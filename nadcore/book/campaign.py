"""Campaigns: results the book's build cannot afford, computed off-build, resumably, into
committed result bundles.

A campaign is a list of :class:`Task` s (the chapters build them: the campaigns and their stages
are defined in :mod:`nadcore.chapters.campaigns`, ``scripts/run_campaign.py`` is the command
line). A task is the jobs of one figure for one network: jobs of a chapter's own job function,
and a ``rows(job, arrays)`` that turns a finished job into the figure's bundle rows.

* :func:`run` runs the missing jobs in task order through the job runner's cache, in-process or
  through an executor (a process pool, a Dask cluster, Slurm through submitit), and after every
  finished job rewrites the bundle. A kill loses at most the jobs in flight; ``budget`` seconds
  stops before a job that would not end in time.
* the bundle (:func:`export`): ``results/<campaign>/<chapter>/<figure>.csv``, one row per run,
  and ``provenance.json``: every session (commit, CPU model, GPU, torch version, arguments,
  start and end), the settings, per figure and task the runs done and planned, and per job its
  wall time, date and session (the ledger).

A job counts as done when the cache holds it, or when the ledger holds it with its rows in the
bundle: a session that starts without the earlier cache, or with edited code (which changes the
cache keys), keeps what earlier sessions committed. A job's identity in the ledger is its
figure, network and config (model spec with its width, runs, data and training settings), so
the same job is never run twice, whichever stage asks for it.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import InitVar, dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from nadcore import kernels
from nadcore.book.cache import Cache, job_code_fingerprint
from nadcore.book.runner import Job, as_completed, call_on_threads, job_threads, run_jobs
from nadcore.runtime import canonical, commit_info, digest, machine_info, resolve_device, utc_now, write_json_atomic

__all__ = [
    "Task",
    "Stage",
    "Figure",
    "PROVENANCE",
    "BundleBusy",
    "run",
    "writing",
    "export",
    "load_provenance",
    "results_root",
    "bundle_id",
    "done_jobs",
    "read_rows",
    "equal_to",
    "lower_priority",
    "report",
]

PROVENANCE = "provenance.json"
LOCK = ".campaign.lock"


def results_root() -> Path:
    """``results/`` of this checkout (``$NADBOOK_RESULTS`` elsewhere, for tests)."""
    env = os.environ.get("NADBOOK_RESULTS")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "results"


@dataclass
class Task:
    """The jobs of one figure for one network (at one width, recipe and noise level).

    ``fn``: the job function (module level, so that workers can import it); ``rows(job,
    arrays)``: the figure's bundle rows of a finished job; ``columns``: the figure's CSV columns
    and ``keys`` those that identify a run (the bundle has one row per run)."""

    figure: str
    chapter: str
    arch: str
    spec: str
    width: int | None
    recipe: str
    fn: Callable
    jobs: list
    rows: Callable
    columns: list
    keys: list
    runs: int
    stage: int
    meta: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.fn.__name__

    @property
    def label(self) -> str:
        extra = f" sigma={self.meta['sigma']:g}" if "sigma" in self.meta else ""
        precision = self.meta.get("precision", "fp32")  # float32 tasks keep the labels they always had
        return f"{self.figure} {self.spec} ({self.recipe}{'' if precision == 'fp32' else ', ' + precision}){extra}"


@dataclass(frozen=True)
class Stage:
    """One stage of a campaign at one width, as a figure's task builder sees it: the stage's
    number ``n`` and its dict ``stage``, the campaign (``campaign``), the settings of the chapter
    the figure follows (``cfg``), the network (``arch``, its model ``spec`` and ``width``), the
    ``seeds``, the ``device``, and the autocast precision the stage asks for (None: float32)."""

    n: int
    stage: dict
    campaign: dict
    cfg: dict
    arch: str
    spec: str
    width: int | None
    seeds: list
    device: str
    autocast: str | None = None


@dataclass(frozen=True)
class Figure:
    """A figure a campaign can train, defined by the chapter it belongs to.

    ``chapter``: the bundle folder its CSV goes to; ``settings_chapter``: the chapter whose
    settings its runs take, on the campaign's ``paper`` profile with the campaign's overrides,
    or (``own_profile``) on the ``profile`` each stage names with the stage's ``overrides``;
    ``columns`` and ``keys``: its CSV columns and those that identify a run; ``tasks(stage)``: the
    tasks of one :class:`Stage`. A figure whose stages take their own profile says which runs one
    seed has (``seed_runs(cfg)``, labels) and which run each bundle row is (``row_runs(rows)``),
    so that a chapter can take the seeds that have them all. ``train_settings(cfg, campaign,
    recipe, autocast)``: the D(v) and SGD settings of its runs, where a chapter compares them with
    its own."""

    name: str
    chapter: str
    settings_chapter: str
    columns: tuple
    keys: tuple
    tasks: Callable
    own_profile: bool = False
    seed_runs: Callable | None = None
    row_runs: Callable | None = None
    train_settings: Callable | None = None


# --------------------------------------------------------------------------------------------
# Ledger and bundle
# --------------------------------------------------------------------------------------------
def load_provenance(out) -> dict:
    p = Path(out) / PROVENANCE
    return json.loads(p.read_text()) if p.is_file() else {"sessions": [], "jobs": {}, "figures": {}}


def bundle_id(task: Task, job: Job) -> str:
    """A job's identity across code versions: its figure, network and config."""
    return digest({"figure": task.figure, "arch": task.arch, "config": canonical(job.config)}, 20)


def read_rows(path) -> pd.DataFrame | None:
    """A bundle CSV's rows, the ``width`` column as integers (missing for a network without a
    width, such as LeNet); None where there is no such file."""
    p = Path(path)
    if not p.is_file():
        return None
    df = pd.read_csv(p)
    if "width" in df:
        df["width"] = df["width"].astype("Int64")
    return df


def equal_to(column: pd.Series, value) -> np.ndarray:
    """The rows whose ``column`` equals ``value``, a missing value (None, NaN, NA) matching a
    missing one: how a bundle's rows are picked by a key that some networks lack."""
    if pd.isna(value):
        return column.isna().to_numpy()
    return (column == value).fillna(False).to_numpy(dtype=bool)


def _old_rows(out: Path, task: Task) -> pd.DataFrame | None:
    return read_rows(out / task.chapter / f"{task.figure}.csv")


def _rows_of(old: pd.DataFrame | None, task: Task, job: Job):
    """The rows of ``job`` in an existing bundle CSV, or None unless every run has exactly one."""
    if old is None:
        return None
    want = []
    for label, seed in job.config["runs"]:
        probe = task.rows(Job({"runs": [[label, seed]]}), _PROBE)[0]
        sel = np.ones(len(old), dtype=bool)
        for k in task.keys:
            sel &= equal_to(old[k], probe[k])
        part = old[sel]
        if len(part) != 1:
            return None
        want.append(part.iloc[0][task.columns].to_dict())
    return want


class _Probe(dict):
    """Arrays of NaNs: enough for a task's ``rows`` to give a run's identifying columns."""

    def __missing__(self, key):
        return np.full(1, np.nan)


_PROBE = _Probe()


def export(tasks: list[Task], cache: Cache, out, prov: dict, settings: dict, threads: int = 1) -> dict:
    """Rewrite every figure's CSV from the done jobs (the cache, for jobs run on ``threads`` torch
    threads, or the ledger and the existing CSV) and ``provenance.json``; returns the provenance."""
    out = Path(out)
    status = prov.setdefault("figures", {})
    for fig in dict.fromkeys(t.figure for t in tasks):
        mine = [t for t in tasks if t.figure == fig]
        first = mine[0]
        old = _old_rows(out, first)
        rows, fstat = [], status.setdefault(fig, {"chapter": first.chapter, "tasks": {}})
        for t in mine:
            n_jobs = n_runs = 0
            code = job_code_fingerprint(t.fn)  # once per task: it reads the sources of its imports
            for job in t.jobs:
                hit = cache.load(t.name, job.config, threads, code)
                got = (
                    t.rows(job, hit[0])
                    if hit is not None
                    else (_rows_of(old, t, job) if bundle_id(t, job) in prov["jobs"] else None)
                )
                if got is not None:
                    rows += got
                    n_jobs += 1
                    n_runs += len(job.config["runs"])
            fstat["tasks"][t.label] = {
                "model": t.arch,
                "width": t.width,
                "recipe": t.recipe,
                "precision": t.meta.get("precision", "fp32"),
                "stage": t.stage,
                "runs_done": n_runs,
                "runs_planned": t.runs,
                "jobs_done": n_jobs,
                "jobs_planned": len(t.jobs),
                "complete": n_runs >= t.runs > 0,
            }
        if old is not None:  # rows of tasks outside this plan (other stages, filters) stay
            rows = old.to_dict("records") + rows
        frame = pd.DataFrame(rows, columns=first.columns + ["kernel_path"])
        if not frame.empty:
            frame["kernel_path"] = frame["kernel_path"].astype(object).fillna(kernels.path())
            frame = frame.drop_duplicates(subset=first.keys, keep="last").sort_values(first.keys, kind="stable")
            (out / first.chapter).mkdir(parents=True, exist_ok=True)
            p = out / first.chapter / f"{fig}.csv"
            tmp = p.with_name(f".{p.name}.{os.getpid()}")
            frame.to_csv(tmp, index=False, float_format="%.6g")
            os.replace(tmp, p)
        fstat["runs_done"] = int(len(frame))
        fstat["complete"] = all(t["complete"] for t in fstat["tasks"].values())
    # per chapter: a run of some stages keeps the settings of the chapters it did not plan
    prov["settings"] = canonical({**prov.get("settings", {}), **settings})
    prov["updated"] = utc_now()
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / PROVENANCE, prov)
    return prov


# --------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------
def done_jobs(task: Task, cache: Cache, prov: dict, out, threads: int = 1) -> list[bool]:
    """Per job of ``task``: done (in the cache, run on ``threads`` torch threads, or in the ledger
    with its rows in the bundle)."""
    old = _old_rows(Path(out), task)
    return [
        (task.name, job.config, threads) in cache
        or (bundle_id(task, job) in prov["jobs"] and _rows_of(old, task, job) is not None)
        for job in task.jobs
    ]


def _pending(tasks, cache, prov, out, threads):
    """(task, job) pairs still to run, in task order, each job once."""
    olds, seen, todo = {}, set(), []
    for t in tasks:
        if (t.chapter, t.figure) not in olds:
            olds[(t.chapter, t.figure)] = _old_rows(out, t)
        for job in t.jobs:
            bid = bundle_id(t, job)
            if bid in seen or (t.name, job.config, threads) in cache:
                continue
            seen.add(bid)
            if bid in prov["jobs"] and _rows_of(olds[(t.chapter, t.figure)], t, job) is not None:
                continue
            todo.append((t, job))
    return todo


def run(
    tasks: list[Task],
    settings: dict,
    *,
    cache: Cache,
    out,
    device: str = "cpu",
    budget: float | None = None,
    executor=None,
    window: int = 1,
    argv=None,
    log=print,
    root: Path | None = None,
    wait: bool = False,
) -> dict:
    """Run the tasks' missing jobs in order, ``window`` at a time through ``executor`` (None:
    in-process, one at a time), saving each to ``cache`` and rewriting the bundle in ``out``
    after each; start no job that would end after ``budget`` seconds (estimated from the longest
    job of the same task so far, or of an earlier session). One process writes a bundle at a time
    (:func:`writing`; ``wait``: queue behind the one writing it). Returns the provenance."""
    with writing(Path(out), wait=wait):
        return _run(
            tasks,
            settings,
            cache=cache,
            out=Path(out),
            device=device,
            budget=budget,
            executor=executor,
            window=window,
            argv=argv,
            log=log,
            root=root,
        )


class BundleBusy(RuntimeError):
    """Another campaign process is writing the same bundle."""


@contextlib.contextmanager
def writing(out: Path, wait: bool = False):
    """Hold the bundle ``out`` for one campaign process: each process rewrites the whole
    ``provenance.json`` from its own copy, so two at once would drop each other's sessions and
    ledger entries. A second process fails at once with :class:`BundleBusy` (``wait``: it waits
    for the first to end); the lock goes with the process, however it ends. Where ``fcntl`` is
    missing (Windows), nothing is locked."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    out.mkdir(parents=True, exist_ok=True)
    with open(out / LOCK, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "another process"
            raise BundleBusy(
                f"{out} is being written by {holder}: wait until it ends (or stop it), "
                f"or write to another bundle with --out"
            ) from None
        f.seek(0)
        f.truncate()
        f.write(f"campaign process {os.getpid()}\n")
        f.flush()
        try:
            yield
        finally:
            f.seek(0)
            f.truncate()


def job_estimate(prov: dict, task: Task) -> float:
    """Seconds a job of ``task`` is expected to take: the longest of its stage in the ledger, or before the stage
    has one, the longest of its network and recipe in any stage (a stage's jobs can be much shorter than another's)."""
    stage = (task.stage, task.figure, task.spec, task.recipe)
    fields = ("stage", "figure", "model", "recipe")
    same = [j["seconds"] for j in prov["jobs"].values() if tuple(map(j.get, fields)) == stage]
    return float(max(same)) if same else float(prov.get("estimates", {}).get(_estimate_key(task), 0.0))


def _estimate_key(task: Task) -> str:
    """The ledger's ``estimates`` entry of a task: its network and recipe, across stages."""
    return f"{task.figure}:{task.spec}:{task.recipe}"


def _run(tasks, settings, *, cache, out: Path, device, budget, executor, window, argv, log, root) -> dict:
    """:func:`run`, with the bundle held."""
    t_start = time.perf_counter()
    dev = resolve_device(device)
    prov = load_provenance(out)
    camp = settings["campaign"]
    if prov.get("campaign") not in (None, camp["name"]):
        raise ValueError(
            f"{out} holds the bundle of campaign {prov['campaign']!r}; write campaign "
            f"{camp['name']!r} elsewhere (--out)"
        )
    prov["campaign"] = camp["name"]
    session = {
        **commit_info(root or Path(__file__).resolve().parents[2]),
        **machine_info(dev),
        "argv": list(argv or []),
        "started": utc_now(),
        "jobs_computed": 0,
        "executor": type(executor).__name__ if executor is not None else None,
        "window": int(window),
    }
    prov["sessions"].append(session)
    sid = len(prov["sessions"]) - 1
    threads = job_threads(executor)
    export(tasks, cache, out, prov, settings, threads)
    todo = _pending(tasks, cache, prov, out, threads)
    estimates = prov.setdefault("estimates", {})
    stopped = None
    running: dict = {}

    def over_budget(t) -> str | None:  # why a job of t may not start, or None
        need = None if budget is None else job_estimate(prov, t)
        if need is not None and time.perf_counter() - t_start + need > budget:
            return f"{t.label}: ~{need:.0f} s would pass the budget"
        return None

    def finish(t, job, secs, meta):
        key = _estimate_key(t)
        estimates[key] = round(max(estimates.get(key, 0.0), secs), 1)
        prov["jobs"][bundle_id(t, job)] = {
            "figure": t.figure,
            "model": t.spec,
            "width": t.width,
            "recipe": t.recipe,
            "stage": t.stage,
            "function": t.name,
            "cache_key": cache.key(t.name, job.config, threads, job_code_fingerprint(t.fn))[0],
            "runs": len(job.config["runs"]),
            "labels": [r[0] for r in job.config["runs"]],
            "seeds": sorted({int(r[1]) for r in job.config["runs"]}),
            "seconds": round(secs, 1),
            "date": utc_now(),
            "session": sid,
            "trainer": meta.get("trainer"),
            "autocast": meta.get("autocast"),
            "threads": meta.get("threads"),
            "device": meta.get("device"),
        }
        session["jobs_computed"] += 1
        session["finished"] = utc_now()
        export(tasks, cache, out, prov, settings, threads)
        log(f"{t.label} job {len(prov['jobs'])}: {secs:.0f} s ({meta.get('device', '?')})")

    try:
        if executor is None:
            for t, job in todo:
                stopped = over_budget(t)
                if stopped:
                    break
                t0 = time.perf_counter()
                ((arrays, meta),) = run_jobs([job], t.fn, cache=cache)
                finish(t, job, time.perf_counter() - t0, meta)
        else:
            queue = list(todo)
            while queue or running:
                while queue and len(running) < window:
                    t, job = queue[0]
                    stopped = over_budget(t)
                    if stopped:
                        queue = []
                        break
                    queue.pop(0)
                    fut = executor.submit(call_on_threads, t.fn, job.config, job.data, threads)
                    running[fut] = (t, job, time.perf_counter())
                if not running:
                    break
                fut = _first_done(list(running))
                t, job, t0 = running.pop(fut)
                arrays, meta = fut.result()
                cache.save(
                    t.name,
                    job.config,
                    {k: np.asarray(v) for k, v in arrays.items()},
                    meta,
                    threads=threads,
                    code=job_code_fingerprint(t.fn),
                )
                finish(t, job, float(meta.get("seconds", time.perf_counter() - t0)), meta)
    except BaseException as e:  # the ledger says why the session ended: an error, a kill, ^C
        stopped = (
            f"failed: {type(e).__name__}: {str(e)[:300]}"
            if isinstance(e, Exception)
            else f"interrupted: {type(e).__name__} {e}".strip()
        )
        raise
    finally:
        for fut in running:
            fut.cancel()
        session["finished"] = utc_now()
        session["stopped"] = stopped
        session["seconds"] = round(time.perf_counter() - t_start, 1)
        prov = export(tasks, cache, out, prov, settings, threads)
    if stopped:
        log(f"stopped: {stopped}")
    return prov


def lower_priority(nice: int, session: bool = False) -> str:
    """Lower this process's priority (and its future workers') by ``nice``. Where Linux groups
    processes into autogroups, one per session, the scheduler shares the CPU between the groups
    before nice values count, so ``nice`` alone does not yield to a build or a test run started
    from another terminal: with ``session``, the process also starts a session of its own (it
    then no longer gets a terminal's ^C: stop it with ``kill``) and gives that session's
    autogroup the same nice. Returns what it did, for the log."""
    os.nice(nice)
    if not session:
        return f"nice {nice}"
    try:
        os.setsid()
    except OSError as e:  # a process group leader: its own session already (under `setsid`) or not
        if os.getsid(0) != os.getpid():  # led a group of an interactive shell's session
            return f"nice {nice}; no session of its own ({e}): start it with `setsid` or from a script"
    group = Path("/proc/self/autogroup")
    if not group.exists():
        return f"nice {nice}, its own session (no autogroups here)"
    group.write_text(str(nice))
    return f"nice {nice}, its own session, autogroup nice {nice}"


def _first_done(futures):
    """The first of ``futures`` to finish (concurrent.futures, Dask or submitit futures)."""
    return next(iter(as_completed(futures)))


@dataclass
class _TaskState:
    """One task of :func:`report`: its jobs' ledger ids, which are done, which are its own (not
    planned by an earlier task), the done jobs' seconds, and its cost key (network, precision)."""

    task: Task
    ids: list
    done: list
    seen: InitVar[set]
    secs: dict = field(default_factory=dict)

    def __post_init__(self, seen):
        self.own = [i not in seen for i in self.ids]
        self.key = (self.task.spec, self.task.meta.get("precision", "fp32"))


def report(tasks: list[Task], cache: Cache, out, run_hours: dict | None = None) -> pd.DataFrame:
    """The campaign's state and cost, per task: jobs done and planned, the hours its done jobs
    took (the ledger's wall time of one worker, as they ran), the median per job, and the hours
    the remaining jobs would take at that median. The median, not the mean: a job that shared
    the CPU with other work took several times longer. A task without a done job is costed per
    training run from the same network's done jobs in other figures at the same precision, else
    from ``run_hours`` (network spec -> one worker's hours per training run, from a benchmark);
    ``basis`` says which. A job that an earlier task already plans (a later stage continuing an
    earlier one's cells) counts only there: ``jobs planned`` and ``jobs done`` are the task's
    own, and their sums over the table count every job once."""
    out = Path(out)
    prov = load_provenance(out)
    states, per_run, seen = [], {}, set()  # a training run of a network costs about the same in any figure
    for t in tasks:
        st = _TaskState(t, [bundle_id(t, j) for j in t.jobs], done_jobs(t, cache, prov, out), seen)
        seen.update(st.ids)
        st.secs = {i: float(prov["jobs"][i]["seconds"]) for i, d in zip(st.ids, st.done) if d and i in prov["jobs"]}
        states.append(st)
        per_run.setdefault(st.key, []).extend(s * len(t.jobs) / t.runs for s in st.secs.values())
    rows = []
    for st in states:
        t = st.task
        runs_per_job = t.runs / max(len(t.jobs), 1)
        same = per_run.get(st.key)
        if st.secs:
            per, basis = float(np.median(list(st.secs.values()))) / 3600, f"ledger ({len(st.secs)} jobs)"
        elif same:
            per, basis = float(np.median(same)) * runs_per_job / 3600, "ledger (same network)"
        elif run_hours and t.spec in run_hours:
            per, basis = run_hours[t.spec] * runs_per_job, "benchmark"
        else:
            per, basis = float("nan"), "-"
        own_done = sum(d and o for d, o in zip(st.done, st.own))
        rows.append(
            {
                "stage": t.stage,
                "figure": t.figure,
                "network": t.spec,
                "recipe": t.recipe,
                "precision": st.key[1],
                "sigma": t.meta.get("sigma", ""),
                "jobs done": int(own_done),
                "jobs planned": int(sum(st.own)),
                "hours so far": sum(st.secs.get(i, 0.0) for i, o in zip(st.ids, st.own) if o) / 3600,
                "hours per job": per,
                "basis": basis,
                "hours left": per * (sum(st.own) - own_done),
            }
        )
    return pd.DataFrame(rows)
