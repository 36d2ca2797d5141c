"""R runs of ONE architecture trained side by side, BatchNorm and Dropout networks included.

The paper's Figs. 1-3 and 6 train one fresh network per dataset D(v): thousands of small,
independent runs of the same architecture. :func:`nadcore.train.train_many` vectorises them for
networks without buffers or randomness (LeNet, LogReg, MLP); this module covers every
architecture, ResNet-18, VGG-11 and DenseNet-121 included, for a GPU:

* the R runs' parameters AND buffers are stacked (``torch.func.stack_module_state``) and one
  forward of all runs is ``vmap`` over ``functional_call`` of the architecture. BatchNorm's
  in-place update of its running statistics acts on each run's slice of the stacked buffers
  (vmap's batching rule for batch norm with batched running stats), so every run keeps its own
  statistics, exactly as when it is trained alone;
* Dropout (``nn.Dropout``) draws its masks from a per-run ``torch.Generator``
  (``dropout_generators``): each ``nn.Dropout`` of the architecture is replaced, in a private
  copy, by :class:`MaskedDropout`, which multiplies by a mask drawn outside vmap, run by run. (A
  network that calls ``F.dropout`` itself, or uses another dropout module, is refused: vmap would
  draw its masks from the global RNG.)
* each run's batch order comes from its own generator, exactly as in
  :func:`nadcore.train.train_classifier` (a fresh ``torch.randperm`` per epoch); the data of all
  runs stay on the device for the whole training;
* the runs are trained by the book's one SGD loop, :func:`nadcore.train.loops.sgd_epochs`, with
  this module's forward plugged in (the same update, schedule and losses as every other run).

So R runs side by side equal R calls of ``train_classifier`` (for networks without dropout) up to
floating-point reassociation, running statistics included (``tests/test_side_by_side.py``).

Speed-only options, off on the CPU (where they do not pay or do not exist) and recorded in the
results' ``config``: ``autocast`` ("bf16": ``torch.autocast`` with bfloat16 on CUDA; the loss is
computed in float32, and batch normalisation runs in float32, on an input in the standard
layout: its running statistics are float32, and DenseNet-121's backward pass failed on a bf16
input), ``channels_last`` (the stacked batch and convolution weights laid out so that vmap's
grouped convolutions see NHWC tensors) and ``compile`` (``torch.compile`` of the batched
forward). ``autocast`` changes the numbers (bf16 rounding), so it is part of the experiments'
settings; ``channels_last`` and ``compile`` change them only by rounding.
"""

from __future__ import annotations

import copy
import time
from typing import Sequence

import torch
import torch.nn as nn
from torch.func import functional_call, stack_module_state, vmap

from nadcore.train.loops import evaluate_stacked, results, runs_and_generators, sgd_epochs, stack_inputs
from nadcore.train.recipe import (
    AUTOCAST,
    TrainResult,
    autocast_context,
    input_dtype,
    num_outputs,
    prepare_labels,
    resolve_loss,
)

__all__ = ["train_side_by_side", "MaskedDropout", "AUTOCAST", "side_by_side_forward"]

_OTHER_DROPOUT = (nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout, nn.FeatureAlphaDropout)


class MaskedDropout(nn.Module):
    """``nn.Dropout(p)`` with its mask given from outside (``self.mask``, 0/1 values of the
    input's shape): ``x * mask / (1 - p)`` in training, the identity in eval mode. The masks of
    R runs are drawn from R generators before the vmapped forward and set for its duration."""

    def __init__(self, p: float):
        super().__init__()
        self.p = float(p)
        self.mask = None

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        if self.mask is None:
            raise RuntimeError("MaskedDropout needs its mask set before a training forward pass")
        return x * self.mask.to(x.dtype) * (1.0 / (1.0 - self.p))


def _with_masked_dropout(model: nn.Module) -> tuple[nn.Module, list[MaskedDropout]]:
    """A copy of ``model`` (on the meta device: only its structure is used) with every
    ``nn.Dropout`` replaced by a :class:`MaskedDropout` of the same ``p``."""
    if any(isinstance(m, _OTHER_DROPOUT) for m in model.modules()):
        raise ValueError("train_side_by_side supports nn.Dropout only (not Dropout2d, AlphaDropout, ...)")
    base = copy.deepcopy(model).to("meta")
    drops = []
    for name, m in list(base.named_modules()):
        for child_name, child in list(m.named_children()):
            if type(child) is nn.Dropout:
                md = MaskedDropout(child.p)
                setattr(m, child_name, md)
                drops.append(md)
    return base, drops


def side_by_side_forward(base: nn.Module, drops: Sequence[MaskedDropout]):
    """``f(params, buffers, x, masks) -> out``: R runs of ``base`` at once, with ``params`` and
    ``buffers`` dicts of tensors stacked on a first axis of R, ``x`` (R, B, C, H, W), ``masks``
    a list (one per dropout layer) of (R, B, ...) tensors, out (R, B, K). BatchNorm updates
    ``buffers`` in place (train mode) or reads them (eval mode), run by run."""

    def single(p, b, xb, masks):
        for d, m in zip(drops, masks):
            d.mask = m
        try:
            return functional_call(base, (p, b), (xb,))
        finally:
            for d in drops:
                d.mask = None

    return vmap(single, in_dims=(0, 0, 0, 0))


def _dropout_shapes(model: nn.Module, drops_in_copy: Sequence[MaskedDropout], x: torch.Tensor):
    """The per-example input shape of each dropout layer (a dry eval-mode pass of one example on
    a copy of the model, so no buffer changes)."""
    if not drops_in_copy:
        return []
    probe = copy.deepcopy(model).eval()
    shapes, hooks = [], []
    for m in probe.modules():
        if type(m) is nn.Dropout:
            hooks.append(m.register_forward_pre_hook(lambda mod, inp: shapes.append(tuple(inp[0].shape[1:]))))
    try:
        with torch.no_grad():
            probe(x[:1])
    finally:
        for h in hooks:
            h.remove()
    if len(shapes) != len(drops_in_copy):
        raise ValueError(
            "a dropout module is called more or less than once per forward pass; "
            "train_side_by_side needs each nn.Dropout used exactly once"
        )
    return shapes


def batchnorm_in_float32(model: nn.Module) -> list:
    """Forward pre-hooks that hand every batch-norm layer of ``model`` a float32 input (under
    bf16 autocast a convolution's output is bf16, the layer's parameters and running statistics
    float32) in the standard memory layout (a float32 input takes cuDNN's batch norm, which asks
    for the input's channels-last layout, and vmap cannot answer that); returns the hooks'
    handles, to ``remove()``."""
    return [
        m.register_forward_pre_hook(lambda mod, inp: (inp[0].float().contiguous(), *inp[1:]))
        for m in model.modules()
        if isinstance(m, nn.modules.batchnorm._BatchNorm)
    ]


def _channels_last_batch(xb: torch.Tensor) -> torch.Tensor:
    """(R, B, C, H, W) with the memory layout of (B, H, W, R, C): once vmap folds R into the
    channels of a grouped convolution, the (B, R*C, H, W) input is a channels-last view."""
    return xb.permute(1, 3, 4, 0, 2).contiguous().permute(3, 0, 4, 1, 2)


def _channels_last_weight(w: torch.Tensor) -> torch.Tensor:
    """(R, O, I, kh, kw) convolution weights laid out as (R, O, kh, kw, I): folded to
    (R*O, I, kh, kw) they are channels-last."""
    return w.permute(0, 1, 3, 4, 2).contiguous().permute(0, 1, 4, 2, 3) if w.dim() == 5 else w


def train_side_by_side(
    models: Sequence[nn.Module],
    xs_train,
    ys_train,
    *,
    epochs: int,
    batch_size: int = 128,
    max_lr: float,
    momentum: float = 0.0,
    weight_decay: float = 0.0,
    clip_grad_norm: float | None = 0.5,
    generators: Sequence[torch.Generator],
    dropout_generators: Sequence[torch.Generator] | None = None,
    device="auto",
    xs_test=None,
    ys_test=None,
    loss: str = "auto",
    eval_batch_size: int = 1000,
    schedule: str = "linear",
    autocast: str | None = None,
    channels_last: bool | None = None,
    compile: bool = False,
) -> list[TrainResult]:
    """Train R models of one architecture (each initialised its own way) side by side, each on
    its own dataset: see the module docstring. Arguments as :func:`nadcore.train.train_many`
    (``xs_train`` (R, n, C, H, W) or a list of R (n, C, H, W), ``ys_train`` (R, n), one batch-order
    generator per run), plus ``dropout_generators`` (one per run, on ``device``; needed when the
    architecture has ``nn.Dropout``), ``autocast`` (None or "bf16"; CUDA only), ``channels_last``
    (None: on for CUDA, off on the CPU) and ``compile``. The trained parameters and buffers are
    copied back into ``models``; returns one :class:`TrainResult` per run."""
    t0 = time.perf_counter()
    models, generators, dev = runs_and_generators(models, generators, device)
    if not models:
        return []
    R = len(models)
    autocast_context(autocast, dev)  # a clear error for an unknown value
    if autocast is not None and dev.type != "cuda":
        raise ValueError(f"autocast={autocast!r} is for CUDA; on {dev.type} train in float32 (autocast=None)")
    channels_last = dev.type == "cuda" if channels_last is None else bool(channels_last)

    names = [n for n, _ in models[0].named_parameters()]
    bnames = [n for n, _ in models[0].named_buffers()]
    for m in models[1:]:
        if [n for n, _ in m.named_parameters()] != names or [n for n, _ in m.named_buffers()] != bnames:
            raise ValueError("train_side_by_side needs models of one architecture (parameter or buffer names differ)")
    if any(not p.requires_grad for m in models for p in m.parameters()):
        raise ValueError("train_side_by_side trains every parameter; found one with requires_grad=False")
    base, drops = _with_masked_dropout(models[0])
    if drops:
        dropout_generators = list(dropout_generators or [])
        if len(dropout_generators) != R:
            raise ValueError(
                f"the architecture has dropout: need one dropout generator per run "
                f"(dropout_generators), got {len(dropout_generators)} for {R} runs"
            )

    dtype = input_dtype(models[0])  # float32 (float64 in the exactness tests)
    x = stack_inputs(xs_train, dtype).to(dev)
    y = stack_inputs(ys_train)
    if x.shape[0] != R or tuple(y.shape[:2]) != tuple(x.shape[:2]):
        raise ValueError(
            f"xs_train must be (R={R}, n, ...) and ys_train (R, n); got {tuple(x.shape)} and {tuple(y.shape)}"
        )
    n = x.shape[1]
    if n == 0:
        raise ValueError("empty training sets")
    k = num_outputs(models[0].to(dev), x[0])
    kind = resolve_loss(loss, k)
    t = prepare_labels(y.reshape(-1), kind, k).reshape(R, n).to(dev)
    shapes = _dropout_shapes(models[0], drops, x[0])

    for m in models:
        m.to(dev)
    p_st, b_st = stack_module_state(models)
    params = [p_st[nm].detach().contiguous() for nm in names]
    if channels_last:
        params = [_channels_last_weight(p) for p in params]
    buffers = {nm: b_st[nm].contiguous() for nm in bnames}
    fwd = side_by_side_forward(base, drops)
    if compile:
        fwd = torch.compile(fwd)
    amp = autocast_context(autocast, dev)
    if autocast:
        batchnorm_in_float32(base)  # base is the private copy of models[0]

    def forward(plist, xb, train: bool):
        base.train(train)
        masks = []
        if train:
            B = xb.shape[1]
            masks = [
                torch.stack(
                    [
                        torch.rand((B, *s), generator=g, device=dev, dtype=torch.float32) >= d.p
                        for g in dropout_generators
                    ]
                )
                for d, s in zip(drops, shapes)
            ]
        if channels_last:
            xb = _channels_last_batch(xb)
        with amp:
            out = fwd(dict(zip(names, plist)), buffers, xb, masks)
        return out.float() if autocast else out  # the loss in float32 (or the models' float64)

    iter_loss, epoch_loss, epoch_acc = sgd_epochs(
        lambda leaves, xb: forward(leaves, xb, True),
        params,
        x,
        t,
        generators,
        epochs=epochs,
        batch_size=batch_size,
        max_lr=max_lr,
        momentum=momentum,
        weight_decay=weight_decay,
        clip_grad_norm=clip_grad_norm,
        schedule=schedule,
        kind=kind,
    )

    with torch.no_grad():  # copy the trained runs back into their modules
        for i, m in enumerate(models):
            pd, bd = dict(m.named_parameters()), dict(m.named_buffers())
            for nm, p in zip(names, params):
                pd[nm].copy_(p[i])
            for nm in bnames:
                bd[nm].copy_(buffers[nm][i])
            m.train()

    test_acc = test_loss = [None] * R
    if xs_test is not None:
        xt = stack_inputs(xs_test, dtype).to(dev)
        yt = stack_inputs(ys_test)
        tt = prepare_labels(yt.reshape(-1), kind, k).reshape(R, -1).to(dev)
        test_acc, test_loss = evaluate_stacked(
            lambda p, xb: forward(p, xb, False), params, xt, tt, kind, eval_batch_size
        )
        base.train()
    cfg = dict(
        epochs=epochs,
        batch_size=batch_size,
        max_lr=max_lr,
        momentum=momentum,
        weight_decay=weight_decay,
        clip_grad_norm=clip_grad_norm,
        loss=kind,
        n_train=n,
        schedule=schedule,
        side_by_side=R,
        autocast=autocast,
        channels_last=channels_last,
        compile=bool(compile),
    )
    return results(iter_loss, epoch_loss, epoch_acc, test_acc, test_loss, epochs, (time.perf_counter() - t0) / R, cfg)
