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

import contextlib
import hashlib
import json
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Iterable

import numpy as np
import torch

__all__ = [
    "threads",
    "resolve_device",
    "derived_seed",
    "derived_seeds",
    "generator",
    "canonical",
    "digest",
    "file_sha256",
    "source_digest",
    "commit_info",
    "machine_info",
    "cpu_model",
    "cpu_flags",
    "BF16_FLAGS",
    "native_bf16",
    "utc_now",
    "write_json_atomic",
    "write_text_atomic",
    "download_verified",
    "ChecksumError",
]


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


@contextlib.contextmanager
def threads(n: int | None = 1, device="cpu", blas: bool = False):
    """The one place that limits threads: torch's intra-op threads set to ``n`` for the block
    (None, or a device other than the CPU: unchanged), and with ``blas`` numpy's BLAS too
    (threadpoolctl), then restored. Tiny CPU operations and many small eigendecompositions run
    faster on one thread, above all on a busy 2-core machine, where threads wait on each other."""
    if n is None or torch.device(device).type != "cpu":
        yield
        return
    old = torch.get_num_threads()
    torch.set_num_threads(int(n))
    try:
        if blas:
            from threadpoolctl import threadpool_limits  # a dependency of nadcore; imported where used

            with threadpool_limits(int(n), user_api="blas"):
                yield
        else:
            yield
    finally:
        torch.set_num_threads(old)


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


# --------------------------------------------------------------------------------------------
# Provenance
# --------------------------------------------------------------------------------------------
def commit_info(root: Path) -> dict:
    """The git commit of ``root`` (``$NADBOOK_COMMIT`` where there is no git) and whether the work
    tree has uncommitted changes to tracked files."""
    env = os.environ.get("NADBOOK_COMMIT")
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = bool(
            subprocess.run(
                ["git", "status", "--porcelain", "--untracked-files=no"],
                cwd=root,
                capture_output=True,
                text=True,
                timeout=10,
            ).stdout.strip()
        )
    except (OSError, subprocess.SubprocessError):
        sha, dirty = "", None
    return {"commit": sha or env or "unknown", "dirty": dirty if sha else None}


def _cpuinfo(key: str) -> str | None:
    """The first value of ``key`` in ``/proc/cpuinfo`` (None where it is absent or not readable)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            k, _, value = line.partition(":")
            if k.strip() == key:
                return value.strip()
    except OSError:
        pass
    return None


def cpu_flags() -> set[str]:
    """The CPU's feature flags as ``/proc/cpuinfo`` names them (empty where it is not readable)."""
    return set((_cpuinfo("flags") or "").split())


#: the CPU instructions that run bf16 natively; without them bf16 autocast is emulated (slower
#: than float32 on the CPUs measured in ``benchmarks/README.md``)
BF16_FLAGS = ("avx512_bf16", "amx_bf16")


def native_bf16() -> list[str]:
    """The CPU's bf16 instructions (:data:`BF16_FLAGS`) that it reports; empty where it has none."""
    return sorted(set(BF16_FLAGS) & cpu_flags())


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux, else what ``platform`` knows), with its
    family and model numbers where ``/proc/cpuinfo`` has them (a virtual machine may name two
    generations alike, "AMD EPYC" for a Zen 4 of family 25 and a Zen 5 of family 26, whose speeds
    differ by up to 2x), and the vector extensions that decide training speed (AVX-512,
    AVX512-BF16, AMX) where present."""
    name = _cpuinfo("model name") or platform.processor() or platform.machine() or "unknown"
    family, model = _cpuinfo("cpu family"), _cpuinfo("model")
    flags = cpu_flags()
    ext = [e for e, f in (("AVX-512", "avx512f"), ("AVX512-BF16", "avx512_bf16"), ("AMX", "amx_bf16")) if f in flags]
    parts = ([f"family {family} model {model}"] if family and model else []) + [f"{os.cpu_count()} cores"] + ext
    return f"{name} ({', '.join(parts)})"


def machine_info(device: torch.device) -> dict:
    """CPU, GPU, driver, CUDA, cuDNN, torch and Python versions (what the provenance records)."""
    out = {
        "device": str(device),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}",
        "cpu": cpu_model(),
        "cpu_threads": torch.get_num_threads(),
    }
    if device.type == "cuda":
        out.update(
            gpu=torch.cuda.get_device_name(device), cuda=torch.version.cuda, cudnn=torch.backends.cudnn.version()
        )
        try:
            out["driver"] = (
                subprocess.run(
                    ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                    capture_output=True,
                    text=True,
                    timeout=20,
                )
                .stdout.strip()
                .splitlines()[0]
            )
        except (OSError, subprocess.SubprocessError, IndexError):
            out["driver"] = "unknown"
    else:
        out["gpu"] = None
    return out


def utc_now() -> str:
    """The time now, UTC, ISO 8601 to the second."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename (never half-written)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def write_json_atomic(path: Path, obj) -> None:
    """Write ``obj`` as JSON to ``path`` through a temporary file and a rename (never half-written)."""
    write_text_atomic(path, json.dumps(obj, indent=1, sort_keys=False, default=str))


# --------------------------------------------------------------------------------------------
# Downloads
# --------------------------------------------------------------------------------------------
class ChecksumError(ValueError):
    """A downloaded file is not the published one (its checksum differs)."""


def download_verified(url: str, dest, *, sha256: str | None = None, md5: str | None = None, timeout: float = 60):
    """Download ``url`` to ``dest``, checking its SHA-256 (or, for a file whose publisher gives only
    that, its MD5) before it takes its name: the bytes go to ``dest.part`` and are renamed into
    place only when they match, so an interrupted or damaged download leaves nothing under
    ``dest``. Raises :class:`ChecksumError` (the partial file removed) or ``OSError``."""
    import urllib.request

    if not (sha256 or md5):
        raise ValueError("download_verified needs the sha256 (or md5) the file must have")
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    h = hashlib.sha256() if sha256 else hashlib.md5()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r, part.open("wb") as f:
            for block in iter(lambda: r.read(1 << 20), b""):
                h.update(block)
                f.write(block)
        got, want = h.hexdigest(), (sha256 or md5).lower()
        if got != want:
            raise ChecksumError(
                f"{url}: {'SHA-256' if sha256 else 'MD5'} {got} is not the published {want}; the download "
                "is damaged or not the published file, and was not kept"
            )
        os.replace(part, dest)
    finally:
        part.unlink(missing_ok=True)
    return dest
