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
an accumulator; which path it takes (one network at a time, or several stacked networks per pass
with ``torch.func.vmap``) changes the speed, never the result beyond float rounding.
"""
from __future__ import annotations

import numpy as np
import torch

from nadcore import initialisation as init
from nadcore import models as _models
from nadcore.utils import derived_seed, resolve_device

__all__ = ["evaluation_point", "evaluation_points", "perturbation_batch", "input_sensitivity_secant",
           "input_gradient", "stacked_gradients", "stacked_secant", "forward_flops", "sample_range",
           "network_seeds"]


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
    return [derived_seed(seed, int(n)) for n in indices]


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


def input_sensitivity_secant(model, x: torch.Tensor, step: float = 100.0, chunk: int | None = None,
                             batch: torch.Tensor | None = None) -> torch.Tensor:
    """Central difference ``(f(x + h e_i) - f(x - h e_i)) / 2h`` along every input axis.

    This is the authors' estimator (``utils.input_numerical_jacobian`` with ``scale=100``), done
    without autograd and in chunks that fit the CPU caches. Returns a float64 vector of length D.
    ``batch`` may pass a precomputed :func:`perturbation_batch` to save rebuilding it.
    """
    D = x.numel()
    X = perturbation_batch(x, step) if batch is None else batch
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


def stacked_secant(model, batch: torch.Tensor, stacked: dict, step: float, chunk: int) -> torch.Tensor:
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


def sample_range(spec, input_shape, seed, start, stop, method, step, device, chunk, add,
                 threads=None, progress=None, strategy="auto", points: int = 1) -> None:
    """Sensitivities of networks ``start..stop-1`` of ``seed`` at ``points`` evaluation points:
    calls ``add(G, network_indices)`` with G (networks, D) float64 per block and point."""
    if threads:
        torch.set_num_threads(threads)
    device = resolve_device(device)
    C = input_shape[0]
    model = _models.build_model(spec, C, 1, input_shape[-1], check=False).to(device).eval()
    if device.type == "cpu" and method == "secant" and len(input_shape) == 3:
        model = model.to(memory_format=torch.channels_last)
    xs = [x.to(device) for x in evaluation_points(input_shape, seed, points)]
    D = xs[0].numel()
    batches = [perturbation_batch(x, step) for x in xs] if method == "secant" else [None] * len(xs)
    if method == "secant" and device.type == "cpu" and len(input_shape) == 3:
        batches = [b.contiguous(memory_format=torch.channels_last) for b in batches]
    plan = init.init_plan(model)
    # Several networks per pass (vmap over stacked parameters) pays off for exact gradients of
    # small models everywhere, and for the secant of small models on a GPU; on a CPU the grouped
    # convolutions it turns into are slower than one network at a time.
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
        seeds = network_seeds(seed, idx)
        if use_vmap:
            stacked = {k: v.to(device) for k, v in init.draw_parameters(plan, seeds).items()}
            for x, batch in zip(xs, batches):
                if method == "gradient":
                    G = stacked_gradients(model, x, stacked)
                else:
                    G = stacked_secant(model, batch, stacked, step,
                                       chunk or (2 * D if device.type == "cuda" else 128))
                add(G.cpu().numpy(), idx)
        else:
            rows = [[] for _ in xs]
            for n, s in zip(idx, seeds):
                if plan is not None:
                    init.initialise(model, s, plan)
                else:
                    model = _models.build_model(spec, C, 1, input_shape[-1], seed=s,
                                                check=False).to(device).eval()
                for j, (x, batch) in enumerate(zip(xs, batches)):
                    rows[j].append(input_sensitivity_secant(model, x, step, chunk, batch)
                                   if method == "secant" else input_gradient(model, x))
            for r in rows:
                add(torch.stack(r).cpu().numpy(), idx)
        if progress is not None:
            progress(len(idx))
