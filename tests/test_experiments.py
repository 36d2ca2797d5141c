"""nadcore.book.runner (the runner) and nadcore.chapters.linear_separability.runs: every executor
(in-process, threads, a local Dask cluster) gives the same results, threads included (no global
RNG), an interrupted run resumes from the cache, and `accept` decides which cached results serve."""

import concurrent.futures as cf

import numpy as np
import pytest
import torch

from nadcore.book.cache import Cache, job_code_fingerprint
from nadcore.book.runner import Job, JobsInterrupted, run_jobs
from nadcore.chapters.linear_separability.runs import direction_jobs, directional_job, directions_sweep
from nadcore.data import fourier_basis_vector
from nadcore.runtime import threads

FREQS = [(0, 2), (4, 0), (8, 8), (-6, 2)]
SETTINGS = dict(epochs=2, max_lr=0.5, batch_size=32, n_train=64, n_test=64, sigma=1.0, epsilon=1.0)


def _jobs(model="logreg", chunk=2, seeds=(3,), outputs=1):
    V = np.stack([fourier_basis_vector(a, b).numpy() for a, b in FREQS])
    return direction_jobs(V, FREQS, seeds, model=model, settings=SETTINGS, chunk=chunk, tag="test", outputs=outputs)


def _same(r1, r2):
    for (a, _), (b, _) in zip(r1, r2):
        assert set(a) == set(b)
        np.testing.assert_array_equal(a["iter_loss"], b["iter_loss"])
        np.testing.assert_array_equal(a["test_acc"], b["test_acc"])


def test_jobs_are_keyed_and_seeded_per_run(tmp_path):
    jobs = _jobs()
    assert len(jobs) == 2 and jobs[0].config["runs"] == [[[0, 2], 3], [[4, 0], 3]]
    assert jobs[0].config["vectors"] != jobs[1].config["vectors"]
    # chunking does not change any run's result (seeds come from the direction label and seed)
    one = run_jobs(_jobs(chunk=4), directional_job, cache=Cache(tmp_path / "a"))
    two = run_jobs(_jobs(chunk=2), directional_job, cache=Cache(tmp_path / "b"))
    np.testing.assert_allclose(one[0][0]["iter_loss"][2:], two[1][0]["iter_loss"], rtol=1e-4, atol=1e-5)


def test_thread_pool_of_eight_equals_in_process_repeatedly(tmp_path):
    # the race of nadcore 0.1: model initialisation through torch's global RNG. Eight threads,
    # LeNet and LogReg jobs mixed, five repetitions: every result equals the in-process run.
    jobs = _jobs("lenet", chunk=1) + _jobs("logreg", chunk=1, seeds=(4,)) + _jobs("lenet", chunk=1, seeds=(5,))
    ref = run_jobs(jobs, directional_job, cache=Cache(tmp_path / "ref"))
    for rep in range(5):
        with cf.ThreadPoolExecutor(8) as ex:
            par = run_jobs(jobs, directional_job, executor=ex, cache=Cache(tmp_path / f"t{rep}"))
        _same(ref, par)


def test_local_dask_cluster_equals_in_process(tmp_path, restore_environ):
    import distributed

    ref = run_jobs(_jobs(), directional_job, cache=Cache(tmp_path / "ref"))
    with (
        distributed.LocalCluster(
            processes=True, n_workers=2, threads_per_worker=2, host="127.0.0.1", dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        par = run_jobs(_jobs(), directional_job, executor=client, cache=Cache(tmp_path / "dask"))
    _same(ref, par)
    # and the Dask results went to the cache, under the code of the job function and their one
    # thread: a second run computes nothing
    code = job_code_fingerprint(directional_job)
    assert all(("directional_job", job.config, 1, code) in Cache(tmp_path / "dask") for job in _jobs())
    with threads(1):
        again = run_jobs(_jobs(), directional_job, cache=Cache(tmp_path / "dask"))
    _same(ref, again)


_CALLS = []


def _square(config, scale=1.0):
    _CALLS.append(config["i"])
    return {"y": np.array([config["i"] ** 2 * scale])}, {"i": config["i"]}


def test_interrupted_run_resumes_where_it_stopped(tmp_path):
    cache = Cache(tmp_path)
    jobs = [Job({"i": i}, {"scale": 2.0}) for i in range(5)]
    _CALLS.clear()
    with pytest.raises(JobsInterrupted):
        run_jobs(jobs, _square, cache=cache, stop_after=2)
    assert _CALLS == [0, 1]
    _CALLS.clear()
    res = run_jobs(jobs, _square, cache=cache)
    assert _CALLS == [2, 3, 4]  # only the missing jobs ran
    assert [float(a["y"][0]) for a, _ in res] == [0, 2, 8, 18, 32]
    assert [m["i"] for _, m in res] == list(range(5))


def test_accept_decides_which_cached_results_serve(tmp_path):
    """``accept(job, arrays, meta)`` refusing a cached entry recomputes that job (only that one)
    and replaces the entry; accepted entries are served without computing."""
    cache = Cache(tmp_path)
    jobs = [Job({"i": i}, {"scale": 1.0}) for i in range(3)]
    run_jobs(jobs, _square, cache=cache)
    _CALLS.clear()
    seen = []
    scaled = [Job({"i": i}, {"scale": 3.0}) for i in range(3)]
    res = run_jobs(
        scaled, _square, cache=cache, accept=lambda job, arrays, meta: seen.append(meta["i"]) or meta["i"] != 1
    )
    assert seen == [0, 1, 2] and _CALLS == [1]
    assert [float(a["y"][0]) for a, _ in res] == [0, 3, 4]  # 0 and 2 from the cache, 1 recomputed
    _CALLS.clear()
    again = run_jobs(jobs, _square, cache=cache)
    assert _CALLS == [] and float(again[1][0]["y"][0]) == 3  # the recomputed entry replaced the old one


def _threads_seen(config):
    return {"threads": np.array([torch.get_num_threads()])}, {}


def test_a_jobs_torch_thread_count_is_part_of_its_key(tmp_path):
    """torch's CPU kernels split their sums by thread, so a result computed on one thread must not
    serve a caller on two: in-process a job runs on the caller's threads, through an executor on
    one, and each count has its own cache entry; the caller's count is put back. A function
    declared thread-invariant has one entry for all."""
    cache, job = Cache(tmp_path), [Job({"i": 0})]
    old = torch.get_num_threads()
    try:
        for n in (1, 2):
            torch.set_num_threads(n)
            ((a, _),) = run_jobs(job, _threads_seen, cache=cache)
            assert int(a["threads"][0]) == n
        with cf.ThreadPoolExecutor(2) as ex:
            ((a, _),) = run_jobs(job, _threads_seen, cache=cache, executor=ex)
        assert int(a["threads"][0]) == 1 and torch.get_num_threads() == 2  # the n = 1 entry serves
        assert len(list((tmp_path / "_threads_seen").iterdir())) == 2
        ((a, _),) = run_jobs(job, _threads_seen, cache=cache, name="invariant", thread_invariant=True)
        torch.set_num_threads(1)
        ((b, _),) = run_jobs(job, _threads_seen, cache=cache, name="invariant", thread_invariant=True)
        assert int(a["threads"][0]) == int(b["threads"][0]) == 2  # served from the cache
    finally:
        torch.set_num_threads(old)


def test_directions_sweep_collects_seeds_and_directions_in_order(tmp_path):
    V = np.stack([fourier_basis_vector(a, b).numpy() for a, b in FREQS[:3]])
    out = directions_sweep(
        "logreg", V, FREQS[:3], dict(SETTINGS, epochs=1), seeds=[0, 1], chunk=2, cache=Cache(tmp_path)
    )
    assert out["test_acc"].shape == (2, 3) and out["iter_loss"].shape == (2, 3, 2)
    assert out["jobs"] == 3 and out["compute_seconds"] > 0
    assert not np.array_equal(out["iter_loss"][0], out["iter_loss"][1])  # seeds differ


def test_two_outputs_train_with_cross_entropy_like_the_authors(tmp_path):
    res = run_jobs(_jobs(outputs=2, chunk=4), directional_job, cache=Cache(tmp_path))
    a = res[0][0]
    assert a["test_acc"].shape == (4,) and np.all((a["test_acc"] >= 0) & (a["test_acc"] <= 1))


def test_bf16_autocast_is_a_setting_of_the_one_by_one_trainer_and_is_recorded():
    V = np.stack([fourier_basis_vector(0, 2).numpy()])
    spec = "resnet18?width=8"  # BatchNorm: trained one by one
    out = {}
    for ac in (None, "bf16"):
        (job,) = direction_jobs(
            V,
            [(0, 2)],
            (1,),
            model=spec,
            settings={**SETTINGS, "n_train": 32, "epochs": 1, "autocast": ac},
            tag="test",
            outputs=2,
        )
        out[ac] = directional_job(job.config, **job.data)
    assert out[None][1]["autocast"] is None and out["bf16"][1]["autocast"] == "bf16"
    assert not np.array_equal(out[None][0]["iter_loss"], out["bf16"][0]["iter_loss"])
    np.testing.assert_allclose(out[None][0]["iter_loss"][0, 0], out["bf16"][0]["iter_loss"][0, 0], atol=0.02)
    (side,) = direction_jobs(
        V,
        [(0, 2)],
        (1,),
        model=spec,
        tag="test",
        outputs=2,
        settings={**SETTINGS, "n_train": 32, "epochs": 1, "autocast": "bf16", "trainer": "side_by_side"},
    )
    assert directional_job(side.config, **side.data)[1]["autocast"] is None  # side by side: the GPU's
