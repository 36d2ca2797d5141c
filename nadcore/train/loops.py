"""Training loops: one model (:func:`train_classifier`) or M models of one architecture side
by side (:func:`train_many`), both with the recipe of :mod:`nadcore.train.recipe`.

``train_many`` trains M independent copies of a small architecture (each with its own
initialisation, dataset and batch order) in one vectorised program (:func:`batched_forward`)
with the semantics of M calls of ``train_classifier``: same schedule, per-model clipping, same
batches given the same generators. Both take their steps with the one SGD update,
:func:`nadcore.train.recipe.sgd_step`, on parameters stacked along a first axis (one model: a
stack of one).
"""
from __future__ import annotations

import math
import time
from typing import Sequence

import numpy as np
import torch
import torch.nn as nn
from torch.func import functional_call, vmap

from nadcore.kernels.batched import vectorised_forward
from nadcore.kernels.cpu import keep_freed_memory
from nadcore.nets.init import seeded_global_rng
from nadcore.runtime import resolve_device
from nadcore.train.recipe import (TrainResult, as_tensor, evaluate, input_dtype, loss_and_correct, lr_at,
                                  num_outputs, per_sample_losses, prepare_labels, resolve_loss, sgd_step)

__all__ = ["train_classifier", "train_many", "batched_forward", "supports_train_many"]


# --------------------------------------------------------------------------------------------
# One model
# --------------------------------------------------------------------------------------------
def train_classifier(model: nn.Module, x_train, y_train, *, epochs: int, batch_size: int = 128,
                     max_lr: float, momentum: float = 0.0, weight_decay: float = 0.0,
                     clip_grad_norm: float | None = 0.5, generator: torch.Generator,
                     device="auto", x_test=None, y_test=None, loss: str = "auto",
                     eval_batch_size: int = 1000, schedule: str = "linear",
                     channels_last: bool = False) -> TrainResult:
    """Train ``model`` in place with the original recipe (see the module docstring).

    Parameters
    ----------
    model: any ``nn.Module`` mapping (B, C, H, W) to (B, K); trained in place (train mode), moved
        to ``device``.
    x_train, y_train: tensors or arrays; labels in {-1, +1} for a 1-output model (logistic loss)
        or integers 0..K-1 for K outputs (cross-entropy). Kept on ``device`` whole.
    epochs, batch_size, max_lr, momentum, weight_decay: SGD with a per-batch linear decay of the
        learning rate from ``max_lr`` to 0.
    clip_grad_norm: max global gradient norm (0.5 in the original code); None disables clipping.
    generator: ``torch.Generator`` (CPU) that draws the batch order of every epoch. A model with
        dropout also needs torch's global RNG during training: it is then seeded from
        ``generator`` and held under :func:`nadcore.nets.init.seeded_global_rng`, so
        concurrent threads take turns and results stay reproducible.
    x_test, y_test: optional test set, evaluated once after training.
    loss: "auto" (1 output -> logistic, K > 1 -> cross-entropy), "logistic" or "cross_entropy".
    schedule: "linear" (decay from ``max_lr`` to 0) or "triangular" (see :func:`lr_at`).
    channels_last: speed only (the same numbers up to float rounding): the model's 4-D
        parameters and the images in NHWC layout, which oneDNN's CPU convolutions and cuDNN's
        tensor cores prefer.
    """
    if not isinstance(generator, torch.Generator):
        raise TypeError("train_classifier needs an explicit torch.Generator for the batch order")
    if any(isinstance(m, nn.modules.dropout._DropoutNd) for m in model.modules()):
        with seeded_global_rng(int(torch.randint(1 << 62, (1,), generator=generator))):
            return _train_classifier(model, x_train, y_train, epochs, batch_size, max_lr, momentum,
                                     weight_decay, clip_grad_norm, generator, device, x_test, y_test,
                                     loss, eval_batch_size, schedule, channels_last)
    return _train_classifier(model, x_train, y_train, epochs, batch_size, max_lr, momentum,
                             weight_decay, clip_grad_norm, generator, device, x_test, y_test, loss,
                             eval_batch_size, schedule, channels_last)


def _train_classifier(model, x_train, y_train, epochs, batch_size, max_lr, momentum, weight_decay,
                      clip_grad_norm, generator, device, x_test, y_test, loss, eval_batch_size,
                      schedule, channels_last=False) -> TrainResult:
    t0 = time.perf_counter()
    dev = resolve_device(device)
    if dev.type == "cpu":
        keep_freed_memory()
    model = model.to(dev, memory_format=torch.channels_last) if channels_last else model.to(dev)
    x = as_tensor(x_train, input_dtype(model)).to(dev)
    if channels_last and x.dim() == 4:
        x = x.contiguous(memory_format=torch.channels_last)
    y = as_tensor(y_train)
    n = len(x)
    if n == 0 or len(y) != n:
        raise ValueError(f"x_train has {n} samples and y_train {len(y)}; need the same positive number")
    k = num_outputs(model, x)
    kind = resolve_loss(loss, k)
    t = prepare_labels(y, kind, k).to(dev)

    params = [p for p in model.parameters() if p.requires_grad]
    stacked = [p.detach().unsqueeze(0) for p in params]  # views: a stack of one model for sgd_step
    bufs = None
    nb = math.ceil(n / batch_size)
    total = epochs * nb
    iter_loss = torch.zeros(total, dtype=torch.float32, device=dev)
    epoch_loss = np.zeros(epochs)
    epoch_acc = np.zeros(epochs)
    model.train()
    it = 0
    for epoch in range(epochs):
        perm = torch.randperm(n, generator=generator).to(dev)
        loss_sum = torch.zeros((), device=dev)
        correct_sum = torch.zeros((), device=dev, dtype=torch.int64)
        for b in range(nb):
            idx = perm[b * batch_size:(b + 1) * batch_size]
            xb, tb = x[idx], t[idx]
            out = model(xb)
            l, c = loss_and_correct(out, tb, kind)
            grads = torch.autograd.grad(l, params, allow_unused=True)  # unused parameters: zero gradient
            grads = [torch.zeros_like(p) if g is None else g for p, g in zip(params, grads)]
            bufs = sgd_step(stacked, [g.unsqueeze(0) for g in grads], lr_at(it, nb, epochs, max_lr, schedule),
                            momentum=momentum, weight_decay=weight_decay, clip_grad_norm=clip_grad_norm,
                            buffers=bufs)
            ld = l.detach()
            iter_loss[it] = ld
            loss_sum += ld * len(idx)
            correct_sum += c
            it += 1
        epoch_loss[epoch] = float(loss_sum) / n
        epoch_acc[epoch] = int(correct_sum) / n

    test_acc = test_loss = None
    if x_test is not None:
        test_acc, test_loss = evaluate(model, x_test, y_test, batch_size=eval_batch_size,
                                       device=dev, loss=kind)
    model.train()
    cfg = dict(epochs=epochs, batch_size=batch_size, max_lr=max_lr, momentum=momentum,
               weight_decay=weight_decay, clip_grad_norm=clip_grad_norm, loss=kind, n_train=n,
               schedule=schedule, channels_last=bool(channels_last))
    return TrainResult(
        train_acc=float(epoch_acc[-1]) if epochs else float("nan"),
        train_loss=float(epoch_loss[-1]) if epochs else float("nan"),
        test_acc=test_acc, test_loss=test_loss, epoch_loss=epoch_loss, epoch_acc=epoch_acc,
        iter_loss=iter_loss.cpu().numpy(), iterations=total,
        seconds=time.perf_counter() - t0, config=cfg)


# --------------------------------------------------------------------------------------------
# Many models at once
# --------------------------------------------------------------------------------------------
_UNSUPPORTED = (nn.modules.batchnorm._BatchNorm, nn.modules.dropout._DropoutNd, nn.GroupNorm,
                nn.LayerNorm, nn.modules.instancenorm._InstanceNorm)


def batched_forward(base: nn.Module, names: list[str]):
    """``f(param_list, x) -> out`` for M models of ``base``'s architecture with stacked parameters
    (x: (M, B, C, H, W), out: (M, B, K)): ``vmap`` of ``functional_call`` (the definition), or
    the hand-vectorised path of :mod:`nadcore.kernels.batched` where one applies (LeNet, LogReg,
    MLP; equal up to float rounding)."""
    fast = vectorised_forward(base, names)
    if fast is not None:
        return fast

    def f_single(plist, xb):
        return functional_call(base, dict(zip(names, plist)), (xb,))

    return vmap(f_single, in_dims=(0, 0))


def supports_train_many(model: nn.Module) -> bool:
    """True when ``train_many`` can vectorise ``model``: no buffers (BatchNorm running stats) and no
    randomness in the forward pass (Dropout). Other models are trained one by one."""
    if any(True for _ in model.buffers()):
        return False
    return not any(isinstance(m, _UNSUPPORTED) for m in model.modules())


def _stack_datasets(xs, dtype=None) -> torch.Tensor:
    if isinstance(xs, (list, tuple)):
        return torch.stack([as_tensor(x, dtype) for x in xs])
    return as_tensor(xs, dtype)


def train_many(models: Sequence[nn.Module], xs_train, ys_train, *, epochs: int, batch_size: int = 128,
               max_lr: float, momentum: float = 0.0, weight_decay: float = 0.0,
               clip_grad_norm: float | None = 0.5,
               generators: Sequence[torch.Generator], device="auto",
               xs_test=None, ys_test=None, loss: str = "auto", eval_batch_size: int = 1000,
               fallback: bool = True, schedule: str = "linear",
               channels_last: bool = False) -> list[TrainResult]:
    """Train M independent models, each on its own dataset, in one vectorised program.

    ``models``: M modules of the SAME architecture (each already initialised its own way);
    ``xs_train``: (M, n, C, H, W) or a list of M (n, C, H, W) tensors (the same n for all), with
    labels ``ys_train`` (M, n); ``generators``: one ``torch.Generator`` per model, drawing that
    model's batch order exactly as ``train_classifier(generator=...)`` would. Every model follows
    the same recipe as ``train_classifier`` (same linear learning-rate decay, gradient clipping
    applied to each model's own global norm, :func:`sgd_step`), so the
    result equals M separate calls up to floating-point reassociation. The trained parameters
    are copied back into ``models``.

    Models with BatchNorm or Dropout (see ``supports_train_many``) are trained one by one with
    ``train_classifier`` when ``fallback`` is true (``channels_last`` is passed on to it; the
    vectorised path ignores it), and raise otherwise.
    """
    t0 = time.perf_counter()
    models = list(models)
    M = len(models)
    if M == 0:
        return []
    generators = list(generators)
    if len(generators) != M:
        raise ValueError(f"need one generator per model: {M} models, {len(generators)} generators")
    dev = resolve_device(device)
    if dev.type == "cpu":
        keep_freed_memory()
    if not all(supports_train_many(m) for m in models):
        if not fallback:
            raise ValueError("train_many cannot vectorise models with buffers or dropout")
        xs_l = [xs_train[i] for i in range(M)]
        ys_l = [ys_train[i] for i in range(M)]
        return [train_classifier(models[i], xs_l[i], ys_l[i], epochs=epochs, batch_size=batch_size,
                                 max_lr=max_lr, momentum=momentum, weight_decay=weight_decay,
                                 clip_grad_norm=clip_grad_norm, generator=generators[i], device=dev,
                                 x_test=None if xs_test is None else xs_test[i],
                                 y_test=None if ys_test is None else ys_test[i], loss=loss,
                                 eval_batch_size=eval_batch_size, schedule=schedule,
                                 channels_last=channels_last) for i in range(M)]

    x = _stack_datasets(xs_train, torch.float32).to(dev)
    y = _stack_datasets(ys_train)
    if x.shape[0] != M or y.shape[:2] != x.shape[:2]:
        raise ValueError(f"xs_train must be (M={M}, n, ...) and ys_train (M, n); got "
                         f"{tuple(x.shape)} and {tuple(y.shape)}")
    n = x.shape[1]
    base = models[0].to(dev)
    k = num_outputs(base, x[0])
    kind = resolve_loss(loss, k)
    t = prepare_labels(y.reshape(-1), kind, k).reshape(M, n).to(dev)

    names = [nm for nm, p in base.named_parameters() if p.requires_grad]
    for m in models:
        if [nm for nm, p in m.named_parameters() if p.requires_grad] != names:
            raise ValueError("train_many needs models of one architecture (parameter names differ)")
    params = [torch.stack([dict(m.named_parameters())[nm].detach().to(dev) for m in models]).contiguous()
              for nm in names]
    bufs = None
    f_batched = batched_forward(base, names)

    nb = math.ceil(n / batch_size)
    total = epochs * nb
    iter_loss = torch.zeros(M, total, dtype=torch.float32, device=dev)
    epoch_loss = np.zeros((M, epochs))
    epoch_acc = np.zeros((M, epochs))
    offsets = torch.arange(M, device=dev)[:, None] * n
    x_flat = x.reshape(M * n, *x.shape[2:])
    base.train()
    it = 0
    for epoch in range(epochs):
        perm = torch.stack([torch.randperm(n, generator=g) for g in generators]).to(dev)  # (M, n)
        loss_sum = torch.zeros(M, device=dev)
        correct_sum = torch.zeros(M, device=dev)
        for b in range(nb):
            idx = perm[:, b * batch_size:(b + 1) * batch_size]             # (M, B)
            flat = (idx + offsets).reshape(-1)
            xb = x_flat.index_select(0, flat).reshape(M, -1, *x.shape[2:])  # (M, B, C, H, W)
            tb = t.reshape(-1).index_select(0, flat).reshape(M, -1)         # (M, B)
            lr = lr_at(it, nb, epochs, max_lr, schedule)
            leaves = [p.detach().requires_grad_(True) for p in params]
            per, correct = per_sample_losses(f_batched(leaves, xb), tb, kind)  # (M, B), (M,)
            losses = per.mean(1)
            grads = torch.autograd.grad(losses.sum(), leaves)
            bufs = sgd_step(params, grads, lr, momentum=momentum, weight_decay=weight_decay,
                            clip_grad_norm=clip_grad_norm, buffers=bufs)
            with torch.no_grad():
                ld = losses.detach()
                iter_loss[:, it] = ld
                loss_sum += ld * idx.shape[1]
                correct_sum += correct
            it += 1
        epoch_loss[:, epoch] = (loss_sum / n).cpu().numpy()
        epoch_acc[:, epoch] = (correct_sum / n).cpu().numpy()

    # copy the trained parameters back and evaluate
    with torch.no_grad():
        for i, m in enumerate(models):
            pd = dict(m.named_parameters())
            for nm, p in zip(names, params):
                pd[nm].copy_(p[i])
    test_acc = [None] * M
    test_loss = [None] * M
    if xs_test is not None:
        xt = _stack_datasets(xs_test, torch.float32)
        yt = _stack_datasets(ys_test)
        tt = prepare_labels(yt.reshape(-1), kind, k).reshape(yt.shape[0], -1)
        acc_sum = torch.zeros(M)
        l_sum = torch.zeros(M)
        with torch.no_grad():
            for i in range(0, xt.shape[1], eval_batch_size):
                xb = xt[:, i:i + eval_batch_size].to(dev)
                tb = tt[:, i:i + eval_batch_size].to(dev)
                per, correct = per_sample_losses(f_batched(params, xb), tb, kind)
                l_sum += per.sum(1).cpu()
                acc_sum += correct.cpu()
        nt = xt.shape[1]
        test_acc = (acc_sum / nt).tolist()
        test_loss = (l_sum / nt).tolist()
    seconds = time.perf_counter() - t0
    il = iter_loss.cpu().numpy()
    cfg = dict(epochs=epochs, batch_size=batch_size, max_lr=max_lr, momentum=momentum,
               weight_decay=weight_decay, clip_grad_norm=clip_grad_norm, loss=kind, n_train=n,
               batched=M, schedule=schedule)
    return [TrainResult(train_acc=float(epoch_acc[i, -1]) if epochs else float("nan"),
                        train_loss=float(epoch_loss[i, -1]) if epochs else float("nan"),
                        test_acc=test_acc[i], test_loss=test_loss[i], epoch_loss=epoch_loss[i],
                        epoch_acc=epoch_acc[i], iter_loss=il[i], iterations=total,
                        seconds=seconds / M, config=cfg) for i in range(M)]
