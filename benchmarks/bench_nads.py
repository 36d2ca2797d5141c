"""NAD sampling throughput: the authors' secant procedure vs nadcore's secant vs nadcore's gradient.

Run on a quiet machine:  python benchmarks/bench_nads.py [--models lenet,resnet18] [--json out.json]

The authors' procedure, as written in their code (nad_computation.py + utils.py): one network at
a time, built by the constructor, in eval mode, all 2*D perturbed inputs in one batch through
``-model(x)`` with autograd enabled, then ``/ (2*scale)``. nadcore's secant: no autograd, cache-
sized chunks, channels-last, one worker process of one thread per core. nadcore's gradient:
exact autograd gradients, vmapped over networks for small models. Targets on a 2-core CPU: secant
>= 3x the authors' procedure on LeNet; gradient >= 200x.
"""
from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import torch

from nadcore import nads
from nadcore.models import build_model

# networks per measurement: (authors, nadcore secant, nadcore gradient)
COUNTS = {"lenet": (20, 200, 4096), "resnet18": (1, 4, 64), "vgg11": (1, 8, 128),
          "densenet121": (1, 2, 32), "logreg": (50, 500, 20000)}


def authors_procedure(spec: str, n: int, seed: int = 0) -> float:
    """Networks per second of the authors' finite-difference procedure (step 100)."""
    torch.manual_seed(seed)
    x = torch.randn(1, 32, 32)
    D = x.numel()
    v = torch.eye(D).view(D, 1, 32, 32)
    t0 = time.perf_counter()
    for _ in range(n):
        model = build_model(spec, 1, 1, check=False).eval()
        fn = lambda z: -model(z)  # noqa: E731  (as in their code)
        plus, minus = x[None] + 100 * v, x[None] - 100 * v
        jac = ((fn(plus) - fn(minus)) / 200).detach()[:, 0]
        assert jac.shape == (D,)
    return n / (time.perf_counter() - t0)


def nadcore_rate(spec: str, n: int, method: str) -> float:
    r = nads.compute_nads(spec, num_networks=max(n, 2), seed=0, method=method, device="cpu")
    return r.meta["networks_per_second"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="lenet,resnet18")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply the network counts")
    ap.add_argument("--json", default=None, help="also write the results here")
    args = ap.parse_args()
    rows = []
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} cores")
    print(f"{'model':<12}{'authors':>12}{'secant':>12}{'gradient':>12}{'secant/auth':>13}{'grad/auth':>11}"
          "   (networks per second)")
    for spec in args.models.split(","):
        a_n, s_n, g_n = (max(1, int(c * args.scale)) for c in COUNTS[spec])
        a = authors_procedure(spec, a_n)
        s = nadcore_rate(spec, s_n, "secant")
        g = nadcore_rate(spec, g_n, "gradient")
        rows.append({"model": spec, "authors": a, "secant": s, "gradient": g,
                     "secant_speedup": s / a, "gradient_speedup": g / a,
                     "networks": {"authors": a_n, "secant": s_n, "gradient": g_n}})
        print(f"{spec:<12}{a:>12.3f}{s:>12.3f}{g:>12.1f}{s / a:>12.1f}x{g / a:>10.0f}x", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"torch": torch.__version__, "cores": os.cpu_count(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
