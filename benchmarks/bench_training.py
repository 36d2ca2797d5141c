"""Training throughput on D(v): a plain loop of ``train_classifier`` vs ``train_many`` (batched).

Run on a quiet machine:  python benchmarks/bench_training.py [--model lenet] [--models 16]
    [--n-train 1024] [--epochs 2] [--chunks 4,8,16] [--threads N] [--processes 2] [--json out.json]

Both sides train the same models (same initialisations, datasets and batch orders: the results
agree to float precision, see tests/test_train.py) with the original recipe (SGD, batch 128,
linear decay, clipping 0.5). "Loop" is what one would write by hand: ``train_classifier`` on each
``nn.Module`` in turn. "Batched" trains ``chunk`` models per call of ``train_many`` (LeNet: grouped
channels-last convolutions + batched matrix products; other buffer-free models: ``vmap``).
``--processes P`` also measures P one-thread worker processes each running ``train_many`` on its
share of the models (how chapter 3 runs its sweeps on a small CPU). Reported: models trained per
minute and the ratio batched / loop, in one run. Target on the project's 2-core CPU: >= 3x for
LeNet on 1x32x32.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import multiprocessing as mp
import time

import torch

from nadcore.data import directional_train_test, fourier_basis_vector
from nadcore.models import build_model
from nadcore.train import train_classifier, train_many


def make_problem(model: str, n_models: int, n_train: int, seed: int = 0):
    data, models = [], []
    for i in range(n_models):
        v = fourier_basis_vector(2 * (i % 8) - 8, 2 * (i // 8) - 8)
        data.append(directional_train_test(v, n_train, 256, 3.0, 1.0,
                                           torch.Generator().manual_seed(seed + i)))
        torch.manual_seed(seed + 1000 + i)
        models.append(build_model(model))
    return data, models


SETTINGS = dict(batch_size=128, max_lr=0.5)


def run_loop(model, n_models, n_train, epochs):
    data, models = make_problem(model, n_models, n_train)
    t0 = time.perf_counter()
    for i, (m, d) in enumerate(zip(models, data)):
        train_classifier(m, d[0], d[1], epochs=epochs, generator=torch.Generator().manual_seed(i),
                         x_test=d[2], y_test=d[3], device="cpu", **SETTINGS)
    return time.perf_counter() - t0


def run_batched(model, n_models, n_train, epochs, chunk, threads=None):
    if threads:
        torch.set_num_threads(threads)
    data, models = make_problem(model, n_models, n_train)
    t0 = time.perf_counter()
    for s in range(0, n_models, chunk):
        d = data[s:s + chunk]
        train_many(models[s:s + chunk], [a[0] for a in d], [a[1] for a in d], epochs=epochs,
                   generators=[torch.Generator().manual_seed(s + i) for i in range(len(d))],
                   xs_test=[a[2] for a in d], ys_test=[a[3] for a in d], device="cpu", **SETTINGS)
    return time.perf_counter() - t0


def run_processes(model, n_models, n_train, epochs, chunk, processes):
    per = -(-n_models // processes)
    with cf.ProcessPoolExecutor(processes, mp_context=mp.get_context("spawn")) as ex:
        # warm the workers up (imports) before timing
        list(ex.map(run_batched, [model] * processes, [1] * processes, [128] * processes,
                    [1] * processes, [1] * processes, [1] * processes))
        t0 = time.perf_counter()
        list(ex.map(run_batched, [model] * processes, [per] * processes, [n_train] * processes,
                    [epochs] * processes, [chunk] * processes, [1] * processes))
        return time.perf_counter() - t0, per * processes


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="lenet")
    ap.add_argument("--models", type=int, default=16, help="models trained by each method")
    ap.add_argument("--n-train", type=int, default=1024)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--chunks", default="4,8,16", help="models per train_many call")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    ap.add_argument("--processes", type=int, default=2, help="also time P one-thread processes (0: skip)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    if a.threads:
        torch.set_num_threads(a.threads)
    nth = torch.get_num_threads()
    steps = a.epochs * -(-a.n_train // 128)
    print(f"{a.model}, 1x32x32, {a.models} models x {a.epochs} epochs x {a.n_train} samples "
          f"({steps} SGD steps of 128 per model), torch threads: {nth}")
    run_batched(a.model, 2, 256, 1, 2)  # warm-up (allocator, oneDNN kernels)
    t_loop = run_loop(a.model, a.models, a.n_train, a.epochs)
    rate_loop = a.models / t_loop * 60
    out = {"model": a.model, "threads": nth, "models": a.models, "n_train": a.n_train,
           "epochs": a.epochs, "loop_s": t_loop, "loop_models_per_min": rate_loop, "batched": {}}
    print(f"  loop of train_classifier        : {t_loop:7.2f} s  {rate_loop:8.1f} models/min")
    best = 0.0
    for c in [int(c) for c in a.chunks.split(",") if c]:
        t = run_batched(a.model, a.models, a.n_train, a.epochs, c)
        rate = a.models / t * 60
        best = max(best, rate)
        out["batched"][c] = {"seconds": t, "models_per_min": rate, "ratio": rate / rate_loop}
        print(f"  train_many, {c:3d} models per call: {t:7.2f} s  {rate:8.1f} models/min  "
              f"ratio {rate / rate_loop:5.2f}x")
    if a.processes and a.processes > 1:
        c = max(out["batched"], key=lambda k: out["batched"][k]["models_per_min"]) if out["batched"] else 8
        t, n = run_processes(a.model, a.models, a.n_train, a.epochs, c, a.processes)
        rate = n / t * 60
        best = max(best, rate)
        out["processes"] = {"processes": a.processes, "chunk": c, "seconds": t, "models": n,
                            "models_per_min": rate, "ratio": rate / rate_loop}
        print(f"  train_many in {a.processes} one-thread processes ({c}/call): {t:7.2f} s  "
              f"{rate:8.1f} models/min  ratio {rate / rate_loop:5.2f}x")
    out["best_ratio"] = best / rate_loop
    print(f"best speed-up over the plain loop: {out['best_ratio']:.2f}x")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return out


if __name__ == "__main__":
    main()
