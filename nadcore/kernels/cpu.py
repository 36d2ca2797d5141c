"""CPU-only speedups that change no number: glibc's allocator setting and oneDNN's matrix product.

* :func:`keep_freed_memory`: ``mallopt`` so that the few-MB tensors freed and reallocated at every
  training or sampling step stay in the heap (no page faults and kernel zeroing per step);
* :func:`linear`: ``x @ w^T + b`` through oneDNN where it pays (:func:`onednn_applies`), torch's
  ``addmm``/``baddbmm``/``bmm`` otherwise. The plain reference is ``torch.nn.functional.linear``;
  tests/test_kernels.py compares the two.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

import torch

__all__ = ["keep_freed_memory", "onednn_applies", "linear", "ONEDNN_MIN_MACS"]

_MMAP_THRESHOLD = 32 << 20  # glibc's largest allowed M_MMAP_THRESHOLD (64-bit)
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
    return (
        all(t.device.type == "cpu" and t.dtype == torch.float32 for t in ts)
        and torch.backends.mkldnn.is_available()
        and hasattr(torch.ops.mkldnn, "_linear_pointwise")
        and hasattr(torch.ops.mkldnn, "_convolution_pointwise")
        and not torch.is_autocast_enabled("cpu")
        and not (torch.is_grad_enabled() and any(t.requires_grad for t in ts))
    )


ONEDNN_MIN_MACS = 1 << 21  # per product; below it oneDNN's call costs more than MKL's AVX2 path


def linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
    """``x @ w^T (+ b)``: one product (x (R, K), w (N, K), b (N,)) or one per model (x (M, R, K),
    w (M, N, K), b (M, N)); ``w`` may be a transposed view. On the CPU in float32 without
    autograd, products of at least 2**21 multiply-adds run oneDNN's product
    (``torch.ops.mkldnn._linear_pointwise``, the op torch.compile uses): torch's own CPU matmul
    calls MKL's sgemm, which takes its AVX2 path on AMD CPUs at less than half of oneDNN's
    AVX-512 rate (``benchmarks/common.py``'s ``matmul_rates``), but oneDNN's fixed cost per call
    (about 15 us) loses on small ones such as LeNet's fc2 and fc3 on a batch of 128. Elsewhere
    addmm, baddbmm, bmm."""
    if x.shape[-2] * w.shape[-2] * w.shape[-1] >= ONEDNN_MIN_MACS and onednn_applies(
        x, w, *(() if b is None else (b,))
    ):
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
