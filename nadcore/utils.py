"""Small shared helpers: device resolution, seeds, provenance."""
from __future__ import annotations

import platform
import time

import numpy as np
import torch

import nadcore


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
    """A 63-bit seed derived deterministically from integer parts (e.g. (seed, network_index))."""
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(2, np.uint64)[0] >> np.uint64(1))


def generator(seed: int, *more: int, device="cpu") -> torch.Generator:
    g = torch.Generator(device=device)
    g.manual_seed(derived_seed(seed, *more) if more else int(seed))
    return g


def provenance(**extra) -> dict:
    """Versions, device and host facts for the reproducibility block at the end of a chapter."""
    return {
        "nadcore": nadcore.__version__,
        "torch": torch.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "threads": torch.get_num_threads(),
        **extra,
    }


class Timer:
    """``with Timer() as t: ...; t.seconds``"""

    def __enter__(self):
        self.t0 = time.perf_counter()
        self.seconds = 0.0
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.t0
        return False
