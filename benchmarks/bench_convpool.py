"""Where train_many's LeNet step spends its time: each native convolution kernel, timed inside
real training.

Run on a quiet machine:  python benchmarks/bench_convpool.py [--model lenet] [--models 4] [--reps 5] [--json F]

Trains ``--models`` LeNets on D(v) with ``train_many`` (one thread, batch 128, the authors' recipe,
as ``bench_training.py``) and times every call into ``nadcore.kernels.native``'s two convolution kernels
(``convpool_forward``, ``convpool_backward``) for LeNet's two stages: conv1 (1 -> 6 channels,
32x32 input, no input gradient) and conv2 (6 -> 16 channels, 14x14 input, with its input
gradient); ``--model lenet_nopool``: the same without the pools (``conv_relu``: conv2 on a 28x28
input). The data of each call is whatever training left in the caches, so these are the
times a step really pays (a kernel called on the same data in a loop runs faster: that data
stays in cache). Prints per stage and direction the median milliseconds per call of
``models`` x 128 examples and the rate in model FLOPs (the forward's multiply-adds x 2; a backward
counts twice that with an input gradient, once without), and the whole ``train_many`` call, with
these kernels and with torch's grouped convolutions (the path without them). Needs the native
kernels (a C compiler).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import torch  # noqa: E402
from bench_training import SETTINGS, make_problem  # noqa: E402
from common import load, machine, median  # noqa: E402

from nadcore.kernels import native  # noqa: E402
from nadcore.kernels.cpu import keep_freed_memory  # noqa: E402
from nadcore.train import train_many  # noqa: E402

# model -> Cin -> (stage, multiply-adds per example)
STAGES = {
    "lenet": {1: ("conv1", 28 * 28 * 6 * 25), 6: ("conv2", 10 * 10 * 16 * 150)},
    "lenet_nopool": {1: ("conv1", 28 * 28 * 6 * 25), 6: ("conv2", 24 * 24 * 16 * 150)},
}


class _Timed:
    """Stands in for the loaded library: times each kernel call, keyed by (kernel, Cin, batch)."""

    def __init__(self, lib):
        self.lib, self.times = lib, {}

    def __getattr__(self, name):
        fn = getattr(self.lib, name)

        def timed(*args):
            t0 = time.perf_counter()
            fn(*args)
            self.times.setdefault((name, args[4], args[1]), []).append(time.perf_counter() - t0)

        return timed


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="lenet", choices=sorted(STAGES))
    ap.add_argument("--models", type=int, default=4, help="models per train_many call")
    ap.add_argument("--n-train", type=int, default=1024)
    ap.add_argument("--reps", type=int, default=5, help="train_many calls timed (after one warm-up)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    if not native.available():
        raise SystemExit("nadcore.kernels.native is unavailable (no C compiler?): nothing to time")
    keep_freed_memory()
    torch.set_num_threads(1)
    m = machine()
    print(
        f"{a.model}, {a.models} models x {a.n_train} samples, 2 epochs per call, batch 128; {m['cpu']}, "
        f"one thread, torch {m['torch']}; load {load()}"
    )
    data, models = make_problem(a.model, a.models, a.n_train)

    def call():
        t0 = time.perf_counter()
        train_many(
            models,
            [d[0] for d in data],
            [d[1] for d in data],
            epochs=2,
            generators=[torch.Generator().manual_seed(i) for i in range(a.models)],
            xs_test=[d[2] for d in data],
            ys_test=[d[3] for d in data],
            device="cpu",
            **SETTINGS,
        )
        return time.perf_counter() - t0

    lib = native._lib
    try:  # the same call with torch's grouped convolutions (the path without the library)
        native._lib = False
        call()  # warm-up
        torch_calls = [call() for _ in range(a.reps)]
    finally:
        native._lib = lib
    call()  # warm-up
    timed = _Timed(native._lib)
    native._lib = timed
    try:
        calls = [call() for _ in range(a.reps)]
    finally:
        native._lib = timed.lib
    n = a.models * 128
    rows = {}
    print(f"\n{'kernel':<22}{'ms per call':>12}{'GFLOP/s':>9}{'calls':>7}")
    for (name, cin, batch), ts in sorted(timed.times.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        if batch != 128:  # the test set's evaluation
            continue
        stage, macs = STAGES[a.model].get(cin, (f"Cin={cin}", 0))
        direction = "forward" if name == "convpool_forward" else "backward"
        flops = 2 * macs * n * (1 if direction == "forward" or cin == 1 else 2)
        ms = median(ts) * 1e3
        rows[f"{stage} {direction}"] = {"ms": ms, "gflops": flops / ms / 1e6, "calls": len(ts)}
        print(f"{stage + ' ' + direction:<22}{ms:>12.3f}{flops / ms / 1e6:>9.1f}{len(ts):>7}")
    total, torch_total = median(calls), median(torch_calls)
    print(
        f"train_many call: {total * 1e3:.1f} ms with the C kernels, {torch_total * 1e3:.1f} ms with "
        f"torch's convolutions (medians of {a.reps}); load {load()}"
    )
    if a.json:
        Path(a.json).write_text(
            json.dumps(
                {
                    "machine": m,
                    "model": a.model,
                    "models": a.models,
                    "kernels": rows,
                    "call_ms": total * 1e3,
                    "torch_call_ms": torch_total * 1e3,
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
