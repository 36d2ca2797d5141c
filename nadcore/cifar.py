"""CIFAR-10 for the NAD book: loading, normalisation, NAD poisoning and NAD flipping.

Paper: Ortiz-Jimenez et al., "Neural Anisotropy Directions", NeurIPS 2020, Sec. 4.2
(Fig. 7: poisoning with a carrier on NADs (i, i+1); Fig. 8: training on the NAD-flipped
representation). Chapter ``chapters/04_cifar10.py`` uses everything here; chapter 5 uses
:func:`binarise_labels`.

Data. :func:`load_cifar10` uses the full CIFAR-10 through ``torchvision.datasets.CIFAR10`` when it
is present under a data root (or when the caller asks to download it), and otherwise the genuine
subset of the official files that ships with this project (``cifar10-subset/cifar10_subset.npz``,
5,170 train / 1,017 test images), after checking its SHA-256. It never makes up images: when
neither is found it raises :class:`CIFAR10NotFoundError` explaining how to get the data.

Conventions. Images are float32 arrays ``(N, 3, 32, 32)`` in ``[0, 1]`` (the authors'
``ToTensor()`` scale). Poisoning acts on that scale, exactly like the authors' ``poison_cifar.py``;
the per-channel mean/std normalisation (:func:`normalise`, the authors' constants) comes after it,
as their ``TransformLayer`` did inside the model. NADs are given as ROWS, ``(K, H*W)``, the layout
of the published ``<Arch>_NADs.npy``; a square orthogonal basis with NADs as COLUMNS (the paper's
``U``) comes from :func:`basis_matrix`.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from nadcore.cache import file_sha256 as _sha256

__all__ = [
    "CIFAR10_CLASSES", "CIFAR10_MEAN", "CIFAR10_STD", "SUBSET_FILE", "SUBSET_SHA256",
    "CIFAR10NotFoundError", "CIFAR10ChecksumError", "CIFAR10Data",
    "load_cifar10", "find_subset", "default_subset_dirs", "normalise",
    "carrier_assignment", "poison_carriers", "poison", "basis_matrix", "flip_matrix",
    "flip_representation", "binarise_labels", "train_cifar", "poisoning_sweep", "flipping_experiment",
]

CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer",
                   "dog", "frog", "horse", "ship", "truck")
#: Per-channel mean and std the authors normalised with (``utils.load_cifar_data``).
CIFAR10_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR10_STD = (0.247, 0.243, 0.261)

SUBSET_FILE = "cifar10_subset.npz"
#: SHA-256 of the project's genuine subset, used when no ``SHA256SUMS`` file sits beside it.
SUBSET_SHA256 = "aacb1749f02fb7ddf74076d681e8e29114fe50c1ad1cf7ae3bba677444071726"
FULL_DIR = "cifar-10-batches-py"   # what torchvision.datasets.CIFAR10 looks for under its root

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
        lines = [f"data: {d['name']}",
                 f"  train images: {d['n_train']:,}   test images: {d['n_test']:,}",
                 "  train per class: " + " ".join(str(c) for c in d["train_class_counts"]),
                 "  test per class:  " + " ".join(str(c) for c in d["test_class_counts"])]
        if d.get("is_subset"):
            lines.append(f"  NOTE: a genuine SUBSET of CIFAR-10 (not the full 50,000 / 10,000); "
                         f"file {d['file']} sha256 {d['sha256'][:16]}... verified")
        return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------
def _repo_root() -> Path:
    return Path(__file__).resolve().parents[1]


def default_subset_dirs(root=None) -> list[Path]:
    """Where the subset is looked for, in order: ``$NADCORE_CIFAR_SUBSET``,
    ``<root or $NADCORE_DATA_ROOT>/cifar10-subset``, ``<repo>/../shared/data/cifar10-subset``."""
    out: list[Path] = []
    env = os.environ.get("NADCORE_CIFAR_SUBSET")
    if env:
        out.append(Path(env).expanduser())
    for r in (root, os.environ.get("NADCORE_DATA_ROOT")):
        if r:
            out += [Path(r).expanduser() / "cifar10-subset", Path(r).expanduser()]
    out.append(_repo_root().parent / "shared" / "data" / "cifar10-subset")
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


def _expected_sha256(npz: Path) -> tuple[str, str]:
    sums = npz.parent / "SHA256SUMS"
    if sums.is_file():
        for line in sums.read_text().splitlines():
            parts = line.strip().split()
            if len(parts) >= 2 and parts[-1].lstrip("*") == npz.name:
                return parts[0].lower(), str(sums.name)
        raise CIFAR10ChecksumError(f"{sums} lists no checksum for {npz.name}")
    return SUBSET_SHA256, "nadcore.cifar.SUBSET_SHA256"


def _class_counts(y: np.ndarray) -> list[int]:
    return np.bincount(y, minlength=10).astype(int).tolist()


def _hwc_uint8_to_float(x: np.ndarray) -> np.ndarray:
    """(N, 32, 32, 3) uint8 -> (N, 3, 32, 32) float32 in [0, 1], like ``ToTensor()``."""
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2), dtype=np.float32) / np.float32(255.0)


def _load_subset(npz: Path, verify: bool) -> CIFAR10Data:
    expected, where = _expected_sha256(npz)
    digest = _sha256(npz)
    if verify and digest != expected:
        raise CIFAR10ChecksumError(
            f"SHA-256 of {npz} is {digest}, but {where} says {expected}: the file is damaged or "
            "not the project's CIFAR-10 subset. Restore it from ../shared/data/cifar10-subset.")
    with np.load(npz, allow_pickle=False) as z:
        missing = {"x_train", "y_train", "x_test", "y_test"} - set(z.files)
        if missing:
            raise ValueError(f"{npz} lacks arrays {sorted(missing)}")
        arrays = {k: z[k] for k in ("x_train", "y_train", "x_test", "y_test")}
    for split in ("train", "test"):
        x, y = arrays[f"x_{split}"], arrays[f"y_{split}"]
        if x.dtype != np.uint8 or x.ndim != 4 or x.shape[1:] != (32, 32, 3) or len(x) != len(y):
            raise ValueError(f"{npz}: x_{split} {x.shape} {x.dtype} is not (N, 32, 32, 3) uint8 "
                             f"matching y_{split} {y.shape}")
        if y.size and (y.min() < 0 or y.max() > 9):
            raise ValueError(f"{npz}: y_{split} has labels outside 0..9")
    y_tr = arrays["y_train"].astype(np.int64)
    y_te = arrays["y_test"].astype(np.int64)
    desc = dict(name="CIFAR-10 genuine subset (prefixes of the official batch files)",
                source="subset", is_subset=True, file=npz.name, path=str(npz), sha256=digest,
                checksum_verified=bool(verify), n_train=int(len(y_tr)), n_test=int(len(y_te)),
                train_class_counts=_class_counts(y_tr), test_class_counts=_class_counts(y_te))
    return CIFAR10Data(_hwc_uint8_to_float(arrays["x_train"]), y_tr,
                       _hwc_uint8_to_float(arrays["x_test"]), y_te, desc)


def _load_full(root: Path, download: bool) -> CIFAR10Data:
    import torchvision  # only needed for the full dataset

    sets = {}
    for split, train in (("train", True), ("test", False)):
        ds = torchvision.datasets.CIFAR10(root=str(root), train=train, download=download)
        sets[split] = (np.asarray(ds.data), np.asarray(ds.targets, dtype=np.int64))
    (xa, ya), (xb, yb) = sets["train"], sets["test"]
    desc = dict(name="CIFAR-10 (full, torchvision)", source="torchvision", is_subset=False,
                file=FULL_DIR, path=str(Path(root) / FULL_DIR), n_train=int(len(ya)),
                n_test=int(len(yb)), train_class_counts=_class_counts(ya),
                test_class_counts=_class_counts(yb))
    return CIFAR10Data(_hwc_uint8_to_float(xa), ya, _hwc_uint8_to_float(xb), yb, desc)


def load_cifar10(root=None, subset_root=None, *, download: bool = False, source: str = "auto",
                 verify: bool = True, max_train: int | None = None,
                 max_test: int | None = None) -> CIFAR10Data:
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
            f"full CIFAR-10 not found (looked for {FULL_DIR!r} under root={root!r}).\n" + _HOW_TO_GET)
    if data is None:
        npz = find_subset(subset_root, root)
        if npz is None:
            looked = [str(subset_root)] if subset_root is not None else \
                [str(p) for p in default_subset_dirs(root)]
            raise CIFAR10NotFoundError(
                "CIFAR-10 not found: no full dataset"
                + (f" under {root!r}" if root is not None else " (no data root given)")
                + " and no cifar10_subset.npz in: " + ", ".join(looked) + ".\n" + _HOW_TO_GET)
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
    d.update(n_train=int(ntr), n_test=int(nte), train_class_counts=_class_counts(y_tr),
             test_class_counts=_class_counts(y_te))
    return CIFAR10Data(data.x_train[:ntr], y_tr, data.x_test[:nte], y_te, d)


def normalise(x, mean=CIFAR10_MEAN, std=CIFAR10_STD):
    """Per-channel ``(x - mean) / std`` on ``(N, C, H, W)`` (numpy or torch), the authors' constants."""
    m = np.asarray(mean, dtype=np.float32)[None, :, None, None]
    s = np.asarray(std, dtype=np.float32)[None, :, None, None]
    if _is_torch(x):
        import torch
        return (x - torch.as_tensor(m, device=x.device, dtype=x.dtype)) / \
            torch.as_tensor(s, device=x.device, dtype=x.dtype)
    return ((np.asarray(x) - m) / s).astype(np.float32)


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch")


def _to_numpy(x) -> np.ndarray:
    return x.detach().cpu().numpy() if _is_torch(x) else np.asarray(x)


def _like(out: np.ndarray, x):
    if _is_torch(x):
        import torch
        return torch.as_tensor(out, device=x.device)
    return out


# --------------------------------------------------------------------------------------------
# Poisoning (paper Sec. 4.2, Fig. 7)
# --------------------------------------------------------------------------------------------
def carrier_assignment(num_classes: int = 10, num_channels: int = 3) -> list[tuple[int, int, int]]:
    """``(nad_offset, channel, sign)`` of each class's carrier, as in the authors' code.

    Class ``t`` uses NAD ``index + t // (2 * num_channels)`` in colour channel
    ``t % num_channels`` with sign ``2 * (t % 2) - 1``. For CIFAR-10 (10 classes, 3 channels)
    classes 0-5 use NAD ``i`` and 6-9 NAD ``i + 1``; every class gets a distinct
    (NAD, channel, sign) triple, so the carriers alone separate the ten classes.
    """
    out = []
    for t in range(num_classes):
        out.append((t // (2 * num_channels), t % num_channels, 2 * (t % 2) - 1))
    if len(set(out)) != num_classes:
        raise ValueError(f"{num_classes} classes do not get distinct carriers with {num_channels} channels")
    return out


def poison_carriers(nads, index: int, num_classes: int = 10, num_channels: int = 3,
                    shape=(32, 32)) -> tuple[np.ndarray, np.ndarray]:
    """Unit-norm carriers ``(num_classes, C, H, W)`` and signs ``(num_classes,)`` for NADs (i, i+1).

    ``nads``: ``(K, H*W)``, one NAD per row. Each carrier is the class's NAD placed in one colour
    channel (zeros elsewhere), rescaled to unit norm (a no-op for orthonormal NADs up to float
    rounding; it makes "the component along the carrier" exact).
    """
    V = np.asarray(_to_numpy(nads), dtype=np.float64)
    H, W = shape
    if V.ndim != 2 or V.shape[1] != H * W:
        raise ValueError(f"nads must be (K, {H * W}) with one NAD per row; got {V.shape}")
    assign = carrier_assignment(num_classes, num_channels)
    top = index + max(a[0] for a in assign)
    if index < 0 or top >= V.shape[0]:
        raise IndexError(f"carrier at NAD index {index} needs NADs {index}..{top}; "
                         f"only {V.shape[0]} given (use basis_matrix(nads).T for all {H * W})")
    carriers = np.zeros((num_classes, num_channels, H, W))
    signs = np.zeros(num_classes)
    for t, (off, ch, sign) in enumerate(assign):
        v = V[index + off]
        carriers[t, ch] = (v / np.linalg.norm(v)).reshape(H, W)
        signs[t] = sign
    return carriers, signs


def poison(x, y, nads, index: int, eps: float, num_classes: int = 10):
    """Poisoned copy of ``x``: the component of each image along its class's carrier becomes ``sign * eps``.

    With ``c_t`` the unit carrier of class ``t`` and ``s_t = +-1`` (:func:`poison_carriers`),
    ``x' = x + (s_t eps - <x, c_t>) c_t``: ``<x', c_t> = s_t eps`` exactly, and ``x' - x`` is
    parallel to ``c_t`` (nothing changes orthogonally to the carrier). This is the substitution of
    the authors' ``poison_with_NADs`` (applied on the ``[0, 1]`` pixel scale, before normalisation,
    without clipping). Works on numpy arrays or torch tensors ``(N, C, H, W)``; returns the same kind.
    """
    xn = _to_numpy(x)
    yn = np.asarray(_to_numpy(y)).astype(np.int64)
    if xn.ndim != 4 or len(xn) != len(yn):
        raise ValueError(f"x must be (N, C, H, W) with one label per image; got {xn.shape}, {yn.shape}")
    carriers, signs = poison_carriers(nads, index, num_classes, xn.shape[1], xn.shape[2:])
    flat = xn.reshape(len(xn), -1).astype(np.float64)
    cflat = carriers.reshape(num_classes, -1)
    c = cflat[yn]                                           # (N, C*H*W): each image's carrier
    coef = eps * signs[yn] - np.einsum("nd,nd->n", flat, c)
    out = (flat + coef[:, None] * c).reshape(xn.shape).astype(xn.dtype)
    return _like(out, x)


# --------------------------------------------------------------------------------------------
# Flipping (paper Sec. 4.2, Fig. 8)
# --------------------------------------------------------------------------------------------
def basis_matrix(nads) -> np.ndarray:
    """Square orthogonal ``U`` (D, D), NADs as COLUMNS, from ``nads`` (K, D) given as rows, K <= D.

    The first K columns are the NADs, made orthonormal to float64 precision: rows that are already
    orthonormal up to float32 rounding (eigenvectors, the published NADs: ~1e-6) get a couple of
    Newton-Schulz steps ``V <- 1.5 V - 0.5 V V^T V`` (moves them by ~1e-6, keeps their order and
    signs); anything further from orthonormal goes through a QR decomposition (Gram-Schmidt in
    order, signs kept). The last D - K columns span the orthogonal complement (the published files
    hold 1023 of 1024 NADs: the missing one is the direction of least variance and goes last); they
    come from Gram-Schmidt of fixed pseudo-random vectors, so the result is deterministic.
    """
    V = np.array(_to_numpy(nads), dtype=np.float64)
    K, D = V.shape
    if K > D:
        raise ValueError(f"more NADs ({K}) than dimensions ({D})")
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    err = np.abs(V @ V.T - np.eye(K)).max()
    if err > 1e-3:
        Q, R = np.linalg.qr(V.T)
        d = np.sign(np.diag(R))
        d[d == 0] = 1.0
        V = (Q * d[None, :]).T
    else:
        for _ in range(5):
            if err < 1e-13:
                break
            V = 1.5 * V - 0.5 * (V @ V.T) @ V
            err = np.abs(V @ V.T - np.eye(K)).max()
    rows = [V]
    rng = np.random.default_rng(0)
    extra = []
    while K + len(extra) < D:
        w = rng.standard_normal(D)
        for _ in range(2):                          # twice is enough (Kahan-Parlett)
            w -= V.T @ (V @ w)
            for e in extra:
                w -= (e @ w) * e
        n = np.linalg.norm(w)
        if n > 1e-8:
            extra.append(w / n)
    if extra:
        rows.append(np.stack(extra))
    return np.ascontiguousarray(np.vstack(rows).T)


def flip_matrix(U) -> np.ndarray:
    """``M = U R U^T`` with ``R`` the index-reversal permutation: coefficient k goes to D-1-k.

    ``M`` is orthogonal, symmetric and an involution (``M @ M = I``).
    """
    U = np.asarray(_to_numpy(U), dtype=np.float64)
    if U.ndim != 2 or U.shape[0] != U.shape[1]:
        raise ValueError(f"U must be square (D, D) with NADs as columns; got {U.shape} "
                         "(use basis_matrix(nads) on NADs given as rows)")
    err = np.abs(U.T @ U - np.eye(len(U))).max()
    if err > 1e-4:
        raise ValueError(f"U is not orthogonal (max |U^T U - I| = {err:.2e}); use basis_matrix(nads)")
    return U @ U[:, ::-1].T


def flip_representation(x, U):
    """NAD-flipped images ``x' = U flip(U^T x)``, applied to each colour channel separately.

    ``U`` (D, D) orthogonal with NADs as columns, D = H*W of ONE channel (the NADs are those of a
    1-channel copy of the architecture, as in the paper). ``flip`` reverses the order of the NAD
    coefficients: what lay along the first NAD now lies along the last and vice versa. The map is
    a rotation/reflection of input space (orthogonal, norms preserved) and its own inverse, so no
    information is lost. Channels are flipped separately because the NADs live in one channel;
    mixing channels would be a different, arbitrary extension. The chapter applies it to the
    normalised images (see there why). Numpy or torch ``(N, C, H, W)``; returns the same kind.
    """
    xn = _to_numpy(x)
    if xn.ndim != 4:
        raise ValueError(f"x must be (N, C, H, W); got {xn.shape}")
    N, C, H, W = xn.shape
    M = flip_matrix(U)
    if M.shape[0] != H * W:
        raise ValueError(f"U is {M.shape} but one channel has {H * W} pixels")
    work = np.float64 if xn.dtype == np.float64 else np.float32
    out = (xn.reshape(N * C, H * W).astype(work) @ M.astype(work)).reshape(N, C, H, W)
    return _like(out.astype(xn.dtype, copy=False), x)


# --------------------------------------------------------------------------------------------
# Binary CIFAR-10 (underspecification chapter)
# --------------------------------------------------------------------------------------------
def binarise_labels(y, dtype=np.float32):
    """Two super-classes: labels 0-4 (airplane..deer) -> -1, 5-9 (dog..truck) -> +1."""
    yn = np.asarray(_to_numpy(y)).astype(np.int64)
    if yn.size and (yn.min() < 0 or yn.max() > 9):
        raise ValueError("CIFAR-10 labels must lie in 0..9")
    out = np.where(yn >= 5, 1, -1).astype(dtype)
    return _like(out, y)


# --------------------------------------------------------------------------------------------
# Experiments of Sec. 4.2 (one training run = one cached entry, so an interrupted sweep resumes)
# --------------------------------------------------------------------------------------------
def _fingerprint(a) -> str:
    a = np.ascontiguousarray(_to_numpy(a))
    return hashlib.sha256(a.tobytes() + str((a.shape, a.dtype.str)).encode()).hexdigest()[:16]


def train_cifar(model, x_train, y_train, x_test, y_test, *, epochs: int, max_lr: float,
                batch_size: int = 128, momentum: float = 0.0, weight_decay: float = 0.0,
                seed: int = 0, device="auto", extra_tests: dict | None = None,
                cache=None, cache_config: dict | None = None) -> dict:
    """Train a fresh 10-class, 3-channel ``model`` (registry name or ``"pkg.mod:factory"``) with the
    authors' recipe (``nadcore.train.train_classifier``: SGD, linear decay to 0, clipping 0.5) on
    already normalised arrays, and return accuracies as a dict.

    The initial weights come from ``seed`` alone and the batch order from ``seed`` too, so runs that
    differ only in their data (clean / poisoned at index i / flipped) are paired: same start, same
    order. ``extra_tests``: ``{name: (x, y)}`` further test sets, evaluated after training.
    With a ``cache`` (``nadcore.cache.Cache``) and a ``cache_config`` naming the data, the result is
    stored under that key and reused.
    """
    import torch

    from nadcore.models import build_model
    from nadcore.train import evaluate, train_classifier
    from nadcore.utils import derived_seed, generator

    hyper = dict(model=str(model), epochs=int(epochs), max_lr=float(max_lr), batch_size=int(batch_size),
                 momentum=float(momentum), weight_decay=float(weight_decay), seed=int(seed))

    def compute():
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(derived_seed(seed, 4))
            net = build_model(model, 3, 10)
        r = train_classifier(net, x_train, y_train, epochs=epochs, batch_size=batch_size,
                             max_lr=max_lr, momentum=momentum, weight_decay=weight_decay,
                             generator=generator(seed, 4, 1), device=device,
                             x_test=x_test, y_test=y_test)
        out = dict(train_acc=r.train_acc, train_loss=r.train_loss, test_acc=r.test_acc,
                   test_loss=r.test_loss, seconds=r.seconds)
        for name, (xe, ye) in (extra_tests or {}).items():
            out[f"{name}_acc"] = evaluate(net, xe, ye, device=device)[0]
        arrays = {"epoch_acc": np.asarray(r.epoch_acc), "epoch_loss": np.asarray(r.epoch_loss)}
        return arrays, out

    if cache is not None and cache_config is not None:
        arrays, meta = cache.get_or_compute("cifar_train", {**hyper, **cache_config,
                                            "extra_tests": sorted(extra_tests or {})}, compute)
        meta = dict(meta, cached=True)
    else:
        arrays, meta = compute()
    return {**hyper, **meta, "epoch_acc": arrays["epoch_acc"]}


def poisoning_sweep(data: CIFAR10Data, nads, indices, *, eps: float, model, train: dict,
                    seed: int = 0, device="auto", cache=None, progress=None) -> list[dict]:
    """The experiment of the paper's Fig. 7: one training run on the clean training set (the
    baseline, ``index=None``) and one per NAD index ``i`` on the training set poisoned with the
    carrier on NADs (i, i+1) (:func:`poison`, on the ``[0, 1]`` scale, then :func:`normalise`).
    Every run is tested on the CLEAN test set (``test_acc``) and, as a diagnostic of whether the
    carrier was picked up, on the test set carrying the same carrier (``carrier_test_acc``).

    ``nads``: (K, 1024) rows, the NADs of a 1-channel copy of the architecture; ``train``:
    keyword arguments of :func:`train_cifar` (epochs, max_lr, momentum, weight_decay, batch_size).
    Also records, per index, how far poisoning moved the training images: mean L2 change
    and mean / max absolute pixel change on the ``[0, 1]`` scale.
    """
    nad_fp = _fingerprint(nads)
    data_fp = dict(name=data.description.get("name"), sha256=data.description.get("sha256"),
                   n_train=data.description["n_train"], n_test=data.description["n_test"])
    x_test = normalise(data.x_test)
    rows = []
    for index in [None, *indices]:
        if progress:
            progress(index)
        if index is None:
            x_tr = data.x_train
            extra = None
            change = dict(l2_change=0.0, mean_abs_change=0.0, max_abs_change=0.0)
        else:
            x_tr = poison(data.x_train, data.y_train, nads, int(index), eps)
            d = (x_tr - data.x_train).reshape(len(x_tr), -1)
            change = dict(l2_change=float(np.linalg.norm(d, axis=1).mean()),
                          mean_abs_change=float(np.abs(d).mean()), max_abs_change=float(np.abs(d).max()))
            extra = {"carrier_test": (normalise(poison(data.x_test, data.y_test, nads, int(index), eps)),
                                      data.y_test)}
        cfg = dict(experiment="clean", data=data_fp) if index is None else \
            dict(experiment="poison", index=int(index), eps=float(eps), nads=nad_fp, data=data_fp)
        r = train_cifar(model, normalise(x_tr), data.y_train, x_test, data.y_test, seed=seed,
                        device=device, extra_tests=extra, cache=cache, cache_config=cfg, **train)
        rows.append({"index": index, **change, **r})
    return rows


def flipping_experiment(data: CIFAR10Data, U, *, model, train: dict, seed: int = 0, device="auto",
                        cache=None, clean_result: dict | None = None) -> dict:
    """The experiment of the paper's Fig. 8 for one architecture: train on the normalised images
    and on their NAD-flipped version (:func:`flip_representation`, train AND test flipped) with
    identical hyperparameters, initialisation and batch order. Returns ``{"original": ...,
    "flipped": ...}`` (dicts of :func:`train_cifar`); ``clean_result`` reuses an existing run on the
    original representation with the same settings (e.g. the poisoning baseline)."""
    data_fp = dict(name=data.description.get("name"), sha256=data.description.get("sha256"),
                   n_train=data.description["n_train"], n_test=data.description["n_test"])
    xtr, xte = normalise(data.x_train), normalise(data.x_test)
    out = {}
    if clean_result is not None:
        out["original"] = clean_result
    else:
        out["original"] = train_cifar(model, xtr, data.y_train, xte, data.y_test, seed=seed,
                                      device=device, cache=cache,
                                      cache_config=dict(experiment="clean", data=data_fp), **train)
    cfg = dict(experiment="flip", U=_fingerprint(U), data=data_fp)
    out["flipped"] = train_cifar(model, flip_representation(xtr, U), data.y_train,
                                 flip_representation(xte, U), data.y_test, seed=seed, device=device,
                                 cache=cache, cache_config=cfg, **train)
    return out
