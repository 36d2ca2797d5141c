"""Training throughput on D(v): a plain loop of ``train_classifier`` vs ``train_many`` (batched).

Run on a quiet machine:  python benchmarks/bench_training.py [--model lenet] [--models 16]
    [--n-train 1024] [--epochs 2] [--chunks 4,8] [--processes 2] [--reps 3] [--json out.json]

Both sides train the same models (same initialisations, datasets and batch orders: the results
agree to float precision, see tests/test_train.py) with the authors' recipe (SGD, batch 128,
linear decay, clipping 0.5) on 1x32x32 inputs. "Loop" is what one would write by hand:
``train_classifier`` on each ``nn.Module`` in turn, torch's default threads. "Batched" trains
``chunk`` models per call of ``train_many`` in this process (torch's default threads), and
``--processes P`` runs P one-thread worker processes, each calling ``train_many`` on its share of
the models. Each repetition times every configuration back to back (same load); the medians over
repetitions are reported, with the 1-minute load average. Both sides run under nadcore's
allocator setting (``nadcore.kernels.cpu.keep_freed_memory``, which ``train_classifier`` also applies).

Efficiency. FLOPs are counted analytically from the model: ``F`` = the multiply-adds x 2 of the
Conv2d and Linear layers of one forward pass of one input (``nadcore.nets.forward_flops``;
LeNet: 0.83 MFLOP). One SGD step on one example counts ``3 F``: the forward pass, and a backward
pass counted as twice the forward (gradients with respect to the weights and to each layer's
input; the input gradient of the first layer, which is not computed, is counted too). The test
set is evaluated once (``F`` per example). Pooling, activations, losses and the optimiser are not
counted. These are the model's FLOPs (as in "model FLOPs utilisation"), not those executed: on the
CPU, train_many's LeNet backward (nadcore.kernels.native) skips the convolution outputs that lost their
pooling window or were zeroed by the ReLU, about an eighth of a dense convolution backward, so the
fraction below says how fast training goes in the model's FLOPs, not how busy the FMA units are.
``gflops`` = these FLOPs / the best configuration's seconds; ``peak_gflops`` = the faster of
torch's two fp32 2048x2048 matrix products (BLAS's and oneDNN's, ``common.matmul_peak``) with all
threads, measured in the same run; ``peak_fraction`` their ratio. (Until 2026-11-23 the peak was
BLAS's product alone, which on AMD CPUs runs MKL's AVX2 path at less than half of oneDNN's rate:
the fractions reported before then were about twice too high.) Below 50%, a torch.profiler table of one ``train_many`` call shows which operations hold it
back. Targets: ratio_vs_loop >= 4 for LeNet, peak_fraction >= 0.5.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import multiprocessing as mp
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import torch  # noqa: E402
from common import load, machine, matmul_peak, median  # noqa: E402

from nadcore.data import directional_train_test, fourier_basis_vector  # noqa: E402
from nadcore.kernels.cpu import keep_freed_memory  # noqa: E402
from nadcore.nets import build_model, forward_flops  # noqa: E402
from nadcore.train import train_classifier, train_many  # noqa: E402

SETTINGS = dict(batch_size=128, max_lr=0.5)
N_TEST = 256


def make_problem(model: str, n_models: int, n_train: int, seed: int = 0):
    data, models = [], []
    for i in range(n_models):
        v = fourier_basis_vector(2 * (i % 8) - 8, 2 * (i // 8) - 8)
        data.append(
            directional_train_test(v, n_train, N_TEST, 3.0, 1.0, generator=torch.Generator().manual_seed(seed + i))
        )
        models.append(build_model(model, seed=(seed, 1000 + i)))
    return data, models


def flops_per_model(model: str, n_train: int, epochs: int) -> float:
    """Analytic training FLOPs of one model (see the module docstring)."""
    F = forward_flops(build_model(model, check=False), (1, 32, 32))
    return 3 * F * n_train * epochs + F * N_TEST


def run_loop(model, n_models, n_train, epochs):
    data, models = make_problem(model, n_models, n_train)
    t0 = time.perf_counter()
    for i, (m, d) in enumerate(zip(models, data)):
        train_classifier(
            m,
            d[0],
            d[1],
            epochs=epochs,
            generator=torch.Generator().manual_seed(i),
            x_test=d[2],
            y_test=d[3],
            device="cpu",
            **SETTINGS,
        )
    return time.perf_counter() - t0


def run_batched(model, n_models, n_train, epochs, chunk, threads=None, span=False):
    """Seconds to train the models (``span``: the (start, end) of that interval instead)."""
    if threads:
        torch.set_num_threads(threads)
    data, models = make_problem(model, n_models, n_train)
    t0 = time.perf_counter()
    for s in range(0, n_models, chunk):
        d = data[s : s + chunk]
        train_many(
            models[s : s + chunk],
            [a[0] for a in d],
            [a[1] for a in d],
            epochs=epochs,
            generators=[torch.Generator().manual_seed(s + i) for i in range(len(d))],
            xs_test=[a[2] for a in d],
            ys_test=[a[3] for a in d],
            device="cpu",
            **SETTINGS,
        )
    return (t0, time.perf_counter()) if span else time.perf_counter() - t0


def run_processes(ex, model, n_models, n_train, epochs, chunk, processes):
    """Wall time from the first worker's start of training to the last one's end (perf_counter
    is the system's monotonic clock, shared by the processes; making the problems is not timed,
    as for the other configurations)."""
    per = -(-n_models // processes)
    spans = list(
        ex.map(
            run_batched,
            [model] * processes,
            [per] * processes,
            [n_train] * processes,
            [epochs] * processes,
            [chunk] * processes,
            [1] * processes,
            [True] * processes,
        )
    )
    return max(e for _, e in spans) - min(s for s, _ in spans), per * processes


def profile_table(model, n_train, chunk, rows=12) -> str:
    """torch.profiler's self-CPU table of one train_many call (one thread, one epoch)."""
    from torch.profiler import profile

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    data, models = make_problem(model, chunk, n_train)
    args = ([a[0] for a in data], [a[1] for a in data])
    kw = dict(epochs=1, device="cpu", **SETTINGS)
    try:
        train_many(models, *args, generators=[torch.Generator().manual_seed(i) for i in range(chunk)], **kw)
        with profile() as p:
            train_many(models, *args, generators=[torch.Generator().manual_seed(i) for i in range(chunk)], **kw)
    finally:
        torch.set_num_threads(threads)
    return p.key_averages().table(sort_by="self_cpu_time_total", row_limit=rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="lenet")
    ap.add_argument("--models", type=int, default=16, help="models trained by each method")
    ap.add_argument("--n-train", type=int, default=1024)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--chunks", default="4,8", help="models per train_many call")
    ap.add_argument("--processes", type=int, default=2, help="also time P one-thread processes (0: skip)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    keep_freed_memory()  # every side runs under nadcore's allocator setting
    m = machine()
    steps = a.epochs * -(-a.n_train // 128)
    print(
        f"{a.model}, 1x32x32, {a.models} models x {a.epochs} epochs x {a.n_train} samples "
        f"({steps} SGD steps of 128 per model); {m['cpu']}, {m['cores']} cores, torch {m['torch']}, "
        f"{m['threads']} threads; load {load()}"
    )
    chunks = [int(c) for c in a.chunks.split(",") if c]
    flops = flops_per_model(a.model, a.n_train, a.epochs)
    peaks = [matmul_peak()]
    run_batched(a.model, 2, 256, 1, 2)  # warm-up (allocator, oneDNN kernels, native kernels)
    run_loop(a.model, 1, 256, 1)  # the same for the loop
    ex = None
    if a.processes > 1:
        ex = cf.ProcessPoolExecutor(a.processes, mp_context=mp.get_context("spawn"))
        list(
            ex.map(
                run_batched,
                [a.model] * a.processes,
                [1] * a.processes,
                [128] * a.processes,
                [1] * a.processes,
                [1] * a.processes,
                [1] * a.processes,
            )
        )  # imports, warm-up
    configs: dict[str, list] = {}
    loads = []
    try:
        for r in range(a.reps):
            loads.append(load())
            t = {"loop": run_loop(a.model, a.models, a.n_train, a.epochs)}
            for c in chunks:
                t[f"train_many({c})"] = run_batched(a.model, a.models, a.n_train, a.epochs, c)
            if ex is not None:
                c = chunks[0]
                sec, n = run_processes(ex, a.model, a.models, a.n_train, a.epochs, c, a.processes)
                t[f"train_many({c}) x {a.processes} processes"] = sec * a.models / n
            for k, v in t.items():
                configs.setdefault(k, []).append(v)
            print(
                f"  rep {r + 1}: " + ", ".join(f"{k} {v:.2f} s" for k, v in t.items()) + f"; load {load()}", flush=True
            )
            loads.append(load())
    finally:
        if ex is not None:
            ex.shutdown()
    peaks.append(matmul_peak())
    loop = configs["loop"]
    out = {
        "model": a.model,
        "machine": m,
        "models": a.models,
        "n_train": a.n_train,
        "epochs": a.epochs,
        "reps": a.reps,
        "load": median(loads),
        "flops_per_model": flops,
        "configs": {},
    }
    for k, ts in configs.items():
        ratio = median([l / t for l, t in zip(loop, ts)])
        out["configs"][k] = {
            "seconds": median(ts),
            "models_per_min": a.models / median(ts) * 60,
            "ratio_vs_loop": ratio,
            "gflops": flops * a.models / median(ts) / 1e9,
        }
    best = max((k for k in configs if k != "loop"), key=lambda k: out["configs"][k]["ratio_vs_loop"])
    out["best"] = best
    out["ratio_vs_loop"] = out["configs"][best]["ratio_vs_loop"]
    out["gflops"] = out["configs"][best]["gflops"]
    out["peak_gflops"] = median(peaks)
    out["peak_fraction"] = out["gflops"] / out["peak_gflops"]
    print(f"\n{'configuration':<36}{'seconds':>9}{'models/min':>12}{'vs loop':>9}{'GFLOP/s':>9}")
    for k, c in out["configs"].items():
        print(f"{k:<36}{c['seconds']:>9.2f}{c['models_per_min']:>12.1f}{c['ratio_vs_loop']:>8.2f}x{c['gflops']:>9.1f}")
    print(
        f"best: {best}: {out['ratio_vs_loop']:.2f}x the loop, {out['gflops']:.1f} GFLOP/s = "
        f"{100 * out['peak_fraction']:.0f}% of the fp32 matmul peak {out['peak_gflops']:.0f} GFLOP/s "
        f"(load {out['load']:.1f})"
    )
    if out["peak_fraction"] < 0.5:
        print(
            f"\nBelow 50% of the peak; where one train_many call ({chunks[0]} models, one thread, "
            "one epoch) spends its time:"
        )
        print(profile_table(a.model, a.n_train, chunks[0]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return out


if __name__ == "__main__":
    main()
