"""What would kernels that round alike on every x86 CPU cost? Training time on three kernel paths.

Run on a quiet machine:  python benchmarks/bench_kernel_paths.py [--reps 2] [--quick] [--json out.json]

A build's trained values move from one CPU to another because their kernels add in another order
(``results/builds/README.md``). This trains the same two workloads, each in a child process of
its own with one thread, on three paths, and prints the seconds (median over ``--reps``), their
ratio to this machine's default path, and a digest of the trained weights:

- ``default``: this CPU's best kernels (AVX-512 where it has them);
- ``AVX2``: PyTorch, oneDNN and MKL held to AVX2 (``ATEN_CPU_CAPABILITY=avx2 DNNL_MAX_CPU_ISA=AVX2
  MKL_ENABLE_INSTRUCTIONS=AVX2``), the instruction set every x86 CPU the book meets has; oneDNN
  does not promise equal results on two CPUs even so (its blocking may follow the cache sizes);
- ``portable``: PyTorch held to AVX2, oneDNN off (``torch.backends.mkldnn.enabled = False``: its
  own convolutions on MKL's matrix products) and MKL in its reproducible mode on the compatible
  branch (``MKL_CBWR=COMPATIBLE``), the one MKL documents as giving the same results on Intel and
  other x86 CPUs.

Workloads: LeNet on D(v) (4,000 samples of 1x32x32, 5 epochs of the authors' recipe) and
ResNet-18 at width 16 on 3x32x32 inputs (1,000 samples, one epoch). Equal digests on two paths
mean the two round alike on this CPU; different ones, that the path changes the result.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nadcore.book.build import AVX2_KERNELS  # noqa: E402

PATHS = {
    "default": {},
    "AVX2": AVX2_KERNELS,
    "portable": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "COMPATIBLE", "NADBOOK_BENCH_NO_ONEDNN": "1"},
}
WORKLOADS = {"lenet": ("lenet", 1, 4000, 5), "resnet18 width 16": ("resnet18?width=16", 3, 1000, 1)}


def train(workload: str, quick: bool) -> dict:
    """One workload on the kernels this process was started with: seconds and a weight digest."""
    import numpy as np
    import torch

    from nadcore.nets.registry import build_model
    from nadcore.train.loops import train_classifier

    torch.set_num_threads(1)
    if os.environ.get("NADBOOK_BENCH_NO_ONEDNN"):
        torch.backends.mkldnn.enabled = False
    spec, channels, n, epochs = WORKLOADS[workload]
    n, epochs = (min(n, 256), 1) if quick else (n, epochs)
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.standard_normal((n, channels, 32, 32)), dtype=torch.float32)
    y = torch.tensor(rng.integers(0, 2, n) * 2 - 1, dtype=torch.float32)
    model = build_model(spec, channels, 1, seed=0)
    t = time.perf_counter()
    train_classifier(model, x, y, epochs=epochs, max_lr=0.05, generator=torch.Generator().manual_seed(0), device="cpu")
    seconds = time.perf_counter() - t
    digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.parameters())).hexdigest()[:12]
    return {"seconds": seconds, "digest": digest, "torch": torch.backends.cpu.get_cpu_capability()}


def run(reps: int, quick: bool) -> dict:
    """Every workload on every path, ``reps`` times, each run in a child process."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for workload in WORKLOADS:
            for name, env in PATHS.items():
                runs = []
                for _ in range(reps):
                    f = Path(tmp) / "run.json"
                    cmd = [sys.executable, __file__, "--child", workload, "--out", str(f)] + (
                        ["--quick"] if quick else []
                    )
                    subprocess.run(cmd, check=True, cwd=ROOT, env={**os.environ, **env, "PYTHONPATH": str(ROOT)})
                    runs.append(json.loads(f.read_text()))
                out.setdefault(workload, {})[name] = {
                    "seconds": statistics.median(r["seconds"] for r in runs),
                    "digest": runs[0]["digest"],
                    "torch": runs[0]["torch"],
                    "same_every_rep": len({r["digest"] for r in runs}) == 1,
                }
    return out


def table(results: dict) -> list[str]:
    lines = [
        "| workload | path | torch kernels | seconds | vs default | weights digest |",
        "|---|---|---|---:|---:|---|",
    ]
    for workload, paths in results.items():
        base = paths["default"]["seconds"]
        for name, r in paths.items():
            lines.append(
                f"| {workload} | {name} | {r['torch']} | {r['seconds']:.2f} | {r['seconds'] / base:.2f} | {r['digest']} |"
            )
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2, help="runs per workload and path (the median is shown)")
    ap.add_argument("--quick", action="store_true", help="256 samples, one epoch (a smoke test of the script)")
    ap.add_argument("--json", type=Path, help="also write the results here")
    ap.add_argument("--child", choices=sorted(WORKLOADS), help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        a.out.write_text(json.dumps(train(a.child, a.quick)))
        return 0
    from nadcore.runtime import cpu_model

    results = run(a.reps, a.quick)
    machine = cpu_model()
    print(f"{machine}; one thread per run, median of {a.reps}")
    print("\n".join(table(results)))
    if a.json:
        a.json.write_text(json.dumps({"machine": machine, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
