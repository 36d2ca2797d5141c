"""Every trained or sampled result of the book as jobs of one runner, cached and resumable.

* :mod:`nadcore.experiments.runner`: :class:`~nadcore.experiments.runner.Job` and
  :func:`~nadcore.experiments.runner.run_jobs` (any ``concurrent.futures``, Dask or submitit
  executor), over the content-addressed :mod:`nadcore.experiments.cache`;
* one module per chapter's experiments: :mod:`.nads` (chapter 2's NAD estimates, shared by all),
  :mod:`.separability` (chapter 3), :mod:`.cifar10` (chapter 4), :mod:`.underspecification`
  (chapter 5), :mod:`.open_questions` (chapter 6), :mod:`.atlas` (chapter 7).
"""
from nadcore.experiments.cache import Cache
from nadcore.experiments.runner import Job, JobsInterrupted, collect, make_executor, run_jobs

__all__ = ["Cache", "Job", "JobsInterrupted", "run_jobs", "collect", "make_executor"]
