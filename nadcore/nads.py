"""Neural anisotropy directions (NADs): Monte Carlo estimation, eigendecomposition, comparison.

Paper: Ortiz-Jimenez, Modas, Moosavi-Dezfooli, Frossard, "Neural Anisotropy Directions",
NeurIPS 2020, Sec. 3. The NADs of an architecture are the eigenvectors of the second moment of
its input sensitivity over random initialisations,

    C = E_theta[ g_theta(x) g_theta(x)^T ],

evaluated at one fixed point ``x ~ N(0, I)``, for networks in eval mode with a scalar output.
Two estimators of ``g`` are first-class here:

``secant`` (:func:`input_sensitivity_secant`)
    The authors' code: a central finite difference along every input axis with a *large* step
    ``h = 100``, ``(f(x + h e_i) - f(x - h e_i)) / 2h``: 2*D forward passes per network. With a
    step 100 times the scale of the input this is a large-scale secant slope, not a gradient; it
    reproduces the authors' published NADs.
``gradient`` (:func:`input_gradient`)
    Exact input gradients by autograd, the paper's written definition. Hundreds of times cheaper,
    but for several architectures it gives *different* NADs (see chapter 2 of the book).

The estimate is accumulated in float64 without storing samples (two split halves, even and odd
network indices, so the agreement of the halves measures convergence), then ``numpy.linalg.eigh``.
Network ``n`` of seed ``s`` is initialised with the seed ``derived_seed(s, n)``, whatever the
batching, the number of worker processes or the order; the evaluation point comes from seed ``s``.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
import multiprocessing as mp

import numpy as np
import torch

import nadcore
from nadcore import models as _models
from nadcore.cache import file_sha256
from nadcore.utils import derived_seed, resolve_device

__all__ = [
    "NADResult", "compute_nads", "cached_nads", "input_sensitivity_secant", "input_gradient",
    "gradient_covariance", "subspace_overlap", "load_published_nads", "fourier_energy",
    "evaluation_point", "init_network", "default_init_plan", "published_nads_root", "PUBLISHED_NETWORKS",
]

METHODS = ("secant", "gradient")
#: Number of networks behind the authors' published NADs (their scripts: num_networks=10000).
PUBLISHED_NETWORKS = 10_000
OVERLAP_KS = (1, 4, 16, 64)
#: With ``workers="auto"``, start worker processes only if the work left after a probe of a few
#: networks is projected to take longer than this (seconds).
AUTO_POOL_SECONDS = 30.0
AUTO_FLOPS_PER_SECOND = 20e9


def forward_flops(model: torch.nn.Module, input_shape) -> float:
    """Multiply-add FLOPs (x2) of one forward pass of one input, from Conv/Linear layers."""
    total = [0.0]

    def hook(mod, inp, out):
        total[0] += 2.0 * out.numel() * mod.weight[0].numel()

    hs = [m.register_forward_hook(hook) for m in model.modules()
          if isinstance(m, (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d, torch.nn.Linear))]
    try:
        with torch.no_grad():
            model.eval()(torch.zeros((1, *input_shape)))
    finally:
        for h in hs:
            h.remove()
    return total[0]


# --------------------------------------------------------------------------------------------
# Result container
# --------------------------------------------------------------------------------------------
@dataclass
class NADResult:
    """Eigenvalues (descending), NADs (one unit vector per ROW, same order), metadata.

    ``extras`` holds optional arrays such as running estimates at checkpoints:
    ``checkpoint_networks`` (C,), ``checkpoint_nads`` (C, K, D) top-K NADs of the running
    estimate, ``checkpoint_split_half`` (C, len(OVERLAP_KS)) overlap of the two half estimates.
    """

    eigenvalues: np.ndarray
    nads: np.ndarray
    meta: dict
    extras: dict = field(default_factory=dict)

    @property
    def input_shape(self) -> tuple:
        return tuple(self.meta.get("input_shape", (1, int(math.isqrt(self.nads.shape[1])), int(math.isqrt(self.nads.shape[1])))))

    def nad(self, i: int) -> np.ndarray:
        """NAD ``i`` reshaped to the input shape."""
        return self.nads[i].reshape(self.input_shape)

    def normalized_spectrum(self) -> np.ndarray:
        """Eigenvalues divided by the largest one (the paper's Fig. 6 green curves)."""
        return self.eigenvalues / self.eigenvalues[0]

    def to_arrays(self) -> dict:
        return {"eigenvalues": self.eigenvalues, "nads": self.nads, **self.extras}

    def save(self, path) -> Path:
        """Write ``path`` (.npz): ``eigenvalues`` (D,), ``nads`` (D, D), ``meta`` (JSON string)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".part.npz")
        np.savez(tmp, meta=np.array(json.dumps(self.meta, sort_keys=True)), **self.to_arrays())
        os.replace(tmp, path)
        return path

    @classmethod
    def load(cls, path) -> "NADResult":
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        meta = json.loads(str(arrays.pop("meta"))) if "meta" in arrays else {}
        return cls(arrays.pop("eigenvalues"), arrays.pop("nads"), meta, arrays)


# --------------------------------------------------------------------------------------------
# Sampling
# --------------------------------------------------------------------------------------------
def evaluation_point(input_shape, seed: int) -> torch.Tensor:
    """The fixed evaluation point ``x ~ N(0, I)`` of ``input_shape`` drawn from ``seed``."""
    g = torch.Generator().manual_seed(int(seed))
    return torch.randn(tuple(input_shape), generator=g)


def default_init_plan(model: torch.nn.Module):
    """For models declaring ``default_init = True`` (PyTorch's default initialisation everywhere),
    a list ``(name, shape, kind, value)`` over ``named_parameters()``: ``kind`` "uniform" with
    bound ``value`` = 1/sqrt(fan_in) (Linear, Conv2d weights and biases) or "const" (BatchNorm
    weight 1, bias 0). None if the model does not qualify; then it is re-initialised through
    ``reset_parameters`` or its factory."""
    if not getattr(model, "default_init", False):
        return None
    plan = {}
    for mname, mod in model.named_modules():
        direct = list(mod.named_parameters(recurse=False))
        if not direct:
            continue
        full = lambda pn: f"{mname}.{pn}" if mname else pn  # noqa: E731
        if isinstance(mod, (torch.nn.Linear, torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d)):
            bound = 1.0 / math.sqrt(mod.weight[0].numel())
            for pn, p in direct:
                plan[full(pn)] = (tuple(p.shape), "uniform", bound)
        elif isinstance(mod, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d, torch.nn.BatchNorm3d)):
            for pn, p in direct:
                plan[full(pn)] = (tuple(p.shape), "const", 1.0 if pn == "weight" else 0.0)
        else:
            return None
    return [(n, *plan[n]) for n, _ in model.named_parameters()]


def _draw_default(plan, seed: int, indices) -> dict:
    """Stacked parameters (B, *shape) of networks ``indices`` under ``plan``: network n draws one
    flat uniform float32 vector from numpy's PCG64 seeded with ``derived_seed(seed, n)``."""
    sizes = [int(np.prod(shape)) if kind == "uniform" else 0 for _, shape, kind, _ in plan]
    P = sum(sizes)
    U_np = np.empty((len(indices), P), dtype=np.float32)
    for row, n in enumerate(indices):
        np.random.default_rng(derived_seed(seed, int(n))).random(P, dtype=np.float32, out=U_np[row])
    U = torch.from_numpy(U_np)
    out, off = {}, 0
    for (name, shape, kind, value), size in zip(plan, sizes):
        if kind == "uniform":
            out[name] = (U[:, off:off + size] * (2 * value) - value).reshape(len(indices), *shape)
            off += size
        else:
            out[name] = torch.full((len(indices), *shape), value)
    return out


def init_network(model: torch.nn.Module, factory, seed: int, index: int, in_channels: int, plan=None):
    """(Re-)initialise network ``index`` of ``seed`` and return it in eval mode. With a
    :func:`default_init_plan` the parameters come from :func:`_draw_default` (identical to the
    batched path); otherwise the model redraws in place (``reset_parameters``) or is rebuilt with
    ``factory``, under ``torch.manual_seed(derived_seed(seed, index))`` on the CPU RNG."""
    if plan is not None:
        params = _draw_default(plan, seed, [index])
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.copy_(params[name][0])
        return model.eval()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(derived_seed(seed, index))
        if model is not None and _models.reset_parameters(model):
            return model.eval()
        fresh = factory(in_channels, 1)
    if model is not None:  # keep the device/layout of the existing model
        p = next(model.parameters(), None)
        if p is not None:
            fresh = fresh.to(p.device)
    return fresh.eval()


def _perturbation_batch(x: torch.Tensor, step: float) -> torch.Tensor:
    """The 2*D inputs ``x + h e_i`` (first D) and ``x - h e_i`` (last D)."""
    D = x.numel()
    E = torch.eye(D, dtype=x.dtype, device=x.device).view(D, *x.shape)
    return torch.cat([x + step * E, x - step * E])


def input_sensitivity_secant(model, x: torch.Tensor, step: float = 100.0, chunk: int | None = None,
                             batch: torch.Tensor | None = None) -> torch.Tensor:
    """Central finite difference ``(f(x + h e_i) - f(x - h e_i)) / 2h`` along every input axis.

    This is the authors' estimator (``utils.input_numerical_jacobian`` with ``scale=100``), done
    without autograd and in chunks that fit the CPU caches. Returns a float64 vector of length D.
    ``batch`` may pass a precomputed :func:`_perturbation_batch` to save rebuilding it.
    """
    D = x.numel()
    X = _perturbation_batch(x, step) if batch is None else batch
    chunk = chunk or (2 * D if X.is_cuda else 128)
    with torch.no_grad():
        out = torch.cat([model(X[i:i + chunk]).reshape(-1) for i in range(0, 2 * D, chunk)])
    out = out.double()
    return (out[:D] - out[D:]) / (2.0 * step)


def input_gradient(model, x: torch.Tensor) -> torch.Tensor:
    """Exact input gradient ``grad_x f(x)`` by autograd (the paper's definition); float64, length D."""
    xx = x.detach().clone().unsqueeze(0).requires_grad_(True)
    out = model(xx).sum()
    (g,) = torch.autograd.grad(out, xx)
    return g.reshape(-1).double()


def _stacked_gradients(model, x, stacked: dict):
    """Exact input gradients of B networks at once (torch.func: vmap over stacked parameters
    ``name -> (B, *shape)``; buffers shared)."""
    from torch.func import functional_call, grad, vmap

    buffers = dict(model.named_buffers())

    def f(p, xx):
        return functional_call(model, (p, buffers), (xx.unsqueeze(0),)).sum()

    B = next(iter(stacked.values())).shape[0]
    g = vmap(grad(f, argnums=1), in_dims=(0, None))(stacked, x)
    return g.reshape(B, -1).double()


def _stacked_secant(model, batch: torch.Tensor, stacked: dict, step: float, chunk: int) -> torch.Tensor:
    """Secant sensitivities of B networks in one pass per input chunk (vmap over stacked
    parameters: several networks per forward pass, grouped convolutions underneath)."""
    from torch.func import functional_call, vmap

    buffers = dict(model.named_buffers())
    D = batch.shape[0] // 2

    def f(p, xx):
        return functional_call(model, (p, buffers), (xx,)).reshape(-1)

    with torch.no_grad():
        out = torch.cat([vmap(f, in_dims=(0, None))(stacked, batch[i:i + chunk])
                         for i in range(0, 2 * D, chunk)], dim=1).double()
    return (out[:, :D] - out[:, D:]) / (2.0 * step)


def _n_params(model) -> int:
    return sum(p.numel() for p in model.parameters())


class _Accumulator:
    """Sums of g g^T over even and odd network indices (float64), and of g."""

    def __init__(self, D: int):
        self.even = np.zeros((D, D))
        self.odd = np.zeros((D, D))
        self.sum = np.zeros(D)
        self.n = 0
        self.sq_norm = 0.0

    def add(self, G: np.ndarray, indices: np.ndarray):
        ev = (indices % 2) == 0
        if ev.any():
            self.even += G[ev].T @ G[ev]
        if (~ev).any():
            self.odd += G[~ev].T @ G[~ev]
        self.sum += G.sum(0)
        self.n += len(indices)

    def merge(self, other: "_Accumulator"):
        self.even += other.even
        self.odd += other.odd
        self.sum += other.sum
        self.n += other.n


def _sample_range(spec, input_shape, seed, start, stop, method, step, device, chunk,
                  threads=None, progress=None, strategy="auto") -> _Accumulator:
    """Accumulate the sensitivities of networks ``start..stop-1``."""
    if threads:
        torch.set_num_threads(threads)
    device = resolve_device(device)
    factory = _models.resolve_factory(spec)
    C = input_shape[0]
    model = _models.build_model(spec, C, 1, input_shape[-1], check=False).to(device).eval()
    if device.type == "cpu" and method == "secant" and len(input_shape) == 3:
        model = model.to(memory_format=torch.channels_last)
    x = evaluation_point(input_shape, seed).to(device)
    D = x.numel()
    acc = _Accumulator(D)
    batch = _perturbation_batch(x, step) if method == "secant" else None
    if batch is not None and device.type == "cpu" and batch.dim() == 4:
        batch = batch.contiguous(memory_format=torch.channels_last)
    plan = default_init_plan(model)
    if plan is not None:
        _models.reset_parameters(model)  # buffers (BatchNorm running statistics) to their defaults
    # Several networks per pass (vmap over stacked parameters) pays off for exact gradients of
    # small models everywhere, and for the secant of small models on a GPU; on a CPU the grouped
    # convolutions it turns into are slower than one network at a time (measured: see README).
    small = plan is not None and _n_params(model) < 2_000_000
    if strategy == "loop" or plan is None:
        use_vmap = False
    elif strategy == "vmap":
        use_vmap = True
    else:
        use_vmap = small and (method == "gradient" or device.type == "cuda")
    block = (256 if method == "gradient" else 8) if use_vmap else 16
    for b0 in range(start, stop, block):
        idx = np.arange(b0, min(b0 + block, stop))
        if use_vmap:
            stacked = {k: v.to(device) for k, v in _draw_default(plan, seed, idx).items()}
            if method == "gradient":
                G = _stacked_gradients(model, x, stacked)
            else:
                G = _stacked_secant(model, batch, stacked, step, chunk or (2 * D if device.type == "cuda" else 128))
        else:
            rows = []
            for n in idx:
                model = init_network(model, factory, seed, int(n), C, plan)
                if method == "secant":
                    rows.append(input_sensitivity_secant(model, x, step, chunk, batch))
                else:
                    rows.append(input_gradient(model, x))
            G = torch.stack(rows)
        acc.add(G.cpu().numpy(), idx)
        if progress is not None:
            progress(len(idx))
    return acc


def _worker(args):
    return _sample_range(*args, threads=1)


def _top_eigh(M: np.ndarray, k: int | None = None):
    w, V = np.linalg.eigh(M)
    order = np.argsort(w)[::-1]
    w, V = w[order], V[:, order]
    if k is not None:
        w, V = w[:k], V[:, :k]
    return np.clip(w, 0.0, None), V.T.copy()


def gradient_covariance(acc_even: np.ndarray, acc_odd: np.ndarray, n: int) -> np.ndarray:
    """Monte Carlo estimate of ``E_theta[g g^T]`` from accumulated sums over ``n`` networks."""
    return (acc_even + acc_odd) / n


def identifiable_overlap(a: "NADResult", b: "NADResult", k: int) -> float:
    """:func:`subspace_overlap` of two NAD estimates, or NaN when ``k`` exceeds the number of
    networks behind either: an N-network estimate has rank <= N, and its NADs past N are an
    arbitrary basis of the null space (they change with the last bit of the input)."""
    n = min(int(a.meta.get("networks", 10 ** 9)), int(b.meta.get("networks", 10 ** 9)))
    return subspace_overlap(a.nads, b.nads, k) if k <= n else float("nan")


def subspace_overlap(U: np.ndarray, V: np.ndarray, k: int) -> float:
    """``||U_k V_k^T||_F^2 / k`` for NAD sets stored one vector per ROW (1 = same subspace,
    about k/D for random subspaces)."""
    U = np.asarray(U, dtype=np.float64)[:k]
    V = np.asarray(V, dtype=np.float64)[:k]
    if U.shape[0] < k or V.shape[0] < k:
        raise ValueError(f"need at least k={k} NADs in both sets, got {U.shape[0]} and {V.shape[0]}")
    return float(np.sum((U @ V.T) ** 2) / k)


def compute_nads(model="lenet", input_shape=(1, 32, 32), num_networks: int = 1000, seed: int = 0,
                 method: str = "secant", step: float = 100.0, device="auto", chunk: int | None = None,
                 workers: int | str = "auto", checkpoints=None, progress: bool = False,
                 strategy: str = "auto", top_k_checkpoints: int = 64) -> NADResult:
    """Estimate the NADs of ``model`` (registry name, ``"pkg.mod:factory"`` or a factory).

    ``num_networks`` random initialisations; ``method`` "secant" (step ``step``) or "gradient";
    ``workers`` processes of one thread each on the CPU ("auto": one per core when it pays off,
    string specs only); ``checkpoints``: network counts at which to record running estimates
    (split-half agreement and the top NADs), e.g. ``[250, 500, 1000]``.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    input_shape = tuple(int(s) for s in input_shape)
    if len(input_shape) != 3 or min(input_shape) < 1:
        raise ValueError(f"input_shape must be (C, H, W) with positive sizes, got {input_shape}")
    num_networks = int(num_networks)
    if num_networks < 2:
        raise ValueError(f"num_networks must be at least 2 (got {num_networks})")
    if method == "secant" and not (step > 0 and math.isfinite(step)):
        raise ValueError(f"step must be a positive finite number, got {step}")
    dev = resolve_device(device)
    # Build once in the parent: gives a clear error for a bad spec or a wrong output shape.
    probe = _models.build_model(model, input_shape[0], 1, input_shape[-1], check=False)
    _models.check_model_output(probe, input_shape, 1, model)
    fingerprint = hashlib.sha256(repr(probe).encode()).hexdigest()[:16]
    spec_name = model if isinstance(model, str) else getattr(model, "__qualname__", repr(model))

    cps = sorted({int(c) for c in (checkpoints or []) if 2 <= int(c) < num_networks}) + [num_networks]
    # "auto": one process per core on the CPU when the estimated work (forward FLOPs x passes x
    # networks at AUTO_FLOPS_PER_SECOND) exceeds AUTO_POOL_SECONDS; a worker pays a few seconds to
    # start and import torch. The choice is deterministic (it never depends on timings), so a
    # chapter run twice accumulates in the same order and prints the same digits.
    if workers == "auto":
        passes = 2 * int(np.prod(input_shape)) if method == "secant" else 3
        est = num_networks * passes * forward_flops(probe, input_shape) / AUTO_FLOPS_PER_SECOND
        workers = ((os.cpu_count() or 1) if (dev.type == "cpu" and isinstance(model, str)
                                             and est > AUTO_POOL_SECONDS) else 1)
    workers = max(1, int(workers))
    if workers > 1 and not isinstance(model, str):
        workers = 1  # factories that are not importable by name cannot travel to worker processes
    probe_n = 0
    workers_used = 1
    D = int(np.prod(input_shape))
    total = _Accumulator(D)
    ck_n, ck_nads, ck_split = [], [], []
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=num_networks, desc=f"{method} NADs of {spec_name}", unit="net")
    t0 = time.perf_counter()
    pool = None
    try:
        start = 0
        if probe_n:
            t_probe = time.perf_counter()
            total.merge(_sample_range(model, input_shape, seed, 0, probe_n, method, step, dev, chunk,
                                      progress=(bar.update if bar else None), strategy=strategy))
            per_net = (time.perf_counter() - t_probe) / probe_n
            if per_net * (num_networks - probe_n) < AUTO_POOL_SECONDS:
                workers = 1
            start = probe_n
        if workers > 1:
            pool = ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn"))
            workers_used = workers
        for stop in cps:
            if stop <= start:
                pass  # already sampled by the probe
            elif pool is None:
                acc = _sample_range(model, input_shape, seed, start, stop, method, step, dev, chunk,
                                    progress=(bar.update if bar else None), strategy=strategy)
                total.merge(acc)
            else:
                bounds = np.linspace(start, stop, workers + 1).astype(int)
                jobs = [(model, input_shape, seed, int(a), int(b), method, step, str(dev), chunk)
                        for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
                for acc in pool.map(_worker, jobs):
                    total.merge(acc)
                if bar:
                    bar.update(stop - start)
            start = stop
            if stop != num_networks or len(cps) > 1:
                ck_n.append(stop)
                _, V = _top_eigh(gradient_covariance(total.even, total.odd, total.n), top_k_checkpoints)
                _, Va = _top_eigh(total.even, max(OVERLAP_KS))
                _, Vb = _top_eigh(total.odd, max(OVERLAP_KS))
                ck_nads.append(V.astype(np.float32))
                ck_split.append([subspace_overlap(Va, Vb, k) for k in OVERLAP_KS])
    finally:
        if pool is not None:
            pool.shutdown()
        if bar:
            bar.close()
    seconds = time.perf_counter() - t0
    C = gradient_covariance(total.even, total.odd, total.n)
    eigenvalues, nads = _top_eigh(C)
    meta = {
        "model": spec_name, "input_shape": list(input_shape), "networks": num_networks,
        "seed": int(seed), "method": method, "step": float(step) if method == "secant" else None,
        "device": str(dev), "workers": workers_used, "sampling_seconds": round(seconds, 3),
        "networks_per_second": round(num_networks / seconds, 3),
        "nadcore_version": nadcore.__version__, "torch_version": torch.__version__,
        "architecture_fingerprint": fingerprint, "estimator": "uncentered second moment",
        "mean_sensitivity_norm": float(np.linalg.norm(total.sum / total.n)),
    }
    extras = {}
    if ck_n:
        extras = {"checkpoint_networks": np.array(ck_n), "checkpoint_nads": np.stack(ck_nads),
                  "checkpoint_split_half": np.array(ck_split), "overlap_ks": np.array(OVERLAP_KS)}
    return NADResult(eigenvalues, nads.astype(np.float32), meta, extras)


def cached_nads(model="lenet", method: str = "secant", num_networks: int = 1000, seed: int = 0,
                input_shape=(1, 32, 32), step: float = 100.0, cache=None, device="auto",
                checkpoints=None, progress: bool = False, workers="auto") -> NADResult:
    """:func:`compute_nads` through the content-addressed cache (key: spec, architecture
    fingerprint, input shape, networks, seed, method, step, nadcore version). A cached entry
    serves any request whose ``checkpoints`` it already holds; otherwise it is recomputed with
    them. Factories given as callables are computed without caching."""
    from nadcore.cache import Cache

    if not isinstance(model, str):
        return compute_nads(model, input_shape, num_networks, seed, method, step, device,
                            checkpoints=checkpoints, progress=progress, workers=workers)
    cache = cache if cache is not None else Cache()
    probe = _models.build_model(model, input_shape[0], 1, input_shape[-1], check=False)
    config = {"model": model.strip().lower() if model.strip().lower() in _models.REGISTRY else model,
              "fingerprint": hashlib.sha256(repr(probe).encode()).hexdigest()[:16],
              "input_shape": list(input_shape), "networks": int(num_networks), "seed": int(seed),
              "method": method, "step": float(step) if method == "secant" else None}
    wanted = sorted({int(c) for c in (checkpoints or []) if 2 <= int(c) < num_networks})
    hit = cache.load("nads", config)
    if hit is not None:
        arrays, meta = hit
        have = set(int(c) for c in arrays.get("checkpoint_networks", []))
        if set(wanted) <= have:
            arrays = dict(arrays)
            return NADResult(arrays.pop("eigenvalues"), arrays.pop("nads"), meta, arrays)
    r = compute_nads(model, input_shape, num_networks, seed, method, step, device,
                     checkpoints=wanted, progress=progress, workers=workers)
    cache.save("nads", config, r.to_arrays(), r.meta)
    return r


# --------------------------------------------------------------------------------------------
# The authors' published NADs
# --------------------------------------------------------------------------------------------
_PUBLISHED_URL = "https://raw.githubusercontent.com/LTS4/neural-anisotropy-directions/master/NADs/{}"


def published_nads_root(root=None) -> Path | None:
    """Where the authors' NADs are: ``root`` (if given, only there), ``$NADCORE_PUBLISHED_NADS``,
    ``$NADCORE_DATA_ROOT/lts4-nads`` (or ``.../reference/lts4-nads``), the project's
    ``../shared/reference/lts4-nads``, or ``~/.cache/nadcore/lts4-nads``. None if not found."""
    if root:  # an explicit root is the only place looked at
        root = Path(root)
        return root if any(root.glob("*_NADs.npy")) else None
    cands = []
    if os.environ.get("NADCORE_PUBLISHED_NADS"):
        cands.append(Path(os.environ["NADCORE_PUBLISHED_NADS"]))
    if os.environ.get("NADCORE_DATA_ROOT"):
        d = Path(os.environ["NADCORE_DATA_ROOT"])
        cands += [d / "lts4-nads", d / "reference" / "lts4-nads"]
    here = Path(__file__).resolve().parent.parent
    cands += [here.parent / "shared" / "reference" / "lts4-nads",
              Path.home() / ".cache" / "nadcore" / "lts4-nads"]
    for c in cands:
        if (c / "LeNet_NADs.npy").is_file() or any(c.glob("*_NADs.npy")):
            return c
    return None


def _check_sums(root: Path, names):
    sums = root / "SHA256SUMS"
    if not sums.is_file():
        return
    table = {}
    for line in sums.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2:
            table[parts[1].lstrip("*")] = parts[0]
    for n in names:
        if n in table:
            h = file_sha256(root / n)
            if h != table[n]:
                raise ValueError(f"checksum mismatch for {root / n}: the file is damaged or not the "
                                 "authors' file; delete it and fetch it again")


def load_published_nads(arch: str, root=None, download: bool = False) -> NADResult:
    """The authors' published NADs of ``arch`` (registry name or their file prefix, e.g. "lenet"
    or "LeNet"), as an NADResult with covariance eigenvalues ``s^2 / (N - 1)`` (they stored
    PCA singular values ``s`` of N = 10,000 centred gradients). ``download=True`` fetches the
    files from the authors' public repository when they are not found locally."""
    prefix = _models.PUBLISHED_NAMES.get(arch.lower(), arch)
    if prefix not in _models.PUBLISHED_NAMES.values():
        raise ValueError(f"no published NADs for {arch!r}; available: "
                         f"{', '.join(sorted(_models.PUBLISHED_NAMES))}")
    names = [f"{prefix}_NADs.npy", f"{prefix}_eigenvals.npy"]
    base = published_nads_root(root)
    if base is None or not all((base / n).is_file() for n in names):
        if not download:
            raise FileNotFoundError(
                f"the authors' published NADs for {prefix} were not found. Put {names[0]} and "
                f"{names[1]} (from github.com/LTS4/neural-anisotropy-directions, folder NADs/) in a "
                "folder and pass root=... or set NADCORE_PUBLISHED_NADS, or call with download=True.")
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
    meta = {"model": arch.lower(), "source": str(base), "method": "secant", "step": 100.0,
            "networks": PUBLISHED_NETWORKS, "input_shape": [1, 32, 32],
            "estimator": "PCA of centred finite-difference sensitivities (authors)",
            "note": f"{U.shape[0]} of {U.shape[1]} components published"}
    return NADResult(s ** 2 / (PUBLISHED_NETWORKS - 1), U.astype(np.float32), meta)


def complete_basis(nads: np.ndarray) -> np.ndarray:
    """Complete k < D orthonormal rows to a full orthonormal basis (D, D) (rows appended last)."""
    U = np.asarray(nads, dtype=np.float64)
    k, D = U.shape
    if k == D:
        return U
    P = np.eye(D) - U.T @ U
    w, V = np.linalg.eigh(P)
    extra = V[:, np.argsort(w)[::-1][: D - k]].T
    return np.vstack([U, extra])


def fourier_energy(nad: np.ndarray) -> np.ndarray:
    """``|fftshift(fft2(u))|^2`` of a NAD image (summed over channels), low frequencies centred."""
    a = np.asarray(nad, dtype=np.float64)
    if a.ndim == 1:
        s = int(math.isqrt(a.size))
        a = a.reshape(s, s)
    if a.ndim == 3:
        return sum(np.abs(np.fft.fftshift(np.fft.fft2(c))) ** 2 for c in a)
    return np.abs(np.fft.fftshift(np.fft.fft2(a))) ** 2


def low_frequency_fraction(nad: np.ndarray, radius: float = 8.0) -> float:
    """Fraction of a NAD's Fourier energy within ``radius`` of the zero frequency."""
    E = fourier_energy(nad)
    h, w = E.shape
    yy, xx = np.mgrid[:h, :w]
    r = np.hypot(yy - h // 2, xx - w // 2)
    return float(E[r <= radius].sum() / E.sum())
