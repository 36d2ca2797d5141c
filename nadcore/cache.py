"""Content-addressed cache of expensive results: plain arrays (.npz, no pickle) + JSON, checksummed.

An entry is keyed on (function name, resolved config, seed, nadcore version): the key is the
SHA-256 of the canonical JSON of those. Each entry is a directory ``<root>/<name>/<key>/`` with
``arrays.npz`` and ``meta.json``; ``meta.json`` stores the SHA-256 of ``arrays.npz`` and the full
key material. Entries are written into a temporary directory and renamed into place, so an
interrupted run never leaves a half-written entry; an entry whose checksum or key does not match
is reported and recomputed, never used.

The root is, in order: the ``root`` argument, ``$NADCORE_CACHE``, or ``~/.cache/nadcore``.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Callable

import numpy as np

import nadcore

__all__ = ["Cache", "default_cache", "cache_key", "CacheCorruptError", "file_sha256"]


class CacheCorruptError(RuntimeError):
    pass


def _canonical(obj):
    """JSON-able canonical form (sorted keys, tuples as lists, numpy scalars as Python)."""
    if isinstance(obj, dict):
        return {str(k): _canonical(v) for k, v in sorted(obj.items(), key=lambda kv: str(kv[0]))}
    if isinstance(obj, (list, tuple)):
        return [_canonical(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    raise TypeError(f"cache config values must be JSON-like; got {type(obj).__name__}: {obj!r}")


def cache_key(name: str, config: dict, version: str | None = None) -> tuple[str, dict]:
    material = {"function": name, "config": _canonical(config),
                "nadcore_version": version or nadcore.__version__}
    blob = json.dumps(material, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()[:32], material


def file_sha256(path: Path) -> str:
    """SHA-256 hex digest of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class Cache:
    def __init__(self, root: str | os.PathLike | None = None, enabled: bool = True):
        root = root or os.environ.get("NADCORE_CACHE") or Path.home() / ".cache" / "nadcore"
        self.root = Path(root).expanduser()
        self.enabled = enabled

    def path(self, name: str, config: dict) -> Path:
        key, _ = cache_key(name, config)
        return self.root / name / key

    def load(self, name: str, config: dict):
        """Return ``(arrays, meta)`` or ``None`` if absent. Corrupt entries warn and return None."""
        if not self.enabled:
            return None
        key, material = cache_key(name, config)
        d = self.root / name / key
        if not (d / "meta.json").is_file() or not (d / "arrays.npz").is_file():
            return None
        try:
            meta = json.loads((d / "meta.json").read_text())
            if meta.get("key_material") != material:
                raise CacheCorruptError("key material does not match the request")
            if file_sha256(d / "arrays.npz") != meta.get("sha256"):
                raise CacheCorruptError("checksum of arrays.npz does not match meta.json")
            with np.load(d / "arrays.npz", allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
        except (CacheCorruptError, ValueError, OSError, json.JSONDecodeError) as e:
            warnings.warn(f"ignoring damaged cache entry {d}: {e}; it will be recomputed")
            return None
        return arrays, meta.get("meta", {})

    def save(self, name: str, config: dict, arrays: dict[str, np.ndarray], meta: dict | None = None) -> Path:
        key, material = cache_key(name, config)
        final = self.root / name / key
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=final.parent))
        try:
            for k, v in arrays.items():
                if np.asarray(v).dtype == object:
                    raise TypeError(f"array {k!r} has dtype object; only plain arrays are cached")
            np.savez(tmp / "arrays.npz", **{k: np.asarray(v) for k, v in arrays.items()})
            record = {"key_material": material, "sha256": file_sha256(tmp / "arrays.npz"),
                      "meta": _canonical(meta or {})}
            (tmp / "meta.json").write_text(json.dumps(record, indent=1, sort_keys=True))
            if final.exists():
                shutil.rmtree(final)
            os.replace(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return final

    def get_or_compute(self, name: str, config: dict,
                       compute: Callable[[], tuple[dict[str, np.ndarray], dict]]):
        """Load ``(arrays, meta)`` from the cache, or call ``compute()`` and store its result."""
        hit = self.load(name, config)
        if hit is not None:
            return hit
        arrays, meta = compute()
        if self.enabled:
            self.save(name, config, arrays, meta)
        return arrays, meta


def default_cache() -> Cache:
    return Cache()
