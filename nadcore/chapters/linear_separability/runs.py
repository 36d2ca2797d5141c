"""Linear separability experiments on D(v): the paper's Figs. 1-3 and 6.

Ortiz-Jimenez et al., "Neural Anisotropy Directions", NeurIPS 2020, Sec. 2 (Figs. 1-3: D(v) for
Fourier directions v) and Sec. 4.1 (Fig. 6: D(u_i) for the NADs u_i). One *run* trains a fresh
network on independent train/test draws of D(v); a run is identified by its direction label
(a frequency ``[k1, k2]`` or a NAD index) and its seed, which alone decide its data,
initialisation and batch order. Runs are grouped into :class:`nadcore.book.runner.Job` s
of ``chunk`` runs trained together by :func:`nadcore.train.train_many`.
"""

from __future__ import annotations

import time
from typing import Sequence

import numpy as np
import torch

from nadcore.book.cache import Cache
from nadcore.book.runner import Job, collect, run_jobs
from nadcore.chapters.linear_separability.quantities import iterations_to_loss
from nadcore.data.directions import directional_train_test, fourier_basis_vector
from nadcore.nets import build_model, spec_key
from nadcore.runtime import derived_seed, digest, generator, resolve_device
from nadcore.train import train_many, train_side_by_side

__all__ = [
    "TRAINERS",
    "check_trainer",
    "directional_job",
    "direction_jobs",
    "directions_sweep",
    "fourier_sweep",
    "grid_sweep",
    "select_cells",
    "covering_subgrid",
    "RESULT_KEYS",
]

RESULT_KEYS = ("test_acc", "train_acc", "train_loss", "iter_loss", "iters_to_loss")
_DATA_KEYS = ("n_train", "n_test", "sigma", "epsilon", "signal")


def _run_seed(seed: int, tag: str, label) -> int:
    parts = label if isinstance(label, list) else [label]
    return derived_seed(seed, int(digest(tag, 8), 16), *[int(p) % (1 << 31) for p in parts], len(parts))


#: the trainers of a directional job: one run after another, or side by side (vmap)
TRAINERS = ("many", "side_by_side")


def check_trainer(trainer: str) -> None:
    """A clear error unless ``trainer`` is one of :data:`TRAINERS`."""
    if trainer not in TRAINERS:
        raise ValueError(f"trainer must be one of {', '.join(map(repr, TRAINERS))}, got {trainer!r}")


def directional_job(config: dict, vectors, device: str = "auto"):
    """Train ``config["model"]`` on D(v) for each run of ``config["runs"]`` (``[label, seed]``
    pairs, one row of ``vectors`` each); the job function of chapter 3.

    Returns arrays ``test_acc``, ``train_acc``, ``train_loss`` (R,), ``iter_loss`` (R, T) and
    ``iters_to_loss`` (R,; -1 = never reached; threshold ``config["train"]["loss_threshold"]``,
    default 0.1, averaged over ``loss_window`` = 20 iterations), and meta (seconds, device).
    ``config["outputs"]``: 1 (one logit, logistic loss) or 2 (two logits and cross-entropy, as
    the authors trained). ``config["train"]["trainer"]``: ``"many"`` (the default:
    :func:`nadcore.train.train_many`, which trains networks with BatchNorm or Dropout one at a
    time) or ``"side_by_side"`` (:func:`nadcore.train.train_side_by_side`: any architecture, all
    runs of the job at once, dropout masks from per-run generators; the paper profile's big
    networks on a GPU), with ``autocast`` ("bf16" or None, recorded in the meta; side by side it
    applies on CUDA only, one by one on any device).
    """
    t0 = time.perf_counter()
    dev = resolve_device(device)
    vectors = torch.as_tensor(np.asarray(vectors, dtype=np.float32))
    tr = dict(config["train"])
    thr = float(tr.pop("loss_threshold", 0.1))
    window = int(tr.pop("loss_window", 20))
    trainer = tr.pop("trainer", "many")
    autocast = tr.pop("autocast", None)
    if trainer == "side_by_side" and dev.type != "cuda":
        autocast = None  # side by side, bf16 is for the GPU
    check_trainer(trainer)
    d, K = config["data"], int(config.get("outputs", 1))
    models, ys, yts, gens, dgens = [], [], [], [], []
    R = len(config["runs"])
    for i, (v, (label, seed)) in enumerate(zip(vectors, config["runs"])):
        s = _run_seed(int(seed), config.get("tag", ""), label)
        x, y, xt, yt = directional_train_test(
            v,
            int(d["n_train"]),
            int(d["n_test"]),
            float(d["sigma"]),
            float(d["epsilon"]),
            generator=generator(s, 0),
            signal=d.get("signal", "paper"),
        )
        if K == 2:  # the authors' two outputs: class 0 is y = +1
            y, yt = (y < 0).long(), (yt < 0).long()
        models.append(build_model(config["model"], v.shape[0], K, v.shape[-1], seed=(s, 1), check=False))
        if i == 0:  # the runs' inputs as rows of one array: the trainers take it without a copy
            xs, xts = x.new_empty((R, *x.shape)), xt.new_empty((R, *xt.shape))
        xs[i], xts[i] = x, xt
        ys.append(y), yts.append(yt)
        gens.append(generator(s, 2))
        dgens.append(generator(s, 3, device=dev))
    if trainer == "side_by_side":
        res = train_side_by_side(
            models,
            xs,
            ys,
            generators=gens,
            dropout_generators=dgens,
            device=dev,
            xs_test=xts,
            ys_test=yts,
            autocast=autocast,
            **tr,
        )
    else:
        res = train_many(models, xs, ys, generators=gens, device=dev, xs_test=xts, ys_test=yts, autocast=autocast, **tr)
    il = np.stack([r.iter_loss for r in res]).astype(np.float32)
    arrays = {
        "test_acc": np.array([r.test_acc for r in res], dtype=np.float64),
        "train_acc": np.array([r.train_acc for r in res], dtype=np.float64),
        "train_loss": np.array([r.train_loss for r in res], dtype=np.float64),
        "iter_loss": il,
        "iters_to_loss": iterations_to_loss(il, thr, window),
    }
    meta = {
        "seconds": time.perf_counter() - t0,
        "device": str(dev),
        "threads": torch.get_num_threads(),
        "trainer": trainer,
        "autocast": autocast,
    }
    if dev.type == "cuda":
        meta["gpu"] = torch.cuda.get_device_name(dev)
    return arrays, meta


def direction_jobs(
    vectors,
    labels: Sequence,
    seeds: Sequence[int],
    *,
    model,
    settings: dict,
    chunk: int = 8,
    tag: str = "",
    device: str = "auto",
    outputs: int = 1,
    balance: int = 1,
) -> list[Job]:
    """Jobs of ``chunk`` runs over every (seed, direction): seed-major order, so that results
    reshape to (len(seeds), len(vectors)). ``settings``: n_train, n_test, sigma, epsilon, signal
    and the keywords of :func:`nadcore.train.train_many` (epochs, max_lr, ...); ``labels`` (JSON
    ints or int lists, e.g. ``[k1, k2]`` or a NAD index) and ``tag`` seed each run.
    ``balance`` > 1 (the number of workers): as many jobs as a multiple of it, of at most
    ``chunk`` runs and near-equal sizes, so that no worker idles while one finishes a big job."""
    vectors = np.asarray(vectors, dtype=np.float32)
    if len(vectors) != len(labels):
        raise ValueError(f"{len(vectors)} vectors but {len(labels)} labels")
    labels = [[int(a) for a in l] if isinstance(l, (list, tuple, np.ndarray)) else int(l) for l in labels]
    data = {k: settings[k] for k in _DATA_KEYS if k in settings}
    train = {k: v for k, v in settings.items() if k not in _DATA_KEYS}
    runs = [(i, [labels[i], int(s)]) for s in seeds for i in range(len(vectors))]
    if balance > 1:
        n_jobs = -(-len(runs) // chunk)  # ceil
        n_jobs = min(len(runs), -(-n_jobs // balance) * balance)
        cuts = np.linspace(0, len(runs), n_jobs + 1).round().astype(int)
    else:
        cuts = np.r_[np.arange(0, len(runs), chunk), len(runs)]
    jobs = []
    for a, b in zip(cuts[:-1], cuts[1:]):
        part = runs[a:b]
        V = vectors[[i for i, _ in part]]
        config = {
            **spec_key(model),
            "runs": [r for _, r in part],
            "tag": tag,
            "vectors": digest(V),
            "train": train,
            "data": data,
            "outputs": int(outputs),
        }
        jobs.append(Job(config=config, data={"vectors": V, "device": str(device)}))
    return jobs


def directions_sweep(
    model,
    vectors,
    labels,
    settings: dict,
    *,
    seeds: Sequence[int] = (0,),
    chunk: int = 8,
    tag: str = "",
    executor=None,
    cache: Cache | None = None,
    progress=False,
    device: str = "auto",
    outputs: int = 1,
    balance: int = 1,
) -> dict:
    """Train ``model`` on D(v) for every direction and seed. Returns :data:`RESULT_KEYS` arrays
    of shape (len(seeds), len(vectors), ...), plus ``compute_seconds`` (summed over jobs, as
    measured when they ran) and ``jobs``."""
    jobs = direction_jobs(
        vectors,
        labels,
        seeds,
        model=model,
        settings=settings,
        chunk=chunk,
        tag=tag,
        device=device,
        outputs=outputs,
        balance=balance,
    )
    res = run_jobs(jobs, directional_job, executor=executor, cache=cache, progress=progress)
    S, V = len(seeds), len(vectors)
    out = {k: collect(res, k).reshape(S, V, *collect(res, k).shape[1:]) for k in RESULT_KEYS}
    out["compute_seconds"] = float(sum(m.get("seconds", 0.0) for _, m in res))
    out["jobs"] = len(jobs)
    return out


def fourier_sweep(model, frequencies, settings: dict, *, size: int = 32, **kw) -> dict:
    """Train ``model`` on D(v) for every Fourier direction ``(k1, k2)`` of ``frequencies`` and
    every seed: :func:`directions_sweep`'s arrays of shape (seeds, cells, ...), plus
    ``frequencies``. Runs are labelled (and seeded) by their frequency, so the same frequency with
    the same settings is the same run (and cache entry) whichever grid or cell list asks for it."""
    freqs = [(int(a), int(b)) for a, b in frequencies]
    V = np.stack([fourier_basis_vector(a, b, size).numpy() for a, b in freqs])
    out = directions_sweep(model, V, [list(f) for f in freqs], settings, tag="fourier", **kw)
    out["frequencies"] = freqs
    return out


def grid_sweep(model, grid, settings: dict, *, transpose_symmetric: bool = False, **kw) -> dict:
    """:func:`fourier_sweep` over every cell of ``grid`` (a :class:`nadcore.data.FourierGrid`):
    the paper's Figs. 1-3. Arrays reshaped to (seeds, g, g, ...), plus ``grid``, ``frequencies``
    (row-major) and ``trained`` (g, g): which cells were trained.

    ``transpose_symmetric``: train only the cells with k1 <= k2 and give cell (k2, k1) the runs of
    (k1, k2). Exact in distribution when the architecture's random initialisation is invariant
    under transposing the image (square kernels and pooling windows with i.i.d. weights, as in
    LeNet, logistic regression and the paper's other networks): transposing every image of
    D(v(k1, k2)) gives D(v(k2, k1)), the Fourier direction being cos + sin of
    2 pi (k1 m + k2 n) / size, and the transposed network is as likely as the original. It saves
    g (g - 1) / 2 of the g^2 runs; per-seed averages over the grid stay unbiased."""
    freqs = [(int(a), int(b)) for a, b in grid.frequencies]
    if transpose_symmetric:
        cells = [f for f in freqs if f[0] <= f[1]]
        pos = {f: i for i, f in enumerate(cells)}
        missing = [f for f in freqs if (min(f), max(f)) not in pos]
        if missing:
            raise ValueError(f"the grid is not symmetric under transposition: {missing[:3]} have no mirror cell")
        pick = np.array([pos[(min(f), max(f))] for f in freqs])
        trained = np.array([f[0] <= f[1] for f in freqs])
    else:
        cells, pick, trained = freqs, np.arange(len(freqs)), np.ones(len(freqs), dtype=bool)
    out = fourier_sweep(model, cells, settings, size=grid.size, **kw)
    g = grid.shape
    res = {k: out[k][:, pick].reshape(out[k].shape[0], *g, *out[k].shape[2:]) for k in RESULT_KEYS}
    res.update(
        grid=grid,
        frequencies=freqs,
        trained=trained.reshape(g),
        compute_seconds=out["compute_seconds"],
        jobs=out["jobs"],
    )
    return res


def select_cells(result: dict, cells) -> dict:
    """The runs of a :func:`fourier_sweep` / :func:`grid_sweep` ``result`` at the frequencies
    ``cells`` (which it must hold): :data:`RESULT_KEYS` arrays (seeds, len(cells), ...) and
    ``frequencies``, the same runs without training them again."""
    freqs = [tuple(f) for f in result["frequencies"]]
    cells = [(int(a), int(b)) for a, b in cells]
    missing = [c for c in cells if c not in freqs]
    if missing:
        raise ValueError(f"cells {missing} are not among the result's frequencies")
    pick = [freqs.index(c) for c in cells]
    lead = 3 if "grid" in result else 2  # (seeds, g, g, ...) or (seeds, cells, ...)
    out = {}
    for k in RESULT_KEYS:
        a = np.asarray(result[k])
        out[k] = a.reshape(a.shape[0], len(freqs), *a.shape[lead:])[:, pick]
    out["frequencies"] = cells
    return out


def covering_subgrid(grid, frequencies):
    """The coarsest ``grid.subgrid(every)`` (every = 8, 4, 2 or 1) holding every frequency of
    ``frequencies``: where a few cells are drawn in the layout of the full map."""
    want = {(int(a), int(b)) for a, b in frequencies}
    for every in (8, 4, 2, 1):
        sub = grid.subgrid(every) if every > 1 else grid
        if want <= set(sub.frequencies):
            return sub
    raise ValueError(f"frequencies {sorted(want - set(grid.frequencies))} are not cells of the grid")
