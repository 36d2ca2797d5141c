"""Random initialisation of networks from explicit generators.

nadcore never draws from torch's process-wide RNG behind the caller's back: two threads that
initialise networks at the same time get the same numbers as one thread doing it in turn.

* Models that declare ``default_init = True`` (every registry model) are described by an
  :func:`init_plan`: for each parameter, PyTorch's default distribution (Linear and Conv weights
  and biases ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``; BatchNorm weight 1 and bias 0), or the
  normal ``N(0, 2 / (k * k * out_channels))`` of convolutions for models that declare
  ``conv_init = "normal_fan_out"`` (the authors' VGG). Network ``s`` draws its parameters from its
  own numpy generator ``default_rng(s)``: one flat float32 uniform vector for all "uniform"
  parameters, then one flat float32 normal vector for the "normal" ones
  (:func:`draw_parameters`, the definition; :func:`nadcore.kernels.draw.draw_parameters` draws
  thousands of networks at once, bit for bit the same).
* Any other model (a ``"package.module:factory"`` without ``default_init``) keeps its own
  initialisation: its factory runs under :func:`seeded_global_rng`, which holds a process-wide
  lock, seeds torch's RNG and restores its previous state afterwards. Threads then take turns,
  and the result depends on the seed only. Dropout during training uses the same lock (see
  :func:`nadcore.train.train_classifier`).
"""

from __future__ import annotations

import contextlib
import math
import threading
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn

__all__ = [
    "init_plan",
    "ParameterLayout",
    "parameter_layout",
    "draw_parameters",
    "initialise",
    "reset_buffers",
    "seeded_global_rng",
    "GLOBAL_RNG_LOCK",
]

#: Held by every nadcore code path that has to use torch's global RNG (user factories, dropout).
GLOBAL_RNG_LOCK = threading.RLock()

_LINEAR = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d)
_NORM = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)


@contextlib.contextmanager
def seeded_global_rng(seed: int):
    """Run the block with torch's CPU RNG seeded with ``seed``, holding :data:`GLOBAL_RNG_LOCK`;
    the RNG's previous state is restored on exit."""
    with GLOBAL_RNG_LOCK, torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed) % (1 << 63))
        yield


def init_plan(model: nn.Module):
    """``[(name, shape, kind, value), ...]`` over ``model.named_parameters()`` for a model that
    declares ``default_init = True``: ``kind`` "uniform" (``value`` = bound 1/sqrt(fan_in)),
    "normal" (``value`` = std) or "const". ``None`` if the model does not declare it or holds a
    parameterised module or a buffer the plan cannot describe; such models initialise themselves
    (see the module docstring)."""
    if not getattr(model, "default_init", False):
        return None
    conv_normal = getattr(model, "conv_init", "default") == "normal_fan_out"
    plan = {}
    for mname, mod in model.named_modules():
        direct = list(mod.named_parameters(recurse=False))
        if any(True for _ in mod.named_buffers(recurse=False)) and not isinstance(mod, _NORM):
            return None
        if not direct:
            continue
        full = (lambda pn: f"{mname}.{pn}") if mname else (lambda pn: pn)
        if isinstance(mod, _LINEAR):
            bound = 1.0 / math.sqrt(mod.weight[0].numel())
            for pn, p in direct:
                if conv_normal and not isinstance(mod, nn.Linear):
                    k = math.prod(mod.kernel_size) * mod.out_channels
                    plan[full(pn)] = (
                        (tuple(p.shape), "normal", math.sqrt(2.0 / k))
                        if pn == "weight"
                        else (tuple(p.shape), "const", 0.0)
                    )
                else:
                    plan[full(pn)] = (tuple(p.shape), "uniform", bound)
        elif isinstance(mod, _NORM):
            for pn, p in direct:
                plan[full(pn)] = (tuple(p.shape), "const", 1.0 if pn == "weight" else 0.0)
        else:
            return None
    return [(n, *plan[n]) for n, _ in model.named_parameters()]


@dataclass
class ParameterLayout:
    """Where each parameter of a plan sits in the two flat vectors a network draws: ``sizes``
    (numbers per network, "uniform" and "normal"), the float32 scales of every entry (``u_mul``,
    ``u_sub``: ``u * u_mul - u_sub`` maps ``U[0, 1)`` onto ``U[-bound, bound)``; ``n_mul``: the std)
    and ``entries``: ``(name, shape, kind, offset, size, const)`` in parameter order."""

    sizes: dict
    u_mul: np.ndarray
    u_sub: np.ndarray
    n_mul: np.ndarray
    entries: list

    def unpack(self, U: torch.Tensor, N: torch.Tensor) -> dict[str, torch.Tensor]:
        """Stacked parameters ``name -> (B, *shape)``: views into ``U`` (B, uniform) and ``N``."""
        B = U.shape[0]
        out = {}
        for name, shape, kind, o, size, const in self.entries:
            if kind == "const":
                out[name] = torch.full((B, *shape), float(const), device=U.device)
            else:
                out[name] = (U if kind == "uniform" else N)[:, o : o + size].reshape(B, *shape)
        return out


def parameter_layout(plan) -> ParameterLayout:
    """The :class:`ParameterLayout` of an :func:`init_plan`."""
    sizes = {k: sum(math.prod(s) for _, s, kk, _ in plan if kk == k) for k in ("uniform", "normal")}
    u_mul, u_sub, n_mul = (np.empty(sizes[k], np.float32) for k in ("uniform", "uniform", "normal"))
    entries, ou, on = [], 0, 0
    for name, shape, kind, value in plan:
        size = math.prod(shape)
        if kind == "uniform":
            u_mul[ou : ou + size], u_sub[ou : ou + size] = np.float32(2 * value), np.float32(value)
            entries.append((name, shape, kind, ou, size, None))
            ou += size
        elif kind == "normal":
            n_mul[on : on + size] = np.float32(value)
            entries.append((name, shape, kind, on, size, None))
            on += size
        else:
            entries.append((name, shape, "const", 0, size, value))
    return ParameterLayout(sizes, u_mul, u_sub, n_mul, entries)


def draw_parameters(plan, seeds) -> dict[str, torch.Tensor]:
    """Stacked float32 parameters ``name -> (len(seeds), *shape)`` under ``plan``: network ``b``
    draws from ``numpy.random.default_rng(seeds[b])`` one float32 uniform vector for all
    "uniform" parameters, scaled in float32 as ``u * 2 bound - bound``, then one float32 standard
    normal vector for the "normal" ones, times their std."""
    lay = parameter_layout(plan)
    U = np.empty((len(seeds), lay.sizes["uniform"]), dtype=np.float32)
    N = np.empty((len(seeds), lay.sizes["normal"]), dtype=np.float32)
    for b, s in enumerate(seeds):
        rng = np.random.default_rng(int(s))
        rng.random(U.shape[1], dtype=np.float32, out=U[b])
        np.multiply(U[b], lay.u_mul, out=U[b])
        np.subtract(U[b], lay.u_sub, out=U[b])
        rng.standard_normal(N.shape[1], dtype=np.float32, out=N[b])
        np.multiply(N[b], lay.n_mul, out=N[b])
    return lay.unpack(torch.from_numpy(U), torch.from_numpy(N))


def reset_buffers(model: nn.Module) -> None:
    """BatchNorm running statistics to their defaults (mean 0, variance 1, no batches seen)."""
    for m in model.modules():
        if isinstance(m, _NORM):
            m.reset_running_stats()


def initialise(model: nn.Module, seed: int, plan=None) -> nn.Module:
    """Draw every parameter of ``model`` (which must have an :func:`init_plan`) from the network
    seed ``seed``, in place; BatchNorm statistics are reset. Returns the model."""
    plan = plan if plan is not None else init_plan(model)
    if plan is None:
        raise ValueError(
            f"{type(model).__name__} has no initialisation plan (declare "
            "default_init = True, or build it with nadcore.nets.build_model)"
        )
    params = draw_parameters(plan, [seed])
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(params[name][0])
    reset_buffers(model)
    return model
