"""Many small networks trained at once: hand-vectorised forward passes for ``train_many``.

:func:`vectorised_forward` returns ``f(param_list, x) -> out`` for M stacked models of one
architecture (x: (M, B, C, H, W), out: (M, B, K)), or None where it has no path. LeNet on the CPU
runs its two "convolution -> max-pool -> ReLU" stages as
:func:`nadcore.kernels.native.conv_pool_relu` (fused C kernels whose backward touches only the
positions that won their pooling window and passed the ReLU; without pooling,
:func:`nadcore.kernels.native.conv_relu`), elsewhere (a GPU, no C compiler) as grouped
convolutions in channels-last layout; LogReg and MLPs run as batched matrix products
whose backward reads contiguous operands. The definition is ``vmap(functional_call)`` over the
stacked parameters (:func:`nadcore.train.batched_forward`); the results equal it up to
floating-point reassociation (tests/test_kernels.py).
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from nadcore.kernels import native
from nadcore.kernels.cpu import linear
from nadcore.nets.architectures import MLP, LeNet, LogReg

__all__ = ["vectorised_forward"]


def _lenet_batched(base, names):
    """M LeNets at once as grouped convolutions in channels-last layout (much faster on CPU than
    ``vmap``, whose grouped convolutions run in NCHW; max-pool before ReLU, which commutes).
    Models with LeNet's layer names that declare ``lenet_layout = True`` (the variants of
    :mod:`nadcore.nets.variants`) take the same path with their convolutions' strides and their
    ``downsample`` method, a per-channel operation applied after each ReLU."""
    pooling = bool(getattr(base, "pooling", True))
    down = getattr(base, "downsample", None)  # LeNet-layout variants: a per-channel op after ReLU
    cl = torch.channels_last

    fused = down is None and all(  # the layers native.conv_pool_relu (conv_relu) computes
        (c.stride, c.padding, c.dilation, c.groups) == ((1, 1), (0, 0), (1, 1), 1) for c in (base.conv1, base.conv2)
    )
    stage = native.conv_pool_relu if pooling else native.conv_relu

    def f(plist, x):  # x: (M, B, C, H, W) -> (M, B, K)
        p = dict(zip(names, plist))
        if fused and x.device.type == "cpu" and x.dtype == torch.float32 and native.available():
            o = x.permute(0, 1, 3, 4, 2)  # each example channels-last
            for layer in ("conv1", "conv2"):
                o = stage(o, p[f"{layer}.weight"], p[f"{layer}.bias"], channels_first=layer == "conv2")
            return _lenet_fc(p, o.reshape(*o.shape[:2], -1))
        M, B, C, H, W = x.shape
        o = x.permute(1, 0, 2, 3, 4).reshape(B, M * C, H, W).contiguous(memory_format=cl)
        for layer in ("conv1", "conv2"):
            w = p[f"{layer}.weight"]
            o = F.conv2d(
                o,
                w.reshape(-1, *w.shape[2:]),
                p[f"{layer}.bias"].reshape(-1),
                groups=M,
                stride=getattr(base, layer).stride,
            )
            if down is not None:
                o = down(F.relu(o))
                continue
            if pooling:
                o = F.max_pool2d(o, 2)
            o = F.relu(o)
        return _lenet_fc(p, o.reshape(B, M, -1).transpose(0, 1))  # each model's NCHW flatten order

    return f


def _lenet_fc(p, o):
    """LeNet's fully connected layers for M models: (M, B, features) -> (M, B, K)."""
    for layer, act in (("fc1", True), ("fc2", True), ("fc3", False)):
        o = _BatchedLinear.apply(o, p[f"{layer}.weight"], p[f"{layer}.bias"])
        if act:
            o = F.relu(o)
    return o


class _BatchedLinear(torch.autograd.Function):
    """``x @ W^T + b`` for M models at once (x: (M, B, D), W: (M, K, D), b: (M, K)), every product
    through :func:`nadcore.kernels.cpu.linear` (oneDNN on the CPU where it pays), with a backward whose
    products read contiguous or plainly transposed operands (autograd's default for ``baddbmm``
    multiplies by a transposed (M, D, B) view of x, which is very slow on CPU)."""

    @staticmethod
    def forward(ctx, x, w, b):
        ctx.save_for_backward(x, w)
        return linear(x, w, b)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        g = g.contiguous()
        gx = linear(g, w.transpose(1, 2)) if ctx.needs_input_grad[0] else None
        gw = linear(g.transpose(1, 2).contiguous(), x.contiguous().transpose(1, 2))
        return gx, gw, g.sum(1)


def _mlp_batched(layers: list, names: list[str]):
    """M fully connected stacks at once: ``layers`` is a list of (param prefix or None for ReLU);
    batched matrix products with the weight transposed as a view (fast forward and backward,
    unlike ``vmap`` of ``nn.Linear``, whose weight gradient hits a slow strided path)."""

    def f(plist, x):  # x: (M, B, ...) -> (M, B, K)
        p = dict(zip(names, plist))
        o = x.reshape(x.shape[0], x.shape[1], -1)
        for pre in layers:
            if pre is None:
                o = F.relu(o)
            else:
                o = _BatchedLinear.apply(o, p[f"{pre}.weight"], p[f"{pre}.bias"])
        return o

    return f


def vectorised_forward(base: nn.Module, names: list[str]):
    """``f(param_list, x) -> out`` for M stacked models of ``base``'s architecture by a
    hand-vectorised path (LeNet and its LeNet-layout variants, LogReg, MLP: the architectures of
    the D(v) sweeps), or None when none applies."""
    lenet_names = {f"{layer}.{k}" for layer in ("conv1", "conv2", "fc1", "fc2", "fc3") for k in ("weight", "bias")}
    if (type(base) is LeNet or getattr(base, "lenet_layout", False)) and set(names) == lenet_names:
        return _lenet_batched(base, names)
    if type(base) is LogReg and set(names) == {"fc.weight", "fc.bias"}:
        return _mlp_batched(["fc"], names)
    if type(base) is MLP and all(isinstance(m, (nn.Linear, nn.ReLU)) for m in base.net):
        layers = [f"net.{i}" if isinstance(m, nn.Linear) else None for i, m in enumerate(base.net)]
        if set(names) == {f"{layer}.{k}" for layer in layers if layer for k in ("weight", "bias")}:
            return _mlp_batched(layers, names)
    return None
