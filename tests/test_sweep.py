"""nadcore.sweep: executors (in-process, threads, a local Dask cluster) give the same results, and
an interrupted sweep resumes from the cache."""
import concurrent.futures as cf

import numpy as np
import pytest

from nadcore.cache import Cache
from nadcore.data import fourier_basis_vector
from nadcore.sweep import (Job, SweepInterrupted, direction_jobs, directional_job,
                           directions_sweep, run_sweep)

FREQS = [(0, 2), (4, 0), (8, 8), (-6, 2)]


def _jobs(model="logreg", chunk=2):
    V = np.stack([fourier_basis_vector(a, b).numpy() for a, b in FREQS])
    return direction_jobs(V, FREQS, model=model, chunk=chunk, seed=3, tag="test",
                          train=dict(epochs=2, max_lr=0.5, batch_size=32),
                          data=dict(n_train=64, n_test=64, sigma=1.0, epsilon=1.0))


def _same(r1, r2):
    for (a, _), (b, _) in zip(r1, r2):
        assert set(a) == set(b)
        np.testing.assert_allclose(a["iter_loss"], b["iter_loss"], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(a["test_acc"], b["test_acc"], atol=1 / 64 + 1e-9)


def test_jobs_are_keyed_and_seeded_per_direction(tmp_path):
    jobs = _jobs()
    assert len(jobs) == 2 and jobs[0].config["labels"] == [[0, 2], [4, 0]]
    assert jobs[0].config["vectors"] != jobs[1].config["vectors"]
    # chunking does not change any direction's result (seeds come from the direction label)
    one = run_sweep(_jobs(chunk=4), directional_job, cache=Cache(tmp_path / "a"))
    two = run_sweep(_jobs(chunk=2), directional_job, cache=Cache(tmp_path / "b"))
    np.testing.assert_allclose(one[0][0]["iter_loss"][2:], two[1][0]["iter_loss"], rtol=1e-4, atol=1e-5)


def test_thread_pool_equals_in_process(tmp_path):
    ref = run_sweep(_jobs(), directional_job, cache=Cache(tmp_path / "a"))
    with cf.ThreadPoolExecutor(2) as ex:
        par = run_sweep(_jobs(), directional_job, executor=ex, cache=Cache(tmp_path / "b"))
    _same(ref, par)


def test_local_dask_cluster_equals_in_process(tmp_path):
    distributed = pytest.importorskip("distributed")
    ref = run_sweep(_jobs(), directional_job, cache=Cache(tmp_path / "ref"))
    with distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1,
                                  host="127.0.0.1", dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        par = run_sweep(_jobs(), directional_job, executor=client, cache=Cache(tmp_path / "dask"))
    _same(ref, par)
    # and the Dask results went to the cache: a second run computes nothing
    calls = []
    again = run_sweep(_jobs(), lambda c, **d: calls.append(c), cache=Cache(tmp_path / "dask"),
                      name="sweep-directional_job")
    assert calls == [] and len(again) == 2


_CALLS = []


def _square(config, scale=1.0):
    _CALLS.append(config["i"])
    return {"y": np.array([config["i"] ** 2 * scale])}, {"i": config["i"]}


def test_interrupted_sweep_resumes_where_it_stopped(tmp_path):
    cache = Cache(tmp_path)
    jobs = [Job({"i": i}, {"scale": 2.0}) for i in range(5)]
    _CALLS.clear()
    with pytest.raises(SweepInterrupted):
        run_sweep(jobs, _square, cache=cache, stop_after=2)
    assert _CALLS == [0, 1]
    _CALLS.clear()
    res = run_sweep(jobs, _square, cache=cache)
    assert _CALLS == [2, 3, 4]                       # only the missing jobs ran
    assert [float(a["y"][0]) for a, _ in res] == [0, 2, 8, 18, 32]
    assert [m["i"] for _, m in res] == list(range(5))


def test_directions_sweep_collects_in_order(tmp_path):
    V = np.stack([fourier_basis_vector(a, b).numpy() for a, b in FREQS[:3]])
    out = directions_sweep("logreg", V, FREQS[:3], dict(n_train=64, n_test=32, sigma=1.0, epsilon=1.0,
                                                        epochs=1, max_lr=0.5, batch_size=32),
                           chunk=2, cache=Cache(tmp_path))
    assert out["test_acc"].shape == (3,) and out["iter_loss"].shape == (3, 2)
    assert out["jobs"] == 2 and out["compute_seconds"] > 0
