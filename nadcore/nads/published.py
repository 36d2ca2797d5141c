"""The authors' published results: their NADs (LTS4/neural-anisotropy-directions, folder ``NADs/``)
and the data of their Fig. 6 (``docs/data/nads.csv``), both Apache-2.0.

Where they are looked for: an explicit ``root`` (then only there), ``$NADCORE_PUBLISHED_NADS``
(NADs) or ``$NADCORE_PUBLISHED_FIGURES`` (figure data), ``$NADCORE_DATA_ROOT/lts4-nads`` (or
``.../reference/lts4-nads``, and ``lts4-figures`` likewise), the project's ``../shared/reference/``,
or ``~/.cache/nadcore/``. Every file is checked against its SHA-256 (:data:`PUBLISHED_SHA256`).
:func:`fetch_published_nads` downloads them from the authors' repository at the commit
:data:`PUBLISHED_COMMIT` (``scripts/install.sh`` does, where they are not found).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from nadcore.nads.covariance import NADResult
from nadcore.nets import PUBLISHED_NAMES
from nadcore.runtime import download_verified, file_sha256, write_text_atomic

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
    "PUBLISHED_COMMIT",
    "PUBLISHED_SHA256",
    "PUBLISHED_BASE_URL",
    "fetch_published_nads",
    "missing_published_nads",
]

#: Number of networks behind the authors' published NADs (their scripts: num_networks=10000).
PUBLISHED_NETWORKS = 10_000
#: the commit of LTS4/neural-anisotropy-directions whose ``NADs/`` folder the book uses
PUBLISHED_COMMIT = "d27627d071fbf1b0f3d237f26919a5642355ebf1"
#: where :func:`fetch_published_nads` downloads them from (``NADs/<file>`` and ``LICENSE`` under it)
PUBLISHED_BASE_URL = f"https://raw.githubusercontent.com/LTS4/neural-anisotropy-directions/{PUBLISHED_COMMIT}/"
#: the SHA-256 of every file of the authors' ``NADs/`` folder, and of their licence
PUBLISHED_SHA256 = {
    "DenseNet121_NADs.npy": "2434b5bd8670b93ac07d4489b50350314567aa377f47552043f56dfa12ac4bb1",
    "DenseNet121_eigenvals.npy": "5a5d65bfc88a71a5ec888f9301e35533ff0116403ce3f41e754f4c1f880f90c4",
    "LeNet_NADs.npy": "58bb4ca8d28dd73ea380f7c864557b0f48bf9d25d9632076e813ffea058de2bc",
    "LeNet_eigenvals.npy": "6a72a747ca141a2305d5d5074b44f70e1c56f712efe03ac35735dcbebbd6a822",
    "LogReg_NADs.npy": "41fa67a1be6728a5b0d1220f851492e573aedb5dcda989b69f18c24a076cf1ea",
    "LogReg_eigenvals.npy": "094d4709f6fa13c7aaff9bb2dd6e6cc13229a7ee54851990a5e815baef4e8ed1",
    "ResNet18_NADs.npy": "3d432df94b4f1a67d502d9fcabab222a55aa902bde5fef0d45aad16bc8c5d459",
    "ResNet18_eigenvals.npy": "484eb56630665acd6db2003d6fc78610adeedf62087df783c2bcbc7d15e8f2b7",
    "VGG11_NADs.npy": "53b9a78554972ff73bf2828795a60d667b17ccd8687f5b81a5dbf77d6ecb6a4d",
    "VGG11_eigenvals.npy": "02fa74c9201341ef714b06974030c37b0531480be40f30416c195ebf4db395fb",
}
_LICENSE_SHA256 = "c71d239df91726fc519c6eb72d318ec65820627232b2f796219e87dcf35d0ab4"
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
    for n in names:
        if n in PUBLISHED_SHA256 and file_sha256(root / n) != PUBLISHED_SHA256[n]:
            raise ValueError(
                f"checksum mismatch for {root / n}: the file is damaged or not the authors' file; delete "
                "it and fetch it again (python scripts/fetch_data.py)"
            )


def missing_published_nads(root=None) -> tuple[Path | None, list[str]]:
    """Where the authors' published NADs are found (:func:`published_nads_root`) and which of
    their files are missing there or fail their SHA-256 (all of them where none is found)."""
    base = published_nads_root(root)
    if base is None:
        return None, sorted(PUBLISHED_SHA256)
    return base, [
        n for n in sorted(PUBLISHED_SHA256) if not (base / n).is_file() or file_sha256(base / n) != PUBLISHED_SHA256[n]
    ]


def fetch_published_nads(dest=None, base_url: str | None = None) -> Path:
    """Download the authors' published NADs into ``dest`` (default ``~/.cache/nadcore/lts4-nads``,
    where they are looked for) from ``base_url`` (default :data:`PUBLISHED_BASE_URL`, the
    authors' repository at :data:`PUBLISHED_COMMIT`; any server holding ``NADs/<file>`` and
    ``LICENSE``), each checked against its SHA-256 before it takes its name; files already there
    and intact are kept. Writes ``SHA256SUMS`` beside them. Returns ``dest``."""
    dest = Path(dest) if dest is not None else Path.home() / ".cache" / "nadcore" / "lts4-nads"
    base = (base_url or PUBLISHED_BASE_URL).rstrip("/") + "/"
    wanted = {**{n: ("NADs/" + n, h) for n, h in PUBLISHED_SHA256.items()}, "LICENSE": ("LICENSE", _LICENSE_SHA256)}
    for name, (path, sha) in wanted.items():
        if (dest / name).is_file() and file_sha256(dest / name) == sha:
            continue
        download_verified(base + path, dest / name, sha256=sha)
    write_text_atomic(dest / "SHA256SUMS", "".join(f"{h}  {n}\n" for n, h in sorted(PUBLISHED_SHA256.items())))
    return dest


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
                f"the authors' published NADs for {prefix} were not found. Fetch them with `python "
                "scripts/fetch_data.py` (or bash scripts/install.sh), or put the files of "
                "github.com/LTS4/neural-anisotropy-directions, folder NADs/, in a folder and pass root=... "
                "or set NADCORE_PUBLISHED_NADS, or call with download=True."
            )
        base = fetch_published_nads(root)
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
