"""Training throughput of the paper's big networks on the CPU, per width: what a campaign cell costs.

Run on an idle machine:  python benchmarks/bench_big_networks.py [--steps 12] [--json out.json]
    [--networks resnet18?width=16,vgg11?width=8,...] [--autocast bf16] [--compile] [--quick]

For each network spec (the registry's widths: ``resnet18?width=16`` ...) it times training steps
of the campaign's recipe (batch 128, one 32x32 channel, two outputs, cross-entropy, SGD with
clipping; ``nadcore.train.train_classifier``'s step) in two layouts of the machine's two cores:
one process with two torch threads, and two processes with one thread each (the campaign's
``--workers 2``; their images/s add up). Both with channels-last memory where the campaign's
training uses it (``nadcore.train.loops.channels_last_applies``).

FLOPs are the model's (``nadcore.nets.forward_flops``: multiply-adds x 2 of the convolutions and
linear layers of one forward pass; a training step on one image counts 3x that). The peak is the
faster of the fp32 matrix products of ``common.matmul_peak`` and a large 3x3 convolution
(128 x 64 x 32 x 32, 64 -> 64 channels, channels-last: oneDNN's direct path), measured in the
same run. ``hours per cell`` is the wall time of one Fig. 1 cell of the campaign (10,000 samples x
20 epochs of training, 10,000 test images) at the faster layout's images/s.

``--autocast bf16`` times the same steps under ``torch.autocast`` in bfloat16 (the training
option ``autocast="bf16"`` of :func:`nadcore.train.train_classifier`), against the peak of the
same matrix product and convolution in bf16: fast on CPUs with avx512_bf16 or AMX, emulated
(slow) on others. The machine line says which of those flags the CPU reports.

``--compile`` times the same steps through ``torch.compile`` (inductor's C++ code for the CPU;
its compilation falls in the two warm-up steps and is not counted): whether fusing DenseNet-121's
many small layers lifts it off its per-layer overhead.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from common import cpu_times, load, machine, matmul_peak, median, steal_share, timed_rate  # noqa: E402

from nadcore.nets import build_model, forward_flops  # noqa: E402
from nadcore.runtime import cpu_flags, native_bf16  # noqa: E402
from nadcore.train.loops import channels_last_applies  # noqa: E402
from nadcore.train.recipe import autocast_context  # noqa: E402

NETWORKS = [
    "resnet18?width=8",
    "resnet18?width=16",
    "resnet18?width=32",
    "vgg11?width=8",
    "vgg11?width=16",
    "vgg11?width=32",
    "densenet121?growth_rate=8",
    "densenet121?growth_rate=16",
]
QUICK = ["resnet18?width=8", "vgg11?width=8"]
BATCH, CELL_IMAGES, CELL_TEST = 128, 10000 * 20, 10000


def conv_peak(reps: int = 5, dtype=torch.float32) -> float:
    """GFLOP/s of a large 3x3 convolution (channels-last) in ``dtype``, median of ``reps``."""
    x = torch.randn(128, 64, 32, 32, dtype=dtype).contiguous(memory_format=torch.channels_last)
    w = torch.randn(64, 64, 3, 3, dtype=dtype).contiguous(memory_format=torch.channels_last)
    return timed_rate(lambda: F.conv2d(x, w, padding=1), 2 * 128 * 64 * 32 * 32 * 64 * 9, reps)


def images_per_second(spec: str, steps: int, threads: int, autocast: str | None = None, compile: bool = False) -> float:
    """Training images/s of ``spec`` with ``threads`` torch threads (the median step of ``steps``
    after two warm-up steps), under bf16 autocast where ``autocast`` says so, and through
    ``torch.compile`` where ``compile`` says so (its compilation falls in the warm-up steps)."""
    torch.set_num_threads(threads)
    model = build_model(spec, 1, 2, seed=0).train()
    x = torch.randn(BATCH, 1, 32, 32)
    if channels_last_applies(model, "cpu"):
        model, x = model.to(memory_format=torch.channels_last), x.contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 2, (BATCH,))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    model = torch.compile(model) if compile else model
    times = []
    for i in range(steps + 2):
        t0 = time.perf_counter()
        opt.zero_grad()
        with autocast_context(autocast, torch.device("cpu")):
            out = model(x)
        F.cross_entropy(out.float(), y).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        opt.step()
        if i >= 2:
            times.append(time.perf_counter() - t0)
    return BATCH / median(times)


def _worker(args):
    return images_per_second(*args)


def measure(spec: str, steps: int, autocast: str | None = None, compile: bool = False) -> dict:
    one = images_per_second(spec, steps, 2, autocast, compile)
    with ProcessPoolExecutor(2, mp_context=get_context("spawn")) as pool:  # a crashed worker raises
        two = sum(pool.map(_worker, [(spec, steps, 1, autocast, compile)] * 2))
    flops = forward_flops(build_model(spec, 1, 2, seed=0), (1, 32, 32))
    best = max(one, two)
    return {
        "network": spec,
        "forward_mflop": flops / 1e6,
        "images_per_s_1x2": one,
        "images_per_s_2x1": two,
        "gflops": 3 * flops * best / 1e9,
        "hours_per_cell": (CELL_IMAGES + CELL_TEST / 3) / best / 3600,
        # one of the campaign's two one-thread workers: its share of the 2-process rate
        "worker_hours_per_run": (CELL_IMAGES + CELL_TEST / 3) / (two / 2) / 3600,
    }


def bf16_flags() -> str:
    """The CPU's bf16 instructions, "none", or "unknown" where its flags cannot be read (macOS)."""
    return ", ".join(native_bf16()) or ("none" if cpu_flags() else "unknown")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--networks", default=None, help="comma separated registry specs (default: the study's)")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--json", default=None)
    ap.add_argument("--autocast", choices=["bf16"], default=None, help="train under bf16 autocast")
    ap.add_argument(
        "--compile",
        action="store_true",
        help="train through torch.compile (needs a C++ compiler; minutes of compilation per network)",
    )
    ap.add_argument(
        "--quick", action="store_true", help="two tiny networks (or --networks), 2 steps, a small peak: a smoke test"
    )
    a = ap.parse_args(argv)
    nets = a.networks.split(",") if a.networks else (QUICK if a.quick else NETWORKS)
    steps = 2 if a.quick else a.steps
    torch.set_num_threads(2)
    t0 = cpu_times()
    # --quick times the peak once on a 512 x 512 product: a bf16 product of 2048 x 2048 that the
    # CPU emulates (no avx512_bf16 or AMX) takes minutes
    n, reps = (512, 1) if a.quick else (2048, 5)
    dtype = torch.bfloat16 if a.autocast == "bf16" else torch.float32
    peak = max(matmul_peak(n, reps, dtype), conv_peak(reps, dtype))
    l0 = load()
    rows = [measure(s, steps, a.autocast, a.compile) for s in nets]
    for r in rows:
        r["peak_fraction"] = r["gflops"] / peak
    precision = ("bf16 autocast" if a.autocast else "fp32") + (", torch.compile" if a.compile else "")
    out = {
        "machine": machine(),
        "precision": precision,
        "bf16_flags": bf16_flags(),
        "peak_gflops": peak,
        "load_start": l0,
        "load_end": load(),
        "steal": steal_share(t0),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "rows": rows,
    }
    print(
        f"{out['machine']['cpu']}, {out['machine']['cores']} cores (bf16 instructions: {out['bf16_flags']}), "
        f"torch {out['machine']['torch']}; {precision}, peak {peak:.0f} GFLOP/s; load {l0} -> "
        f"{out['load_end']}; CPU time stolen by the hypervisor {out['steal']:.0%}; {out['date']}"
    )
    print(
        "| network | forward MFLOP | images/s (1 process, 2 threads) | images/s (2 processes) | GFLOP/s | "
        "fraction of peak | hours per Fig. 1 cell |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| `{r['network']}` | {r['forward_mflop']:.1f} | {r['images_per_s_1x2']:.0f} | "
            f"{r['images_per_s_2x1']:.0f} | {r['gflops']:.0f} | {r['peak_fraction']:.0%} | "
            f"{r['hours_per_cell']:.2f} |"
        )
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
