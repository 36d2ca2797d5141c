"""Run the speed benchmarks and print README's performance table (markdown).

    python benchmarks/report.py [--quick] [--reps 3] [--json-dir DIR]

Runs ``bench_nads.py`` (LeNet and ResNet-18: the authors' secant procedure, nadcore's secant,
nadcore's gradient; LeNet's gradient through the command line at 8,192 networks) and
``bench_training.py`` (LeNet on D(v): a loop of train_classifier vs train_many), each in its own
process, then prints one markdown table with the command, the machine (CPU model, cores, torch
version and threads), the date and the load averages seen. Every ratio is measured within one
run (both sides back to back, medians over repetitions); timings on a shared machine are
inflated and noisy, so run it on an idle one. ``--quick`` scales the work down (a smoke test of
the script, not numbers to publish).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from common import load, machine  # noqa: E402

TARGETS = {"lenet secant": 5.0, "resnet18 secant": 5.0, "lenet gradient": 200.0,
           "training ratio": 4.0, "training peak": 0.5}


def _run(script: str, args: list[str], out: Path) -> dict:
    cmd = [sys.executable, str(ROOT / "benchmarks" / script), *args, "--json", str(out)]
    print("$", " ".join(cmd[1:]), flush=True)
    subprocess.run(cmd, check=True, cwd=ROOT)
    return json.loads(out.read_text())


def _mark(value, target) -> str:
    return "yes" if value >= target else "no"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="scaled-down smoke run")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json-dir", default=None, help="keep the benchmarks' JSON files here")
    a = ap.parse_args(argv)
    d = Path(a.json_dir or tempfile.mkdtemp(prefix="nadbook-bench-"))
    d.mkdir(parents=True, exist_ok=True)
    reps = str(1 if a.quick else a.reps)
    start, load0 = dt.datetime.now().astimezone(), load()
    nad_args = ["--models", "lenet,resnet18", "--reps", reps]
    train_args = ["--reps", reps]
    if a.quick:
        nad_args += ["--scale", "0.25", "--gradient-networks", "2048"]
        train_args += ["--models", "4", "--n-train", "256", "--epochs", "1"]
    nad = _run("bench_nads.py", nad_args, d / "nads.json")
    tr = _run("bench_training.py", train_args, d / "training.json")
    m = machine()
    rows = {r["model"]: r for r in nad["rows"]}
    L, R = rows["lenet"], rows["resnet18"]
    gn = L["networks"]["gradient"]
    lines = [
        f"Command: `python benchmarks/report.py{' --quick' if a.quick else ''}"
        f"{'' if a.reps == 3 else f' --reps {a.reps}'}` on {start:%Y-%m-%d %H:%M %Z}; "
        f"{m['cpu']}, {m['cores']} cores, torch {m['torch']} ({m['threads']} threads); "
        f"load average {load0} at the start, {load()} at the end. Ratios: medians of {reps} "
        "interleaved repetitions.",
        "",
        "| what | nadcore | reference | ratio | target | met |",
        "|---|---|---|---|---|---|",
        f"| LeNet secant NADs (networks/s) | {L['secant']:.3g} | authors' procedure {L['authors']:.3g} | "
        f"{L['secant_ratio']:.1f}x | >= 5x | {_mark(L['secant_ratio'], TARGETS['lenet secant'])} |",
        f"| ResNet-18 secant NADs (networks/s) | {R['secant']:.3g} | authors' procedure {R['authors']:.3g} | "
        f"{R['secant_ratio']:.1f}x | >= 5x | {_mark(R['secant_ratio'], TARGETS['resnet18 secant'])} |",
        f"| LeNet gradient NADs, CLI, {gn:,} networks (networks/s) | {L['gradient']:.4g} | authors' "
        f"secant {L['authors']:.3g} | {L['gradient_ratio']:.0f}x | >= 200x | "
        f"{_mark(L['gradient_ratio'], TARGETS['lenet gradient'])} |",
        f"| ResNet-18 gradient NADs (networks/s) | {R['gradient']:.3g} | authors' secant {R['authors']:.3g} | "
        f"{R['gradient_ratio']:.0f}x | - | - |",
        f"| LeNet D(v) training, {tr['best']} (models/min) | "
        f"{tr['configs'][tr['best']]['models_per_min']:.1f} | loop of train_classifier "
        f"{tr['configs']['loop']['models_per_min']:.1f} | {tr['ratio_vs_loop']:.2f}x | >= 4x | "
        f"{_mark(tr['ratio_vs_loop'], TARGETS['training ratio'])} |",
        f"| LeNet D(v) training, GFLOP/s (analytic) | {tr['gflops']:.1f} | fp32 matmul peak "
        f"{tr['peak_gflops']:.0f} | {100 * tr['peak_fraction']:.0f}% | >= 50% | "
        f"{_mark(tr['peak_fraction'], TARGETS['training peak'])} |",
    ]
    print("\n".join(lines))
    return lines


if __name__ == "__main__":
    main()
