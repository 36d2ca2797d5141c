"""Small shared helpers: device resolution, seeds, and the CPU allocator setting."""
from __future__ import annotations

import ctypes
import ctypes.util
import sys

import numpy as np
import torch

__all__ = ["resolve_device", "derived_seed", "generator", "keep_freed_memory"]


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """``"auto"`` -> cuda if available else cpu; anything else is checked and returned."""
    if isinstance(device, torch.device):
        return device
    device = str(device).strip().lower()
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} requested but CUDA is not available; use 'cpu' or 'auto'")
    if not (device == "cpu" or device.startswith("cuda") or device == "mps"):
        raise ValueError(f"unknown device {device!r}; use 'auto', 'cpu' or 'cuda[:N]'")
    return torch.device(device)


def derived_seed(*parts: int) -> int:
    """A 63-bit seed derived deterministically from integer parts (e.g. (seed, network_index)),
    through numpy's SeedSequence: distinct parts give independent streams."""
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(2, np.uint64)[0] >> np.uint64(1))


def generator(seed: int, *more: int, device="cpu") -> torch.Generator:
    """A torch.Generator seeded with ``seed`` (or with ``derived_seed(seed, *more)``)."""
    g = torch.Generator(device=device)
    g.manual_seed(derived_seed(seed, *more) if more else int(seed))
    return g


_MMAP_THRESHOLD = 32 << 20   # glibc's largest allowed M_MMAP_THRESHOLD (64-bit)
_TRIM_THRESHOLD = 1 << 30
_allocator_set: bool | None = None


def keep_freed_memory() -> bool:
    """Let glibc's malloc keep freed blocks below 32 MB in the heap (``mallopt``) instead of
    returning them to the system, for the rest of the process. Training and NAD sampling on the
    CPU free and reallocate tensors of a few MB at every step; by default glibc serves the larger
    ones with fresh ``mmap`` pages and trims the heap, so each step pays page faults and kernel
    zeroing again (without it, train_many of 8 LeNets per call took about 1.4x the time of two
    calls of 4: ``benchmarks/bench_training.py --chunks 8,4``). Idempotent; numbers are unchanged. Returns whether the
    setting is active (False on systems without glibc)."""
    global _allocator_set
    if _allocator_set is None:
        _allocator_set = False
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
                # M_TRIM_THRESHOLD = -1, M_MMAP_THRESHOLD = -3; mallopt returns 1 on success
                _allocator_set = bool(libc.mallopt(-1, _TRIM_THRESHOLD)) and bool(libc.mallopt(-3, _MMAP_THRESHOLD))
            except (OSError, AttributeError):
                _allocator_set = False
    return _allocator_set
