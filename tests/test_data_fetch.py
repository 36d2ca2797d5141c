"""A repository that stands alone: the data the book needs fetched from their public sources at a
pinned version and checked (``scripts/fetch_data.py``), tested offline against a local HTTP server
on 127.0.0.1 that serves the same files, and a damaged copy; the build checks its data before the
first chapter runs."""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import shutil
import subprocess
import sys
import tarfile
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from nadcore.data import cifar
from nadcore.nads import published
from nadcore.runtime import ChecksumError, file_sha256

REPO = Path(__file__).resolve().parents[1]


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def serve():
    """``serve(folder)`` -> the base URL of an HTTP server on 127.0.0.1 serving ``folder``."""
    servers = []

    def start(folder: Path) -> str:
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(folder)))
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        servers.append(httpd)
        return f"http://127.0.0.1:{httpd.server_address[1]}/"

    yield start
    for s in servers:
        s.shutdown()


def _nads_mirror(folder: Path, damage: str | None = None) -> Path:
    """The authors' repository layout (``NADs/<file>``, ``LICENSE``) from the local copy; the file
    ``damage`` with one byte changed."""
    root, _ = published.missing_published_nads()
    (folder / "NADs").mkdir(parents=True)
    for name in published.PUBLISHED_SHA256:
        shutil.copy(root / name, folder / "NADs" / name)
    shutil.copy(root / "LICENSE", folder / "LICENSE")
    if damage:
        f = folder / "NADs" / damage
        b = bytearray(f.read_bytes())
        b[-1] ^= 1
        f.write_bytes(bytes(b))
    return folder


def test_published_nads_are_fetched_checked_and_kept_whole(tmp_path, serve):
    url = serve(_nads_mirror(tmp_path / "mirror"))
    dest = published.fetch_published_nads(tmp_path / "cache", url)
    assert sorted(p.name for p in dest.iterdir()) == sorted([*published.PUBLISHED_SHA256, "LICENSE", "SHA256SUMS"])
    assert published.missing_published_nads(dest) == (dest, [])
    assert published.load_published_nads("lenet", root=dest).nads.shape == (1023, 1024)


def test_a_damaged_download_is_refused_and_nothing_is_half_written(tmp_path, serve):
    url = serve(_nads_mirror(tmp_path / "mirror", damage="VGG11_NADs.npy"))
    with pytest.raises(ChecksumError, match=r"VGG11_NADs\.npy: SHA-256 .* not the published"):
        published.fetch_published_nads(tmp_path / "cache", url)
    left = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert "VGG11_NADs.npy" not in left and not [n for n in left if n.endswith(".part")]
    assert all(file_sha256(tmp_path / "cache" / n) == published.PUBLISHED_SHA256[n] for n in left if n.endswith(".npy"))


def _cifar_archive(folder: Path, damage: bool = False) -> str:
    """An archive in the official layout (``cifar-10-batches-py/data_batch_1..5``, ``test_batch``:
    pickled dicts of CHW rows and labels) holding the subset's images as each batch's first ones;
    returns its MD5."""
    npz, _ = cifar.missing_cifar10()
    z = np.load(npz)
    splits = {"test_batch": (z["x_test"], z["y_test"])}
    start = 0
    for k, n in ((k, cifar.SUBSET_PREFIX[f"data_batch_{k}"]) for k in range(1, 6)):
        splits[f"data_batch_{k}"] = (z["x_train"][start : start + n], z["y_train"][start : start + n])
        start += n
    folder.mkdir(parents=True)
    path = folder / cifar.CIFAR10_TARBALL
    with tarfile.open(path, "w:gz") as tar:
        for name, (x, y) in splits.items():
            rows = x.transpose(0, 3, 1, 2).reshape(len(x), -1)
            if damage and name == "test_batch":
                rows = rows.copy()
                rows[0, 0] ^= 1
            blob = pickle.dumps({b"data": rows, b"labels": [int(v) for v in y]})
            info = tarfile.TarInfo(f"{cifar.FULL_DIR}/{name}")
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    return hashlib.md5(path.read_bytes()).hexdigest()


def test_cifar10_subset_is_made_from_the_official_archive_and_checked(tmp_path, serve, monkeypatch):
    md5 = _cifar_archive(tmp_path / "mirror")
    monkeypatch.setattr(cifar, "CIFAR10_TARBALL_MD5", md5)  # this archive stands in for the official one
    got = cifar.fetch_cifar10_subset(tmp_path / "cache", serve(tmp_path / "mirror"))
    assert file_sha256(got) == cifar.SUBSET_SHA256  # the same bytes as the project's subset
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["SHA256SUMS", cifar.SUBSET_FILE]


def test_a_damaged_archive_or_subset_is_refused(tmp_path, serve, monkeypatch):
    url = serve(tmp_path / "mirror")
    md5 = _cifar_archive(tmp_path / "mirror", damage=True)
    with pytest.raises(ChecksumError, match="MD5 .* not the published"):  # the published archive's MD5
        cifar.fetch_cifar10_subset(tmp_path / "cache", url)
    monkeypatch.setattr(cifar, "CIFAR10_TARBALL_MD5", md5)  # an intact archive, with other images
    with pytest.raises(ChecksumError, match="does not have the project's SHA-256"):
        cifar.fetch_cifar10_subset(tmp_path / "cache", url)
    assert list((tmp_path / "cache").iterdir()) == []


def _clone(tmp_path: Path) -> Path:
    """The repository's files in a folder with no ``../shared`` beside it."""
    clone = tmp_path / "clone"
    ignore = shutil.ignore_patterns("__pycache__", ".git", ".nadcache", "_build", "executed", "test-artifacts", "*.so")
    for part in ("nadcore", "chapters", "scripts", "book", "results"):
        shutil.copytree(REPO / part, clone / part, ignore=ignore)
    for f in ("_config.yml", "_toc.yml", "pyproject.toml"):
        shutil.copy(REPO / f, clone / f)
    return clone


def _env(tmp_path: Path, clone: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NADCORE_", "NADBOOK_"))}
    return env | {"HOME": str(tmp_path / "home"), "PYTHONPATH": str(clone), "NADCORE_NATIVE": "0"}


def test_a_clone_without_shared_data_stops_at_once_then_builds_chapter_2_from_a_mirror(tmp_path, serve):
    clone = _clone(tmp_path)
    env = _env(tmp_path, clone)
    build = [
        sys.executable,
        "scripts/build_book.py",
        "--profile",
        "smoke",
        "--chapters",
        "02",
        "--no-html",
        "--cache",
        str(tmp_path / "cache"),
    ]
    r = subprocess.run(build, cwd=clone, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "LeNet_NADs.npy" in r.stderr and "scripts/fetch_data.py" in r.stderr and "[1/1]" not in r.stdout
    url = serve(_nads_mirror(tmp_path / "mirror"))
    f = subprocess.run(
        [sys.executable, "scripts/fetch_data.py", "--nads-url", url, "--no-cifar", "--strict"],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert f.returncode == 0 and "published NADs: fetched into" in f.stdout, f.stdout + f.stderr
    r = subprocess.run(build, cwd=clone, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert (clone / "book" / "executed" / "02_nads.ipynb").is_file()
