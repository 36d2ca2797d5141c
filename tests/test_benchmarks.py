"""The benchmark scripts run and write what their docstrings promise (not their timings: those
are measured on an idle machine, never asserted by tests)."""

import importlib.util
import json
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from nadcore.kernels import native

ROOT = Path(__file__).resolve().parents[1]


def test_bench_gpu_runs_on_the_cpu_and_prints_its_tables(tmp_path):
    out = tmp_path / "g.json"
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_gpu.py"),
            "--quick",
            "--device",
            "cpu",
            "--archs",
            "logreg",
            "--sections",
            "accuracy,secant,gradient,fig1,full",
            "--full",
            "logreg:tf32",
            "--json",
            str(out),
        ],
        check=True,
        cwd=ROOT,
        capture_output=True,
    )
    r = json.loads(out.read_text())
    assert not r.get("errors") and not r.get("skipped"), r
    assert r["accuracy"]["logreg"]["float32"]["rel_error"] < 1e-5
    assert r["secant"]["logreg"]["float32"]["networks_per_second"] > 0
    assert r["gradient"]["logreg"]["networks"] >= 2 and r["fig1"]["logreg"]["paper_runs"] == 768
    assert r["full"]["logreg:tf32"]["networks_per_second"] > 0
    table = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_gpu.py"), "--table", str(out)],
        check=True,
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout
    for heading in (
        "| secant NADs |",
        "| 10,000 networks, timed whole |",
        "| gradient NADs (float32) |",
        "| Fig. 1 training |",
    ):
        assert heading in table, table


def test_bench_gradient_steps_runs_and_prints_its_three_steps():
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_gradient_steps.py"), "--networks", "300", "--reps", "1"],
        check=True,
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout
    line = out.strip().splitlines()[-1]
    assert line.startswith("us per network: draw ") and "gradients" in line and "accumulation" in line, out


def test_bench_convpool_times_both_stages_in_both_directions(tmp_path):
    if not native.available():
        pytest.skip("nadcore.kernels.native is unavailable (no C compiler): the benchmark has nothing to time")
    out = tmp_path / "k.json"
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_convpool.py"),
            "--models",
            "2",
            "--n-train",
            "256",
            "--reps",
            "1",
            "--json",
            str(out),
        ],
        check=True,
        cwd=ROOT,
        capture_output=True,
    )
    r = json.loads(out.read_text())
    assert set(r["kernels"]) == {f"conv{i} {d}" for i in (1, 2) for d in ("forward", "backward")}
    # one call per step: 2 epochs of 2 steps of 128 (the test set's forward calls are not counted)
    assert all(k["calls"] == 4 and k["ms"] > 0 and k["gflops"] > 0 for k in r["kernels"].values()), r
    assert r["call_ms"] > 0 and r["torch_call_ms"] > 0


def _report_module():
    spec = importlib.util.spec_from_file_location("bench_report", ROOT / "benchmarks" / "report.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


#: what report.py gathers from one run (report.json), with the numbers of the committed table
RECORDED = {
    "command": "python benchmarks/report.py --reps 5",
    "date": "2026-11-23 21:57 UTC",
    "machine": {"cpu": "AMD EPYC", "cores": 2, "torch": "2.14.1+cu130", "threads": 2, "gpu": None},
    "load_start": 0.52,
    "load_end": 1.81,
    "reps": 5,
    "nads": {
        "rows": [
            {
                "model": "lenet",
                "networks": {"authors": 64, "secant": 512, "gradient": 8192},
                "authors": 36.8,
                "secant": 248.0,
                "gradient": 13390.0,
                "secant_ratio": 6.6,
                "gradient_ratio": 436.0,
            },
            {
                "model": "resnet18",
                "networks": {"authors": 2, "secant": 4, "gradient": 64},
                "authors": 0.0391,
                "secant": 0.284,
                "gradient": 30.4,
                "secant_ratio": 7.3,
                "gradient_ratio": 778.0,
            },
        ]
    },
    "training": {
        "best": "train_many(4) x 2 processes",
        "configs": {"loop": {"models_per_min": 583.1}, "train_many(4) x 2 processes": {"models_per_min": 3095.1}},
        "ratio_vs_loop": 5.23,
        "gflops": 274.5,
        "peak_gflops": 468.0,
        "peak_fraction": 274.5 / 468.0,
    },
}


def test_report_writes_the_page_from_json_results_without_running_benchmarks(tmp_path):
    """report.py's writer: a new page gets the title, the benchmarks' descriptions and the table;
    rewriting keeps what follows the marker; and the committed page's table is what the writer
    makes of its numbers."""
    report = _report_module()
    page = tmp_path / "README.md"
    (tmp_path / "report.json").write_text(json.dumps(RECORDED))
    report.main(["--from-json", str(tmp_path / "report.json"), "--out", str(page)])
    text = page.read_text()
    assert text.startswith("# nadcore benchmarks\n") and report.MARKER in text
    for script in (
        "bench_nads.py",
        "bench_training.py",
        "bench_convpool.py",
        "bench_gradient_steps.py",
        "bench_gpu.py",
    ):
        assert f"`{script}`" in text
    assert (
        "Command: `python benchmarks/report.py --reps 5` on 2026-11-23 21:57 UTC; AMD EPYC, 2 cores, "
        "torch 2.14.1+cu130 (2 threads); load average 0.52 at the start, 1.81 at the end."
    ) in text
    assert "| LeNet gradient NADs, CLI, 8,192 networks (networks/s) | 1.339e+04 |" in text
    assert "| LeNet D(v) training, GFLOP/s (analytic) | 274.5 | fp32 matmul peak 468 | 59% | >= 50% | yes |" in text

    page.write_text(text + "\n## Recorded elsewhere\n\nkept\n")
    again = dict(RECORDED, load_end=0.3, training=dict(RECORDED["training"], ratio_vs_loop=3.5))
    report.write_readme(again, page)
    text = page.read_text()
    assert text.count(report.MARKER) == 1 and text.endswith("\n## Recorded elsewhere\n\nkept\n")
    assert "1.81 at the end" not in text and "| 3.50x | >= 4x | no |" in text

    committed = (ROOT / "benchmarks" / "README.md").read_text()
    assert report.MARKER in committed
    for line in report.table(RECORDED):
        assert line in committed.split(report.MARKER)[0], line


def test_bench_big_networks_prints_images_per_second_and_the_cost_of_a_cell(tmp_path):
    out = tmp_path / "b.json"
    text = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_big_networks.py"), "--quick", "--json", str(out)],
        check=True,
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout
    r = json.loads(out.read_text())
    assert r["peak_gflops"] > 0 and "steal" in r
    assert [x["network"] for x in r["rows"]] == ["resnet18?width=8", "vgg11?width=8"]
    assert all(
        x["images_per_s_1x2"] > 0
        and x["images_per_s_2x1"] > 0
        and 0 < x["peak_fraction"]
        and x["worker_hours_per_run"] > 0
        for x in r["rows"]
    )
    assert "| `resnet18?width=8` |" in text and "hours per Fig. 1 cell" in text
    assert r["precision"] == "fp32" and r["bf16_flags"]
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_big_networks.py"),
            "--quick",
            "--networks",
            "vgg11?width=8",
            "--autocast",
            "bf16",
            "--json",
            str(out),
        ],
        check=True,
        cwd=ROOT,
        capture_output=True,
    )
    r = json.loads(out.read_text())
    assert r["precision"] == "bf16 autocast" and r["rows"][0]["images_per_s_1x2"] > 0 and r["peak_gflops"] > 0


def test_bench_kernel_paths_trains_on_three_paths_and_each_rounds_its_own_way(tmp_path):
    out = tmp_path / "k.json"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "bench_kernel_paths.py"), "--quick", "--reps", "1"]
    printed = subprocess.run(cmd + ["--json", str(out)], check=True, cwd=ROOT, capture_output=True, text=True).stdout
    r = json.loads(out.read_text())["results"]
    assert set(r) == {"lenet", "resnet18 width 16"} and all(
        set(p) == {"default", "AVX2", "portable"} for p in r.values()
    )
    assert all(x["seconds"] > 0 and len(x["digest"]) == 12 for p in r.values() for x in p.values())
    assert "| lenet | portable |" in printed
    if platform.machine() in ("x86_64", "AMD64"):  # the AVX2 paths exist on x86 only
        assert r["lenet"]["AVX2"]["torch"] == r["lenet"]["portable"]["torch"] == "AVX2"
