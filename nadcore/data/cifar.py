"""CIFAR-10 for the NAD book: loading, normalisation, binary labels.

Chapters 4 (poisoning and flipping, :mod:`nadcore.poisoning`), 5 and 6 use it.

Data. :func:`load_cifar10` uses the full CIFAR-10 through ``torchvision.datasets.CIFAR10`` when it
is present under a data root (or when the caller asks to download it), and otherwise the genuine
subset of the official files that ships with this project (``cifar10-subset/cifar10_subset.npz``,
5,170 train / 1,017 test images), after checking its SHA-256. It never makes up images: when
neither is found it raises :class:`CIFAR10NotFoundError` explaining how to get the data.

Conventions. Images are float32 arrays ``(N, 3, 32, 32)`` in ``[0, 1]`` (the authors'
``ToTensor()`` scale); the per-channel mean/std normalisation (:func:`normalise`, the authors'
constants) is applied by the caller, after any poisoning, as their ``TransformLayer`` did.
"""

from __future__ import annotations

import functools
import os
import pickle
import shutil
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from nadcore.runtime import ChecksumError, download_verified, file_sha256, write_text_atomic

__all__ = [
    "CIFAR10_CLASSES",
    "CIFAR10_MEAN",
    "CIFAR10_STD",
    "SUBSET_FILE",
    "SUBSET_SHA256",
    "CIFAR10NotFoundError",
    "CIFAR10ChecksumError",
    "CIFAR10Data",
    "load_cifar10",
    "load_cifar10_spec",
    "cifar_data_key",
    "find_subset",
    "default_subset_dirs",
    "fetch_cifar10_subset",
    "missing_cifar10",
    "CIFAR10_URL",
    "CIFAR10_TARBALL_MD5",
    "normalise",
    "binarise_labels",
    "as_numpy",
    "like",
]

CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
#: Per-channel mean and std the authors normalised with (``utils.load_cifar_data``).
CIFAR10_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR10_STD = (0.247, 0.243, 0.261)

SUBSET_FILE = "cifar10_subset.npz"
#: SHA-256 of the project's genuine subset, used when no ``SHA256SUMS`` file sits beside it.
SUBSET_SHA256 = "aacb1749f02fb7ddf74076d681e8e29114fe50c1ad1cf7ae3bba677444071726"
FULL_DIR = "cifar-10-batches-py"  # what torchvision.datasets.CIFAR10 looks for under its root
#: where torchvision downloads CIFAR-10 from (``cifar-10-python.tar.gz`` under it), and the MD5 it
#: checks the archive against (the publisher's, ``torchvision.datasets.CIFAR10.tgz_md5``)
CIFAR10_URL = "https://www.cs.toronto.edu/~kriz/"
CIFAR10_TARBALL = "cifar-10-python.tar.gz"
CIFAR10_TARBALL_MD5 = "c58f30108f718f92721af3b95e74349a"
#: the project's subset: the first images of each official batch file, in their order
SUBSET_PREFIX = {
    "data_batch_1": 1102,
    "data_batch_2": 1017,
    "data_batch_3": 1017,
    "data_batch_4": 1017,
    "data_batch_5": 1017,
    "test_batch": 1017,
}

_HOW_TO_GET = (
    "How to get CIFAR-10:\n"
    "  * full dataset (needs internet once): load_cifar10(root=DIR, download=True), or from a\n"
    "    chapter: papermill ... -p data_root DIR (put the official 'cifar-10-batches-py' folder\n"
    "    under DIR, or set NADCORE_DATA_ROOT=DIR);\n"
    "  * offline: point to the project's genuine subset, the folder holding cifar10_subset.npz and\n"
    "    SHA256SUMS, with subset_root=... or NADCORE_CIFAR_SUBSET=... (by default it is looked for\n"
    "    in ../shared/data/cifar10-subset next to the repository).\n"
    "No stand-in images are generated."
)


class CIFAR10NotFoundError(FileNotFoundError):
    """Neither the full CIFAR-10 nor the genuine subset could be found."""


class CIFAR10ChecksumError(ValueError):
    """The subset file's SHA-256 does not match its published checksum."""


@dataclass
class CIFAR10Data:
    """CIFAR-10 arrays plus a description of where they came from.

    ``x_*``: float32 ``(N, 3, 32, 32)`` in ``[0, 1]``; ``y_*``: int64 labels 0..9.
    ``description``: source, counts per split and per class, file and checksum.
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    description: dict = field(default_factory=dict)

    def summary(self) -> str:
        """A few lines saying which data is in use and how many images (no machine-specific paths)."""
        d = self.description
        lines = [
            f"data: {d['name']}",
            f"  train images: {d['n_train']:,}   test images: {d['n_test']:,}",
            "  train per class: " + " ".join(str(c) for c in d["train_class_counts"]),
            "  test per class:  " + " ".join(str(c) for c in d["test_class_counts"]),
        ]
        if d.get("is_subset"):
            lines.append(
                f"  NOTE: a genuine SUBSET of CIFAR-10 (not the full 50,000 / 10,000); "
                f"file {d['file']} sha256 {d['sha256'][:16]}... verified"
            )
        return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------
def _repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


#: where :func:`fetch_cifar10_subset` puts the subset by default
_CACHE_DIR = Path.home() / ".cache" / "nadcore" / "cifar10-subset"


def default_subset_dirs(root=None) -> list[Path]:
    """Where the subset is looked for, in order: ``$NADCORE_CIFAR_SUBSET``,
    ``<root or $NADCORE_DATA_ROOT>/cifar10-subset``, ``<repo>/../shared/data/cifar10-subset``,
    ``~/.cache/nadcore/cifar10-subset`` (where :func:`fetch_cifar10_subset` puts it)."""
    out: list[Path] = []
    env = os.environ.get("NADCORE_CIFAR_SUBSET")
    if env:
        out.append(Path(env).expanduser())
    for r in (root, os.environ.get("NADCORE_DATA_ROOT")):
        if r:
            out += [Path(r).expanduser() / "cifar10-subset", Path(r).expanduser()]
    out.append(_repo_root().parent / "shared" / "data" / "cifar10-subset")
    out.append(_CACHE_DIR)
    return out


def _as_subset_file(p: Path) -> Path | None:
    p = Path(p)
    if p.is_file() and p.name.endswith(".npz"):
        return p
    if (p / SUBSET_FILE).is_file():
        return p / SUBSET_FILE
    return None


def find_subset(subset_root=None, root=None) -> Path | None:
    """Path of ``cifar10_subset.npz``: ``subset_root`` (a folder or the file itself) if given,
    else the first hit in :func:`default_subset_dirs`; ``None`` if none holds it."""
    if subset_root is not None:
        return _as_subset_file(Path(subset_root).expanduser())
    for d in default_subset_dirs(root):
        f = _as_subset_file(d)
        if f is not None:
            return f
    return None


def _expectedfile_sha256(npz: Path) -> tuple[str, str]:
    sums = npz.parent / "SHA256SUMS"
    if sums.is_file():
        for line in sums.read_text().splitlines():
            parts = line.strip().split()
            if len(parts) >= 2 and parts[-1].lstrip("*") == npz.name:
                return parts[0].lower(), str(sums.name)
        raise CIFAR10ChecksumError(f"{sums} lists no checksum for {npz.name}")
    return SUBSET_SHA256, "nadcore.data.cifar.SUBSET_SHA256"


def _class_counts(y: np.ndarray) -> list[int]:
    return np.bincount(y, minlength=10).astype(int).tolist()


def _hwc_uint8_to_float(x: np.ndarray) -> np.ndarray:
    """(N, 32, 32, 3) uint8 -> (N, 3, 32, 32) float32 in [0, 1], like ``ToTensor()``."""
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2), dtype=np.float32) / np.float32(255.0)


def _load_subset(npz: Path, verify: bool) -> CIFAR10Data:
    expected, where = _expectedfile_sha256(npz)
    digest = file_sha256(npz)
    if verify and digest != expected:
        raise CIFAR10ChecksumError(
            f"SHA-256 of {npz} is {digest}, but {where} says {expected}: the file is damaged or "
            "not the project's CIFAR-10 subset. Restore it from ../shared/data/cifar10-subset."
        )
    with np.load(npz, allow_pickle=False) as z:
        missing = {"x_train", "y_train", "x_test", "y_test"} - set(z.files)
        if missing:
            raise ValueError(f"{npz} lacks arrays {sorted(missing)}")
        arrays = {k: z[k] for k in ("x_train", "y_train", "x_test", "y_test")}
    for split in ("train", "test"):
        x, y = arrays[f"x_{split}"], arrays[f"y_{split}"]
        if x.dtype != np.uint8 or x.ndim != 4 or x.shape[1:] != (32, 32, 3) or len(x) != len(y):
            raise ValueError(
                f"{npz}: x_{split} {x.shape} {x.dtype} is not (N, 32, 32, 3) uint8 matching y_{split} {y.shape}"
            )
        if y.size and (y.min() < 0 or y.max() > 9):
            raise ValueError(f"{npz}: y_{split} has labels outside 0..9")
    y_tr = arrays["y_train"].astype(np.int64)
    y_te = arrays["y_test"].astype(np.int64)
    desc = dict(
        name="CIFAR-10 genuine subset (prefixes of the official batch files)",
        source="subset",
        is_subset=True,
        file=npz.name,
        path=str(npz),
        sha256=digest,
        checksum_verified=bool(verify),
        n_train=int(len(y_tr)),
        n_test=int(len(y_te)),
        train_class_counts=_class_counts(y_tr),
        test_class_counts=_class_counts(y_te),
    )
    return CIFAR10Data(_hwc_uint8_to_float(arrays["x_train"]), y_tr, _hwc_uint8_to_float(arrays["x_test"]), y_te, desc)


def _load_full(root: Path, download: bool) -> CIFAR10Data:
    import torchvision  # only needed for the full dataset

    sets = {}
    for split, train in (("train", True), ("test", False)):
        ds = torchvision.datasets.CIFAR10(root=str(root), train=train, download=download)
        sets[split] = (np.asarray(ds.data), np.asarray(ds.targets, dtype=np.int64))
    (xa, ya), (xb, yb) = sets["train"], sets["test"]
    desc = dict(
        name="CIFAR-10 (full, torchvision)",
        source="torchvision",
        is_subset=False,
        file=FULL_DIR,
        path=str(Path(root) / FULL_DIR),
        n_train=int(len(ya)),
        n_test=int(len(yb)),
        train_class_counts=_class_counts(ya),
        test_class_counts=_class_counts(yb),
    )
    return CIFAR10Data(_hwc_uint8_to_float(xa), ya, _hwc_uint8_to_float(xb), yb, desc)


def load_cifar10(
    root=None,
    subset_root=None,
    *,
    download: bool = False,
    source: str = "auto",
    verify: bool = True,
    max_train: int | None = None,
    max_test: int | None = None,
) -> CIFAR10Data:
    """Load CIFAR-10 as float32 ``(N, 3, 32, 32)`` in ``[0, 1]`` with int64 labels.

    Parameters
    ----------
    root : folder holding the official ``cifar-10-batches-py`` (torchvision's ``root``); default
        ``$NADCORE_DATA_ROOT``.
    subset_root : folder holding ``cifar10_subset.npz`` + ``SHA256SUMS`` (or the .npz itself);
        default ``$NADCORE_CIFAR_SUBSET``, then ``<root>/cifar10-subset``, then
        ``../shared/data/cifar10-subset`` next to the repository.
    download : let torchvision download the full set into ``root`` (needs internet; never implied).
    source : ``"auto"`` (full set if found, else the subset), ``"full"`` or ``"subset"``.
    verify : check the subset's SHA-256 (on by default).
    max_train, max_test : keep only the first images of each split (for quick profiles); the
        description records the counts actually returned.
    """
    if source not in ("auto", "full", "subset"):
        raise ValueError(f"source must be 'auto', 'full' or 'subset', got {source!r}")
    root = root if root is not None else os.environ.get("NADCORE_DATA_ROOT")
    data = None
    if source in ("auto", "full") and root is not None:
        r = Path(root).expanduser()
        if download or (r / FULL_DIR).is_dir():
            data = _load_full(r, download)
    if data is None and source == "full":
        raise CIFAR10NotFoundError(
            f"full CIFAR-10 not found (looked for {FULL_DIR!r} under root={root!r}).\n" + _HOW_TO_GET
        )
    if data is None:
        npz = find_subset(subset_root, root)
        if npz is None:
            looked = [str(subset_root)] if subset_root is not None else [str(p) for p in default_subset_dirs(root)]
            raise CIFAR10NotFoundError(
                "CIFAR-10 not found: no full dataset"
                + (f" under {root!r}" if root is not None else " (no data root given)")
                + " and no cifar10_subset.npz in: "
                + ", ".join(looked)
                + ".\n"
                + _HOW_TO_GET
            )
        data = _load_subset(npz, verify)
    if max_train is not None or max_test is not None:
        data = _truncate(data, max_train, max_test)
    return data


def _truncate(data: CIFAR10Data, max_train, max_test) -> CIFAR10Data:
    ntr = len(data.y_train) if max_train is None else min(int(max_train), len(data.y_train))
    nte = len(data.y_test) if max_test is None else min(int(max_test), len(data.y_test))
    d = dict(data.description)
    y_tr, y_te = data.y_train[:ntr], data.y_test[:nte]
    if ntr < d["n_train"] or nte < d["n_test"]:
        d["name"] += f" (first {ntr:,} train / {nte:,} test images used)"
    d.update(
        n_train=int(ntr), n_test=int(nte), train_class_counts=_class_counts(y_tr), test_class_counts=_class_counts(y_te)
    )
    return CIFAR10Data(data.x_train[:ntr], y_tr, data.x_test[:nte], y_te, d)


def normalise(x, mean=CIFAR10_MEAN, std=CIFAR10_STD):
    """Per-channel ``(x - mean) / std`` on ``(N, C, H, W)`` (numpy or torch), the authors' constants."""
    m = np.asarray(mean, dtype=np.float32)[None, :, None, None]
    s = np.asarray(std, dtype=np.float32)[None, :, None, None]
    if isinstance(x, torch.Tensor):
        return (x - torch.as_tensor(m, device=x.device, dtype=x.dtype)) / torch.as_tensor(
            s, device=x.device, dtype=x.dtype
        )
    return ((np.asarray(x) - m) / s).astype(np.float32)


def as_numpy(x) -> np.ndarray:
    """``x`` (an array or a tensor) as a numpy array."""
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def like(out: np.ndarray, x):
    """``out`` as the same kind of object as ``x``: a tensor on ``x``'s device, or the array."""
    return torch.as_tensor(out, device=x.device) if isinstance(x, torch.Tensor) else out


# --------------------------------------------------------------------------------------------
# Binary CIFAR-10 (underspecification chapter)
# --------------------------------------------------------------------------------------------
def binarise_labels(y, dtype=np.float32):
    """Two super-classes: labels 0-4 (airplane..deer) -> -1, 5-9 (dog..truck) -> +1."""
    yn = np.asarray(as_numpy(y)).astype(np.int64)
    if yn.size and (yn.min() < 0 or yn.max() > 9):
        raise ValueError("CIFAR-10 labels must lie in 0..9")
    out = np.where(yn >= 5, 1, -1).astype(dtype)
    return like(out, y)


@functools.lru_cache(maxsize=2)
def _load_cached(root, subset_root, download, max_train, max_test) -> CIFAR10Data:
    return load_cifar10(root, subset_root, download=download, max_train=max_train, max_test=max_test)


def cifar_data_key(data: CIFAR10Data) -> dict:
    """What identifies a :class:`CIFAR10Data` in a cache key: its name, source, checksum (the
    subset's; None for the full set) and the counts used (no machine paths)."""
    d = data.description
    return {k: d.get(k) for k in ("name", "source", "sha256", "n_train", "n_test")}


def load_cifar10_spec(spec: dict) -> CIFAR10Data:
    """:func:`load_cifar10` from a dict (``root``, ``subset_root``, ``download``, ``max_train``,
    ``max_test``), remembered per process: what a job sends to its worker instead of the images."""
    return _load_cached(
        spec.get("root"),
        spec.get("subset_root"),
        bool(spec.get("download", False)),
        spec.get("max_train"),
        spec.get("max_test"),
    )


def missing_cifar10(root=None) -> tuple[Path | None, str | None]:
    """Where the CIFAR-10 the chapters use is found, and what is wrong with it (None: nothing):
    the full set under ``root`` (or ``$NADCORE_DATA_ROOT``), else the subset
    (:func:`default_subset_dirs`), checked against its SHA-256."""
    root = root if root is not None else os.environ.get("NADCORE_DATA_ROOT")
    if root is not None and (Path(root).expanduser() / FULL_DIR).is_dir():
        return Path(root).expanduser() / FULL_DIR, None
    npz = find_subset(None, root)
    if npz is None:
        return None, f"{SUBSET_FILE} (the project's CIFAR-10 subset) was not found"
    want, _ = _expectedfile_sha256(npz)
    if file_sha256(npz) != want:
        return npz, f"{npz} does not have its SHA-256 {want}: the file is damaged"
    return npz, None


def fetch_cifar10_subset(dest=None, base_url: str | None = None) -> Path:
    """Make the project's CIFAR-10 subset in ``dest`` (default ``~/.cache/nadcore/cifar10-subset``,
    where it is looked for) from the official archive: download ``cifar-10-python.tar.gz`` from
    ``base_url`` (default :data:`CIFAR10_URL`, torchvision's source) and check its MD5 (the one
    torchvision checks), take the first images of each batch file (:data:`SUBSET_PREFIX`), and keep
    the result only if it has the subset's SHA-256 (:data:`SUBSET_SHA256`). The archive is
    removed; nothing is left half-written. Returns the subset file's path."""
    dest = Path(dest) if dest is not None else _CACHE_DIR
    final = dest / SUBSET_FILE
    if final.is_file() and file_sha256(final) == SUBSET_SHA256:
        return final
    dest.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".cifar10-", dir=dest))
    try:
        archive = download_verified(
            (base_url or CIFAR10_URL).rstrip("/") + "/" + CIFAR10_TARBALL,
            tmp / CIFAR10_TARBALL,
            md5=CIFAR10_TARBALL_MD5,
        )
        parts = {}
        with tarfile.open(archive, "r:gz") as tar:
            for name, n in SUBSET_PREFIX.items():
                member = tar.getmember(f"{FULL_DIR}/{name}")
                batch = pickle.load(tar.extractfile(member), encoding="bytes")  # the official format
                data = np.asarray(batch[b"data"], dtype=np.uint8)[:n]
                parts[name] = (
                    data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1),
                    np.asarray(batch[b"labels"], dtype=np.uint8)[:n],
                )
        train = [parts[f"data_batch_{k}"] for k in range(1, 6)]
        arrays = {
            "x_train": np.concatenate([x for x, _ in train]),
            "y_train": np.concatenate([y for _, y in train]),
            "x_test": parts["test_batch"][0],
            "y_test": parts["test_batch"][1],
        }
        built = tmp / SUBSET_FILE
        np.savez_compressed(built, **arrays)
        if file_sha256(built) != SUBSET_SHA256:
            raise ChecksumError(
                f"the subset made from {CIFAR10_TARBALL} does not have the project's SHA-256 "
                f"{SUBSET_SHA256}; it was not kept"
            )
        os.replace(built, final)
        write_text_atomic(dest / "SHA256SUMS", f"{SUBSET_SHA256}  {SUBSET_FILE}\n")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final
