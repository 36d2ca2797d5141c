"""The two estimators of a network's input sensitivity: the samples behind NADs.

Paper: Ortiz-Jimenez et al., "Neural Anisotropy Directions", NeurIPS 2020, Sec. 3. For one network
``f`` (eval mode, one output) at an evaluation point ``x`` (:func:`evaluation_point`), two
estimators of its input sensitivity ``g = grad_x f(x)``:

``secant`` (:func:`input_sensitivity_secant`)
    The authors' code: the central difference ``(f(x + h e_i) - f(x - h e_i)) / 2h`` along every
    input axis with the *large* step ``h = 100``: 2*D forward passes per network. On inputs of
    unit scale this is a secant across the network's whole nonlinear range, not a derivative; it
    reproduces the authors' published NADs.
``gradient`` (:func:`input_gradient`)
    The exact ``grad_x f(x)`` by autograd, the paper's written definition.

These two functions are the definitions. :mod:`nadcore.nads.sampling` runs them over thousands
of networks, through faster paths where they apply (:mod:`nadcore.kernels`: the same numbers up
to float rounding, tests/test_kernels.py). Everything runs in IEEE float32, also on a GPU (where
PyTorch's default would use TF32 for convolutions). ``precision="tf32"`` (tensor-core float32 on
a GPU) and ``precision="bf16"`` (bfloat16 autocast) speed up the secant's forward passes on a
GPU; sensitivities then differ from float32 by more than float rounding (on an H100, tf32 by
about 1e-3 of their norm, bf16 by 1e-2 for ResNet-18 and 0.6 for DenseNet-121:
benchmarks/bench_gpu.py), so either is an explicit choice
(:func:`nadcore.kernels.precision.precision_mode`).
"""

from __future__ import annotations

import torch

from nadcore.kernels.precision import PRECISIONS, precision_mode, tf32_mode
from nadcore.runtime import derived_seed

__all__ = [
    "evaluation_point",
    "evaluation_points",
    "perturbation_batch",
    "input_sensitivity_secant",
    "input_gradient",
    "precision_mode",
    "tf32_mode",
    "PRECISIONS",
]


def evaluation_point(input_shape, seed: int) -> torch.Tensor:
    """The fixed evaluation point ``x ~ N(0, I)`` of ``input_shape`` drawn from ``seed``."""
    g = torch.Generator().manual_seed(int(seed))
    return torch.randn(tuple(input_shape), generator=g)


def evaluation_points(input_shape, seed: int, points: int) -> list[torch.Tensor]:
    """``points`` evaluation points: the first is :func:`evaluation_point` of ``seed`` (the one
    the authors' procedure uses), the others come from seeds derived from ``(seed, j)``."""
    return [evaluation_point(input_shape, seed if j == 0 else derived_seed(seed, 7919, j)) for j in range(int(points))]


# --------------------------------------------------------------------------------------------
# The two estimators, one network
# --------------------------------------------------------------------------------------------
def perturbation_batch(x: torch.Tensor, step: float) -> torch.Tensor:
    """The 2*D inputs ``x + h e_i`` (first D) and ``x - h e_i`` (last D)."""
    D = x.numel()
    E = torch.eye(D, dtype=x.dtype, device=x.device).view(D, *x.shape)
    return torch.cat([x + step * E, x - step * E])


def input_sensitivity_secant(
    model,
    x: torch.Tensor,
    step: float = 100.0,
    chunk: int | None = None,
    batch: torch.Tensor | None = None,
    precision: str = "float32",
) -> torch.Tensor:
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
        out = torch.cat([model(X[i : i + chunk]).reshape(-1).double() for i in range(0, 2 * D, chunk)])
    return (out[:D] - out[D:]) / (2.0 * step)


def input_gradient(model, x: torch.Tensor) -> torch.Tensor:
    """Exact input gradient ``grad_x f(x)`` by autograd (the paper's definition); float64, length D."""
    xx = x.detach().clone().unsqueeze(0).requires_grad_(True)
    out = model(xx).sum()
    (g,) = torch.autograd.grad(out, xx)
    return g.reshape(-1).double()


# --------------------------------------------------------------------------------------------
