"""Native CPU kernels in C, compiled with the system's C compiler (by ``scripts/install.sh``, or
on first use).

:func:`conv_pool_relu` is LeNet's "convolution -> 2x2 max-pool -> ReLU" stage for M models at
once (``convpool.c``): the forward pass never writes the full convolution output, and the
backward pass touches only the convolution outputs that won their pooling window and passed the
ReLU (about an eighth of a dense convolution backward). :func:`conv_relu` is the same stage
without the pool (LeNet without pooling, Fig. 3), whose backward visits the outputs that passed
the ReLU. ``train_many`` uses them for LeNet on the CPU; the results equal torch's ``conv2d ->
max_pool2d -> relu`` (``conv2d -> relu``) up to float rounding (tests/test_kernels.py).

:func:`lenet_input_gradients` is the exact input gradient of many LeNets at one input
(``nadcore.kernels.lenet.lenet_gradients``, the gradient NADs): each network's forward and
backward pass run start to end in one thread, on parameters still in its cache, and the backward
visits only what the pools and ReLUs passed.

:func:`pcg64_uniform` (``draw.c``) draws the uniform parameters of many networks from numpy's
PCG64 streams, bit for bit, with sixteen generators side by side in AVX-512 lanes
(``nadcore.kernels.draw.draw_parameters``).

The shared library is built with ``cc -O3 -march=native -fopenmp`` into
``$NADCORE_NATIVE_DIR`` (default ``~/.cache/nadcore/native``), named after a hash of the source,
the flags, the compiler's version and the CPU, and written atomically. The AVX-512 code is
compiled where the CPU has it. Elsewhere the convolution forward runs in the compiler's generic
vectors of 8 floats (one AVX2 register), and the rest in portable C. Without a working compiler (or
one without OpenMP, such as Apple's clang), or with ``NADCORE_NATIVE=0``, :func:`available` is
False and every caller takes its torch path: nadcore works and its tests pass without this
library.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import threading
import warnings
from pathlib import Path

import numpy as np
import torch

__all__ = [
    "available",
    "conv_pool_relu",
    "conv_relu",
    "lenet_input_gradients",
    "takes_lenet_input_gradients",
    "pcg64_uniform",
]

_SOURCES = ("convpool.c", "draw.c")  # compiled together into one library
_FLAGS = ["-O3", "-march=native", "-fopenmp", "-shared", "-fPIC", "-std=gnu11"]
_VW = 16  # the vector width (floats) of convpool.c: output channels are padded to a multiple
_CHUNK = 16  # examples per partial sum in convpool_backward (CHUNK in convpool.c)
_lib = None  # None: not tried yet; False: unavailable
_lock = threading.Lock()


def _cpu_id() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
        return next((ln for ln in text.splitlines() if ln.startswith("flags")), "") + platform.processor()
    except OSError:
        return platform.processor() + platform.machine()


def _build(flags: tuple[str, ...] = ()) -> ctypes.CDLL:
    """Compile (once per source, flags, compiler and CPU) and load the library; ``flags`` are
    added to the usual ones (the tests build the portable C path with ``-U__AVX512F__``)."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise RuntimeError("no C compiler (cc or gcc) on PATH")
    here = Path(__file__).parent
    srcs = [here / f for f in _SOURCES]
    src = b"\0".join(f.read_bytes() for f in srcs)
    version = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout
    flags = [*_FLAGS, *flags]
    key = hashlib.sha256(b"\0".join([src, " ".join(flags).encode(), version.encode(), _cpu_id().encode()])).hexdigest()[
        :16
    ]
    root = Path(os.environ.get("NADCORE_NATIVE_DIR") or Path.home() / ".cache" / "nadcore" / "native")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError:
        root = Path(tempfile.gettempdir()) / f"nadcore-native-{os.getuid()}"
        root.mkdir(parents=True, exist_ok=True)
    so = root / f"nadcore-native-{key}.so"
    if not so.exists():
        fd, tmp = tempfile.mkstemp(suffix=".so", dir=root)
        os.close(fd)
        try:
            r = subprocess.run([cc, *flags, *map(str, srcs), "-o", tmp], capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"{cc} failed on {', '.join(_SOURCES)}:\n{r.stderr[-2000:]}")
            os.replace(tmp, so)  # atomic: no half-written library is ever loaded
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    lib = ctypes.CDLL(str(so))
    i, l, p = ctypes.c_int, ctypes.c_long, ctypes.c_void_p
    lib.convpool_forward.argtypes = [i] * 8 + [p, l, p, p, p, p, p, l, l, l, l, i]
    lib.convpool_backward.argtypes = [i] * 8 + [p, l, p, p, p, p, l, l, l, l, p, p, p, p, i]
    lib.lenet_input_gradients.argtypes = [i] * 5 + [p, p, p, p, i]
    lib.convpool_forward.restype = lib.convpool_backward.restype = None
    lib.lenet_input_gradients.restype = None
    lib.pcg64_uniform.argtypes = [i, l, p, p, p, p, l, i]
    lib.pcg64_uniform.restype = None
    return lib


def available() -> bool:
    """Whether the native kernels are built and loaded (built on the first call; other threads
    wait for it, so that no job takes torch's path meanwhile)."""
    global _lib
    with _lock:
        if _lib is None:
            lib = False
            if os.environ.get("NADCORE_NATIVE", "1") != "0":
                try:
                    lib = _build()
                except (OSError, RuntimeError, subprocess.SubprocessError) as e:
                    warnings.warn(
                        f"nadcore.kernels.native: C kernels unavailable, using torch instead ({str(e).strip()[:500]})"
                    )
            _lib = lib
    return bool(_lib)


def _strides(out: torch.Tensor, channels_first: bool):
    """(item, channel, row, column) strides of an (M, B, C, h, w) or (M, B, h, w, C) tensor."""
    s = out.stride()
    return (s[1], s[2], s[3], s[4]) if channels_first else (s[1], s[4], s[2], s[3])


def _need_lib(instead: str) -> None:
    if not available():
        raise RuntimeError(f"nadcore.kernels.native is unavailable (see the warning it gave); use {instead}")


def _float32_cpu(*ts: torch.Tensor) -> bool:
    return all(t.dtype == torch.float32 and t.device.type == "cpu" for t in ts)


def _ptr(t: torch.Tensor | None):
    """A tensor's data pointer for the C library; NULL for none or an empty one (the pool's
    winners when there is no pool)."""
    return t.data_ptr() if t is not None and t.numel() else None


class _ConvPoolReLU(torch.autograd.Function):
    """``pool``: the max-pool's side, 2, or 1 for none."""

    @staticmethod
    def forward(ctx, x, w, b, channels_first, pool):
        M, B, H, W_, Cin = x.shape
        Cout, K = w.shape[1], w.shape[-1]
        cp = -(-Cout // _VW) * _VW
        wt = torch.zeros(M, K, K, Cin, cp)
        wt[..., :Cout] = w.permute(0, 3, 4, 2, 1)
        bp = torch.zeros(M, cp)
        bp[:, :Cout] = b
        hp, wp = (H - K + 1) // pool, (W_ - K + 1) // pool
        shape = (M, B, Cout, hp, wp) if channels_first else (M, B, hp, wp, Cout)
        out = torch.empty(shape)
        arg = torch.empty(shape if pool > 1 else 0, dtype=torch.uint8)  # the winners: a pool's only
        _lib.convpool_forward(
            M,
            B,
            H,
            W_,
            Cin,
            Cout,
            K,
            pool,
            x.data_ptr(),
            H * W_ * Cin,
            wt.data_ptr(),
            bp.data_ptr(),
            w.data_ptr(),
            out.data_ptr(),
            _ptr(arg),
            *_strides(out, channels_first),
            torch.get_num_threads(),
        )
        ctx.save_for_backward(x, w, out, arg)
        ctx.channels_first, ctx.pool = channels_first, pool
        return out

    @staticmethod
    def backward(ctx, g):
        x, w, out, arg = ctx.saved_tensors
        M, B, H, W_, Cin = x.shape
        Cout, K = w.shape[1], w.shape[-1]
        g = g.contiguous()
        wb = w.permute(0, 1, 3, 4, 2).contiguous()  # (M, Cout, K, K, Cin)
        dw = torch.empty_like(wb)
        db = torch.empty(M, Cout)
        dx = torch.empty_like(x) if ctx.needs_input_grad[0] else None
        part = torch.empty(M * -(-B // _CHUNK) * Cout * (K * K * Cin + 1))
        _lib.convpool_backward(
            M,
            B,
            H,
            W_,
            Cin,
            Cout,
            K,
            ctx.pool,
            x.data_ptr(),
            H * W_ * Cin,
            wb.data_ptr(),
            g.data_ptr(),
            out.data_ptr(),
            _ptr(arg),
            *_strides(out, ctx.channels_first),
            dw.data_ptr(),
            db.data_ptr(),
            _ptr(dx),
            part.data_ptr(),
            torch.get_num_threads(),
        )
        return dx, dw.permute(0, 1, 4, 2, 3), db, None, None


def conv_pool_relu(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, channels_first: bool = False):
    """``relu(max_pool2d(conv2d(x_m, w_m, b_m), 2))`` for M models at once, differentiable.

    ``x``: (M, B, H, W, Cin) float32 on the CPU (each example channels-last); ``w``: (M, Cout, Cin,
    K, K); ``b``: (M, Cout). Returns (M, B, Hp, Wp, Cout), or (M, B, Cout, Hp, Wp) with
    ``channels_first``. Needs :func:`available`."""
    return _conv_stage(x, w, b, channels_first, 2)


def conv_relu(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, channels_first: bool = False):
    """``relu(conv2d(x_m, w_m, b_m))`` for M models at once, differentiable: :func:`conv_pool_relu`
    without the pool, same arguments; returns (M, B, Ho, Wo, Cout) or (M, B, Cout, Ho, Wo)."""
    return _conv_stage(x, w, b, channels_first, 1)


def _conv_stage(x, w, b, channels_first: bool, pool: int):
    _need_lib("torch's path")
    if x.dim() != 5 or not _float32_cpu(x, w, b):
        raise ValueError(
            f"x must be a (M, B, H, W, C) float32 CPU tensor and w, b float32 CPU tensors; "
            f"got x {x.dtype} {tuple(x.shape)} on {x.device}, w {w.dtype}, b {b.dtype}"
        )
    M, _, H, W, cin = x.shape
    if (
        w.dim() != 5
        or w.shape[0] != M
        or w.shape[2] != cin
        or w.shape[3] != w.shape[4]
        or tuple(b.shape) != (M, w.shape[1])
        or min(H, W) < w.shape[-1] + 1
    ):
        raise ValueError(
            f"shapes do not fit: x {tuple(x.shape)} (M, B, H, W, Cin) needs w (M, Cout, Cin, "
            f"K, K) with K < min(H, W) and b (M, Cout); got w {tuple(w.shape)}, b {tuple(b.shape)}"
        )
    return _ConvPoolReLU.apply(x.contiguous(), w.contiguous(), b.contiguous(), channels_first, pool)


MAX_LENET_SIDE = 64  # lenet_input_gradients: inputs up to 4 x 64 x 64 (stack scratch under 300 KB)
_LENET = (
    "conv1.weight",
    "conv1.bias",
    "conv2.weight",
    "conv2.bias",
    "fc1.weight",
    "fc1.bias",
    "fc2.weight",
    "fc2.bias",
    "fc3.weight",
)


def _lenet_input_fits(x: torch.Tensor) -> bool:
    return x.dim() == 3 and x.shape[0] <= MAX_LENET_SIDE // 16 and x.shape[-1] <= MAX_LENET_SIDE


def takes_lenet_input_gradients(params: dict, x: torch.Tensor) -> bool:
    """Whether :func:`lenet_input_gradients` takes these: float32 CPU tensors, an input up to
    4 x 64 x 64, and the library built (``nadcore.kernels.lenet.lenet_gradients`` asks)."""
    return _float32_cpu(x, *params.values()) and _lenet_input_fits(x) and available()


def lenet_input_gradients(params: dict, x: torch.Tensor) -> torch.Tensor:
    """``grad_x f_m(x)`` of M LeNets (pooling, 5x5 kernels, 6 and 16 channels) at one input ``x``
    (C, S, S), f_m the first output of network m: float64 (M, C*S*S). ``params``: stacked float32
    CPU parameters, ``name -> (M, *shape)`` as :func:`nadcore.kernels.draw.draw_parameters`
    returns them (views into one buffer are fine). Needs :func:`available`."""
    _need_lib("torch's path")
    missing = [k for k in _LENET if k not in params]
    if missing:
        raise ValueError(f"LeNet parameters missing: {missing}")
    ts = [params[k] for k in _LENET]
    if x.dim() != 3 or x.shape[1] != x.shape[2] or not _float32_cpu(x, *ts):
        raise ValueError(
            f"x must be a (C, S, S) float32 CPU tensor and the parameters float32 CPU "
            f"tensors; got x {x.dtype} {tuple(x.shape)} on {x.device}"
        )
    C, S = x.shape[0], x.shape[-1]
    if not _lenet_input_fits(x):
        raise ValueError(
            f"inputs up to {MAX_LENET_SIDE // 16}x{MAX_LENET_SIDE}x{MAX_LENET_SIDE} (each "
            f"network's scratch lives on its thread's stack); got {tuple(x.shape)}: use "
            f"nadcore.kernels.lenet.lenet_gradients, which takes torch's path then"
        )
    M = ts[0].shape[0]
    h = (S - 4) // 2
    s = (h - 4) // 2
    F1, F2 = ts[4].shape[1], ts[6].shape[1]
    want = [
        (M, 6, C, 5, 5),
        (M, 6),
        (M, 16, 6, 5, 5),
        (M, 16),
        (M, F1, 16 * s * s),
        (M, F1),
        (M, F2, F1),
        (M, F2),
        (M, ts[8].shape[1], F2),
    ]
    if s < 1 or [tuple(t.shape) for t in ts] != want:
        raise ValueError(
            f"not a LeNet for a {C}x{S}x{S} input: parameter shapes {[tuple(t.shape) for t in ts]}, expected {want}"
        )
    ts = [t if t[0].is_contiguous() else t.contiguous() for t in ts]
    xc = x.permute(1, 2, 0).contiguous()
    out = torch.empty(M, C * S * S, dtype=torch.float64)
    if M:
        ptrs = (ctypes.c_void_p * len(ts))(*[t.data_ptr() for t in ts])
        strides = (ctypes.c_long * len(ts))(*[t.stride(0) for t in ts])
        _lib.lenet_input_gradients(
            M, C, S, F1, F2, xc.data_ptr(), ptrs, strides, out.data_ptr(), torch.get_num_threads()
        )
    return out


def pcg64_uniform(words, mul, sub, out, threads: int = 1) -> None:
    """Row b of ``out`` (B, n) float32 := ``(bits >> 8) * mul - sub`` in float32 (rounded after
    each operation) for the first n 32-bit words ``bits`` of numpy's PCG64 seeded with
    ``words[b]`` (B, 4) uint64 (the words its seed sequence gives it), low half of each 64-bit
    output first: numpy's ``Generator.random(n, dtype=float32)`` as
    :func:`nadcore.kernels.draw.draw_parameters` scales it, bit for bit. Numpy arrays; ``out``
    may be the first rows of a bigger C-contiguous array; ``threads`` share the rows. Needs
    :func:`available`."""
    _need_lib("numpy's path")
    B, n = out.shape
    if (
        words.dtype != np.uint64
        or words.shape != (B, 4)
        or not words.flags.c_contiguous
        or out.dtype != np.float32
        or out.strides[1] != 4
        or not out.flags.writeable
        or any(a.dtype != np.float32 or a.shape != (n,) or not a.flags.c_contiguous for a in (mul, sub))
    ):
        raise ValueError(
            f"need words (B, 4) uint64, out (B, n) float32 with contiguous rows, mul and sub "
            f"(n,) float32; got words {words.dtype} {words.shape}, out {out.dtype} {out.shape}"
        )
    _lib.pcg64_uniform(
        B,
        n,
        words.ctypes.data,
        mul.ctypes.data,
        sub.ctypes.data,
        out.ctypes.data,
        out.strides[0] // 4,
        max(1, int(threads)),
    )
