"""Run the CPU speed benchmarks and write their table into benchmarks/README.md.

    python benchmarks/report.py [--reps 3] [--quick] [--json-dir DIR] [--out FILE]
    python benchmarks/report.py --from-json DIR/report.json [--out FILE]   # re-render, runs nothing

Runs ``bench_nads.py`` (LeNet and ResNet-18: the authors' secant procedure, nadcore's secant,
nadcore's gradient; LeNet's gradient through the command line at 8,192 networks) and
``bench_training.py`` (LeNet on D(v): a loop of train_classifier vs train_many), each in its own
process, and gathers their results, the command, the machine (CPU model, cores, torch version and
threads), the date and the load averages seen into ``report.json`` (in ``--json-dir``, a
temporary folder by default). It then prints the markdown table and rewrites the part of
``--out`` (``benchmarks/README.md``) above the line :data:`MARKER`: the page's title, what each
benchmark measures, how to run them, and this table. What follows the marker (the recorded
results of the benchmarks this script does not run) is kept as it is; a missing file is created.

Every ratio is measured within one run (both sides back to back, medians over repetitions);
timings on a shared machine are inflated and noisy, so run it on an idle one. ``--quick`` scales
the work down: a smoke test of the script, not numbers to publish (it writes no page unless
``--out`` names one).
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

README = ROOT / "benchmarks" / "README.md"
#: report.py rewrites everything above this line of benchmarks/README.md and keeps what follows.
MARKER = "<!-- Everything above this line is written by benchmarks/report.py; what follows is kept as it is. -->"

TARGETS = {
    "lenet secant": 5.0,
    "resnet18 secant": 5.0,
    "lenet gradient": 200.0,
    "training ratio": 4.0,
    "training peak": 0.5,
}

HEADER = """\
# nadcore benchmarks

How fast nadcore estimates NADs and trains networks, against the authors' procedure and a plain
training loop. These are benchmarks, not tests: `tests/test_benchmarks.py` checks that every
script runs and writes what it promises, never its timings. The speed-only code they measure lives
in `nadcore/kernels/` (optional: `NADCORE_NATIVE=0` turns the C kernels off and every caller takes
its torch path). Timings on a shared machine are inflated and noisy: run them on an idle one.

## What each benchmark measures

| script | measures |
|---|---|
| `bench_nads.py` | NAD sampling, networks/s: the authors' secant procedure (one network at a time, as in their code) against nadcore's secant and gradient estimators, for LeNet and ResNet-18 |
| `bench_training.py` | training many LeNets on D(v), models/min: a loop of `train_classifier` against `train_many`; and the model's GFLOP/s against the machine's fp32 matrix-product peak |
| `bench_convpool.py` | milliseconds per call of each native convolution kernel (LeNet's two conv-pool-ReLU stages, forward and backward), timed inside real `train_many` steps |
| `bench_gradient_steps.py` | LeNet's gradient NADs per network and thread, in its three steps: parameter draw, input gradients, float64 accumulation |
| `bench_gpu.py` | on a GPU: secant and gradient NADs of the five architectures in float32, tf32 and bf16 with their errors, the paper's 10,000-network runs, and Fig. 1 training |
| `report.py` | runs `bench_nads.py` and `bench_training.py` in their own processes and writes the table below |

Each script's docstring says what exactly it times; `--help` lists its options.

## How to run

```bash
python benchmarks/report.py --reps 5          # the CPU table below (rewrites this file above the marker)
python benchmarks/report.py --quick           # a smoke test of the script (prints, writes no page)
python benchmarks/bench_convpool.py           # per-kernel times of a LeNet training step
python benchmarks/bench_gradient_steps.py     # per-step times of LeNet's gradient NADs
python benchmarks/bench_gpu.py --json run.json && python benchmarks/bench_gpu.py --table run.json
```

## On the CPU: NAD sampling and training

Written by `benchmarks/report.py` (it runs `bench_nads.py` and `bench_training.py`).
"""


def _mark(value, target) -> str:
    return "yes" if value >= target else "no"


def table(results: dict) -> list[str]:
    """The markdown lines of the CPU table (with its command, machine, date and loads) from the
    results that :func:`run_benchmarks` gathers (``report.json``)."""
    nad, tr, m = results["nads"], results["training"], results["machine"]
    rows = {r["model"]: r for r in nad["rows"]}
    L, R = rows["lenet"], rows["resnet18"]
    gn = L["networks"]["gradient"]
    best = tr["configs"][tr["best"]]
    return [
        f"Command: `{results['command']}` on {results['date']}; "
        f"{m['cpu']}, {m['cores']} cores, torch {m['torch']} ({m['threads']} threads); "
        f"load average {results['load_start']} at the start, {results['load_end']} at the end. "
        f"Ratios: medians of {results['reps']} interleaved repetitions.",
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
        f"| LeNet D(v) training, {tr['best']} (models/min) | {best['models_per_min']:.1f} | loop of "
        f"train_classifier {tr['configs']['loop']['models_per_min']:.1f} | {tr['ratio_vs_loop']:.2f}x | "
        f">= 4x | {_mark(tr['ratio_vs_loop'], TARGETS['training ratio'])} |",
        f"| LeNet D(v) training, GFLOP/s (analytic) | {tr['gflops']:.1f} | fp32 matmul peak "
        f"{tr['peak_gflops']:.0f} | {100 * tr['peak_fraction']:.0f}% | >= 50% | "
        f"{_mark(tr['peak_fraction'], TARGETS['training peak'])} |",
    ]


def write_readme(results: dict, path: Path = README) -> str:
    """Rewrite ``path`` above :data:`MARKER` with the title, the benchmarks' descriptions and the
    table of ``results``; keep what follows the marker (create the file if it is missing).
    Returns the new text."""
    path = Path(path)
    kept = ""
    if path.exists():
        old = path.read_text()
        if MARKER in old:
            kept = old.split(MARKER, 1)[1]
    text = HEADER + "\n" + "\n".join(table(results)) + "\n\n" + MARKER + (kept or "\n")
    path.write_text(text)
    return text


def _run(script: str, args: list[str], out: Path) -> dict:
    cmd = [sys.executable, str(ROOT / "benchmarks" / script), *args, "--json", str(out)]
    print("$", " ".join(cmd[1:]), flush=True)
    subprocess.run(cmd, check=True, cwd=ROOT)
    return json.loads(out.read_text())


def run_benchmarks(reps: int, quick: bool, json_dir: Path) -> dict:
    """Run both benchmarks and gather what the table needs (also written to ``report.json``)."""
    json_dir.mkdir(parents=True, exist_ok=True)
    reps = 1 if quick else reps
    start, load0 = dt.datetime.now().astimezone(), load()
    nad_args = ["--models", "lenet,resnet18", "--reps", str(reps)]
    train_args = ["--reps", str(reps)]
    if quick:
        nad_args += ["--scale", "0.25", "--gradient-networks", "2048"]
        train_args += ["--models", "4", "--n-train", "256", "--epochs", "1"]
    nad = _run("bench_nads.py", nad_args, json_dir / "nads.json")
    tr = _run("bench_training.py", train_args, json_dir / "training.json")
    command = (
        "python benchmarks/report.py"
        + (" --quick" if quick else "")
        + ("" if quick or reps == 3 else f" --reps {reps}")
    )
    results = {
        "command": command,
        "date": f"{start:%Y-%m-%d %H:%M %Z}",
        "machine": machine(),
        "load_start": load0,
        "load_end": load(),
        "reps": reps,
        "nads": nad,
        "training": tr,
    }
    (json_dir / "report.json").write_text(json.dumps(results, indent=1))
    return results


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="scaled-down smoke run (not numbers to publish)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json-dir", default=None, help="keep the benchmarks' JSON files (and report.json) here")
    ap.add_argument(
        "--from-json",
        default=None,
        metavar="REPORT_JSON",
        help="write the page from an earlier run's report.json instead of running the benchmarks",
    )
    ap.add_argument(
        "--out", default=None, help="the page to write (default benchmarks/README.md; with --quick, none unless given)"
    )
    a = ap.parse_args(argv)
    if a.from_json:
        results = json.loads(Path(a.from_json).read_text())
    else:
        d = Path(a.json_dir or tempfile.mkdtemp(prefix="nadbook-bench-"))
        results = run_benchmarks(a.reps, a.quick, d)
        print(f"results: {d / 'report.json'}")
    lines = table(results)
    print("\n".join(lines))
    out = a.out or (None if a.quick else README)
    if out:
        write_readme(results, Path(out))
        print(f"wrote {out}")
    return lines


if __name__ == "__main__":
    main()
