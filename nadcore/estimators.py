"""Input sensitivities of randomly initialised networks: the samples behind NADs.

Paper: Ortiz-Jimenez et al., "Neural Anisotropy Directions", NeurIPS 2020, Sec. 3. For one network
``f`` (eval mode, one output) at an evaluation point ``x``, two estimators of its input sensitivity
``g = grad_x f(x)``:

``secant`` (:func:`input_sensitivity_secant`)
    The authors' code: the central difference ``(f(x + h e_i) - f(x - h e_i)) / 2h`` along every
    input axis with the *large* step ``h = 100``: 2*D forward passes per network. On inputs of
    unit scale this is a secant across the network's whole nonlinear range, not a derivative; it
    reproduces the authors' published NADs.
``gradient`` (:func:`input_gradient`)
    The exact ``grad_x f(x)`` by autograd, the paper's written definition.

:func:`sample_range` draws networks ``start..stop-1`` of a seed and feeds their sensitivities to
an accumulator. Its ``strategy`` picks the path: ``"loop"`` (one network at a time, the plain
estimators above), ``"vmap"`` (several stacked networks per pass with ``torch.func.vmap``),
``"fast"`` (exact structured kernels: :mod:`nadcore.lenet_kernels` for LeNet's secant and
gradient, :mod:`nadcore.resnet_kernels` for ResNet-18's secant) or ``"auto"`` (the fastest that
applies). The path changes the speed, never the result beyond float rounding
(tests/test_estimators.py). All of it runs in IEEE float32, also on a GPU (where PyTorch's default
would use TF32 for convolutions). ``precision="tf32"`` (tensor-core float32 on a GPU) and
``precision="bf16"`` (bfloat16 autocast; on this project's CPU slower than float32) speed up the
secant's forward passes on a GPU; sensitivities then differ from float32 by more than float
rounding (on an H100, tf32 by about 1e-3 of their norm, bf16 by 1e-2 for ResNet-18 and 0.6 for
DenseNet-121: benchmarks/bench_gpu.py), so either is an explicit choice (:func:`precision_mode`).
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext

import numpy as np
import torch

from nadcore import initialisation as init
from nadcore import models as _models
from nadcore.utils import derived_seed, derived_seeds, resolve_device

__all__ = ["evaluation_point", "evaluation_points", "perturbation_batch", "input_sensitivity_secant",
           "input_gradient", "stacked_gradients", "stacked_secant", "forward_flops", "sample_range",
           "network_seeds", "choose_strategy", "precision_mode", "PRECISIONS", "STRATEGIES"]

PRECISIONS = ("float32", "tf32", "bf16")
STRATEGIES = ("auto", "fast", "vmap", "loop")


def evaluation_point(input_shape, seed: int) -> torch.Tensor:
    """The fixed evaluation point ``x ~ N(0, I)`` of ``input_shape`` drawn from ``seed``."""
    g = torch.Generator().manual_seed(int(seed))
    return torch.randn(tuple(input_shape), generator=g)


def evaluation_points(input_shape, seed: int, points: int) -> list[torch.Tensor]:
    """``points`` evaluation points: the first is :func:`evaluation_point` of ``seed`` (the one
    the authors' procedure uses), the others come from seeds derived from ``(seed, j)``."""
    return [evaluation_point(input_shape, seed if j == 0 else derived_seed(seed, 7919, j))
            for j in range(int(points))]


def network_seeds(seed: int, indices) -> list[int]:
    """The initialisation seed of each network index: ``derived_seed(seed, n)``."""
    return derived_seeds(seed, indices)


def forward_flops(model: torch.nn.Module, input_shape) -> float:
    """Multiply-add FLOPs (x2) of one forward pass of one input, from Conv/Linear layers."""
    total = [0.0]

    def hook(mod, inp, out):
        total[0] += 2.0 * out.numel() * mod.weight[0].numel()

    hs = [m.register_forward_hook(hook) for m in model.modules()
          if isinstance(m, (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d, torch.nn.Linear))]
    try:
        with torch.no_grad():
            p = next(model.parameters(), None)
            model.eval()(torch.zeros((1, *input_shape), device=p.device if p is not None else "cpu"))
    finally:
        for h in hs:
            h.remove()
    return total[0]


# --------------------------------------------------------------------------------------------
# The two estimators, one network
# --------------------------------------------------------------------------------------------
def perturbation_batch(x: torch.Tensor, step: float) -> torch.Tensor:
    """The 2*D inputs ``x + h e_i`` (first D) and ``x - h e_i`` (last D)."""
    D = x.numel()
    E = torch.eye(D, dtype=x.dtype, device=x.device).view(D, *x.shape)
    return torch.cat([x + step * E, x - step * E])


@contextmanager
def precision_mode(device_type: str, precision: str):
    """The arithmetic of ``precision`` for the block: "float32" (IEEE float32; on a GPU with
    cuDNN's and cuBLAS's TF32 tensor-core modes off, whatever the process-wide setting),
    "tf32" (on a GPU those modes on: float32 numbers whose convolution and matrix-product inputs
    are rounded to 10-bit mantissas; plain float32 elsewhere) or "bf16" (bfloat16 autocast).
    On an H100 tf32 moved secant sensitivities by about 1e-3 of their norm, bf16 by 1e-2
    (ResNet-18) to 0.6 (DenseNet-121): compare with float32 before trusting bf16 NADs.
    Autocast keeps bf16 copies of the parameters it casts until the outermost block ends, so a
    block must not outlive the parameters it ran with (one network's, in the estimators)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    cast = torch.autocast(device_type, dtype=torch.bfloat16) if precision == "bf16" else nullcontext()
    with _tf32_mode(device_type, precision == "tf32"), cast:
        yield


@contextmanager
def _tf32_mode(device_type: str, allow: bool):
    """cuDNN's and cuBLAS's TF32 modes set to ``allow`` on a GPU for the block and restored after
    (process-wide flags: nadcore runs its GPU work in one thread); nothing elsewhere."""
    if device_type != "cuda":
        yield
        return
    cd, mm = torch.backends.cudnn, torch.backends.cuda.matmul
    old = cd.allow_tf32, mm.allow_tf32
    cd.allow_tf32 = mm.allow_tf32 = allow
    try:
        yield
    finally:
        cd.allow_tf32, mm.allow_tf32 = old


def input_sensitivity_secant(model, x: torch.Tensor, step: float = 100.0, chunk: int | None = None,
                             batch: torch.Tensor | None = None, precision: str = "float32") -> torch.Tensor:
    """Central difference ``(f(x + h e_i) - f(x - h e_i)) / 2h`` along every input axis.

    This is the authors' estimator (``utils.input_numerical_jacobian`` with ``scale=100``), done
    without autograd and in chunks that fit the CPU caches (the whole batch at once on a GPU).
    Returns a float64 vector of length D. ``batch`` may pass a precomputed
    :func:`perturbation_batch` to save rebuilding it; ``precision="bf16"`` runs the forward
    passes under bfloat16 autocast.
    """
    D = x.numel()
    X = perturbation_batch(x, step) if batch is None else batch
    chunk = chunk or (2 * D if X.device.type != "cpu" else 128)
    with torch.no_grad(), precision_mode(X.device.type, precision):
        out = torch.cat([model(X[i:i + chunk]).reshape(-1).double() for i in range(0, 2 * D, chunk)])
    return (out[:D] - out[D:]) / (2.0 * step)


def input_gradient(model, x: torch.Tensor) -> torch.Tensor:
    """Exact input gradient ``grad_x f(x)`` by autograd (the paper's definition); float64, length D."""
    xx = x.detach().clone().unsqueeze(0).requires_grad_(True)
    out = model(xx).sum()
    (g,) = torch.autograd.grad(out, xx)
    return g.reshape(-1).double()


# --------------------------------------------------------------------------------------------
# Several networks per pass (stacked parameters)
# --------------------------------------------------------------------------------------------
def stacked_gradients(model, x, stacked: dict):
    """Exact input gradients of B networks at once (torch.func: vmap over stacked parameters
    ``name -> (B, *shape)``; buffers shared)."""
    from torch.func import functional_call, grad, vmap

    buffers = dict(model.named_buffers())

    def f(p, xx):
        return functional_call(model, (p, buffers), (xx.unsqueeze(0),)).sum()

    B = next(iter(stacked.values())).shape[0]
    g = vmap(grad(f, argnums=1), in_dims=(0, None))(stacked, x)
    return g.reshape(B, -1).double()


def stacked_secant(model, batch: torch.Tensor, stacked: dict, step: float, chunk: int,
                   precision: str = "float32") -> torch.Tensor:
    """Secant sensitivities of B networks in one pass per input chunk (vmap over stacked
    parameters: several networks per forward pass, grouped convolutions underneath)."""
    from torch.func import functional_call, vmap

    buffers = dict(model.named_buffers())
    D = batch.shape[0] // 2

    def f(p, xx):
        return functional_call(model, (p, buffers), (xx,)).reshape(-1).double()

    with torch.no_grad(), precision_mode(batch.device.type, precision):
        out = torch.cat([vmap(f, in_dims=(0, None))(stacked, batch[i:i + chunk])
                         for i in range(0, 2 * D, chunk)], dim=1).double()
    return (out[:, :D] - out[:, D:]) / (2.0 * step)


# --------------------------------------------------------------------------------------------
# Drawing parameters fast, and the sampling loop
# --------------------------------------------------------------------------------------------
def _n_params(model) -> int:
    return sum(p.numel() for p in model.parameters())


def choose_strategy(strategy, model, plan, method, device, input_shape, precision="float32") -> str:
    """The path :func:`sample_range` takes: "fast" (structured exact kernels: LeNet's secant and
    gradient in float32, ResNet-18's secant), "vmap" (exact gradients of small models
    everywhere, and the secant of small models on a GPU; on a CPU its grouped convolutions are
    slower than one network at a time) or "loop"."""
    from nadcore.lenet_kernels import lenet_supported
    from nadcore.resnet_kernels import resnet_supported

    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    fast_ok = plan is not None and (
        (precision in ("float32", "tf32") and lenet_supported(model, input_shape))
        or (method == "secant" and resnet_supported(model, input_shape)))
    if strategy == "fast":
        if not fast_ok:
            raise ValueError("strategy='fast' needs a registry LeNet with pooling and a square input "
                             "whose side is a multiple of 4 (float32), or a registry ResNet-18 (secant)")
        return "fast"
    if plan is None or strategy == "loop":
        return "loop"
    if strategy == "vmap":
        return "vmap"
    if fast_ok:
        return "fast"
    small = _n_params(model) < 2_000_000
    return "vmap" if small and (method == "gradient" or device.type != "cpu") else "loop"


BLOCKS = {("fast", "secant"): 4, ("fast", "gradient"): 256, ("vmap", "secant"): 8,
          ("vmap", "gradient"): 256, ("loop", "secant"): 16, ("loop", "gradient"): 16}


def sample_range(spec, input_shape, seed, start, stop, method, step, device, chunk, add,
                 threads=None, progress=None, strategy="auto", points: int = 1,
                 precision: str = "float32") -> None:
    """Sensitivities of networks ``start..stop-1`` of ``seed`` at ``points`` evaluation points:
    calls ``add(G, network_indices)`` with G (networks, D) float64 per block and point.

    On a GPU the parameters of the next block are drawn by CPU threads and copied to the device
    (on a stream of their own) while the GPU works on the current one."""
    from nadcore.lenet_kernels import lenet_gradients, lenet_secant, lenet_supported

    if threads:
        torch.set_num_threads(threads)
    device = resolve_device(device)
    C = input_shape[0]
    model = _models.build_model(spec, C, 1, input_shape[-1], check=False).to(device).eval()
    plan = init.init_plan(model)
    path = choose_strategy(strategy, model, plan, method, device, input_shape, precision)
    per_network = path == "loop" or (path == "fast" and not lenet_supported(model, input_shape))
    cl = method == "secant" and per_network and len(input_shape) == 3
    if cl:
        model = model.to(memory_format=torch.channels_last)
    xs = [x.to(device) for x in evaluation_points(input_shape, seed, points)]
    D = xs[0].numel()
    batches = [None] * len(xs)
    if method == "secant" and path != "fast":
        batches = [perturbation_batch(x, step) for x in xs]
        if cl:
            batches = [b.contiguous(memory_format=torch.channels_last) for b in batches]
    chunk = chunk or (2 * D if device.type != "cpu" else 128)
    gpu = device.type != "cpu"
    block = BLOCKS["loop" if per_network else path, method] * ((2 if per_network else 16) if gpu else 1)
    starts = list(range(start, stop, block))
    # on a GPU, CPU threads draw (all cores but the one launching kernels)
    draw_threads = max(1, min(16, (os.cpu_count() or 2) - 1)) if gpu else 1
    # each block's parameters are drawn into the same buffers (on the CPU used up before the
    # next block is drawn; on a GPU copied to the device first)
    side = torch.cuda.Stream(device) if device.type == "cuda" and plan is not None else None
    reuse = (init.parameter_buffers(plan, block, pinned=side is not None)
             if plan is not None and (side is not None or not gpu) else None)

    def draw(b0):
        idx = np.arange(b0, min(b0 + block, stop))
        if plan is None:
            return idx, None
        # on a GPU the copy to the device runs on a stream of its own, beside the current block
        with torch.cuda.stream(side) if side is not None else nullcontext():
            stacked = init.draw_parameters(plan, network_seeds(seed, idx), draw_threads, reuse,
                                           device if gpu else None)
        if side is not None:
            side.synchronize()  # the copies are done: the buffers may be refilled
        return idx, stacked

    prefetch = ThreadPoolExecutor(1) if gpu and plan is not None and len(starts) > 1 else None
    try:
        # IEEE float32 on a GPU (the gradients too) unless tf32; bf16 autocast is entered by the
        # estimators per network (its cast parameters must not outlive a network)
        with _tf32_mode(device.type, precision == "tf32"):
            nxt = prefetch.submit(draw, starts[0]) if prefetch else None
            for k, b0 in enumerate(starts):
                idx, stacked = nxt.result() if prefetch else draw(b0)
                if side is not None:  # the current stream uses memory allocated on the side stream
                    for v in stacked.values():
                        v.record_stream(torch.cuda.current_stream(device))
                if prefetch and k + 1 < len(starts):
                    nxt = prefetch.submit(draw, starts[k + 1])
                for x, batch in zip(xs, batches):
                    if path == "fast" and not per_network:
                        G = lenet_secant(stacked, x, step) if method == "secant" else lenet_gradients(stacked, x)
                    elif path == "vmap":
                        G = (stacked_gradients(model, x, stacked) if method == "gradient"
                             else stacked_secant(model, batch, stacked, step, chunk, precision))
                    else:
                        G = torch.stack([_loop_one(model, spec, input_shape, seed_n, stacked, j, device,
                                                   method, x, step, chunk, batch, precision, path)
                                         for j, seed_n in enumerate(network_seeds(seed, idx))])
                    add(G.cpu().numpy(), idx)
                if progress is not None:
                    progress(len(idx))
    finally:
        if prefetch is not None:
            prefetch.shutdown(cancel_futures=True)


def _loop_one(model, spec, input_shape, seed_n, stacked, j, device, method, x, step, chunk, batch,
              precision, path="loop"):
    """One network of the loop path: its parameters (row ``j`` of ``stacked``, or the model's
    own initialisation from ``seed_n`` when it has no plan), then the plain estimator."""
    if stacked is None:
        model = _models.build_model(spec, input_shape[0], 1, input_shape[-1], seed=seed_n,
                                    check=False).to(device).eval()
        if batch is not None and batch.dim() == 4:
            model = model.to(memory_format=torch.channels_last)
    else:
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.copy_(stacked[name][j])
    if method == "secant" and path == "fast":
        from nadcore.resnet_kernels import resnet_secant

        return resnet_secant(model, x, step, chunk, precision)
    if method == "secant":
        return input_sensitivity_secant(model, x, step, chunk, batch, precision)
    return input_gradient(model, x)
