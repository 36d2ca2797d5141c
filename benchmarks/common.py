"""Shared pieces of the benchmarks: the machine, load averages, medians, the fp32 matmul peak."""
from __future__ import annotations

import os
import platform
import statistics
import time

import torch


def machine() -> dict:
    """CPU model, cores, torch version and threads of this machine."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {"cpu": cpu, "cores": os.cpu_count(), "torch": torch.__version__,
            "threads": torch.get_num_threads(), "gpu": gpu}


def load() -> float:
    """The 1-minute load average (other processes sharing the CPU inflate every timing)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return float("nan")


def median(xs) -> float:
    return float(statistics.median(xs)) if xs else float("nan")


def matmul_peak(n: int = 2048, reps: int = 5) -> float:
    """fp32 GFLOP/s of torch's own n x n matrix product with all threads (median of ``reps``):
    the practical peak the training benchmark's efficiency is measured against."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    rates = []
    for _ in range(reps):
        t0 = time.perf_counter()
        a @ b
        rates.append(2 * n ** 3 / (time.perf_counter() - t0) / 1e9)
    return median(rates)
