"""The authors' published results: their NADs (LTS4/neural-anisotropy-directions, folder ``NADs/``)
and the data of their Fig. 6 (``docs/data/nads.csv``), both Apache-2.0.

Where they are looked for: an explicit ``root`` (then only there), ``$NADCORE_PUBLISHED_NADS``
(NADs) or ``$NADCORE_PUBLISHED_FIGURES`` (figure data), ``$NADCORE_DATA_ROOT/lts4-nads`` (or
``.../reference/lts4-nads``, and ``lts4-figures`` likewise), the project's ``../shared/reference/``,
or ``~/.cache/nadcore/``. Files are checked against a ``SHA256SUMS`` beside them when there is one.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from nadcore.nads.covariance import NADResult
from nadcore.nets import PUBLISHED_NAMES
from nadcore.runtime import file_sha256

__all__ = [
    "PUBLISHED_NETWORKS",
    "published_nads_root",
    "load_published_nads",
    "load_published_fig6",
    "FIG6_SHA256",
    "FIG6_COLUMNS",
    "load_published_fig1",
    "FIG1_SHA256",
    "FIG1_COLUMNS",
    "published_fig1_map",
]

#: Number of networks behind the authors' published NADs (their scripts: num_networks=10000).
PUBLISHED_NETWORKS = 10_000
_PUBLISHED_URL = "https://raw.githubusercontent.com/LTS4/neural-anisotropy-directions/master/NADs/{}"
#: SHA-256 of the authors' docs/data/nads.csv (the data of Fig. 6 on their blog page).
FIG6_SHA256 = "2c568563e206a56a1d301395f575de7f4a6fef7c63563856972cf25f6054d295"
#: registry name -> the column suffix of that network in nads.csv
FIG6_COLUMNS = {"lenet": "ln", "resnet18": "rn", "densenet121": "dn", "vgg11": "vgg"}
#: SHA-256 of the authors' docs/data/dft_accuracies.csv (their Fig. 1), shipped in published_data/
FIG1_SHA256 = "ba013c0b094f7a8eabf611848a134366c28dc4a9daacefa1fb9b825ceda208c2"
#: registry name -> the column suffix of that network in dft_accuracies.csv
FIG1_COLUMNS = {"logreg": "lr", "lenet": "ln", "resnet18": "rn", "densenet121": "dn", "vgg11": "vgg"}


def _candidates(kind: str, env: str) -> list[Path]:
    cands = []
    if os.environ.get(env):
        cands.append(Path(os.environ[env]))
    if os.environ.get("NADCORE_DATA_ROOT"):
        d = Path(os.environ["NADCORE_DATA_ROOT"])
        cands += [d / kind, d / "reference" / kind]
    here = Path(__file__).resolve().parents[2]  # the repository (or site-packages) folder
    cands += [here.parent / "shared" / "reference" / kind, Path.home() / ".cache" / "nadcore" / kind]
    return cands


def published_nads_root(root=None) -> Path | None:
    """The folder holding the authors' ``*_NADs.npy`` (see the module docstring), or None."""
    if root:  # an explicit root is the only place looked at
        root = Path(root)
        return root if any(root.glob("*_NADs.npy")) else None
    return next((c for c in _candidates("lts4-nads", "NADCORE_PUBLISHED_NADS") if any(c.glob("*_NADs.npy"))), None)


def _check_sums(root: Path, names) -> None:
    sums = root / "SHA256SUMS"
    if not sums.is_file():
        return
    table = {}
    for line in sums.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2:
            table[parts[1].lstrip("*")] = parts[0]
    for n in names:
        if n in table and file_sha256(root / n) != table[n]:
            raise ValueError(
                f"checksum mismatch for {root / n}: the file is damaged or not the "
                "authors' file; delete it and fetch it again"
            )


def load_published_nads(arch: str, root=None, download: bool = False):
    """The authors' published NADs of ``arch`` (registry name or their file prefix, e.g. "lenet"
    or "LeNet") as a :class:`nadcore.nads.NADResult` with covariance eigenvalues ``s^2 / (N - 1)``
    (they stored PCA singular values ``s`` of N = 10,000 centred sensitivities). ``download=True``
    fetches the files from the authors' public repository when they are not found locally."""
    prefix = PUBLISHED_NAMES.get(arch.lower(), arch)
    if prefix not in PUBLISHED_NAMES.values():
        raise ValueError(f"no published NADs for {arch!r}; available: {', '.join(sorted(PUBLISHED_NAMES))}")
    names = [f"{prefix}_NADs.npy", f"{prefix}_eigenvals.npy"]
    base = published_nads_root(root)
    if base is None or not all((base / n).is_file() for n in names):
        if not download:
            raise FileNotFoundError(
                f"the authors' published NADs for {prefix} were not found. Put {names[0]} and "
                f"{names[1]} (from github.com/LTS4/neural-anisotropy-directions, folder NADs/) in a "
                "folder and pass root=... or set NADCORE_PUBLISHED_NADS, or call with download=True."
            )
        import urllib.request

        base = Path(root) if root else Path.home() / ".cache" / "nadcore" / "lts4-nads"
        base.mkdir(parents=True, exist_ok=True)
        for n in names:
            tmp = base / (n + ".part")
            urllib.request.urlretrieve(_PUBLISHED_URL.format(n), tmp)
            os.replace(tmp, base / n)
    _check_sums(base, names)
    U = np.load(base / names[0], allow_pickle=False).astype(np.float64)
    s = np.load(base / names[1], allow_pickle=False).astype(np.float64)
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    meta = {
        "model": arch.lower(),
        "source": "published",
        "method": "secant",
        "step": 100.0,
        "networks": PUBLISHED_NETWORKS,
        "input_shape": [1, 32, 32],
        "estimator": "PCA of centred finite-difference sensitivities (authors)",
        "note": f"{U.shape[0]} of {U.shape[1]} components published",
    }
    return NADResult(s**2 / (PUBLISHED_NETWORKS - 1), U.astype(np.float32), meta)


def load_published_fig6(root=None):
    """The authors' Fig. 6 data (``published_data/fig6_nads.csv``, shipped with nadcore; ``root``:
    a folder holding another copy) as a pandas DataFrame indexed by NAD index, with columns
    ``acc_<net>`` (test accuracy in [0, 1], converted from their percent) and ``eig_<net>`` (their
    eigenvalue, on their own scale) for ``<net>`` in :data:`FIG6_COLUMNS`' suffixes. Checks the
    file's SHA-256."""
    path = (
        Path(root) / "fig6_nads.csv" if root else Path(__file__).resolve().parent / "published_data" / "fig6_nads.csv"
    )
    if not path.is_file():
        raise FileNotFoundError(
            f"the authors' Fig. 6 data (fig6_nads.csv, docs/data/nads.csv of "
            f"LTS4/neural-anisotropy-directions) was not found at {path}"
        )
    if file_sha256(path) != FIG6_SHA256:
        raise ValueError(f"{path}: SHA-256 does not match the authors' nads.csv; the file is damaged")
    df = pd.read_csv(path).set_index("index")
    for c in df.columns:
        if c.startswith("acc_"):
            df[c] = df[c] / 100.0
    return df


def load_published_fig1(models=None) -> pd.DataFrame:
    """The authors' published Fig. 1 (``published_data/fig1_dft_accuracies.csv``, shipped with
    nadcore; see the README there) as tidy rows ``model, k1, k2, test_acc`` (accuracy in [0, 1])
    for ``models`` (default: all five of :data:`FIG1_COLUMNS`). Their cell (x, y) is nadcore's
    frequency (k1, k2) = (2 (y - 8), 2 (x - 8)). Checks the file's SHA-256."""
    path = Path(__file__).resolve().parent / "published_data" / "fig1_dft_accuracies.csv"
    if file_sha256(path) != FIG1_SHA256:
        raise ValueError(f"{path}: SHA-256 does not match the authors' dft_accuracies.csv; the file is damaged")
    df = pd.read_csv(path)
    unknown = sorted(set(models or ()) - set(FIG1_COLUMNS))
    if unknown:
        raise ValueError(f"no published Fig. 1 data for {unknown}; the authors published {sorted(FIG1_COLUMNS)}")
    k1, k2 = 2 * (df["y"].to_numpy() - 8), 2 * (df["x"].to_numpy() - 8)
    return pd.concat(
        [
            pd.DataFrame(
                {
                    "model": m,
                    "k1": k1,
                    "k2": k2,
                    "test_acc": df[f"acc_{FIG1_COLUMNS[m]}"].to_numpy(dtype=np.float64) / 100.0,
                }
            )
            for m in (models or FIG1_COLUMNS)
        ],
        ignore_index=True,
    )


def published_fig1_map(model: str, frequencies) -> np.ndarray:
    """The authors' published Fig. 1 accuracies of ``model`` (:func:`load_published_fig1`) at the
    cells ``frequencies`` ((k1, k2) pairs or a FourierGrid, row-major), as a flat array."""
    pub = load_published_fig1([model]).set_index(["k1", "k2"])["test_acc"]
    freqs = frequencies.frequencies if hasattr(frequencies, "frequencies") else frequencies
    return np.array([pub.loc[(int(a), int(b))] for a, b in freqs], dtype=np.float64)
