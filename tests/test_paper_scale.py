"""The paper-scale machinery on a CPU: scripts/run_paper.py --tiny makes a bundle (tiny networks,
a few cells), resumes without recomputing, stops at its time budget; the chapters' drawing
function reads the bundle and the scorecard gets its rows with profile "paper"."""
import importlib.util
import json
import sys
from pathlib import Path

import matplotlib
import pandas as pd
import pytest

from nadcore.book import paper_results, paper_runs, setup
from nadcore.data import fourier_grid
from nadcore.plots import paper_scale

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("run_paper", REPO / "scripts" / "run_paper.py")
run_paper = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run_paper)
TINY = ["--device", "cpu", "--tiny", "--seeds", "1", "--cells", "5"]


def test_distinct_cells_cover_the_grid_once_under_the_symmetry():
    grid = fourier_grid(32, 16)
    cells = paper_runs.distinct_cells(grid)
    assert len(cells) == len(set(cells)) == 136  # 16 * 17 / 2: the diagonal and one triangle
    covered = set(cells) | {paper_runs.mirror(*c) for c in cells}
    assert covered == set(grid.frequencies)
    assert set(cells[:len(grid.subgrid(8).frequencies)]) <= set(grid.subgrid(4).frequencies)  # coarse first


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("paper")
    out, cache = tmp / "bundle", tmp / "cache"
    args = ["--figures", "fig1,fig6", "--archs", "resnet18", "--out", str(out), "--cache", str(cache), *TINY]
    assert run_paper.main(args) == 0
    return out, cache, args


def test_tiny_bundle_has_the_cpu_columns_and_provenance(bundle):
    out, _, _ = bundle
    fig1 = pd.read_csv(out / "03_linear_separability" / "fig1.csv")
    assert list(fig1.columns) == paper_runs.figure_columns("fig1")
    assert len(fig1) == 5 and set(fig1["model"]) == {"resnet18"}
    fig6 = pd.read_csv(out / "03_linear_separability" / "fig6.csv")
    assert list(fig6.columns) == paper_runs.figure_columns("fig6")
    assert sorted(fig6["nad_index"]) == [0, 1, 500, 1000]
    prov = json.loads((out / "provenance.json").read_text())
    s = prov["sessions"][0]
    assert s["jobs_computed"] == 2 + 1 + 2 and s["commit"] and s["torch"] and "gpu" in s
    assert prov["tiny"] is True
    st = prov["figures"]["fig1"]["archs"]["resnet18"]
    assert st == {"runs_done": 5, "runs_planned": 5, "jobs_done": 2, "jobs_planned": 2, "complete": True}
    jobs = [j for j in prov["jobs"].values()]
    assert all(j["seconds"] > 0 and j["date"] and j["session"] == 0 for j in jobs)
    assert {j["trainer"] for j in jobs if j["function"] == "directional_job"} == {"side_by_side"}


def test_restart_recomputes_nothing_even_without_the_cache(bundle, tmp_path):
    out, cache, args = bundle
    assert run_paper.main(args) == 0  # same cache: every job is a hit
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["sessions"][-1]["jobs_computed"] == 0
    # a new lease without the cache: fig1's jobs are in the bundle's ledger and rows
    args2 = [a if a != str(cache) else str(tmp_path / "empty") for a in args]
    args2[args2.index("fig1,fig6")] = "fig1"
    assert run_paper.main(args2) == 0
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["sessions"][-1]["jobs_computed"] == 0
    assert len(pd.read_csv(out / "03_linear_separability" / "fig1.csv")) == 5


def test_budget_stops_before_a_job_that_would_not_fit(tmp_path):
    out = tmp_path / "b"
    args = ["--figures", "fig1", "--archs", "vgg11", "--out", str(out), "--cache", str(tmp_path / "c"),
            "--budget", "0", *TINY]
    assert run_paper.main(args) == 0
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["sessions"][0]["jobs_computed"] == 0 and "budget" in prov["sessions"][0]["stopped"]
    assert prov["figures"]["fig1"]["archs"]["vgg11"]["runs_done"] == 0


def test_bad_input_is_refused(tmp_path, capsys):
    base = ["--out", str(tmp_path / "o"), "--cache", str(tmp_path / "c")]
    assert run_paper.main(["--figures", "fig1", "--archs", "resnet19", *base, *TINY]) == 2
    assert "unknown architecture 'resnet19'" in capsys.readouterr().err
    assert run_paper.main(["--figures", "fig7", *base, *TINY]) == 2
    assert "not wired" in capsys.readouterr().err
    assert run_paper.main(["--figures", "fig1", "--device", "cpu", *base]) == 2
    assert "weeks" in capsys.readouterr().err
    import torch
    if not torch.cuda.is_available():
        assert run_paper.main(["--figures", "fig1", "--device", "cuda", *base]) == 2
        assert "CUDA is not available" in capsys.readouterr().err


def test_chapters_draw_the_bundle_and_the_scorecard_gets_paper_rows(bundle, tmp_path, monkeypatch):
    out, _, _ = bundle
    matplotlib.use("Agg")
    monkeypatch.setenv("NADBOOK_OUTPUT", str(tmp_path / "executed"))
    monkeypatch.setenv("NADBOOK_PAPER_RESULTS", str(tmp_path / "none"))
    ch = setup("03_linear_separability", profile="smoke")
    assert paper_scale.show(ch, "fig1") is None and ch.claims == []  # no bundle: nothing at all
    monkeypatch.setenv("NADBOOK_PAPER_RESULTS", str(out))
    f1 = paper_scale.show(ch, "fig1")
    f6 = paper_scale.show(ch, "fig6")
    assert f1 is not None and f6 is not None
    assert "TINY TEST BUNDLE" in f1._suptitle.get_text() and "5/5 runs" in f1._suptitle.get_text()
    assert paper_scale.show(ch, "fig2") is None  # in no bundle yet
    ids = {c.id: c for c in ch.claims}
    assert set(ids) == {"fig1-frequency-gap-resnet18-paper", "fig1-train-fit-resnet18-paper",
                        "fig6-first-vs-beyond-resnet18-paper", "fig6-eigenvalue-ranks-accuracy-resnet18-paper"}
    assert all(c.profile == "paper" and c.settings["profile"] == "paper" for c in ch.claims)
    assert ids["fig1-train-fit-resnet18-paper"].paper_value == 1.0
    assert ids["fig6-first-vs-beyond-resnet18-paper"].paper_value is not None  # the published curve's
    ch.finish()
    bb_spec = importlib.util.spec_from_file_location("bb_paper", REPO / "scripts" / "build_book.py")
    bb = importlib.util.module_from_spec(bb_spec)
    sys.modules["bb_paper"] = bb
    bb_spec.loader.exec_module(bb)
    card = bb.write_scorecard(tmp_path / "executed", ["03_linear_separability"])
    assert [c["profile"] for c in card["claims"]] == ["paper"] * 4
    page = (tmp_path / "executed" / "scorecard.md").read_text()
    assert "paper\u00a0scale" in page and "## Not yet run at paper scale" in page
    assert "Fig. 2 (ResNet-18): not run" in page and "Fig. 7 (ResNet-18, CIFAR-10 poisoning): not wired yet" in page
    lines = paper_results.not_yet_run(out)  # Fig. 1 needs VGG-11 and DenseNet-121 too
    assert "Fig. 1 (ResNet-18, VGG-11, DenseNet-121 on the 16x16 grid): 5/5 runs so far" in lines
    assert "(incomplete)" in f1._suptitle.get_text()
