"""Small shared helpers: device resolution, seeds, the CPU allocator setting and the matrix product."""
from __future__ import annotations

import ctypes
import ctypes.util
import sys

import numpy as np
import torch

__all__ = ["resolve_device", "derived_seed", "derived_seeds", "seed_sequence_words", "generator",
           "keep_freed_memory", "onednn_applies", "linear"]


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """``"auto"`` -> cuda if available else cpu; anything else is checked and returned."""
    if isinstance(device, torch.device):
        return device
    device = str(device).strip().lower()
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} requested but CUDA is not available; use 'cpu' or 'auto'")
    if not (device == "cpu" or device.startswith("cuda") or device == "mps"):
        raise ValueError(f"unknown device {device!r}; use 'auto', 'cpu' or 'cuda[:N]'")
    return torch.device(device)


def derived_seed(*parts: int) -> int:
    """A 63-bit seed derived deterministically from integer parts (e.g. (seed, network_index)),
    through numpy's SeedSequence: distinct parts give independent streams."""
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(2, np.uint64)[0] >> np.uint64(1))


def _uint32_words(n: int) -> list[int]:
    """numpy's split of a non-negative int into little-endian 32-bit words (0 -> [0])."""
    words = [] if n else [0]
    while n > 0:
        words.append(n & 0xFFFFFFFF)
        n >>= 32
    return words


def seed_sequence_words(entropy: np.ndarray, n_words: int) -> np.ndarray:
    """``np.random.SeedSequence(row).generate_state(n_words, np.uint32)`` for every row of
    ``entropy`` (B, k) uint32 at once: numpy's hash of the entropy into a pool of four words and
    its output hash, written as whole-column uint32 operations. A SeedSequence costs about 8 us of
    Python (holding the GIL) per network otherwise; thousands of networks are seeded per second.
    tests/test_estimators.py checks it against numpy word for word."""
    e = np.asarray(entropy, dtype=np.uint32)
    B, k = e.shape
    u = np.uint32
    h = [u(0x43b0d7e5)]

    def hashmix(v):
        v = v ^ h[0]
        h[0] = u(h[0] * u(0x931e8875))
        v = v * h[0]
        return v ^ (v >> u(16))

    def mix(x, y):
        r = u(0xca01f9dd) * x - u(0x4973f715) * y
        return r ^ (r >> u(16))

    out = np.empty((B, n_words), np.uint32)
    with np.errstate(over="ignore"):
        pool = [hashmix(e[:, i] if i < k else np.zeros(B, np.uint32)) for i in range(4)]
        for src in range(4):
            for dst in range(4):
                if src != dst:
                    pool[dst] = mix(pool[dst], hashmix(pool[src]))
        for src in range(4, k):
            for dst in range(4):
                pool[dst] = mix(pool[dst], hashmix(e[:, src]))
        hb = u(0x8b51f9dd)
        for i in range(n_words):
            v = pool[i % 4] ^ hb
            hb = u(hb * u(0x58f38ded))
            v = v * hb
            out[:, i] = v ^ (v >> u(16))
    return out


def derived_seeds(seed: int, indices) -> list[int]:
    """``[derived_seed(seed, n) for n in indices]``, hashed for all indices at once (indices below
    2**32; others take :func:`derived_seed` one by one)."""
    idx = np.asarray(indices, dtype=np.int64).reshape(-1)
    if idx.size == 0 or idx.min() < 0 or idx.max() >= 1 << 32 or int(seed) < 0:
        return [derived_seed(seed, int(n)) for n in idx]
    head = np.array(_uint32_words(int(seed)), dtype=np.uint32)
    entropy = np.concatenate([np.broadcast_to(head, (idx.size, head.size)),
                              idx.astype(np.uint32)[:, None]], 1)
    w = seed_sequence_words(entropy, 2).astype(np.uint64)
    return ((w[:, 0] | (w[:, 1] << np.uint64(32))) >> np.uint64(1)).tolist()


def generator(seed: int, *more: int, device="cpu") -> torch.Generator:
    """A torch.Generator seeded with ``seed`` (or with ``derived_seed(seed, *more)``)."""
    g = torch.Generator(device=device)
    g.manual_seed(derived_seed(seed, *more) if more else int(seed))
    return g


_MMAP_THRESHOLD = 32 << 20   # glibc's largest allowed M_MMAP_THRESHOLD (64-bit)
_TRIM_THRESHOLD = 1 << 30
_allocator_set: bool | None = None


def keep_freed_memory() -> bool:
    """Let glibc's malloc keep freed blocks below 32 MB in the heap (``mallopt``) instead of
    returning them to the system, for the rest of the process. Training and NAD sampling on the
    CPU free and reallocate tensors of a few MB at every step; by default glibc serves the larger
    ones with fresh ``mmap`` pages and trims the heap, so each step pays page faults and kernel
    zeroing again (without it, train_many of 8 LeNets per call took about 1.4x the time of two
    calls of 4: ``benchmarks/bench_training.py --chunks 8,4``). Idempotent; numbers are unchanged. Returns whether the
    setting is active (False on systems without glibc)."""
    global _allocator_set
    if _allocator_set is None:
        _allocator_set = False
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
                # M_TRIM_THRESHOLD = -1, M_MMAP_THRESHOLD = -3; mallopt returns 1 on success
                _allocator_set = bool(libc.mallopt(-1, _TRIM_THRESHOLD)) and bool(libc.mallopt(-3, _MMAP_THRESHOLD))
            except (OSError, AttributeError):
                _allocator_set = False
    return _allocator_set


def onednn_applies(*ts) -> bool:
    """oneDNN's fused operations (``torch.ops.mkldnn._linear_pointwise``,
    ``_convolution_pointwise``: no autograd) apply to ``ts``: float32 CPU tensors, no autograd
    or autocast to honour (bf16 keeps torch's ops)."""
    return (all(t.device.type == "cpu" and t.dtype == torch.float32 for t in ts)
            and torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")
            and hasattr(torch.ops.mkldnn, "_convolution_pointwise") and not torch.is_autocast_enabled("cpu")
            and not (torch.is_grad_enabled() and any(t.requires_grad for t in ts)))


_ONEDNN_MIN_MACS = 1 << 21  # per product; below it oneDNN's call costs more than MKL's AVX2 path


def linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
    """``x @ w^T (+ b)``: one product (x (R, K), w (N, K), b (N,)) or one per model (x (M, R, K),
    w (M, N, K), b (M, N)); ``w`` may be a transposed view. On the CPU in float32 without
    autograd, products of at least 2**21 multiply-adds run oneDNN's product
    (``torch.ops.mkldnn._linear_pointwise``, the op torch.compile uses): torch's own CPU matmul
    calls MKL's sgemm, which takes its AVX2 path on AMD CPUs at less than half of oneDNN's
    AVX-512 rate (``benchmarks/common.py``'s ``matmul_rates``), but oneDNN's fixed cost per call
    (about 15 us) loses on small ones such as LeNet's fc2 and fc3 on a batch of 128. Elsewhere
    addmm, baddbmm, bmm."""
    if (x.shape[-2] * w.shape[-2] * w.shape[-1] >= _ONEDNN_MIN_MACS
            and onednn_applies(x, w, *(() if b is None else (b,)))):
        op = torch.ops.mkldnn._linear_pointwise
        if x.dim() == 2:
            return op(x, w, b, "none", [], "")
        out = x.new_empty(x.shape[0], x.shape[1], w.shape[1])
        for m in range(len(x)):
            out[m] = op(x[m], w[m], None if b is None else b[m], "none", [], "")
        return out
    wt = w.transpose(-1, -2)
    if x.dim() == 2:
        return x @ wt if b is None else torch.addmm(b, x, wt)
    return torch.bmm(x, wt) if b is None else torch.baddbmm(b[:, None], x, wt)
