"""Campaigns on a CPU, with the ``tiny`` campaign (tiny networks, a few cells, never results):
scripts/run_campaign.py makes a bundle with its ledger, resumes without recomputing (from the
cache, or from the ledger alone), stops at its time budget, refuses bad arguments, and gives the
same bundle through a local Dask cluster as in-process."""

import importlib.util
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nadcore.book import bundles
from nadcore.book import campaign as cp
from nadcore.book.cache import Cache
from nadcore.chapters import campaigns
from nadcore.chapters.cifar10 import campaign as cifar_plan
from nadcore.chapters.linear_separability import bundled
from nadcore.chapters.linear_separability import campaign as plan3
from nadcore.data import fourier_grid

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("run_campaign", REPO / "scripts" / "run_campaign.py")
run_campaign = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run_campaign)
CHAPTER = campaigns.CHAPTER


def test_distinct_cells_cover_the_grid_once_under_the_transposition():
    grid = fourier_grid(32, 16)
    cells = plan3.distinct_cells(grid)
    assert len(cells) == len(set(cells)) == 136  # 16 * 17 / 2: the diagonal and one triangle
    assert set(cells) | {plan3.mirror(*c) for c in cells} == set(grid.frequencies)
    assert set(cells[: len(grid.subgrid(8).frequencies)]) <= set(grid.subgrid(4).frequencies)  # coarse first


def test_row_cells_are_the_full_rows_coarse_to_fine():
    grid = fourier_grid(32, 16)
    cells = plan3.row_cells(grid, {0, 2})
    assert len(cells) == len(set(cells)) == 32 and {k1 for k1, _ in cells} == {0, 2}
    assert cells[:8] == [(0, -16), (2, -16), (0, 0), (2, 0), (0, -8), (2, -8), (0, 8), (2, 8)]  # coarse first
    assert plan3.stage_cells("rows:0,2", grid) == cells
    with pytest.raises(ValueError, match="not on the 16x16"):
        plan3.stage_cells([[1, 2]], grid)


def test_cpu_campaign_plans_the_issue_order():
    tasks, settings = campaigns.plan("cpu")
    first = [(t.figure, t.spec) for t in tasks[:4]]
    assert first == [
        ("fig1", "vgg11?width=8"),
        ("fig1", "vgg11?width=16"),
        ("fig1", "resnet18?width=8"),
        ("fig1", "resnet18?width=16"),
    ]  # the width study decides first
    rows = [t for t in tasks if t.figure == "fig1" and t.stage in (2, 4)]
    assert [t.spec for t in rows] == ["vgg11?width=8", "resnet18?width=16"] and all(t.runs == 32 for t in rows)
    train = tasks[0].jobs[0].config["train"]
    assert (train["epochs"], train["max_lr"], train["momentum"]) == (20, 0.5, 0.0)  # the authors' recipe
    assert tasks[0].jobs[0].config["data"]["n_train"] == 10000 and settings["campaign"]["device"] == "cpu"
    fig6 = [t for t in tasks if t.figure == "fig6"]
    assert {t.meta["sigma"] for t in fig6} == {1.0, 3.0}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("campaign")
    out, cache = tmp / "bundle", tmp / "cache"
    args = ["--campaign", "tiny", "--out", str(out), "--cache", str(cache), "--nice", "0", "--emulated-bf16"]
    assert run_campaign.main(args) == 0
    return out, cache, args


def test_tiny_bundle_rows_and_provenance(bundle):
    out, _, _ = bundle
    fig1 = pd.read_csv(out / CHAPTER / "fig1.csv")
    assert list(fig1.columns) == campaigns.COLUMNS["fig1"] + ["kernel_path"]
    assert sorted(fig1.groupby(["model", "width"]).size().items()) == [
        (("resnet18", 4), 5),
        (("vgg11", 2), 1),
        (("vgg11", 4), 2),
    ]
    assert set(fig1["precision"]) == {"fp32", "bf16"} and (fig1["precision"] == "bf16").sum() == 1
    fig6 = pd.read_csv(out / CHAPTER / "fig6.csv")
    assert list(fig6.columns) == campaigns.COLUMNS["fig6"] + ["kernel_path"]
    assert sorted(set(fig6["nad_index"])) == [0, 1, 500, 1000] and set(fig6["sigma"]) == {1.0, 3.0}
    prov = json.loads((out / "provenance.json").read_text())
    s = prov["sessions"][0]
    assert s["jobs_computed"] == len(prov["jobs"]) == 3 + 2 + 2 + 2 + 1 + 1 + 4 + 4 + 4 + 2
    assert s["commit"] and s["torch"] and s["cpu"]
    assert sorted(j["autocast"] or "none" for j in prov["jobs"].values()).count("bf16") == 1
    assert prov["campaign"] == "tiny" and prov["figures"]["fig1"]["complete"]
    assert all(j["seconds"] >= 0 and j["date"] and j["session"] == 0 for j in prov["jobs"].values())
    assert [j["model"] for j in prov["jobs"].values() if not j["width"]] == ["lenet_nopool"]
    fig3 = pd.read_csv(out / CHAPTER / "fig3.csv")  # LeNet has no width: an empty cell
    assert fig3["model"].tolist() == ["lenet_nopool"] and fig3["width"].isna().all()
    b = bundles.load("b", out.parent) if out.name == "b" else bundles.Bundle("tiny", out, prov)
    assert "campaign 'tiny'" in b.title() and b.frame(CHAPTER, "fig1") is not None


def test_a_bundle_title_stays_one_short_line_however_many_sessions_computed_it():
    machines = ["AMD EPYC (family 25 model 17, 2 cores, AVX-512)", "Intel(R) Xeon(R) Processor (2 cores)"]
    sessions = [{"commit": f"{i:02d}" + "ab" * 19, "cpu": machines[i % 2]} for i in range(40)]
    jobs = {str(i): {"session": i, "date": f"2026-11-{i % 28 + 1:02d}T00:00:00Z"} for i in range(1, 40)}
    b = bundles.Bundle("cpu", Path("."), {"sessions": sessions, "jobs": jobs})
    title = b.title()
    assert len(title) <= 120, title
    assert "39 commits from 01ababab to 39ababab" in title and "last job 2026-11-28" in title
    assert "AMD EPYC, Intel(R) Xeon(R) Processor" in title
    one = bundles.Bundle("cpu", Path("."), {"sessions": sessions[:1], "jobs": {"0": {"session": 0}}})
    assert "commit 00ababab" in one.title() and "last job none" in one.title()


def test_tiny_follow_up_runs_train_chapter_5s_experiments_on_the_published_nads(bundle):
    out, _, _ = bundle
    fig2 = pd.read_csv(out / campaigns.US_CHAPTER / "us-fig2.csv")
    assert list(fig2.columns) == campaigns.COLUMNS["us-fig2"] + ["kernel_path"]
    assert list(zip(fig2["v1_index"], fig2["v2_index"])) == [(0, 0), (0, 1000), (1000, 0), (1000, 1000)]
    assert set(fig2["recipe"]) == {"follow-up"} and set(fig2["width"]) == {4} and fig2["angle"].notna().all()
    fig3 = pd.read_csv(out / campaigns.US_CHAPTER / "us-fig3.csv")
    assert fig3["nad_index"].tolist() == [0, 1000] and set(fig3["sigma"]) == {3.0}
    assert fig3[["acc_all", "acc_cifar", "acc_dv", "train_acc"]].stack().between(0, 1).all()
    prov = json.loads((out / "provenance.json").read_text())
    jobs = [j for j in prov["jobs"].values() if j["figure"] == "us-fig2"]
    assert [j["labels"] for j in jobs] == [[[0, 0]], [[0, 1000]], [[1000, 0]], [[1000, 1000]]]
    assert {(j["device"], j["trainer"]) for j in prov["jobs"].values() if j["figure"].startswith("us-")} == {
        ("cpu", "many")
    }
    # the stage's network must take the published NADs in chapter 5's settings
    with pytest.raises(ValueError, match="nad_source"):
        with pytest.MonkeyPatch.context() as mp:
            last = dict(campaigns.TINY["stages"][-1], overrides={"nad_source": {"default": "gradient"}})
            mp.setitem(campaigns.CAMPAIGNS["tiny"], "stages", [last])
            campaigns.plan("tiny")


def test_tiny_fig7_poisons_cifar10_along_the_published_nads(bundle):
    out, _, _ = bundle
    fig7 = pd.read_csv(out / campaigns.CIFAR_CHAPTER / "fig7.csv")
    assert list(fig7.columns) == campaigns.COLUMNS["fig7"] + ["kernel_path"]
    assert fig7["experiment"].tolist() == ["clean", "poison", "poison", "poison"]  # chapter 4's smoke carriers
    assert fig7["nad_index"].isna().tolist() == [True, False, False, False]
    assert fig7["nad_index"].dropna().astype(int).tolist() == [0, 1, 1022]
    assert set(fig7["model"]) == {"resnet18"} and set(fig7["width"]) == {4} and set(fig7["epochs"]) == {1}
    assert fig7["carrier_test_acc"].isna().tolist() == [True, False, False, False]
    assert fig7[["train_acc", "test_acc"]].stack().between(0, 1).all()
    tasks, settings = campaigns.plan("tiny", figures=["fig7"])
    (task,) = tasks
    job = task.jobs[1]
    assert job.config["runs"] == [[0, 0]] and job.config["experiment"] == "poison" and job.config["index"] == 0
    assert job.config["nads"]["published"] == "resnet18" and job.config["data"]["n_train"] == 64
    assert settings[campaigns.CIFAR_CHAPTER]["max_train"] == 64


def test_tiny_fig8_trains_on_the_original_and_the_flipped_representation(bundle):
    out, _, _ = bundle
    fig8 = pd.read_csv(out / campaigns.CIFAR_CHAPTER / "fig8.csv")
    assert list(fig8.columns) == campaigns.COLUMNS["fig8"] + ["kernel_path"]
    assert fig8[["experiment", "seed"]].values.tolist() == [["clean", 0], ["clean", 1], ["flip", 0], ["flip", 1]]
    assert set(fig8["model"]) == {"vgg11"} and set(fig8["width"]) == {4} and set(fig8["epochs"]) == {1}
    assert fig8[["train_acc", "test_acc"]].stack().between(0, 1).all()
    (task,), _ = campaigns.plan("tiny", figures=["fig8"])
    assert [j.config["experiment"] for j in task.jobs] == ["clean", "flip"] * 2
    assert task.jobs[1].config["nads"]["published"] == "vgg11" and task.jobs[0].config["nads"] is None
    assert campaigns.networks("tiny", "fig8") == ["vgg11"]
    prov = json.loads((out / "provenance.json").read_text())  # every job's ledger names its device
    assert {(j["device"], j["trainer"]) for j in prov["jobs"].values() if j["figure"] in ("fig7", "fig8")} == {
        ("cpu", "many")
    }
    fig8_stage = next(s for s in campaigns.TINY["stages"] if s["figure"] == "fig8")
    assert campaigns.profile_settings("tiny", "fig8", "vgg11") == (
        campaigns.stage_settings(campaigns.TINY, fig8_stage),
        4,
    )


@pytest.mark.parametrize("figure", ["fig7", "fig8"])
def test_cifar_figures_train_with_chapter_4s_recipe_in_float32(monkeypatch, figure):
    for bad in (dict(recipe="follow-up"), dict(autocast="bf16")):
        monkeypatch.setitem(campaigns.CAMPAIGNS["tiny"], "stages", [dict(figure=figure, arch="resnet18", **bad)])
        with pytest.raises(ValueError, match="chapter 4's recipe, in float32"):
            campaigns.plan("tiny")


def test_fig7_settings_take_the_width_the_stage_trains(monkeypatch):
    stage = next(dict(s) for s in campaigns.CAMPAIGNS["tiny"]["stages"] if s["figure"] == "fig7")
    assert stage["figure"] == "fig7"
    monkeypatch.setitem(campaigns.CAMPAIGNS["tiny"], "stages", [stage | dict(widths=[2])])
    (task,), _ = campaigns.plan("tiny")
    assert task.width == 2 and campaigns.profile_settings("tiny", "fig7", "resnet18")[1] == 2
    assert campaigns.figure_width("tiny", "fig7", "resnet18") == 2  # the stage's width, not the campaign's 4
    assert campaigns.figure_width("tiny", "fig1", "resnet18") == 4
    monkeypatch.setitem(campaigns.CAMPAIGNS["tiny"], "stages", [stage | dict(widths=[2, 4])])
    with pytest.raises(ValueError, match="the chapter draws one"):
        campaigns.profile_settings("tiny", "fig7", "resnet18")


def test_a_stage_in_bf16_is_its_own_task_and_checks_the_float32_runs(bundle):
    tasks, _ = campaigns.plan("tiny")
    vgg = [t for t in tasks if t.figure == "fig1" and t.arch == "vgg11" and t.width == 4]
    assert [t.meta["precision"] for t in vgg] == ["fp32", "bf16"] and vgg[1].label.endswith("(authors, bf16)")
    assert "autocast" not in vgg[0].jobs[0].config["train"]  # float32 jobs keep their identity
    assert vgg[1].jobs[0].config["train"]["autocast"] == "bf16"
    out, _, _ = bundle
    frame = pd.read_csv(out / CHAPTER / "fig1.csv")
    check = bundled.precision_check(frame, "vgg11", 4)
    assert list(check.index) == [(0, 4, 0)] and list(check.columns) == ["test_acc fp32", "test_acc bf16", "published"]
    assert len(bundled.select(frame, "vgg11", 4)) == 1  # the maps take one run per cell: the float32 one
    assert bundled.select(frame, "vgg11", 4)["precision"].item() == "fp32"
    with pytest.raises(ValueError, match="autocast must be one of"):
        plan3.train_settings({"recipes": {"authors": {}}}, {"train": {}}, "authors", "fp16")


def test_resumes_from_the_cache_and_from_the_ledger_alone(bundle, tmp_path):
    out, cache, args = bundle
    before = (out / CHAPTER / "fig1.csv").read_text()
    poisoned = (out / campaigns.CIFAR_CHAPTER / "fig7.csv").read_text()
    assert run_campaign.main(args) == 0  # same cache: every job is a hit
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["sessions"][-1]["jobs_computed"] == 0
    fresh = [a if a != str(cache) else str(tmp_path / "empty-cache") for a in args]
    assert run_campaign.main(fresh) == 0  # no cache: the ledger and the bundle's rows suffice
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["sessions"][-1]["jobs_computed"] == 0 and (out / CHAPTER / "fig1.csv").read_text() == before
    assert (out / campaigns.CIFAR_CHAPTER / "fig7.csv").read_text() == poisoned
    assert run_campaign.main(args + ["--stages", "0"]) == 0  # one stage: chapter 4's settings stay
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["settings"][campaigns.CIFAR_CHAPTER]["max_train"] == 64
    assert (out / campaigns.CIFAR_CHAPTER / "fig7.csv").read_text() == poisoned


def test_budget_stops_before_a_job_that_would_not_fit(tmp_path):
    out = tmp_path / "b"
    args = ["--campaign", "tiny", "--out", str(out), "--cache", str(tmp_path / "c"), "--nice", "0", "--stages", "2"]
    assert run_campaign.main(args + ["--budget", "0"]) == 0  # no time at all: nothing starts
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["sessions"][0]["jobs_computed"] == 0 and "budget" in prov["sessions"][0]["stopped"]
    assert run_campaign.main(args) == 0
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["sessions"][1]["jobs_computed"] == 2 and prov["sessions"][1]["stopped"] is None
    assert prov["estimates"]  # per task, the longest job so far: what the next budget is checked against


def test_the_budget_expects_a_job_to_take_as_long_as_its_stages_longest():
    """A network's early stages can hold jobs of many cells (hours each): a later stage of
    one-cell jobs is budgeted on its own jobs once it has some, before that on the longest."""

    def task(stage):
        return cp.Task("fig1", "c", "resnet18", "resnet18?width=16", 16, "authors", len, [], len, [], [], 1, stage)

    def job(stage, seconds):
        return {"figure": "fig1", "model": "resnet18?width=16", "recipe": "authors", "stage": stage, "seconds": seconds}

    prov = {"jobs": {"a": job(1, 7110.0), "b": job(16, 285.0), "c": job(16, 291.0)}}
    prov["estimates"] = {"fig1:resnet18?width=16:authors": 7110.0}
    assert cp.job_estimate(prov, task(16)) == 291.0
    assert cp.job_estimate(prov, task(18)) == 7110.0  # no job of its own yet
    assert cp.job_estimate({"jobs": {}}, task(18)) == 0.0


def test_the_ledger_says_why_a_session_ended(tmp_path, monkeypatch):
    """A job that fails, or a kill, is recorded in the session's ``stopped`` before it ends."""
    import os
    import signal

    from nadcore.book import campaign

    out = tmp_path / "b"
    args = ["--campaign", "tiny", "--out", str(out), "--cache", str(tmp_path / "c"), "--nice", "0", "--stages", "2"]

    def boom(*a, **k):
        raise RuntimeError("NYI: something the trainer cannot do")

    monkeypatch.setattr(campaign, "run_jobs", boom)
    with pytest.raises(RuntimeError):
        run_campaign.main(args)

    def killed(*a, **k):
        os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(campaign, "run_jobs", killed)
    with pytest.raises(SystemExit):
        run_campaign.main(args)
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler is the command's only
    s0, s1 = json.loads((out / "provenance.json").read_text())["sessions"]
    assert s0["stopped"] == "failed: RuntimeError: NYI: something the trainer cannot do"
    assert s1["stopped"] == "interrupted: SystemExit killed by SIGTERM" and s1["jobs_computed"] == 0


def test_one_process_writes_a_bundle_at_a_time(tmp_path, capsys):
    """Each process rewrites the whole provenance from its own copy: a second campaign on the
    same bundle stops with a clear error and leaves it as it was, or with --wait queues behind."""
    import threading
    import time

    out = tmp_path / "b"
    args = ["--campaign", "tiny", "--out", str(out), "--cache", str(tmp_path / "c"), "--nice", "0", "--stages", "2"]
    with cp.writing(out):
        assert run_campaign.main(args) == 2
        assert f"is being written by campaign process {os.getpid()}" in capsys.readouterr().err
        assert not (out / "provenance.json").exists()
    assert run_campaign.main(args) == 0  # the lock went with the holder
    held, release = threading.Event(), threading.Event()

    def holder():
        with cp.writing(out):
            held.set()
            release.wait(10)

    th = threading.Thread(target=holder)
    th.start()
    held.wait(10)
    threading.Timer(0.5, release.set).start()
    t0 = time.perf_counter()
    assert run_campaign.main(args + ["--wait"]) == 0
    th.join()
    assert time.perf_counter() - t0 >= 0.4
    assert len(json.loads((out / "provenance.json").read_text())["sessions"]) == 2


def test_a_bf16_stage_on_a_cpu_without_bf16_instructions_asks_for_a_precision(tmp_path, monkeypatch, capsys):
    """Emulated bf16 is slower than float32: the command refuses until told which to run, and
    ``--float32`` trains the bf16 stage in float32, with rows that say so."""
    from nadcore import runtime

    out = tmp_path / "b"
    args = ["--campaign", "tiny", "--out", str(out), "--cache", str(tmp_path / "c"), "--nice", "0", "--stages", "3"]
    monkeypatch.setattr(runtime, "native_bf16", lambda: [])
    assert run_campaign.main(args) == 2
    assert "stage(s) 3 train in bf16" in capsys.readouterr().err and not out.exists()
    assert run_campaign.main(args + ["--dry-run"]) == 0  # looking costs nothing
    assert run_campaign.main(args + ["--float32"]) == 0
    assert set(pd.read_csv(out / CHAPTER / "fig1.csv")["precision"]) == {"fp32"}
    assert {t.meta["precision"] for t in campaigns.plan("tiny", float32=True)[0]} == {"fp32"}
    monkeypatch.setattr(runtime, "native_bf16", lambda: ["avx512_bf16"])
    assert run_campaign.main(args) == 0  # a CPU with the instructions runs the stage as planned
    assert set(pd.read_csv(out / CHAPTER / "fig1.csv")["precision"]) == {"fp32", "bf16"}


def test_bad_arguments_exit_2(tmp_path, capsys):
    base = ["--out", str(tmp_path / "b"), "--cache", str(tmp_path / "c")]
    assert run_campaign.main(["--campaign", "cpu3", *base]) == 2
    assert run_campaign.main(["--campaign", "tiny", "--figures", "fig9", *base]) == 2
    assert run_campaign.main(["--campaign", "tiny", "--cache", str(tmp_path / "c")]) == 2  # tiny needs --out
    err = capsys.readouterr().err
    assert "unknown campaign" in err and "no stage" in err and "never results" not in err or "--out" in err


def test_a_local_dask_cluster_gives_the_same_bundle(bundle, tmp_path):
    """... and leaves the caller's environment as it found it (Dask's nanny sets the BLAS thread
    variables to 1 in the parent: a kernel started later would train on one thread)."""
    out, _, _ = bundle
    environ = dict(os.environ)
    other = tmp_path / "dask"
    args = [
        "--campaign",
        "tiny",
        "--out",
        str(other),
        "--cache",
        str(tmp_path / "c"),
        "--nice",
        "0",
        "--dask",
        "local:2",
        "--emulated-bf16",
    ]
    assert run_campaign.main(args) == 0
    for chapter, fig in (
        (CHAPTER, "fig1"),
        (CHAPTER, "fig3"),
        (CHAPTER, "fig6"),
        (campaigns.CIFAR_CHAPTER, "fig7"),
        (campaigns.CIFAR_CHAPTER, "fig8"),
    ):
        a = pd.read_csv(out / chapter / f"{fig}.csv")
        b = pd.read_csv(other / chapter / f"{fig}.csv")
        pd.testing.assert_frame_equal(a, b)
    prov = json.loads((other / "provenance.json").read_text())
    assert prov["sessions"][0]["executor"] == "Client" and prov["sessions"][0]["jobs_computed"] == 25
    assert dict(os.environ) == environ


def test_coverage_names_every_bundle_that_has_a_network(tmp_path):
    """A network trained by two campaigns (ResNet-18: the cpu one at width 16, the GPU one at
    full width) is credited to both, each with its width."""
    import shutil

    root = Path(__file__).resolve().parents[1] / "results"
    for name in ("cpu", "paper"):
        shutil.copytree(root / name, tmp_path / name)
    fig1 = next(c for c in campaigns.coverage("cpu", tmp_path) if c["figure"] == "fig1")
    resnet = fig1["networks"]["resnet18"]
    assert "campaign cpu (width 16" in resnet and "campaign paper (width 64" in resnet
    shutil.rmtree(tmp_path / "paper")
    fig1 = next(c for c in campaigns.coverage("cpu", tmp_path) if c["figure"] == "fig1")
    assert "paper" not in fig1["networks"]["resnet18"]
    # Figs. 7 and 8 count the runs at the width of the network's stage, not at another width
    fig8 = pd.DataFrame(
        [
            dict(
                model="vgg11",
                width=w,
                recipe="authors",
                precision="fp32",
                experiment=e,
                seed=0,
                epochs=50,
                train_acc=1.0,
                test_acc=0.5,
            )
            for w in (16, 32)
            for e in ("clean", "flip")
        ]
    )
    fig8.iloc[:3].to_csv(tmp_path / "cpu" / campaigns.CIFAR_CHAPTER / "fig8.csv", index=False)
    vgg = next(c for c in campaigns.coverage("cpu", tmp_path) if c["figure"] == "fig8")["networks"]["vgg11"]
    assert vgg == "campaign cpu (width 32, 1 runs)"


def test_paper_campaign_jobs_fit_a_lease_command_and_the_trainer_can_be_replaced():
    tasks, settings = campaigns.plan("paper", figures=["fig1"], archs=["resnet18"], device="cpu")
    assert settings["campaign"]["train"] == {"trainer": "side_by_side", "autocast": "bf16"}
    assert max(len(j.config["runs"]) for t in tasks for j in t.jobs) == 8
    assert [r[0] for r in tasks[0].jobs[0].config["runs"]] == [[2, 2], [2, 4]]  # the width study's first
    _, many = campaigns.plan("paper", figures=["fig1"], archs=["resnet18"], device="cpu", trainer="many")
    assert many["campaign"]["train"] == {"trainer": "many"}
    with pytest.raises(ValueError, match="trainer"):
        campaigns.plan("paper", trainer="fast")


def test_the_paper_campaigns_report_reads_its_ledger_without_a_gpu(tmp_path, capsys):
    assert (
        run_campaign.main(
            [
                "--campaign",
                "paper",
                "--report",
                "--figures",
                "fig1",
                "--archs",
                "resnet18",
                "--cache",
                str(tmp_path / "c"),
            ]
        )
        == 0
    )
    assert "| 0 | fig1 | resnet18 | authors |" in capsys.readouterr().out


def test_the_report_costs_a_task_without_a_done_job_from_a_benchmark(tmp_path, capsys):
    rates = tmp_path / "bench.json"
    rates.write_text(json.dumps({"rows": [{"network": "resnet18", "worker_hours_per_run": 0.5}]}))
    args = [
        "--campaign",
        "paper",
        "--report",
        "--figures",
        "fig1",
        "--archs",
        "resnet18",
        "--cache",
        str(tmp_path / "c"),
        "--out",
        str(tmp_path / "bundle"),
    ]
    assert run_campaign.main(args + ["--rates", str(rates), "--workers", "2"]) == 0
    out = capsys.readouterr().out
    tasks, _ = campaigns.plan("paper", figures=["fig1"], archs=["resnet18"])
    runs = sum(t.runs for t in tasks)
    assert "| benchmark |" in out
    assert f"the rest: {0.5 * runs:.1f} worker hours, {0.25 * runs:.1f} h of wall time with 2 worker(s)" in out
    rates.write_text("{}")
    assert run_campaign.main(args + ["--rates", str(rates)]) == 2
    assert "not a JSON of benchmarks/bench_big_networks.py" in capsys.readouterr().err


def test_the_report_costs_a_figure_not_yet_run_from_the_same_networks_runs(bundle, tmp_path):
    import shutil

    out, _, _ = bundle
    copy = tmp_path / "b"
    shutil.copytree(out, copy)
    prov = json.loads((copy / "provenance.json").read_text())
    prov["jobs"] = {k: j for k, j in prov["jobs"].items() if j["figure"] != "fig6"}
    (copy / "provenance.json").write_text(json.dumps(prov))
    (copy / CHAPTER / "fig6.csv").unlink()
    tasks, _ = campaigns.plan("tiny")
    table = cp.report(tasks, Cache(tmp_path / "empty-cache"), copy).set_index(["figure", "network"])
    fig1, fig6 = table.loc[("fig1", "resnet18?width=4")], table.loc[("fig6", "resnet18?width=4")]
    assert fig1["basis"].startswith("ledger (") and fig6["jobs done"].sum() == 0
    assert (fig6["basis"] == "ledger (same network)").all() and (fig6["hours left"] > 0).all()


def test_the_report_counts_a_job_that_two_stages_plan_once(bundle, tmp_path):
    """A later stage that continues an earlier one's jobs adds neither jobs nor hours twice."""
    import dataclasses

    out, _, _ = bundle
    tasks, _ = campaigns.plan("tiny")
    cache = Cache(tmp_path / "empty-cache")
    once = cp.report(tasks, cache, out)
    twice = cp.report(tasks + [dataclasses.replace(tasks[0], stage=99)], cache, out)
    again = twice.iloc[-1]
    assert once.iloc[0]["jobs planned"] > 0 and once.iloc[0]["hours so far"] > 0
    assert (again["jobs planned"], again["jobs done"], again["hours so far"], again["hours left"]) == (0, 0, 0, 0)
    assert again["hours per job"] == pytest.approx(once.iloc[0]["hours per job"])
    for col in ("jobs planned", "jobs done", "hours so far", "hours left"):
        assert twice[col].sum() == pytest.approx(once[col].sum())


def test_equal_to_matches_a_missing_key_with_a_missing_one():
    widths = pd.Series([16, None, 8], dtype="Int64")
    assert cp.equal_to(widths, 16).tolist() == [True, False, False]
    assert cp.equal_to(widths, None).tolist() == [False, True, False]
    assert cp.equal_to(widths, np.nan).tolist() == [False, True, False]
    assert cp.equal_to(pd.Series([0.0, np.nan]), 0).tolist() == [True, False]


def test_rows_on_cells_take_the_cell_not_its_transpose_and_keep_the_columns_when_empty():
    rows = pd.DataFrame({"k1": [0, 2, 4, 2], "k2": [2, 0, 4, 0], "test_acc": [0.9, 0.8, 0.5, 0.7]})
    assert bundled.on_cells(rows, [[2, 0]])["test_acc"].tolist() == [0.8, 0.7]
    assert bundled.on_cells(rows, iter([(0, 2), (4, 4)]))["test_acc"].tolist() == [0.9, 0.5]
    empty = bundled.on_cells(rows.iloc[:0], [[0, 2]])
    assert empty.empty and list(empty.columns) == ["k1", "k2", "test_acc"]


def test_a_spot_check_reads_the_figure_its_network_is_trained_for():
    assert campaigns.cells_figure("cpu", "resnet18") == "fig1"
    assert campaigns.cells_figure("cpu", "lenet_nopool") == "fig3"
    assert campaigns.cells_figure("cpu", "resnet18_nopool") == "fig3"
    with pytest.raises(ValueError, match="no Fourier cells"):
        campaigns.cells_figure("cpu", "logreg")


def test_a_background_campaign_yields_to_other_sessions():
    """``--background``: a session of its own whose autogroup (where Linux has them) has the
    campaign's nice, so that a build started from another terminal gets the CPU first."""
    import subprocess
    import sys

    code = (
        "from pathlib import Path; from nadcore.book.campaign import lower_priority; "
        "print(lower_priority(5, session=True)); import os; print(os.getsid(0) == os.getpid()); "
        "g = Path('/proc/self/autogroup'); print(g.read_text().split()[-1] if g.exists() else 'none')"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    ).stdout.split("\n")
    assert out[1] == "True"  # its own session
    if Path("/proc/self/autogroup").exists():
        assert out[0] == "nice 5, its own session, autogroup nice 5" and out[2] == "5"
    else:
        assert out[0] == "nice 5, its own session (no autogroups here)" and out[2] == "none"
    # started under `setsid`, it leads its session already: the autogroup still gets the nice
    lead = subprocess.run(
        [sys.executable, "-c", "import os; os.setsid(); " + code],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert lead.stdout.split("\n")[0] == out[0]


def test_a_killed_campaign_stops_its_worker_processes_at_once():
    """After a kill, the campaign's process pool stops with its jobs in flight (they are lost,
    as the ledger says) instead of finishing them: shutdown() alone would wait out this job's
    ten minutes, as it waited out a DenseNet-121 job's half hour."""
    import time

    from nadcore.book.runner import make_executor, stop_executor

    ex = make_executor(2)
    job = ex.submit(time.sleep, 600)
    deadline = time.monotonic() + 120
    while not job.running() and time.monotonic() < deadline:
        time.sleep(0.1)
    workers = list(ex._processes.values())
    assert job.running() and workers
    start = time.monotonic()
    stop_executor(ex)
    assert time.monotonic() - start < 60
    assert not any(p.is_alive() for p in workers)


def test_a_poisoning_job_has_the_same_identity_on_every_machine(monkeypatch):
    """Figs. 7 and 8 train on the published NADs completed to a basis; completing it is float
    linear algebra whose last bits differ between CPUs (a Zen 4 and a Zen 5 EPYC disagreed), so
    their jobs are named by the published NADs, not by the basis: the same ids, the same ledger."""
    tasks, _ = campaigns.plan("cpu", stages=[21])
    ids = [cp.bundle_id(t, j) for t in tasks for j in t.jobs]
    real = cifar_plan.complete_basis
    monkeypatch.setattr(cifar_plan, "complete_basis", lambda nads: real(nads) * (1 + 1e-12))
    again, _ = campaigns.plan("cpu", stages=[21])
    assert [cp.bundle_id(t, j) for t in again for j in t.jobs] == ids
    assert not np.array_equal(again[0].jobs[1].data["nads"], tasks[0].jobs[1].data["nads"])
    prov = json.loads((REPO / "results" / "cpu" / "provenance.json").read_text())
    assert all(i in prov["jobs"] for i in ids)  # the committed ledger knows every one of them
