"""Chapter 6's experiments (the reviewers' questions and the papers' untested theory): summaries
of a directional bias, and the jobs that train networks and follow their NADs.

* :func:`quadrant_grid`: the frequencies ``k1, k2 >= 0`` of a Fig.-1 map, the part of the map
  chapter 6 studies. (Cells ``(k1, k2)`` and ``(-k1, -k2)`` are *not* the same experiment: the
  book's Fourier direction is ``cos + sin`` of ``2 pi (k1 m + k2 n) / size``, and the two are
  orthogonal. The symmetry that does hold is transposition, ``(k1, k2) -> (k2, k1)``, which
  :func:`nadcore.chapters.linear_separability.runs.grid_sweep` uses with ``transpose_symmetric``.)
* :func:`map_summary`: per seed, the mean accuracy near the centre and off the centre, the number
  of off-centre *islands* (cells learned well although far from the low frequencies) and the
  spread of the map; :func:`map_table`, :func:`summary_frame`: the maps as tables.
* :func:`alpha`: eq. (2) of Ortiz-Jimenez et al., "A neural anisotropic view of
  underspecification" (2021): ``alpha(v) = v^T E_theta[grad_x f grad_x f^T] v``, which the paper
  says the test accuracy on D(v) increases with.
* :func:`spectrum_summary`: how concentrated a NAD spectrum is and where in frequency the input
  gradients put their energy;
* :func:`dv_dynamics_job`, :func:`cifar_dynamics_job`: train one network and follow its NADs
  epoch by epoch (:mod:`nadcore.nads.trained`), then remove NAD components from test images;
* :func:`mixed_moments_job`: both second moments of Lemma 2 (:mod:`nadcore.nads.mixed_hessian`);
  :func:`linear_pooling_check`: eqs. (4)-(5) against exact and Monte Carlo averages;
* tidy tables behind the chapter's figures (``*_table``) and the summaries it prints.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import torch

from nadcore.book.intervals import spearman
from nadcore.book.runner import Job, run_jobs
from nadcore.chapters.linear_separability.quantities import frequency_radius
from nadcore.data import cifar
from nadcore.data.directions import FourierGrid, directional_train_test, low_frequency_fraction
from nadcore.nads.covariance import subspace_overlap, top_eigenvectors
from nadcore.nads.mixed_hessian import linear_pooling_moments, linear_pooling_monte_carlo, network_moments
from nadcore.nads.trained import (
    captured_fraction,
    dynamics,
    epoch_snapshots,
    principal_directions,
    random_orthonormal,
    remove_components,
)
from nadcore.nets import build_model, spec_key
from nadcore.runtime import digest, generator
from nadcore.theory import linear_pooling
from nadcore.theory.pooling import average_pooling_prefilter
from nadcore.train import evaluate, train_classifier

__all__ = [
    "stability_table",
    "quadrant_grid",
    "map_summary",
    "map_table",
    "summary_frame",
    "alpha",
    "spearman",
    "spectrum_summary",
    "nad_table",
    "spectra_table",
    "dynamics_table",
    "dynamics_summary",
    "removal_table",
    "removal_summary",
    "alpha_table",
    "overlap_table",
    "dynamics_jobs",
    "linear_pooling_check",
    "dv_dynamics_job",
    "cifar_dynamics_job",
    "mixed_moments_job",
    "REMOVALS",
]

#: the direction sets removed from test images (:func:`cifar_dynamics_job`)
REMOVALS = ("first NADs", "last NADs", "random", "data PCs")


def quadrant_grid(ticks, size: int = 32) -> FourierGrid:
    """The grid of frequencies ``(k1, k2)`` with both in ``ticks`` (non-negative, increasing):
    cell (i, j) holds ``(ticks[i], ticks[j])``, the constant direction in the corner (0, 0).
    (Its ``ticks`` property, meant for centred grids, does not apply: use ``k1``/``k2``.)"""
    t = np.asarray(ticks, dtype=int)
    if t.ndim != 1 or t.size < 2 or t.min() < 0 or np.any(np.diff(t) <= 0) or t.max() > size // 2:
        raise ValueError(f"ticks must increase within [0, {size // 2}], got {list(ticks)}")
    k1, k2 = np.meshgrid(t, t, indexing="ij")
    return FourierGrid(size=size, grid=int(t.size), stride=int(t[1] - t[0]), k1=k1, k2=k2)


def map_summary(acc, grid: FourierGrid, off_centre: int = 8, island: float = 0.6) -> dict:
    """Per-seed summaries of accuracy maps ``acc`` (seeds, g, g) over ``grid``, each an array
    (seeds,): ``centre`` (mean over cells with ``max(|k1|, |k2|) < off_centre``), ``off_centre``
    (mean over the others), ``gap`` (``|centre - off_centre|``: 0 for a map that does not depend
    on the frequency), ``islands`` (fraction of off-centre cells with accuracy >= ``island``),
    ``spread`` (max - min over all cells), ``std`` (standard deviation over all cells: 0 for a
    network that finds every direction equally easy) and ``learned`` (some cell reaches
    ``island``)."""
    a = np.asarray(acc, dtype=float)
    far = frequency_radius(grid) >= off_centre
    flat = a.reshape(a.shape[0], -1)
    centre, off = a[:, ~far].mean(1), a[:, far].mean(1)
    return {
        "centre": centre,
        "off_centre": off,
        "gap": np.abs(centre - off),
        "islands": (a[:, far] >= island).mean(1),
        "spread": flat.max(1) - flat.min(1),
        "std": flat.std(1),
        "learned": flat.max(1) >= island,
    }


def map_table(maps: dict, grid: FourierGrid, seeds) -> pd.DataFrame:
    """The accuracy maps ``maps`` (label -> :func:`nadcore.chapters.linear_separability.runs.grid_sweep`
    result) as one row per variant, seed and cell: ``variant, seed, k1, k2, test_acc, train_acc,
    trained`` (``trained`` False: the cell holds its transpose's runs)."""
    rows = []
    for label, r in maps.items():
        trained = np.asarray(r.get("trained", np.ones(grid.shape, dtype=bool))).reshape(-1)
        test, train = (np.asarray(r[k]).reshape(len(seeds), -1) for k in ("test_acc", "train_acc"))
        for i, s in enumerate(seeds):
            for c, (k1, k2) in enumerate(grid.frequencies):
                rows.append(
                    {
                        "variant": label,
                        "seed": int(s),
                        "k1": int(k1),
                        "k2": int(k2),
                        "test_acc": test[i, c],
                        "train_acc": train[i, c],
                        "trained": bool(trained[c]),
                    }
                )
    return pd.DataFrame(rows)


def summary_frame(summaries: dict, maps: dict) -> pd.DataFrame:
    """One row per variant: the means over seeds of its :func:`map_summary` and the median
    training accuracy of its runs."""
    return pd.DataFrame(
        {
            label: {
                **{k: float(np.mean(v)) for k, v in s.items() if k != "learned"},
                "train acc (median)": float(np.median(maps[label]["train_acc"])),
            }
            for label, s in summaries.items()
        }
    ).T


def alpha(eigenvalues, nads, directions, normalise: bool = True) -> np.ndarray:
    """Eq. (2) of the underspecification paper, ``alpha(v) = v^T C v`` with
    ``C = sum_i lambda_i u_i u_i^T`` the gradient covariance (eigenvalues and NADs as rows), for
    every row ``v`` of ``directions`` (unit vectors). ``normalise``: divide by the mean eigenvalue
    ``tr C / D``, so that 1 means "as sensitive as the average direction" and architectures with
    different gradient scales can be compared."""
    lam = np.asarray(eigenvalues, dtype=np.float64)
    U = np.asarray(nads, dtype=np.float64)
    V = np.asarray(directions, dtype=np.float64).reshape(len(directions), -1)
    a = ((V @ U.T) ** 2) @ lam[: U.shape[0]]
    return a / lam.mean() if normalise else a


def spectrum_summary(eigenvalues, nads, k: int = 16, radius: float = 8.0) -> dict:
    """``top_k``: the share of the gradient energy ``E ||grad_x f||^2 = sum_i lambda_i`` in the
    first ``k`` NADs; ``low_frequency``: the share within Fourier radius ``radius`` of the zero
    frequency (``sum_i lambda_i`` times the share of NAD i's Fourier energy there); ``first_low``:
    that share for the first NAD alone."""
    lam = np.clip(np.asarray(eigenvalues, dtype=np.float64), 0.0, None)
    U = np.asarray(nads, dtype=np.float64)
    share = np.array([low_frequency_fraction(u, radius) for u in U])
    return {
        "top_k": float(lam[:k].sum() / lam.sum()),
        "low_frequency": float((lam[: len(U)] * share).sum() / lam[: len(U)].sum()),
        "first_low": float(share[0]),
    }


def nad_table(sets: dict, indices, **columns):
    """The NAD images of a figure as a tidy table: one row per (set, NAD index, pixel) with the
    columns ``nads`` (the key of ``sets``: a NADResult or rows of NADs), ``index``, ``row``,
    ``col``, ``value``, plus constant ``columns``."""
    frames = []
    for name, r in sets.items():
        U = np.asarray(r.nads if hasattr(r, "nads") else r)
        side = int(round(np.sqrt(U.shape[1])))
        rows, cols = np.divmod(np.arange(U.shape[1]), side)
        for i in indices:
            frames.append(pd.DataFrame({"nads": name, "index": i, "row": rows, "col": cols, "value": U[i], **columns}))
    return pd.concat(frames, ignore_index=True)


def spectra_table(sets: dict, seeds, name: str = "variant") -> pd.DataFrame:
    """Normalised NAD spectra as a tidy table: ``sets`` maps a label to one NADResult per seed."""
    return pd.DataFrame(
        [
            {name: label, "seed": int(s), "index": i, "eigenvalue": lam}
            for label, rs in sets.items()
            for s, r in zip(seeds, rs)
            for i, lam in enumerate(r.normalized_spectrum())
        ]
    )


def dynamics_table(tasks: dict, seeds, ks) -> pd.DataFrame:
    """The NADs-during-training curves (``tasks``: name -> per-seed arrays of
    :func:`dv_dynamics_job` or :func:`cifar_dynamics_job`), one row per task, seed, epoch and k."""
    rows = []
    for name, res in tasks.items():
        for s, a in zip(seeds, res):
            for t in range(a["overlap_initial"].shape[0]):
                for j, k in enumerate(ks):
                    rows.append(
                        {
                            "task": name,
                            "seed": int(s),
                            "epoch": t,
                            "k": k,
                            "overlap_initial": a["overlap_initial"][t, j],
                            "test_acc": a["test_acc"][t],
                            "captured_v": a["captured_v"][t, j] if "captured_v" in a else np.nan,
                            "overlap_architecture": a["overlap_reference"][t, j]
                            if "overlap_reference" in a
                            else np.nan,
                        }
                    )
    return pd.DataFrame(rows)


def dynamics_summary(tasks: dict, ks) -> pd.DataFrame:
    """Means over seeds of the test accuracy and the overlaps with the initial NADs at epochs 0, 1
    and the last one, per task."""
    rows = []
    for name, res in tasks.items():
        acc = np.stack([a["test_acc"] for a in res])
        ov = np.stack([a["overlap_initial"] for a in res])
        for t in sorted({0, 1, acc.shape[1] - 1}):
            rows.append(
                {
                    "task": name,
                    "epoch": t,
                    "test acc": acc[:, t].mean(),
                    **{f"overlap k={k}": ov[:, t, j].mean() for j, k in enumerate(ks)},
                }
            )
    return pd.DataFrame(rows)


def removal_table(acc, energy, seeds, ks) -> pd.DataFrame:
    """Accuracy and energy removed (arrays (seeds, len(REMOVALS), len(ks))) as a tidy table."""
    return pd.DataFrame(
        [
            {"seed": int(s), "directions": n, "k": k, "test_acc": acc[a, i, j], "energy_removed": energy[a, i, j]}
            for a, s in enumerate(seeds)
            for i, n in enumerate(REMOVALS)
            for j, k in enumerate(ks)
        ]
    )


def removal_summary(acc, energy, ks) -> pd.DataFrame:
    """Means over seeds of the accuracy and the energy removed, one row per direction set and k."""
    return pd.DataFrame(
        {
            f"{n}, k={k}": {"accuracy": acc[:, i, j].mean(), "energy removed": energy[:, i, j].mean()}
            for i, n in enumerate(REMOVALS)
            for j, k in enumerate(ks)
        }
    ).T


def alpha_table(alphas: dict, accs: dict, seeds, grid: FourierGrid) -> pd.DataFrame:
    """alpha(v) beside the test accuracy, one row per NAD set, seed and grid cell (``accs``: label ->
    (seeds, cells))."""
    return pd.DataFrame(
        [
            {
                "nads": label,
                "seed": int(s),
                "k1": int(k1),
                "k2": int(k2),
                "alpha": alphas[label][c],
                "test_acc": accs[label][i, c],
            }
            for label in alphas
            for i, s in enumerate(seeds)
            for c, (k1, k2) in enumerate(grid.frequencies)
        ]
    )


def overlap_table(overlaps, seeds, ks, D: int) -> pd.DataFrame:
    """Subspace overlaps (seeds, len(ks)) as a tidy table, with the chance level k / D."""
    return pd.DataFrame(
        [
            {"seed": int(s), "k": k, "overlap": overlaps[i, j], "chance": k / D}
            for i, s in enumerate(seeds)
            for j, k in enumerate(ks)
        ]
    )


def dynamics_jobs(model: str, seeds, cfg: dict, v, reference, basis, data, *, device: str, data_spec: dict):
    """The jobs of chapter 6's questions 2 and 3, one per seed: :func:`dv_dynamics_job` on D(v)
    (``reference``: the architecture's first NADs) and :func:`cifar_dynamics_job` on binary
    CIFAR-10 (``basis``: the architecture's complete NAD basis, removed from test images; ``data``
    the loaded data set, whose description keys the cache; ``data_spec`` how a worker loads it)."""
    ks = cfg["overlap_ks"]
    dv = [
        Job(
            {
                **spec_key(model),
                "seed": s,
                "direction": cfg["dynamics_direction"],
                "data": cfg["dv"],
                "train": cfg["dv_train"],
                "ks": ks,
                "eval_points": cfg["eval_points"],
                "reference": digest(reference),
            },
            {"v": v, "reference": reference, "device": device},
        )
        for s in seeds
    ]
    data_key = {k: data.description.get(k) for k in ("name", "n_train", "n_test", "sha256")}
    cifar_jobs = [
        Job(
            {
                **spec_key(model),
                "seed": s,
                "train": cfg["cifar_train"],
                "ks": ks,
                "eval_points": cfg["eval_points"],
                "removal_ks": cfg["removal_ks"],
                "nads": digest(basis),
                "data": data_key,
            },
            {"nad_basis": basis, "data_spec": data_spec, "device": device},
        )
        for s in seeds
    ]
    return dv, cifar_jobs


def linear_pooling_check(D: int, S: int, sigmas, draws: int, gen) -> dict:
    """Eqs. (4)-(5) of the NAD paper on the linear model of pooling (average-pooling prefilter,
    ``D`` inputs, subsampling ``S``, ``sigmas = (sigma_theta, sigma_phi)``): the largest relative
    difference of the exact Gaussian averages (``exact``) and of ``draws`` Monte Carlo draws
    (``monte_carlo``) from the closed forms, and the range of diag E[J^T J] / diag E[g g^T] where
    m != 0 (``ratio``) beside its closed form (``ratio_closed``)."""
    m = np.abs(average_pooling_prefilter(D, S))
    s_th, s_ph = sigmas
    closed = {
        "gradient": linear_pooling.expected_gradient_covariance(m, s_th, s_ph, S),
        "mixed": linear_pooling.expected_mixed_gram(m, s_th, s_ph, S),
    }
    exact = linear_pooling_moments(m, S, s_th, s_ph)
    mc = linear_pooling_monte_carlo(m, S, s_th, s_ph, draws, gen)

    def rel(a, b):
        return float(np.abs(a - b).max() / np.abs(b).max())

    passed = np.diag(exact["gradient"]) > 0  # m vanishes at the multiples of M
    ratio = np.diag(exact["mixed"])[passed] / np.diag(exact["gradient"])[passed]
    return {
        "exact": max(rel(exact[k], closed[k]) for k in closed),
        "monte_carlo": max(rel(mc[k], closed[k]) for k in closed),
        "ratio": (float(ratio.min()), float(ratio.max())),
        "ratio_closed": (s_th**2 + s_ph**2) / (s_th**2 * s_ph**2),
    }


# --------------------------------------------------------------------------------------------
# Jobs (nadcore.book.runner): one seed each
# --------------------------------------------------------------------------------------------
def _train_with_snapshots(model, x, y, xt, yt, train: dict, generator, device):
    """Train on ``device``; the model and its snapshots come back on the CPU for the analysis."""
    nb = -(-len(x) // int(train.get("batch_size", 128)))
    with epoch_snapshots(model, nb) as snaps:
        res = train_classifier(model, x, y, generator=generator, device=device, x_test=xt, y_test=yt, **train)
    snaps.append({k: v.detach().clone() for k, v in model.state_dict().items()})
    return res, [{k: v.cpu() for k, v in s.items()} for s in snaps], model.cpu()


def _epoch_accuracy(model, snaps, x, y) -> np.ndarray:
    acc = []
    for s in snaps:
        model.load_state_dict(s)
        acc.append(evaluate(model, x, y, device="cpu")[0])
    return np.array(acc)


def dv_dynamics_job(config: dict, v, reference, device: str = "cpu"):
    """Train LeNet-like ``config["model"]`` on D(v) (one seed) and follow its NADs: arrays
    ``overlap_initial`` (T, K), ``overlap_reference`` (T, K) with the rows of ``reference`` (the
    architecture's NADs), ``captured_v`` (T, K) the fraction of ``v`` in the top-k NADs,
    ``spectrum``, ``first_nads``, ``test_acc`` (T,) of every snapshot, ``train_acc``."""
    t0 = time.perf_counter()
    d, ks, s = config["data"], config["ks"], int(config["seed"])
    v = torch.as_tensor(np.asarray(v, dtype=np.float32))
    x, y, xt, yt = directional_train_test(
        v, int(d["n_train"]), int(d["n_test"]), float(d["sigma"]), float(d["epsilon"]), generator=generator(s, 0)
    )
    model = build_model(config["model"], v.shape[0], 1, v.shape[-1], seed=(s, 1))
    res, snaps, model = _train_with_snapshots(model, x, y, xt, yt, config["train"], generator(s, 2), device)
    x_eval = xt[: int(config["eval_points"])]
    dyn = dynamics(model, snaps, x_eval, ks, max(ks))
    ref = np.asarray(reference, dtype=np.float64)
    vv = v.numpy().ravel()
    arrays = {
        "overlap_initial": dyn["overlap_initial"],
        "overlap_reference": np.array([[subspace_overlap(V, ref, k) for k in ks] for V in dyn["sets"]]),
        "captured_v": np.array([[captured_fraction(V[:k], vv) for k in ks] for V in dyn["sets"]]),
        "spectrum": dyn["spectrum"],
        "first_nads": dyn["first_nads"],
        "test_acc": _epoch_accuracy(model, snaps, xt, yt),
        "train_acc": np.array(res.train_acc),
    }
    return arrays, {"seconds": time.perf_counter() - t0}


def cifar_dynamics_job(config: dict, nad_basis, data_spec: dict, device: str = "cpu"):
    """Train ``config["model"]`` (3 channels, one output) on binary CIFAR-10 (one seed), follow its
    NADs over the epochs (as :func:`dv_dynamics_job`, without ``v`` and reference), then test it
    on images whose components along k directions were removed in every channel
    (:data:`REMOVALS`; ``nad_basis``: the architecture's NADs, rows): arrays ``removal_acc``
    (len(REMOVALS), len(removal_ks)), ``removal_energy`` (same: the fraction of the test images'
    squared norm removed), ``clean_acc``."""
    t0 = time.perf_counter()
    s, ks = int(config["seed"]), config["ks"]
    data = cifar.load_cifar10_spec(data_spec)
    x, xt = cifar.normalise(data.x_train), cifar.normalise(data.x_test)
    y, yt = cifar.binarise_labels(data.y_train), cifar.binarise_labels(data.y_test)
    model = build_model(config["model"], 3, 1, 32, seed=(s, 1))
    res, snaps, model = _train_with_snapshots(
        model, torch.as_tensor(x), torch.as_tensor(y), xt, yt, config["train"], generator(s, 2), device
    )
    dyn = dynamics(model, snaps, xt[: int(config["eval_points"])], ks, max(ks))
    U = np.asarray(nad_basis, dtype=np.float64)
    D = U.shape[1]
    P = principal_directions(x)
    sets = {
        "first NADs": lambda k: U[:k],
        "last NADs": lambda k: U[D - k :],
        "random": lambda k: random_orthonormal(k, D, generator(s, 3, k)),
        "data PCs": lambda k: P[:k],
    }
    acc = np.zeros((len(REMOVALS), len(config["removal_ks"])))
    energy = np.zeros_like(acc)
    total = float(np.sum(xt.astype(np.float64) ** 2))
    for i, name in enumerate(REMOVALS):
        for j, k in enumerate(config["removal_ks"]):
            xr = remove_components(xt, sets[name](int(k)))
            acc[i, j] = evaluate(model, xr, yt, device="cpu")[0]
            energy[i, j] = 1.0 - float(np.sum(xr.astype(np.float64) ** 2)) / total
    arrays = {
        "overlap_initial": dyn["overlap_initial"],
        "spectrum": dyn["spectrum"],
        "first_nads": dyn["first_nads"],
        "test_acc": _epoch_accuracy(model, snaps, xt, yt),
        "train_acc": np.array(res.train_acc),
        "removal_acc": acc,
        "removal_energy": energy,
        "clean_acc": np.array(res.test_acc),
    }
    return arrays, {"seconds": time.perf_counter() - t0}


def mixed_moments_job(config: dict):
    """Job of :mod:`nadcore.book.runner`: :func:`network_moments` of ``config["model"]`` for
    ``config["networks"]`` networks of ``config["seed"]`` at ``config["input_shape"]``."""
    t0 = time.perf_counter()
    r = network_moments(config["model"], int(config["networks"]), int(config["seed"]), tuple(config["input_shape"]))
    return r, {"seconds": time.perf_counter() - t0}


#: the seed offset of the second, independent estimate in :func:`stability_table`
SECOND_ESTIMATE = 1000


def stability_table(model, networks: int, seeds, k: int = 4, cache=None, executor=None) -> pd.DataFrame:
    """How stable each basis of Lemma 2 is: per seed ``s``, both bases (gradient covariance and
    mixed Hessian) from ``networks`` networks of seed ``s`` and of seed ``s + SECOND_ESTIMATE``
    (:func:`mixed_moments_job`), and the top-``k`` overlap of the two estimates of each basis."""
    jobs = [
        Job({**spec_key(model), "networks": int(networks), "seed": int(s), "input_shape": [1, 32, 32]})
        for s0 in seeds
        for s in (s0, s0 + SECOND_ESTIMATE)
    ]
    res = [a for a, _ in run_jobs(jobs, mixed_moments_job, executor=executor, cache=cache)]

    def bases(a):
        G = np.asarray(a["gradients"])
        return top_eigenvectors(G.T @ G / len(G), k)[1], top_eigenvectors(np.asarray(a["mixed"]), k)[1]

    rows = {}
    for i, s0 in enumerate(seeds):
        (g1, m1), (g2, m2) = bases(res[2 * i]), bases(res[2 * i + 1])
        rows[int(s0)] = {"gradient": subspace_overlap(g1, g2, k), "mixed Hessian": subspace_overlap(m1, m2, k)}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("seed")
