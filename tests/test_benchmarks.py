"""The benchmark scripts run and write what their docstrings promise (not their timings: those
are measured on an idle machine, never asserted by tests)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from nadcore.kernels import native

ROOT = Path(__file__).resolve().parents[1]


def test_bench_gpu_runs_on_the_cpu_and_prints_its_tables(tmp_path):
    out = tmp_path / "g.json"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_gpu.py"), "--quick", "--device", "cpu",
                    "--archs", "logreg", "--sections", "accuracy,secant,gradient,fig1,full",
                    "--full", "logreg:tf32", "--json", str(out)], check=True, cwd=ROOT, capture_output=True)
    r = json.loads(out.read_text())
    assert not r.get("errors") and not r.get("skipped"), r
    assert r["accuracy"]["logreg"]["float32"]["rel_error"] < 1e-5
    assert r["secant"]["logreg"]["float32"]["networks_per_second"] > 0
    assert r["gradient"]["logreg"]["networks"] >= 2 and r["fig1"]["logreg"]["paper_runs"] == 768
    assert r["full"]["logreg:tf32"]["networks_per_second"] > 0
    table = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_gpu.py"), "--table", str(out)],
                           check=True, cwd=ROOT, capture_output=True, text=True).stdout
    for heading in ("| secant NADs |", "| 10,000 networks, timed whole |", "| gradient NADs (float32) |",
                    "| Fig. 1 training |"):
        assert heading in table, table


def test_bench_gradient_steps_runs_and_prints_its_three_steps():
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_gradient_steps.py"), "--networks", "300",
                          "--reps", "1"], check=True, cwd=ROOT, capture_output=True, text=True).stdout
    line = out.strip().splitlines()[-1]
    assert line.startswith("us per network: draw ") and "gradients" in line and "accumulation" in line, out


def test_bench_convpool_times_both_stages_in_both_directions(tmp_path):
    if not native.available():
        pytest.skip("nadcore.kernels.native is unavailable (no C compiler): the benchmark has nothing to time")
    out = tmp_path / "k.json"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_convpool.py"), "--models", "2",
                    "--n-train", "256", "--reps", "1", "--json", str(out)], check=True, cwd=ROOT,
                   capture_output=True)
    r = json.loads(out.read_text())
    assert set(r["kernels"]) == {f"conv{i} {d}" for i in (1, 2) for d in ("forward", "backward")}
    # one call per step: 2 epochs of 2 steps of 128 (the test set's forward calls are not counted)
    assert all(k["calls"] == 4 and k["ms"] > 0 and k["gflops"] > 0 for k in r["kernels"].values()), r
    assert r["call_ms"] > 0
