"""Where and how a run happens, reproducibly: the device, the seeds, the digests.

* :func:`resolve_device`: ``"auto"`` and friends to a ``torch.device``;
* :func:`derived_seed`, :func:`derived_seeds`, :func:`generator`: every random number in nadcore
  comes from an explicit generator whose seed is derived from the chapter's ``seed`` and the
  position of the draw (network index, run label, ...) through numpy's ``SeedSequence``;
* :func:`canonical`, :func:`digest`, :func:`file_sha256`, :func:`source_digest`: the only hashing
  in nadcore (cache keys, data checksums, stable HTML ids).

This module imports nothing else from nadcore: every other layer may use it.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Iterable

import numpy as np
import torch

__all__ = ["resolve_device", "derived_seed", "derived_seeds", "generator", "canonical", "digest",
           "file_sha256", "source_digest"]


# --------------------------------------------------------------------------------------------
# Devices
# --------------------------------------------------------------------------------------------
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


# --------------------------------------------------------------------------------------------
# Seeds
# --------------------------------------------------------------------------------------------
def derived_seed(*parts: int) -> int:
    """A 63-bit seed derived deterministically from integer parts (e.g. (seed, network_index)),
    through numpy's SeedSequence: distinct parts give independent streams."""
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(2, np.uint64)[0] >> np.uint64(1))


def derived_seeds(seed: int, indices) -> list[int]:
    """``[derived_seed(seed, n) for n in indices]`` (the definition; thousands of networks at once
    take :func:`nadcore.kernels.draw.derived_seeds`, the same numbers hashed column-wise)."""
    return [derived_seed(seed, int(n)) for n in np.asarray(indices, dtype=np.int64).reshape(-1)]


def generator(seed: int, *more: int, device="cpu") -> torch.Generator:
    """A torch.Generator seeded with ``seed`` (or with ``derived_seed(seed, *more)``)."""
    g = torch.Generator(device=device)
    g.manual_seed(derived_seed(seed, *more) if more else int(seed))
    return g


# --------------------------------------------------------------------------------------------
# Digests (the only hashing in nadcore)
# --------------------------------------------------------------------------------------------
def canonical(obj):
    """JSON-able canonical form (sorted keys, tuples as lists, numpy scalars as Python)."""
    if isinstance(obj, dict):
        return {str(k): canonical(v) for k, v in sorted(obj.items(), key=lambda kv: str(kv[0]))}
    if isinstance(obj, (list, tuple)):
        return [canonical(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    raise TypeError(f"cache config values must be JSON-like; got {type(obj).__name__}: {obj!r}")


def digest(obj, length: int = 16) -> str:
    """SHA-256 (first ``length`` hex digits) of an array, a tensor, bytes, a string or a JSON-like
    value. Arrays hash their bytes together with their shape and dtype, so a reshaped or recast
    array gets another digest."""
    h = hashlib.sha256()
    if isinstance(obj, torch.Tensor):
        obj = obj.detach().cpu().numpy()
    if isinstance(obj, np.ndarray):
        a = np.ascontiguousarray(obj)
        h.update(a.tobytes())
        h.update(f"|{a.shape}|{a.dtype.str}".encode())
    elif isinstance(obj, bytes):
        h.update(obj)
    elif isinstance(obj, str):
        h.update(obj.encode())
    else:
        h.update(json.dumps(canonical(obj), sort_keys=True, separators=(",", ":")).encode())
    return h.hexdigest()[:length]


def file_sha256(path: Path) -> str:
    """SHA-256 hex digest of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


_FILE_DIGESTS: dict[tuple, str] = {}


def _file_digest(path: Path) -> str:
    """file_sha256 memoised on (path, size, mtime): cheap to call before every cache access."""
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _FILE_DIGESTS:
        _FILE_DIGESTS[key] = file_sha256(path)
    return _FILE_DIGESTS[key]


def source_digest(paths: Iterable[Path]) -> str:
    """Digest of the contents of some source files (their names relative to nothing: only the
    bytes count, so moving a checkout does not invalidate the cache)."""
    h = hashlib.sha256()
    for p in sorted(Path(p) for p in paths):
        h.update(_file_digest(p).encode())
    return h.hexdigest()[:16]
