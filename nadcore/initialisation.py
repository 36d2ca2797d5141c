"""Random initialisation of networks from explicit generators, one network or thousands at once.

nadcore never draws from torch's process-wide RNG behind the caller's back: two threads that
initialise networks at the same time get the same numbers as one thread doing it in turn.

* Models that declare ``default_init = True`` (every registry model) are described by an
  :func:`init_plan`: for each parameter, PyTorch's default distribution (Linear and Conv weights
  and biases ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``; BatchNorm weight 1 and bias 0), or the
  normal ``N(0, 2 / (k * k * out_channels))`` of convolutions for models that declare
  ``conv_init = "normal_fan_out"`` (the authors' VGG). Network ``s`` draws its parameters from its
  own numpy ``PCG64`` generator seeded with ``s``: one flat float32 uniform vector, then one flat
  normal vector (:func:`draw_parameters`). Numpy's generator makes float32 numbers about twice as
  fast as torch's CPU generator, which matters when thousands of networks are drawn for NADs.
  Batched (stacked) and one-at-a-time draws give the same parameters.
* Any other model (a ``"package.module:factory"`` without ``default_init``) keeps its own
  initialisation: its factory runs under :func:`seeded_global_rng`, which holds a process-wide
  lock, seeds torch's RNG and restores its previous state afterwards. Threads then take turns,
  and the result depends on the seed only. Dropout during training uses the same lock (see
  :func:`nadcore.train.train_classifier`).
"""
from __future__ import annotations

import contextlib
import math
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
import torch.nn as nn
from numpy.random.bit_generator import ISeedSequence

from nadcore import native as _native
from nadcore.utils import _uint32_words, seed_sequence_words

__all__ = ["init_plan", "draw_parameters", "parameter_buffers", "uniform_f32", "initialise", "seeded_global_rng", "GLOBAL_RNG_LOCK"]

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
                    plan[full(pn)] = (tuple(p.shape), "normal", math.sqrt(2.0 / k)) if pn == "weight" \
                        else (tuple(p.shape), "const", 0.0)
                else:
                    plan[full(pn)] = (tuple(p.shape), "uniform", bound)
        elif isinstance(mod, _NORM):
            for pn, p in direct:
                plan[full(pn)] = (tuple(p.shape), "const", 1.0 if pn == "weight" else 0.0)
        else:
            return None
    return [(n, *plan[n]) for n, _ in model.named_parameters()]


def uniform_f32(rng: np.random.Generator, out: np.ndarray, scale: np.ndarray | None = None) -> None:
    """``rng.random(len(out), dtype=np.float32, out=out)`` [then ``out *= scale`` in float32], bit
    for bit and faster.

    numpy's PCG64 makes each float32 from the next 32 random bits (the low half of a 64-bit
    output, then its high half) as ``(bits >> 8) * 2**-24``; here the 64-bit outputs come in one
    ``random_raw`` call, the conversion is vectorised, and ``2**-24`` joins ``scale`` (a power of
    two: the product is the same number, rounded once). An odd count leaves the last output's
    high half buffered in the generator for its next 32-bit draw, as numpy does. A generator
    that holds such a half already, or a big-endian machine, gets numpy's own method.
    tests/test_estimators.py checks the equality, including the generator's state afterwards."""
    _uniform_into(rng, out, scale, np.float32(_TWO_M24) if scale is None else scale * np.float32(_TWO_M24))


_TWO_M24 = 2.0 ** -24


def _uniform_into(rng, out, scale, scale_m24, fresh: bool = False, keep_state: bool = True) -> None:
    """:func:`uniform_f32` with ``scale * 2**-24`` computed by the caller (once for many rows).
    ``fresh``: ``rng`` is new (holds no buffered half); ``keep_state=False``: nothing is drawn
    from ``rng`` afterwards, so the half an odd count leaves need not be stored."""
    n = len(out)
    bg = rng.bit_generator
    if (sys.byteorder != "little" or not isinstance(bg, np.random.PCG64)
            or (not fresh and bg.state["has_uint32"])):
        rng.random(n, dtype=np.float32, out=out)
        if scale is not None:
            np.multiply(out, scale, out=out)
        return
    bits = bg.random_raw((n + 1) // 2).view(np.uint32)
    if n % 2 and keep_state:  # numpy keeps the unused high half for the generator's next draw
        state = bg.state
        state["has_uint32"], state["uinteger"] = 1, int(bits[n])
        bg.state = state
    bits = bits[:n]
    np.right_shift(bits, 8, out=bits)
    out[...] = bits
    np.multiply(out, scale_m24, out=out)


class _Words(ISeedSequence):
    """A seed sequence whose state words are already hashed (by :func:`_pcg64_seed_words`)."""

    def __init__(self, words: np.ndarray):
        self.words = words

    def generate_state(self, n_words, dtype=np.uint32):
        return self.words


def _pcg64_seed_words(seeds) -> np.ndarray | None:
    """The words ``np.random.default_rng(s)`` seeds its PCG64 with, for every seed at once:
    ``SeedSequence(s).generate_state(4, np.uint64)`` (B, 4). None where some seed is negative or
    needs more than four 32-bit words (numpy then does it, one by one)."""
    ints = [int(s) for s in seeds]
    if not ints or min(ints) < 0 or max(ints) >= 1 << 128:
        return None
    if max(ints) < 1 << 64:
        s64 = np.array(ints, dtype=np.uint64)
        entropy = np.zeros((len(ints), 4), np.uint32)
        entropy[:, 0], entropy[:, 1] = s64 & np.uint64(0xFFFFFFFF), s64 >> np.uint64(32)
    else:
        entropy = np.array([(_uint32_words(s) + [0, 0, 0])[:4] for s in ints], np.uint32)
    w = seed_sequence_words(entropy, 8).astype(np.uint64)   # zero words hash as numpy's padding
    return w[:, 0::2] | (w[:, 1::2] << np.uint64(32))


def parameter_buffers(plan, rows: int, pinned: bool = False) -> dict[str, np.ndarray]:
    """Buffers that :func:`draw_parameters` can fill again and again (``buffers=``) for up to
    ``rows`` networks at a time: drawing thousands of networks then writes into memory it has
    already touched instead of fresh pages for every block (the page faults of fresh buffers
    made the draw three times slower). ``pinned``: page-locked memory, from which copies to a
    GPU run at full speed and asynchronously."""
    if pinned:
        return {k: torch.empty((rows, n), dtype=torch.float32, pin_memory=True).numpy()
                for k, n in _part_sizes(plan).items()}
    return {k: np.empty((rows, n), dtype=np.float32) for k, n in _part_sizes(plan).items()}


def _part_sizes(plan) -> dict[str, int]:
    """Numbers drawn per network for the "uniform" and the "normal" parameters of ``plan``."""
    return {k: sum(math.prod(s) for _, s, kk, _ in plan if kk == k) for k in ("uniform", "normal")}


def draw_parameters(plan, seeds, threads: int = 1, buffers: dict | None = None,
                    device=None) -> dict[str, torch.Tensor]:
    """Stacked float32 parameters ``name -> (len(seeds), *shape)`` under ``plan``: network ``b``
    draws from ``numpy.random.default_rng(seeds[b])`` one uniform vector (:func:`uniform_f32`)
    for all "uniform" parameters, then one standard normal vector for the "normal" ones, and
    scales them in float32 (``u * 2 bound - bound``, ``z * std``). Each network's row is scaled
    in place right after it is drawn, and ``threads`` threads fill disjoint rows (numpy releases
    the GIL), which gives the same numbers. Returns views into one buffer per kind: new ones, or
    the first rows of ``buffers`` (from :func:`parameter_buffers`; the previous draw's views then
    see the new numbers). With a ``device``, the two buffers travel there whole (two copies
    instead of one per parameter; asynchronous from pinned ``buffers``: synchronise before
    refilling them) and the views are views of the copies. Where it is built,
    :func:`nadcore.native.pcg64_uniform` draws the uniform part (the same bits, faster)."""
    sizes = _part_sizes(plan)
    B = len(seeds)
    if buffers is not None and all(len(buffers[k]) >= B and buffers[k].shape[1] == sizes[k] for k in sizes):
        U, N = buffers["uniform"][:B], buffers["normal"][:B]
    else:
        U = np.empty((B, sizes["uniform"]), dtype=np.float32)
        N = np.empty((B, sizes["normal"]), dtype=np.float32)
    u_mul, u_sub, n_mul = (np.empty(sizes[k], np.float32) for k in ("uniform", "uniform", "normal"))
    layout, ou, on = [], 0, 0
    for name, shape, kind, value in plan:
        size = math.prod(shape)
        if kind == "uniform":
            u_mul[ou:ou + size], u_sub[ou:ou + size] = np.float32(2 * value), np.float32(value)
            layout.append((name, shape, U, ou, size, None))
            ou += size
        elif kind == "normal":
            n_mul[on:on + size] = np.float32(value)
            layout.append((name, shape, N, on, size, None))
            on += size
        else:
            layout.append((name, shape, None, 0, size, value))

    u_mul_m24 = u_mul * np.float32(_TWO_M24)   # exact: a power of two

    words = _pcg64_seed_words(seeds)

    # nadcore.native draws the uniform part of every row at once (the same numbers, many
    # generators side by side) where a normal part, if any, can continue from a whole number of
    # 64-bit outputs; the rows then only need their normal part
    native = words is not None and B > 0 and (N.shape[1] == 0 or U.shape[1] % 2 == 0) and _native.available()
    if native:
        _native.pcg64_uniform(words, u_mul_m24, u_sub, U, threads)

    def fill(rows):
        for row in rows:
            rng = (np.random.default_rng(int(seeds[row])) if words is None
                   else np.random.Generator(np.random.PCG64(_Words(words[row]))))
            if native:  # continue where the native uniform part left this generator
                rng.bit_generator.advance(U.shape[1] // 2)
            else:
                u = U[row]
                _uniform_into(rng, u, u_mul, u_mul_m24, fresh=True, keep_state=N.shape[1] > 0)
                np.subtract(u, u_sub, out=u)
            if N.shape[1]:
                z = N[row]
                rng.standard_normal(N.shape[1], dtype=np.float32, out=z)
                np.multiply(z, n_mul, out=z)

    rows_left = not native or N.shape[1] > 0
    parts = [p for p in np.array_split(np.arange(B), max(1, min(int(threads), B))) if len(p)] if rows_left else []
    if len(parts) > 1:
        with ThreadPoolExecutor(len(parts)) as ex:
            list(ex.map(fill, parts))
    elif parts:
        fill(parts[0])
    Ut, Nt = torch.from_numpy(U), torch.from_numpy(N)
    if device is not None:
        Ut, Nt = Ut.to(device, non_blocking=True), Nt.to(device, non_blocking=True)
    out = {}
    for name, shape, buf, o, size, const in layout:
        if buf is None:
            out[name] = torch.full((B, *shape), float(const), device=Ut.device)
        else:
            out[name] = (Ut if buf is U else Nt)[:, o:o + size].reshape(B, *shape)
    return out


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
        raise ValueError(f"{type(model).__name__} has no initialisation plan (declare "
                         "default_init = True, or build it with nadcore.models.build_model)")
    params = draw_parameters(plan, [seed])
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(params[name][0])
    reset_buffers(model)
    return model
