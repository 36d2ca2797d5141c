#!/usr/bin/env python
"""How far does another CPU's rounding move a trained run? (the model behind the CPU margin)

    python scripts/cpu_rounding.py [--quick]

Trains LeNet on D(v) (sigma 3, 4,000 training and 4,000 test samples, 8 epochs of the authors'
recipe, one thread) on two cells of Fig. 1's grid where it sits near chance, for four seeds, twice:
once on this machine's default kernels and once with PyTorch, oneDNN and MKL held to AVX2
(:data:`nadcore.book.build.AVX2_KERNELS`), which rounds as another CPU would.
Prints, per cell, the test accuracies, the change of each run against the seed-to-seed spread, and
the change of the weights against the distance between two seeds' weights. The evidence module's
CPU margin for runs a build trained (:func:`nadcore.book.evidence.cpu_margin`) assumes the worst
case, a full redraw (change = the spread of a new seed); this says how near a run comes to it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nadcore.book.build import AVX2_KERNELS  # noqa: E402

CELLS = [(0, 12), (4, 12)]
PATHS = {"default": {}, "AVX2": AVX2_KERNELS}


def train(out: Path, quick: bool) -> None:
    """One pass: every cell and seed on the kernels this process was started with."""
    import torch

    from nadcore.data import directional_train_test, fourier_basis_vector
    from nadcore.nets.registry import build_model
    from nadcore.train.loops import train_classifier

    torch.set_num_threads(1)
    n, epochs, seeds = (400, 1, 2) if quick else (4000, 8, 4)
    runs = {}
    for cell in CELLS[:1] if quick else CELLS:
        for seed in range(seeds):
            g = torch.Generator().manual_seed(1000 + seed)
            x, y, xt, yt = directional_train_test(fourier_basis_vector(*cell), n, n, 3.0, generator=g)
            model = build_model("lenet", 1, 1, seed=seed)
            r = train_classifier(
                model,
                x,
                y,
                epochs=epochs,
                max_lr=0.05,
                momentum=0.9,
                generator=torch.Generator().manual_seed(seed),
                device="cpu",
                x_test=xt,
                y_test=yt,
            )
            w = torch.cat([p.detach().flatten() for p in model.parameters()]).double().numpy()
            runs[f"{cell[0]},{cell[1]}/{seed}"] = {"acc": float(r.test_acc), "w": w.tolist()}
    out.write_text(json.dumps(runs))


def summary(a: dict, b: dict) -> list[str]:
    """Per cell: the accuracies on both paths, the mean change against the seeds' spread, and the
    weights' change against two seeds' distance."""
    lines = []
    for cell in sorted({k.split("/")[0] for k in a}):
        seeds = sorted(int(k.split("/")[1]) for k in a if k.startswith(cell + "/"))
        acc_a = np.array([a[f"{cell}/{s}"]["acc"] for s in seeds])
        acc_b = np.array([b[f"{cell}/{s}"]["acc"] for s in seeds])
        w_a = [np.array(a[f"{cell}/{s}"]["w"]) for s in seeds]
        w_b = [np.array(b[f"{cell}/{s}"]["w"]) for s in seeds]
        moved = np.mean([np.linalg.norm(p - q) for p, q in zip(w_a, w_b)])
        apart = np.mean([np.linalg.norm(w_a[i] - w_a[i + 1]) for i in range(len(seeds) - 1)])
        sd = acc_a.std(ddof=1)
        change = np.abs(acc_a - acc_b).mean()
        redraw = sd * np.sqrt(2) * np.sqrt(2 / np.pi)  # the mean |change| of a run drawn again
        lines += [
            f"cell ({cell}): test accuracy default {np.round(acc_a, 4).tolist()}, AVX2 {np.round(acc_b, 4).tolist()}",
            f"  mean |change| {change:.4f} = {change / redraw:.2f} of a new seed's "
            f"(sd over seeds {sd:.4f}; a redraw changes a run by sd sqrt(2) sqrt(2/pi) = {redraw:.4f} on average)",
            f"  weights moved {moved:.3f}, two seeds' weights {apart:.3f} apart ({moved / apart:.3f})",
        ]
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one cell, two seeds, one epoch (a smoke test)")
    ap.add_argument("--train", type=Path, help=argparse.SUPPRESS)  # one pass, in a child process
    a = ap.parse_args(argv)
    if a.train:
        train(a.train, a.quick)
        return 0
    passes = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, env in PATHS.items():
            out = Path(tmp) / f"{name}.json"
            cmd = [sys.executable, __file__, "--train", str(out)] + (["--quick"] if a.quick else [])
            subprocess.run(cmd, check=True, cwd=ROOT, env={**os.environ, **env, "PYTHONPATH": str(ROOT)})
            passes[name] = json.loads(out.read_text())
    print("\n".join(summary(passes["default"], passes["AVX2"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
