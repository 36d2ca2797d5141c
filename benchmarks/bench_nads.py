"""NAD sampling throughput: the authors' secant procedure vs nadcore's secant and gradient paths.

Run on a quiet machine:  python benchmarks/bench_nads.py [--models lenet,resnet18] [--reps 3]
    [--scale 1] [--gradient-networks 8192] [--json out.json]

The authors' procedure, as written in their code (nad_computation.py + utils.py): one network at
a time, built by the constructor (PyTorch's default initialisation from torch's global
generator, not nadcore's numpy draws), in eval mode, all 2*D perturbed inputs in one batch through
``-model(x)`` with autograd enabled, then ``/ (2*scale)``; torch's default threads.

nadcore's secant: ``compute_nads(method="secant")`` with its defaults (LeNet: the structured
kernels of nadcore.kernels.lenet; other models: one no-grad channels-last pass per network in
cache-sized chunks; one lane of one torch thread per core). ``--bf16`` also times
``precision="bf16"`` (for GPUs; slower than float32 on a CPU without AMX).

nadcore's gradient: for LeNet through the command line, ``python -m nadcore nads --model lenet
--networks N --method gradient`` (N = ``--gradient-networks``, 8,192 by default), reading
``meta.networks_per_second`` (sampling only: the parameter draw, the gradients and the float64
accumulation; not the final eigendecompositions); for other models ``compute_nads``.

All sides run in one process under nadcore's allocator setting (``nadcore.kernels.cpu.keep_freed_memory``,
which also speeds up the authors' procedure: measuring them without it would flatter nadcore).
Each repetition times all sides back to back, so every ratio compares runs under the same load;
the table reports the medians over repetitions of the rates and of the per-repetition ratios,
and the 1-minute load average seen. Targets: secant >= 5x the authors' procedure for
LeNet and ResNet-18, LeNet gradient >= 200x at 8,192 networks.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import torch  # noqa: E402
from common import load, machine, median  # noqa: E402

from nadcore import nads  # noqa: E402
from nadcore.kernels.cpu import keep_freed_memory  # noqa: E402
from nadcore.nets import REGISTRY  # noqa: E402

# networks per measurement at --scale 1: (authors, nadcore secant, nadcore gradient)
COUNTS = {
    "lenet": (30, 400, 8192),
    "resnet18": (1, 4, 64),
    "vgg11": (1, 8, 128),
    "densenet121": (1, 2, 32),
    "logreg": (50, 500, 20000),
}


def authors_procedure(spec: str, n: int, seed: int = 0) -> float:
    """Networks per second of the authors' finite-difference procedure (step 100)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(1, 32, 32, generator=g)
    D = x.numel()
    v = torch.eye(D).view(D, 1, 32, 32)
    torch.manual_seed(seed)  # their networks come from torch's global generator
    t0 = time.perf_counter()
    for i in range(n):
        model = REGISTRY[spec](1, 1).eval()  # the constructor: PyTorch's default initialisation
        fn = lambda z: -model(z)  # noqa: E731  (as in their code)
        plus, minus = x[None] + 100 * v, x[None] - 100 * v
        jac = ((fn(plus) - fn(minus)) / 200).detach()[:, 0]
        assert jac.shape == (D,)
    return n / (time.perf_counter() - t0)


def nadcore_rate(spec: str, n: int, method: str, precision: str = "float32") -> float:
    r = nads.compute_nads(spec, num_networks=max(n, 2), seed=0, method=method, device="cpu", precision=precision)
    return r.meta["networks_per_second"]


def cli_gradient_rate(spec: str, n: int) -> float:
    """networks_per_second of ``python -m nadcore nads ... --method gradient`` (this checkout)."""
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "g.npz"
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "nadcore",
                "nads",
                "--model",
                spec,
                "--networks",
                str(n),
                "--method",
                "gradient",
                "--device",
                "cpu",
                "--out",
                str(out),
                "--quiet",
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=True,
        )
    return float(json.loads(run.stdout.splitlines()[0])["networks_per_second"])


def bench_model(spec: str, reps: int, scale: float, grad_n: int | None, bf16: bool) -> dict:
    a_n, s_n, g_n = (max(1, int(round(c * scale))) for c in COUNTS[spec])
    if spec == "lenet" and grad_n:
        g_n = grad_n
    runs = []
    if a_n > 1:
        authors_procedure(spec, 2)  # warm-up: the first networks built in a process are slower
    for r in range(reps):
        row = {"load_before": load()}
        row["authors"] = authors_procedure(spec, a_n, seed=r)
        row["secant"] = nadcore_rate(spec, s_n, "secant")
        if bf16:
            row["secant_bf16"] = nadcore_rate(spec, s_n, "secant", "bf16")
        row["gradient"] = cli_gradient_rate(spec, g_n) if spec == "lenet" else nadcore_rate(spec, g_n, "gradient")
        row["load_after"] = load()
        runs.append(row)
        print(f"  {spec} rep {r + 1}: " + ", ".join(f"{k} {v:.3g}" for k, v in row.items()), flush=True)
    out = {"model": spec, "networks": {"authors": a_n, "secant": s_n, "gradient": g_n}, "runs": runs}
    for k in ("authors", "secant", "secant_bf16", "gradient"):
        if k in runs[0]:
            out[k] = median([x[k] for x in runs])
            if k != "authors":
                out[f"{k}_ratio"] = median([x[k] / x["authors"] for x in runs])
    out["load"] = median([x["load_before"] for x in runs] + [x["load_after"] for x in runs])
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="lenet,resnet18")
    ap.add_argument("--reps", type=int, default=3, help="interleaved repetitions (medians reported)")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply the network counts")
    ap.add_argument("--gradient-networks", type=int, default=8192, help="LeNet gradient networks (CLI)")
    ap.add_argument("--bf16", action="store_true", help="also time precision='bf16' for the secant")
    ap.add_argument("--json", default=None, help="also write the results here")
    a = ap.parse_args(argv)
    keep_freed_memory()  # every side runs under nadcore's allocator setting
    m = machine()
    print(f"{m['cpu']}, {m['cores']} cores, torch {m['torch']}, {m['threads']} threads; load {load()}")
    rows = [bench_model(s, a.reps, a.scale, a.gradient_networks, a.bf16) for s in a.models.split(",")]
    print(
        f"\n{'model':<12}{'authors':>10}{'secant':>10}{'gradient':>11}{'secant/auth':>13}"
        f"{'grad/auth':>11}{'load':>7}   (networks per second, medians of {a.reps})"
    )
    for r in rows:
        print(
            f"{r['model']:<12}{r['authors']:>10.3g}{r['secant']:>10.3g}{r['gradient']:>11.4g}"
            f"{r['secant_ratio']:>12.1f}x{r['gradient_ratio']:>10.0f}x{r['load']:>7.1f}"
        )
        if "secant_bf16" in r:
            print(f"{'':<12}bf16 secant {r['secant_bf16']:.3g}/s ({r['secant_bf16_ratio']:.1f}x)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"machine": m, "reps": a.reps, "scale": a.scale, "rows": rows}, f, indent=1)
    return rows


if __name__ == "__main__":
    main()
