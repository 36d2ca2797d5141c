"""Interrupt and resume: SIGKILL the book build in the middle of a training chapter, run it again.

The build of chapter 3 (smoke profile) is killed, with its whole process group (papermill, the
kernel, the worker processes), as soon as its first training job has landed in the cache. Then:

* no entry of the cache is half-written: every entry folder holds arrays.npz and meta.json whose
  checksum matches (temporary folders of the killed processes may remain; the next writer
  removes them);
* the same build run again finishes, reuses every entry that existed (their files are untouched:
  nothing was recomputed), removes the orphaned temporary folders, and prints what the committed
  reference says.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO
from reference_outputs import differences

from nadcore.runtime import file_sha256

CHAPTER = "03_linear_separability"
JOB = "directional_job"


def _scratch_root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "book").mkdir(parents=True)
    for f in ("_config.yml", "_toc.yml"):
        shutil.copy2(REPO / f, root / f)
    for name in ("chapters", "nadcore"):
        (root / name).symlink_to(REPO / name, target_is_directory=True)
    return root


def _build(root: Path, cache: Path, **kw) -> subprocess.Popen:
    cmd = [
        sys.executable,
        str(REPO / "scripts" / "build_book.py"),
        "--root",
        str(root),
        "--profile",
        "smoke",
        "--chapters",
        CHAPTER[:2],
        "--no-html",
        "--cache",
        str(cache),
    ]
    return subprocess.Popen(
        cmd, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True, **kw
    )


def _entries(cache: Path) -> dict[Path, int]:
    return {
        d: (d / "arrays.npz").stat().st_mtime_ns
        for d in cache.glob("*/*")
        if not d.name.startswith(".") and (d / "meta.json").exists()
    }


def test_sigkill_mid_chapter_then_resume(tmp_path):
    root, cache = _scratch_root(tmp_path), tmp_path / "cache"
    proc = _build(root, cache)
    deadline = time.monotonic() + 600
    try:
        while not any((cache / JOB).glob("[!.]*/meta.json")):
            if proc.poll() is not None:
                pytest.fail(f"the build ended before its first job landed:\n{proc.stdout.read()}")
            if time.monotonic() > deadline:
                pytest.fail("no training job finished within 10 minutes")
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    before = _entries(cache)
    assert any(d.parent.name == JOB for d in before)
    for d in before:  # every entry is whole: checksum of its arrays as recorded
        assert json.loads((d / "meta.json").read_text())["sha256"] == file_sha256(d / "arrays.npz"), d
    assert not (root / "book" / "executed" / f"{CHAPTER}.ipynb").exists()  # nothing half-published

    again = _build(root, cache)
    out, _ = again.communicate(timeout=900)
    assert again.returncode == 0, out
    after = _entries(cache)
    assert all(after.get(d) == t for d, t in before.items()), "entries of the killed run were recomputed"
    assert len(after) > len(before)
    assert not [p for p in cache.glob("*/.*") if p.is_dir()], "orphaned temporary folders were not removed"
    nb = json.loads((root / "book" / "executed" / f"{CHAPTER}.ipynb").read_text())
    assert differences(CHAPTER, nb) == []
