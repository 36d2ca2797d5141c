"""NADs by Monte Carlo: thousands of random networks, their sensitivities, the covariance.

:func:`compute_nads` draws networks ``0..N-1`` of a seed (network ``n`` is initialised from
``derived_seed(seed, n)``), evaluates each one's input sensitivity at the evaluation point(s)
with one of the two estimators of :mod:`nadcore.nads.estimators`, accumulates
``C_hat = (1/N) sum_n g_n g_n^T`` (:mod:`nadcore.nads.covariance`) and returns its eigenvectors.

How the sensitivities are computed is a *path* (:func:`sampling_path`), chosen for speed only:

* ``"loop"``: one network at a time through the plain estimators (the definition);
* ``"vmap"``: several stacked networks per pass (:mod:`nadcore.kernels.stacked`);
* ``"fast"``: exact structured kernels (:mod:`nadcore.kernels.lenet` for LeNet's secant and
  gradient, :mod:`nadcore.kernels.resnet` for ResNet-18's secant).

The path changes the speed, never the result beyond float rounding (tests/test_kernels.py), and
the result records it (``meta["sampling_path"]``, ``meta["kernel_path"]``).

The work is shared by *lanes*: threads of one torch thread each, lane ``l`` taking the groups
``g`` (network index modulo 8) with ``g % lanes == l``. Each group adds its networks in fixed
chunks in order (:class:`nadcore.nads.covariance.GroupSums`), so the estimate has the same bits
however many lanes run it and whatever running estimates are recorded on the way
(``checkpoints``).
"""

from __future__ import annotations

import math
import os
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext

import numpy as np
import torch

import nadcore
from nadcore.kernels import path as kernel_path
from nadcore.kernels.cpu import keep_freed_memory
from nadcore.kernels.draw import derived_seeds, draw_parameters, parameter_buffers
from nadcore.kernels.lenet import lenet_gradients, lenet_secant, lenet_supported
from nadcore.kernels.resnet import resnet_secant, resnet_supported
from nadcore.kernels.stacked import stacked_gradients, stacked_secant
from nadcore.nads.covariance import (
    CHUNK,
    GROUPS,
    JACKKNIFE_K,
    OVERLAP_KS,
    GroupSums,
    NADResult,
    complete_basis,
    covariance_of,
    split_half_overlaps,
    top_eigenvectors,
    top_subspace,
)
from nadcore.nads.estimators import (
    PRECISIONS,
    evaluation_points,
    input_gradient,
    input_sensitivity_secant,
    perturbation_batch,
    tf32_mode,
)
from nadcore.nets import build_model, check_model_output, init_plan, spec_name
from nadcore.runtime import resolve_device, threads

__all__ = ["compute_nads", "Sampler", "network_seeds", "sampling_path", "METHODS", "STRATEGIES", "BLOCKS"]

METHODS = ("secant", "gradient")
STRATEGIES = ("auto", "fast", "vmap", "loop")
#: networks per sensitivity call, by path and method (times 16 on a GPU, at most CHUNK)
BLOCKS = {
    ("fast", "secant"): 4,
    ("fast", "gradient"): 256,
    ("vmap", "secant"): 8,
    ("vmap", "gradient"): 256,
    ("loop", "secant"): 16,
    ("loop", "gradient"): 16,
}


def network_seeds(seed: int, indices) -> list[int]:
    """The initialisation seed of each network index: ``derived_seed(seed, n)``."""
    return derived_seeds(seed, indices)


def _n_params(model) -> int:
    return sum(p.numel() for p in model.parameters())


def sampling_path(strategy, model, plan, method, device, input_shape, precision="float32") -> str:
    """The path the sensitivities take: "fast" (structured exact kernels: LeNet's secant and
    gradient in float32, ResNet-18's secant), "vmap" (exact gradients of small models
    everywhere, and the secant of small models on a GPU; on a CPU its grouped convolutions are
    slower than one network at a time) or "loop"."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    fast_ok = plan is not None and (
        (precision in ("float32", "tf32") and lenet_supported(model, input_shape))
        or (method == "secant" and resnet_supported(model, input_shape))
    )
    if strategy == "fast":
        if not fast_ok:
            raise ValueError(
                "strategy='fast' needs a registry LeNet with pooling and a square input "
                "whose side is a multiple of 4 (float32), or a registry ResNet-18 (secant)"
            )
        return "fast"
    if plan is None or strategy == "loop":
        return "loop"
    if strategy == "vmap":
        return "vmap"
    if fast_ok:
        return "fast"
    small = _n_params(model) < 2_000_000
    return "vmap" if small and (method == "gradient" or device.type != "cpu") else "loop"


class Sampler:
    """The sensitivities of given networks of one seed at the evaluation points, by one path.
    One per lane (it holds a model whose parameters it overwrites, and reusable buffers)."""

    def __init__(self, spec, input_shape, seed, method, step, device, strategy, points, precision):
        self.spec, self.input_shape, self.seed = spec, input_shape, seed
        self.method, self.step, self.device, self.precision = method, step, device, precision
        model = build_model(spec, input_shape[0], 1, input_shape[-1], check=False).to(device).eval()
        self.plan = init_plan(model)
        self.path = sampling_path(strategy, model, self.plan, method, device, input_shape, precision)
        self.per_network = self.path == "loop" or (self.path == "fast" and not lenet_supported(model, input_shape))
        cl = method == "secant" and self.per_network and len(input_shape) == 3
        self.model = model.to(memory_format=torch.channels_last) if cl else model
        self.xs = [x.to(device) for x in evaluation_points(input_shape, seed, points)]
        self.batches = [None] * len(self.xs)
        if method == "secant" and self.path != "fast":
            self.batches = [perturbation_batch(x, step) for x in self.xs]
            if cl:
                self.batches = [b.contiguous(memory_format=torch.channels_last) for b in self.batches]
        D = self.xs[0].numel()
        self.chunk = 2 * D if device.type != "cpu" else 128  # perturbed inputs per forward pass
        gpu = device.type != "cpu"
        per_block = BLOCKS["loop" if self.per_network else self.path, method]
        self.block = min(CHUNK, per_block * ((2 if self.per_network else 16) if gpu else 1))
        # on a GPU the next block's parameters are drawn by CPU threads (all cores but the one
        # launching kernels) and copied on a stream of their own while the GPU works
        self.draw_threads = max(1, min(16, (os.cpu_count() or 2) - 1)) if gpu else 1
        self.side = torch.cuda.Stream(device) if device.type == "cuda" and self.plan is not None else None
        self.reuse = (
            parameter_buffers(self.plan, self.block, pinned=self.side is not None)
            if self.plan is not None and (self.side is not None or not gpu)
            else None
        )

    def _draw(self, idx):
        if self.plan is None:
            return idx, None
        with torch.cuda.stream(self.side) if self.side is not None else nullcontext():
            stacked = draw_parameters(
                self.plan,
                network_seeds(self.seed, idx),
                self.draw_threads,
                self.reuse,
                self.device if self.device.type != "cpu" else None,
            )
        if self.side is not None:
            self.side.synchronize()  # the copies are done: the buffers may be refilled
        return idx, stacked

    def rows(self, indices: np.ndarray) -> np.ndarray:
        """Sensitivities (points, len(indices), D) float64 of the networks ``indices``, computed
        in blocks of ``self.block`` consecutive entries of ``indices``."""
        blocks = [indices[i : i + self.block] for i in range(0, len(indices), self.block)]
        out = np.empty((len(self.xs), len(indices), self.xs[0].numel()))
        gpu = self.device.type != "cpu"
        prefetch = ThreadPoolExecutor(1) if gpu and self.plan is not None and len(blocks) > 1 else None
        try:
            with tf32_mode(self.device.type, self.precision == "tf32"):
                nxt = prefetch.submit(self._draw, blocks[0]) if prefetch else None
                at = 0
                for k, b in enumerate(blocks):
                    idx, stacked = nxt.result() if prefetch else self._draw(b)
                    if self.side is not None:  # the current stream uses memory allocated on the side stream
                        for v in stacked.values():
                            v.record_stream(torch.cuda.current_stream(self.device))
                    if prefetch and k + 1 < len(blocks):
                        nxt = prefetch.submit(self._draw, blocks[k + 1])
                    for p, (x, batch) in enumerate(zip(self.xs, self.batches)):
                        out[p, at : at + len(idx)] = self._block(idx, stacked, x, batch).cpu().numpy()
                    at += len(idx)
        finally:
            if prefetch is not None:
                prefetch.shutdown(cancel_futures=True)
        return out

    def _block(self, idx, stacked, x, batch) -> torch.Tensor:
        if self.path == "fast" and not self.per_network:
            return lenet_secant(stacked, x, self.step) if self.method == "secant" else lenet_gradients(stacked, x)
        if self.path == "vmap":
            return (
                stacked_gradients(self.model, x, stacked)
                if self.method == "gradient"
                else stacked_secant(self.model, batch, stacked, self.step, self.chunk, self.precision)
            )
        return torch.stack(
            [self._one(seed_n, stacked, j, x, batch) for j, seed_n in enumerate(network_seeds(self.seed, idx))]
        )

    def _one(self, seed_n, stacked, j, x, batch) -> torch.Tensor:
        """One network: its parameters (row ``j`` of ``stacked``, or the model's own
        initialisation from ``seed_n`` when it has no plan), then the estimator."""
        model = self.model
        if stacked is None:
            model = (
                build_model(self.spec, self.input_shape[0], 1, self.input_shape[-1], seed=seed_n, check=False)
                .to(self.device)
                .eval()
            )
            if batch is not None and batch.dim() == 4:
                model = model.to(memory_format=torch.channels_last)
        else:
            with torch.no_grad():
                for name, p in model.named_parameters():
                    p.copy_(stacked[name][j])
        if self.method == "secant" and self.path == "fast":
            return resnet_secant(model, x, self.step, self.chunk, self.precision)
        if self.method == "secant":
            return input_sensitivity_secant(model, x, self.step, self.chunk, batch, self.precision)
        return input_gradient(model, x)


class _Group:
    """Group ``g``'s networks ``g, g + 8, ...`` (``n`` of them in all), summed chunk by chunk in
    order; ``pending``: the sensitivities of the chunk in progress, once computed."""

    def __init__(self, g: int, N: int, D: int):
        self.g, self.n = g, len(range(g, N, GROUPS))
        self.sums = GroupSums(D)
        self.done = 0  # networks whose rows are in self.sums
        self.pending = None  # rows (points, chunk networks, D) of the chunk starting at self.done

    def advance(self, sampler: Sampler, target: int, progress) -> None:
        """Compute this group's networks up to its ``target``-th (whole chunks; the chunk that
        ``target`` falls in is computed and kept pending, not added)."""
        while self.done < target:
            if self.pending is None:
                stop = min(self.done + CHUNK, self.n)
                js = np.arange(self.done, stop)
                self.pending = sampler.rows(self.g + GROUPS * js)
                if progress is not None:
                    progress(len(js))
            if self.done + self.pending.shape[1] > target:
                return
            self.sums.add(self.pending.reshape(-1, self.pending.shape[-1]))
            self.done += self.pending.shape[1]
            self.pending = None

    def at(self, target: int) -> GroupSums:
        """The sums over this group's first ``target`` networks (after :meth:`advance`)."""
        if target == self.done:
            return self.sums
        m = target - self.done
        return self.sums.with_rows(self.pending[:, :m].reshape(-1, self.pending.shape[-1]))


def _group_target(g: int, networks: int) -> int:
    """How many of networks ``0..networks-1`` belong to group ``g``."""
    return len(range(g, networks, GROUPS))


def compute_nads(
    model="lenet",
    input_shape=(1, 32, 32),
    num_networks: int = 1000,
    seed: int = 0,
    method: str = "secant",
    step: float = 100.0,
    device="auto",
    checkpoints=None,
    progress: bool = False,
    strategy: str = "auto",
    points: int = 1,
    top_k_checkpoints: int = 64,
    precision: str = "float32",
    lanes: int | str = "auto",
) -> NADResult:
    """Estimate the NADs of ``model`` (registry name, ``"pkg.mod:factory"`` or a factory).

    ``num_networks`` random initialisations; ``method`` "secant" (step ``step``) or "gradient";
    ``points`` evaluation points per network (1: the authors' single point). On the CPU the
    groups of networks are shared among ``lanes`` threads of one torch thread each ("auto": one
    per core, at most 8). ``checkpoints``: network counts at which to record running estimates.
    ``strategy`` picks the sampling path (see the module docstring; float rounding apart, the
    same estimate). ``precision``: "float32" (IEEE, also on a GPU), or for the secant on a GPU
    "tf32" or "bf16" (tensor cores; see :func:`nadcore.nads.estimators.precision_mode`)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    input_shape = tuple(int(s) for s in input_shape)
    if len(input_shape) != 3 or min(input_shape) < 1:
        raise ValueError(f"input_shape must be (C, H, W) with positive sizes, got {input_shape}")
    num_networks, points = int(num_networks), int(points)
    if num_networks < 2:
        raise ValueError(f"num_networks must be at least 2 (got {num_networks})")
    if points < 1:
        raise ValueError(f"points must be at least 1 (got {points})")
    if method == "secant" and not (step > 0 and math.isfinite(step)):
        raise ValueError(f"step must be a positive finite number, got {step}")
    if precision not in PRECISIONS or (precision != "float32" and method != "secant"):
        raise ValueError(
            f"precision must be one of {PRECISIONS} (tf32 and bf16 for the secant only), "
            f"got {precision!r} with method {method!r}"
        )
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    dev = resolve_device(device)
    keep_freed_memory()  # every device: the parameters are drawn on the CPU, by threads
    # Build once here: a clear error for a bad spec or a wrong output shape.
    probe = build_model(model, input_shape[0], 1, input_shape[-1], check=False)
    check_model_output(probe, input_shape, 1, model)
    name = spec_name(model)
    if lanes == "auto":
        lanes = (os.cpu_count() or 1) if dev.type == "cpu" else 1
    lanes = max(1, min(int(lanes), GROUPS, num_networks))
    D = int(np.prod(input_shape))
    groups = [_Group(g, num_networks, D) for g in range(GROUPS)]
    lane_groups = [[grp for grp in groups if grp.g % lanes == lane] for lane in range(lanes)]
    samplers = [Sampler(model, input_shape, seed, method, step, dev, strategy, points, precision) for _ in range(lanes)]
    cps = sorted({int(c) for c in (checkpoints or []) if 2 <= int(c) < num_networks}) + [num_networks]
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=num_networks, desc=f"{method} NADs of {name}", unit="net")
    one_thread = 1 if dev.type == "cpu" else None

    def run_lane(lane: int, networks: int):
        for grp in lane_groups[lane]:
            grp.advance(samplers[lane], _group_target(grp.g, networks), bar.update if bar else None)

    ck_n, ck_nads, ck_split = [], [], []
    t0 = time.perf_counter()
    pool = ThreadPoolExecutor(lanes) if lanes > 1 else None
    # on a CPU every lane (and every sum) runs on one torch thread: torch's thread count is
    # process-wide, so it is set here, once, for the whole sampling
    with threads(one_thread):
        try:
            for c in cps:
                if pool is None:
                    run_lane(0, c)
                else:
                    list(pool.map(run_lane, range(lanes), [c] * lanes))
                if len(cps) > 1:
                    snap = [grp.at(_group_target(grp.g, c)) for grp in groups]
                    ck_n.append(c)
                    ck_nads.append(top_eigenvectors(covariance_of(snap), top_k_checkpoints)[1].astype(np.float32))
                    ck_split.append(split_half_overlaps(snap))
        finally:
            if pool is not None:
                pool.shutdown()
            if bar:
                bar.close()
    seconds = time.perf_counter() - t0
    sums = [grp.sums for grp in groups]
    eigenvalues, nads = top_eigenvectors(covariance_of(sums))
    rank = int(min(sum(s.count for s in sums), D))
    if rank < D:  # past the rank the eigenvectors are an arbitrary basis: use the one of complete_basis
        eigenvalues[rank:] = 0.0
        nads = complete_basis(nads[:rank]).astype(nads.dtype)
    start = nads[: JACKKNIFE_K + 32]
    jk = np.stack(
        [
            top_subspace(covariance_of(sums, [h for h in range(GROUPS) if h != g]), start, JACKKNIFE_K)
            for g in range(GROUPS)
            if sums[g].count > 0
        ]
    ).astype(np.float32)
    total = np.zeros(D)
    for s in sums:
        total += s.total
    meta = {
        "model": name,
        "input_shape": list(input_shape),
        "networks": num_networks,
        "seed": int(seed),
        "method": method,
        "step": float(step) if method == "secant" else None,
        "points": points,
        "device": str(dev),
        "lanes": lanes,
        "precision": precision,
        "sampling_path": samplers[0].path,
        "kernel_path": kernel_path(),
        "sampling_seconds": round(seconds, 3),
        "networks_per_second": round(num_networks / seconds, 3),
        "nadcore_version": nadcore.__version__,
        "torch_version": torch.__version__,
        "estimator": "uncentered second moment",
        "mean_sensitivity_norm": float(np.linalg.norm(total / (num_networks * points))),
    }
    extras = {"jackknife_nads": jk, "split_half": np.array(ck_split[-1] if ck_split else split_half_overlaps(sums))}
    if ck_n:
        extras.update(
            checkpoint_networks=np.array(ck_n),
            checkpoint_nads=np.stack(ck_nads),
            checkpoint_split_half=np.array(ck_split),
            overlap_ks=np.array(OVERLAP_KS),
        )
    return NADResult(eigenvalues, nads.astype(np.float32), meta, extras)
