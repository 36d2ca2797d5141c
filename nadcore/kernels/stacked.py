"""Input sensitivities of several networks per pass: parameters stacked along a first axis and
``torch.func.vmap`` over ``functional_call``. The same numbers as the one-network estimators of
:mod:`nadcore.nads.estimators` up to float rounding (tests/test_kernels.py); worth it for small
networks (several networks per forward pass, grouped convolutions underneath), not for big ones.
"""

from __future__ import annotations

import torch
from torch.func import functional_call, grad, vmap

from nadcore.kernels.precision import precision_mode

__all__ = ["stacked_gradients", "stacked_secant"]


def stacked_gradients(model, x, stacked: dict):
    """Exact input gradients of B networks at once (torch.func: vmap over stacked parameters
    ``name -> (B, *shape)``; buffers shared)."""
    buffers = dict(model.named_buffers())

    def f(p, xx):
        return functional_call(model, (p, buffers), (xx.unsqueeze(0),)).sum()

    B = next(iter(stacked.values())).shape[0]
    g = vmap(grad(f, argnums=1), in_dims=(0, None))(stacked, x)
    return g.reshape(B, -1).double()


def stacked_secant(
    model, batch: torch.Tensor, stacked: dict, step: float, chunk: int, precision: str = "float32"
) -> torch.Tensor:
    """Secant sensitivities of B networks in one pass per input chunk (vmap over stacked
    parameters: several networks per forward pass, grouped convolutions underneath)."""
    buffers = dict(model.named_buffers())
    D = batch.shape[0] // 2

    def f(p, xx):
        return functional_call(model, (p, buffers), (xx,)).reshape(-1).double()

    with torch.no_grad(), precision_mode(batch.device.type, precision):
        out = torch.cat(
            [vmap(f, in_dims=(0, None))(stacked, batch[i : i + chunk]) for i in range(0, 2 * D, chunk)], dim=1
        ).double()
    return (out[:, :D] - out[:, D:]) / (2.0 * step)
