"""Where LeNet's gradient NADs spend their time on the CPU: the three steps of
``nadcore.nads.sampling`` for one thread (one NAD lane), in microseconds per network.

Run on a quiet machine:  python benchmarks/bench_gradient_steps.py [--networks 4096] [--reps 3]
``NADCORE_NATIVE=0`` times the torch/numpy path (no native kernels) for comparison.

Steps, per block of 256 networks (the block size of the sampler's LeNet gradient path): drawing
the parameters (``kernels.draw.draw_parameters``, one thread), the input gradients
(``kernels.lenet.lenet_gradients``), and the float64 accumulation of g g^T (``GroupSums.add``, one
chunk of 256 rows at a time). Medians over repetitions.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import numpy as np  # noqa: E402
import torch  # noqa: E402
from common import load, machine, median  # noqa: E402

from nadcore import kernels  # noqa: E402
from nadcore.kernels.draw import draw_parameters, parameter_buffers  # noqa: E402
from nadcore.kernels.lenet import lenet_gradients  # noqa: E402
from nadcore.nads.covariance import GroupSums  # noqa: E402
from nadcore.nads.estimators import evaluation_point  # noqa: E402
from nadcore.nads.sampling import BLOCKS, network_seeds  # noqa: E402
from nadcore.nets import build_model, init_plan  # noqa: E402

BLOCK = BLOCKS["fast", "gradient"]


def one_run(n: int) -> dict:
    plan = init_plan(build_model("lenet", 1, 1, 32, check=False))
    buffers = parameter_buffers(plan, BLOCK)
    x = evaluation_point((1, 32, 32), 0)
    acc = GroupSums(1024)
    t = {"draw": 0.0, "gradients": 0.0, "accumulation": 0.0}
    for b0 in range(0, n, BLOCK):
        idx = np.arange(b0, min(b0 + BLOCK, n))
        t0 = time.perf_counter()
        params = draw_parameters(plan, network_seeds(0, idx), 1, buffers)
        t1 = time.perf_counter()
        G = lenet_gradients(params, x)
        t2 = time.perf_counter()
        acc.add(G.numpy())
        t["draw"] += t1 - t0
        t["gradients"] += t2 - t1
        t["accumulation"] += time.perf_counter() - t2
    return {k: v / n * 1e6 for k, v in t.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--networks", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    m = machine()
    path = "native kernels" if kernels.path() == "native" else "torch/numpy (NADCORE_NATIVE=0 or no compiler)"
    print(f"{m['cpu']}, {m['cores']} cores, torch {m['torch']}, 1 thread; {path}; load {load()}")
    one_run(BLOCK)  # warm-up
    runs = [one_run(a.networks) for _ in range(a.reps)]
    med = {k: median([r[k] for r in runs]) for k in runs[0]}
    total = sum(med.values())
    print(
        "us per network: "
        + ", ".join(f"{k} {v:.1f}" for k, v in med.items())
        + f"; total {total:.1f} ({1e6 / total:,.0f} networks/s per thread); load {load()}"
    )
    return med


if __name__ == "__main__":
    main()
