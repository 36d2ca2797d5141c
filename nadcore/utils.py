"""Small shared helpers: device resolution and seeds."""
from __future__ import annotations

import numpy as np
import torch

__all__ = ["resolve_device", "derived_seed", "generator"]


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
