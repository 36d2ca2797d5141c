"""Shared pieces of the benchmarks: the machine, load averages, medians, the fp32 matmul peak."""

from __future__ import annotations

import os
import platform
import statistics
import time

import torch

from nadcore.kernels.cpu import onednn_applies


def machine() -> dict:
    """CPU model, cores, torch version and threads of this machine."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "gpu": gpu,
    }


def load() -> float:
    """The 1-minute load average (other processes sharing the CPU inflate every timing)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return float("nan")


def cpu_times() -> list[int] | None:
    """The machine's CPU time counters (/proc/stat's first line; None where there is none)."""
    try:
        with open("/proc/stat") as f:
            return [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None


def steal_share(start: list[int] | None, end: list[int] | None = None) -> float:
    """The share of CPU time the hypervisor gave to other machines between two
    :func:`cpu_times` (a virtual machine's "steal": it slows every timing as other load does,
    and a load average does not show it); NaN where /proc/stat is missing."""
    end = end if end is not None else cpu_times()
    if not start or not end or len(start) < 8:
        return float("nan")
    d = [b - a for a, b in zip(start, end)]
    return round(d[7] / sum(d), 3) if sum(d) > 0 else float("nan")


def median(xs) -> float:
    return float(statistics.median(xs)) if xs else float("nan")


def matmul_peak(n: int = 2048, reps: int = 5, dtype=torch.float32) -> float:
    """GFLOP/s of the faster of torch's two n x n matrix products in ``dtype`` with all threads
    (median of ``reps`` each): BLAS's (``a @ b``: MKL in the pip wheels) and, in float32, oneDNN's
    (``torch.ops.mkldnn._linear_pointwise``, where built). The peak the training benchmarks'
    efficiency is measured against. On AMD CPUs MKL's sgemm takes an AVX2 path at less than half
    of oneDNN's AVX-512 rate (about 210 against 470 GFLOP/s on this 2-core EPYC), so timing
    ``a @ b`` alone understated the machine's peak."""
    return max(matmul_rates(n, reps, dtype).values())


def timed_rate(op, flops: float, reps: int = 5) -> float:
    """GFLOP/s of ``op()`` doing ``flops`` floating-point operations: the median of ``reps`` timed
    calls after one warm-up call."""
    op()
    rates = []
    for _ in range(reps):
        t0 = time.perf_counter()
        op()
        rates.append(flops / (time.perf_counter() - t0) / 1e9)
    return median(rates)


def matmul_rates(n: int = 2048, reps: int = 5, dtype=torch.float32) -> dict:
    """``{"blas": GFLOP/s, "onednn": GFLOP/s}`` (oneDNN's in float32 only, where torch has it) of
    n x n matrix products in ``dtype`` with all threads, medians of ``reps``."""
    a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
    products = {"blas": lambda: a @ b}
    bt = b.T.contiguous()
    if dtype == torch.float32 and onednn_applies(a, bt):
        products["onednn"] = lambda: torch.ops.mkldnn._linear_pointwise(a, bt, None, "none", [], "")
    return {name: timed_rate(product, 2 * n**3, reps) for name, product in products.items()}
