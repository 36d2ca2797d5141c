"""Experiments as lists of independent jobs, run through any executor, cached, resumable.

Every trained result of the book (chapters 3 to 6) is a :class:`Job`: a JSON-like ``config``
(which, with the name of the job function, the code fingerprint and the number of torch threads
it runs on, is its cache key) and optional ``data`` (inputs that are not part of the key, e.g.
direction vectors, whose digest goes in the config). :func:`run_jobs` runs ``fn(config, **data)``
for every job not in the cache yet, through

* nothing at all (in-process, in order: the default),
* any ``concurrent.futures.Executor`` (``ThreadPoolExecutor``, ``ProcessPoolExecutor``; nadcore
  draws every random number from explicit generators, so threads give the in-process results),
* Dask, whose ``distributed.Client`` is an executor::

      from distributed import Client, LocalCluster
      with LocalCluster(n_workers=4, threads_per_worker=1) as cl, Client(cl) as client:
          results = run_jobs(jobs, directional_job, executor=client)

* Slurm through ``submitit``, whose ``AutoExecutor`` also has ``submit``::

      import submitit
      ex = submitit.AutoExecutor(folder="slurm_logs")
      ex.update_parameters(timeout_min=60, slurm_partition="gpu", gpus_per_node=1)
      results = run_jobs(jobs, directional_job, executor=ex, cache=Cache("/shared/nadcache"))

  (the function and its arguments are pickled; the workers must import ``nadcore``).

Each finished job is written to the cache by the calling process the moment it completes
(atomically, see :mod:`nadcore.book.cache`), so an interrupted run - Ctrl-C, SIGKILL, a killed Slurm
allocation - resumes where it stopped: finished jobs are loaded, only missing ones are submitted.
"""

from __future__ import annotations

import concurrent.futures as cf
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import torch

from nadcore.book.cache import Cache, job_code_fingerprint

__all__ = [
    "Job",
    "run_jobs",
    "JobsInterrupted",
    "collect",
    "make_executor",
    "stop_executor",
    "as_completed",
    "call_on_threads",
    "job_threads",
]


@dataclass
class Job:
    """One unit of an experiment: ``fn(config, **data)``; ``config`` is the cache key (JSON-like)."""

    config: dict
    data: dict = field(default_factory=dict)


class JobsInterrupted(RuntimeError):
    """Raised by :func:`run_jobs` after ``stop_after`` computed jobs (used to test resuming)."""


def call_on_threads(fn, config, data, threads: int | None = None):
    """``fn(config, **data)`` on ``threads`` torch threads (None: as they are). The count is set,
    not restored: in a worker process it is that worker's, and :func:`run_jobs` puts a thread
    pool's caller back when its jobs are done."""
    if threads is not None:
        torch.set_num_threads(int(threads))
    return fn(config, **data)


def job_threads(executor=None) -> int:
    """The torch threads a job runs on, and is keyed on: the caller's in-process, one through
    ``executor`` (the workers of :func:`make_executor` are set to one; so is a Dask or Slurm
    worker)."""
    return torch.get_num_threads() if executor is None else 1


def run_jobs(
    jobs: Sequence[Job],
    fn: Callable,
    executor=None,
    cache: Cache | None = None,
    name: str | None = None,
    progress: bool | str = False,
    stop_after: int | None = None,
    accept: Callable | None = None,
    thread_invariant: bool = False,
) -> list[tuple[dict, dict]]:
    """Run ``fn(job.config, **job.data)`` for every job; return ``[(arrays, meta), ...]`` in job order.

    A job runs on :func:`job_threads` torch threads. That count is
    part of each job's cache key, since it moves trained results by float rounding, unless
    ``thread_invariant`` says that ``fn``'s results do not depend on it (NAD estimates: their
    work is shared in a fixed order, whatever the threads).

    ``fn`` returns ``(arrays: dict of numpy arrays, meta: dict)`` and must be importable by the
    workers (a module-level function) when ``executor`` runs it in other processes.
    ``cache``: where finished jobs go (default: :class:`nadcore.book.cache.Cache` at its default root);
    entries live under ``name`` (default: the function's name). ``progress``: a tqdm bar (a
    string gives its description). ``stop_after``: raise :class:`JobsInterrupted` after that many
    jobs were computed (they are saved), to simulate an interruption. ``accept(job, arrays,
    meta)``: whether a cached result serves the job (default: always); one it refuses is
    computed again and replaces the entry.
    """
    cache = cache if cache is not None else Cache()
    name = name or getattr(fn, "__name__", type(fn).__name__)
    results: list = [None] * len(jobs)
    caller_threads = torch.get_num_threads()
    threads = job_threads(executor)
    key_threads = None if thread_invariant else threads
    code = job_code_fingerprint(fn)  # the code the jobs run: their function's module and its imports
    todo = []
    for i, job in enumerate(jobs):
        hit = cache.load(name, job.config, key_threads, code)
        if hit is None or (accept is not None and not accept(job, *hit)):
            todo.append(i)
        else:
            results[i] = hit
    bar = None
    if progress and todo:
        from tqdm.auto import tqdm

        bar = tqdm(
            total=len(jobs),
            initial=len(jobs) - len(todo),
            unit="job",
            desc=progress if isinstance(progress, str) else name,
        )
    done = 0

    def finish(i, out):
        nonlocal done
        arrays, meta = out
        arrays = {k: np.asarray(v) for k, v in arrays.items()}
        cache.save(name, jobs[i].config, arrays, meta, threads=key_threads, code=code)
        results[i] = (arrays, meta)
        done += 1
        if bar:
            bar.update()
        if stop_after is not None and done >= stop_after and done < len(todo):
            raise JobsInterrupted(f"stopped after {done} of {len(todo)} jobs (results saved)")

    try:
        if executor is None:
            for i in todo:
                finish(i, call_on_threads(fn, jobs[i].config, jobs[i].data))
        else:
            futures = {executor.submit(call_on_threads, fn, jobs[i].config, jobs[i].data, threads): i for i in todo}
            try:
                for fut in as_completed(futures):
                    finish(futures[fut], fut.result())
            finally:
                for fut in futures:
                    if not fut.done():
                        fut.cancel()
    finally:
        torch.set_num_threads(caller_threads)  # a thread pool's jobs set this process's count
        if bar:
            bar.close()
    return results


def as_completed(futures):
    """``as_completed`` for concurrent.futures, Dask and submitit futures alike."""
    futs = list(futures)
    if futs and all(isinstance(f, cf.Future) for f in futs):
        yield from cf.as_completed(futs)
        return
    if futs and type(futs[0]).__module__.startswith("distributed"):
        from distributed import as_completed as dask_completed

        yield from dask_completed(futs)
        return
    pending = futs  # generic (e.g. submitit jobs: .done() and .result()): poll
    while pending:
        still = []
        for f in pending:
            if f.done():
                yield f
            else:
                still.append(f)
        pending = still
        if pending:
            time.sleep(0.5)


def collect(results, key: str) -> np.ndarray:
    """Concatenate array ``key`` of all results along axis 0 (job order)."""
    return np.concatenate([np.atleast_1d(a[key]) for a, _ in results], axis=0)


def _single_thread():
    """Process-pool initializer: one torch thread per worker process, and (on Linux) a worker
    that dies with its parent, so that killing a run never leaves workers computing."""
    torch.set_num_threads(1)
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def make_executor(workers: int | None):
    """None for ``workers <= 1`` (in-process), else a spawn-based ``ProcessPoolExecutor`` whose
    worker processes each use one torch thread (on a small CPU, P one-thread processes train
    small models faster than one P-thread process). Close it with ``shutdown()`` or ``with``."""
    if not workers or int(workers) <= 1:
        return None
    import multiprocessing as mp

    return cf.ProcessPoolExecutor(int(workers), mp_context=mp.get_context("spawn"), initializer=_single_thread)


def stop_executor(executor: cf.ProcessPoolExecutor) -> None:
    """Stop a process pool now: its worker processes end with the jobs they were running (which
    are lost: nothing of theirs was stored) and no queued job starts. ``shutdown()`` alone waits
    for the running jobs, up to the length of a job (40 minutes for some of the campaign's), so a
    killed campaign would linger that long."""
    for proc in list((getattr(executor, "_processes", None) or {}).values()):
        proc.terminate()
    executor.shutdown(wait=True, cancel_futures=True)
