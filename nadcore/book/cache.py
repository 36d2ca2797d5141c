"""Content-addressed cache of expensive results.

An entry is keyed on ``(name, config, code, kernel path, threads)``: ``config`` is the JSON-like
description of the computation (model, settings, seed, ...), ``code`` the fingerprint of the code
the job runs (:func:`job_code_fingerprint`: the module of its function and every nadcore module
it imports, transitively, with the C kernels where it reaches them; editing a drawing, a table,
a claim or a study keeps every result, editing the training loop recomputes the jobs that train),
plus the source of any user module the config names
(a model factory given as ``"package.module:factory"``; see :func:`nadcore.nets.spec_key`), the
kernel path (:func:`nadcore.kernels.path`: whether nadcore's C kernels ran, which moves results
by float rounding), and, where the caller gives it, the number of torch threads the computation
ran on (torch's CPU kernels split their sums by thread, which moves results by float rounding
too; :func:`nadcore.book.runner.run_jobs` gives it for the jobs whose results depend on it).
Editing any of that code changes the key, so stale results are never served: they are
recomputed. The same key always holds the same numbers on one machine: every result that is
cached is computed in a fixed order, however the work was shared out.

Each entry is a directory ``<root>/<name>/<key>/`` holding ``arrays.npz`` (plain arrays, loaded
with ``allow_pickle=False``) and ``meta.json`` (the full key material and the SHA-256 of
``arrays.npz``). Entries are written into a temporary directory and renamed into place, so an
interrupted run - Ctrl-C, SIGKILL, a killed cluster job - never leaves a half-written entry; the
temporary directories of dead processes are removed by the next writer. An entry whose checksum
or key material does not match is reported and recomputed, never used.

The root is, in order: the ``root`` argument, ``$NADCORE_CACHE``, or ``~/.cache/nadcore``.
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import shutil
import tempfile
import time
import warnings
from pathlib import Path
from typing import Callable

import numpy as np

from nadcore.kernels import path as kernel_path
from nadcore.runtime import canonical, digest, file_sha256, source_digest

__all__ = ["Cache", "CacheCorruptError", "code_fingerprint", "job_code_fingerprint", "code_closure"]


class CacheCorruptError(RuntimeError):
    pass


#: nadcore modules that only draw, print, state claims or orchestrate chapters: they compute no
#: cached result (settings enter the cache keys as values), so editing them keeps the cache valid.
_PRESENTATION = ("book", "__main__.py", "figures.py", "claims.py", "settings.py", "campaigns.py")


def _package_root() -> Path:
    return Path(__file__).resolve().parent.parent


def code_fingerprint(root: Path | None = None) -> str:
    """Digest of every nadcore source file that computes results (all ``*.py`` and ``*.c`` of the
    package except the presentation modules in ``_PRESENTATION``). Recomputed from the files'
    sizes and modification times at every call, so an edit made while Python runs is seen at
    once."""
    root = Path(root) if root is not None else _package_root()
    files = [
        p
        for pattern in ("*.py", "*.c")
        for p in root.rglob(pattern)
        if not any(part in _PRESENTATION for part in p.relative_to(root).parts)
    ]
    return source_digest(files)


#: per source file (path, size, mtime): the nadcore modules its import statements name
_IMPORTS: dict[tuple, list[str]] = {}


def _modules(root: Path) -> dict[str, Path]:
    """Every nadcore module by dotted name (a package by its ``__init__.py``)."""
    out = {}
    for f in root.rglob("*.py"):
        parts = f.relative_to(root.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    return out


def _imported(path: Path, name: str, known: dict) -> list[str]:
    """The nadcore modules that the import statements of module ``name`` (file ``path``) load:
    ``from nadcore.x import y`` is module ``nadcore.x.y`` where that is one, else ``nadcore.x``;
    function-level imports count as well (memoised on the file's size and mtime)."""
    st = path.stat()
    memo = (str(path), st.st_size, st.st_mtime_ns)
    if memo in _IMPORTS:
        return _IMPORTS[memo]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names if a.name.startswith("nadcore")]
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([mod] if mod else []))
            if mod.startswith("nadcore"):
                subs = [f"{mod}.{a.name}" for a in node.names if f"{mod}.{a.name}" in known]
                out += subs + ([mod] if len(subs) < len(node.names) else [])
    _IMPORTS[memo] = [m for m in dict.fromkeys(out) if m in known]
    return _IMPORTS[memo]


def code_closure(module: str, root: Path | None = None) -> list[Path]:
    """The source files of nadcore module ``module`` and of every nadcore module it imports,
    transitively, with the C sources of any package among them that holds some (the native
    kernels)."""
    root = Path(root) if root is not None else _package_root()
    known = _modules(root)
    if module not in known:
        raise KeyError(f"{module!r} is not a nadcore module")
    seen, todo = set(), [module]
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        todo += _imported(known[m], m, known)
    files = {known[m] for m in seen}
    for m in seen:
        if known[m].name == "__init__.py":
            files |= set(known[m].parent.glob("*.c"))
    return sorted(files)


def job_code_fingerprint(fn) -> str:
    """The fingerprint of the code a job function ``fn`` runs: :func:`code_closure` of its module
    where that is a nadcore module, else :func:`code_fingerprint` (all of nadcore's computing code),
    beside the source of the module that defines it."""
    module = getattr(fn, "__module__", "") or ""
    root = _package_root()
    if module.startswith("nadcore."):
        try:
            return source_digest(code_closure(module, root))
        except KeyError:  # not a module of this nadcore (a test's stand-in): as for any other function
            pass
    try:
        own = [Path(inspect.getsourcefile(fn))]
    except (TypeError, OSError):
        own = []
    return digest({"nadcore": code_fingerprint(root), "module": source_digest(own) if own else module}, 16)


# --------------------------------------------------------------------------------------------
# The cache
# --------------------------------------------------------------------------------------------
#: config entries that hold the digest of an array computed upstream (direction vectors, NADs):
#: they follow float rounding, so the experiments' digest leaves them out
_DERIVED = ("vectors", "nads", "reference", "digest")


def _without_derived(config):
    if isinstance(config, dict):
        return {k: _without_derived(v) for k, v in config.items() if k not in _DERIVED}
    if isinstance(config, list):
        return [_without_derived(v) for v in config]
    return config


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Cache:
    """``Cache(root)``: see the module docstring. ``enabled=False`` computes everything anew
    (and stores nothing)."""

    def __init__(self, root: str | os.PathLike | None = None, enabled: bool = True):
        root = root or os.environ.get("NADCORE_CACHE") or Path.home() / ".cache" / "nadcore"
        self.root = Path(root).expanduser()
        self.enabled = enabled
        self.requested: dict[str, str] = {}  # every experiment asked for: digest -> function name

    # what was asked for -----------------------------------------------------------------------
    def _note(self, name: str, config: dict) -> None:
        self.requested[digest({"function": name, "config": _without_derived(canonical(config))}, 16)] = name

    def experiments(self) -> tuple[int, str]:
        """How many distinct experiments (job function and config) were asked of this cache, and
        a digest of them all: it changes with the settings, the seeds and the set of runs, and
        not with float rounding (configs' digests of computed arrays, such as the direction
        vectors of a sweep, are left out) nor with the code that computed them."""
        return len(self.requested), digest(sorted(self.requested), 16)

    # key material ---------------------------------------------------------------------------
    def key(self, name: str, config: dict, threads: int | None = None, code: str | None = None) -> tuple[str, dict]:
        """The entry's key and its material; ``threads``: the torch threads it ran on, if given;
        ``code``: the fingerprint of the code it runs (:func:`job_code_fingerprint`; default: all
        of nadcore's computing code, :func:`code_fingerprint`)."""
        material = {
            "function": name,
            "config": canonical(config),
            "code": code or code_fingerprint(),
            "kernel_path": kernel_path(),
        }
        if threads is not None:
            material["torch_threads"] = int(threads)
        return digest(material, 32), material

    def path(self, name: str, config: dict, threads: int | None = None, code: str | None = None) -> Path:
        return self.root / name / self.key(name, config, threads, code)[0]

    def __contains__(self, item) -> bool:
        """``(name, config) in cache``, or ``(name, config, threads)``, or ``(name, config,
        threads, code)``."""
        d = self.path(*item)
        return (d / "meta.json").is_file() and (d / "arrays.npz").is_file()

    # reading and writing --------------------------------------------------------------------
    def load(self, name: str, config: dict, threads: int | None = None, code: str | None = None):
        """Return ``(arrays, meta)`` or ``None`` if absent. Damaged entries warn and return None."""
        self._note(name, config)
        if not self.enabled:
            return None
        key, material = self.key(name, config, threads, code)
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

    def save(
        self,
        name: str,
        config: dict,
        arrays: dict[str, np.ndarray],
        meta: dict | None = None,
        threads: int | None = None,
        code: str | None = None,
    ) -> Path:
        key, material = self.key(name, config, threads, code)
        final = self.root / name / key
        final.parent.mkdir(parents=True, exist_ok=True)
        self._remove_orphans(final.parent)
        for k, v in arrays.items():
            if np.asarray(v).dtype == object:
                raise TypeError(f"array {k!r} has dtype object; only plain arrays are cached")
        tmp = Path(tempfile.mkdtemp(prefix=f".{key}.{os.getpid()}.", dir=final.parent))
        try:
            np.savez(tmp / "arrays.npz", **{k: np.asarray(v) for k, v in arrays.items()})
            record = {
                "key_material": material,
                "sha256": file_sha256(tmp / "arrays.npz"),
                "meta": canonical(meta or {}),
                "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
            }
            (tmp / "meta.json").write_text(json.dumps(record, indent=1, sort_keys=True))
            if final.exists():
                shutil.rmtree(final)
            os.replace(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return final

    @staticmethod
    def _remove_orphans(folder: Path) -> None:
        """Delete temporary entry folders (``.<key>.<pid>.<rand>``) left by dead processes."""
        for d in folder.glob(".*.*.*"):
            parts = d.name.split(".")
            try:
                pid = int(parts[2])
            except (IndexError, ValueError):
                continue
            if not _pid_alive(pid):
                shutil.rmtree(d, ignore_errors=True)

    def get_or_compute(self, name: str, config: dict, compute: Callable[[], tuple[dict[str, np.ndarray], dict]]):
        """Load ``(arrays, meta)`` from the cache, or call ``compute()`` and store its result."""
        hit = self.load(name, config)
        if hit is not None:
            return hit
        arrays, meta = compute()
        if self.enabled:
            self.save(name, config, arrays, meta)
        return arrays, meta
