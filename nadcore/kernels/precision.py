"""The arithmetic of a block of GPU work: IEEE float32, TF32 tensor cores, or bfloat16 autocast.

A speed option, never a default: on an H100 tf32 moved secant sensitivities by about 1e-3 of
their norm, bf16 by 1e-2 (ResNet-18) to 0.6 (DenseNet-121), so chapter 2 checks any precision
other than float32 against float32 before its NADs are used.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext

import torch

__all__ = ["PRECISIONS", "precision_mode", "tf32_mode"]

PRECISIONS = ("float32", "tf32", "bf16")


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
    with tf32_mode(device_type, precision == "tf32"), cast:
        yield


@contextmanager
def tf32_mode(device_type: str, allow: bool):
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
