"""The book's one SGD loop, :func:`sgd_epochs`, and its two everyday uses: one model
(:func:`train_classifier`) and M models of one architecture at once (:func:`train_many`).

:func:`sgd_epochs` trains M independent runs (each with its own parameters, dataset and batch
order) with the recipe of :mod:`nadcore.train.recipe`: a fresh permutation per run and epoch from
the run's generator, the learning rate of :func:`~nadcore.train.recipe.lr_at`, the losses of
:func:`~nadcore.train.recipe.per_sample_losses` and the one update
:func:`~nadcore.train.recipe.sgd_step` on parameters stacked along a first axis of M. What varies
is only the *forward*, ``forward(params, xb) -> (M, B, K)``, plugged into the loop:

* :func:`train_classifier`, one run: the model itself (``functional_call`` on a stack of one;
  BatchNorm updates its running statistics, Dropout draws from a seeded global generator);
* :func:`train_many`, M runs of a network without buffers or randomness: :func:`batched_forward`,
  ``vmap`` of ``functional_call`` or, where one applies, a hand-vectorised kernel of
  :mod:`nadcore.kernels.batched` (LeNet's grouped convolutions, LogReg, MLP);
* :func:`nadcore.train.train_side_by_side`, M runs of any architecture (BatchNorm and Dropout
  included): ``vmap`` over stacked parameters and buffers with per-run dropout masks.

So M runs side by side equal M calls of ``train_classifier`` up to float reassociation, which
``tests/test_train.py`` and ``tests/test_side_by_side.py`` check.
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
from nadcore.train.recipe import (
    TrainResult,
    as_tensor,
    autocast_context,
    evaluate,
    input_dtype,
    lr_at,
    num_outputs,
    per_sample_losses,
    prepare_labels,
    resolve_loss,
    sgd_step,
)

__all__ = [
    "sgd_epochs",
    "evaluate_stacked",
    "results",
    "runs_and_generators",
    "train_classifier",
    "train_many",
    "batched_forward",
    "supports_train_many",
    "stack_inputs",
]


# --------------------------------------------------------------------------------------------
# The loop
# --------------------------------------------------------------------------------------------
def sgd_epochs(
    forward,
    params: list,
    x: torch.Tensor,
    t: torch.Tensor,
    generators,
    *,
    epochs: int,
    batch_size: int,
    max_lr: float,
    momentum: float,
    weight_decay: float,
    clip_grad_norm: float | None,
    schedule: str,
    kind: str,
):
    """Train M runs in place: ``params`` (tensors stacked on a first axis of M) on ``x``
    (M, n, ...) with targets ``t`` (M, n) prepared for ``kind`` (the loss), the batch order of
    run m drawn from ``generators[m]``. ``forward(leaves, xb)`` maps the parameters (leaves of
    the step's graph) and a batch (M, B, ...) to outputs (M, B, K). Returns ``iter_loss``
    (M, epochs * batches) as numpy, and ``epoch_loss``, ``epoch_acc`` (M, epochs): the running
    mean loss and accuracy over each epoch's batches. A parameter that the loss does not reach
    gets a zero gradient."""
    M, n = x.shape[0], x.shape[1]
    dev = x.device
    nb = math.ceil(n / batch_size)
    iter_loss = torch.zeros(M, epochs * nb, dtype=torch.float32, device=dev)
    epoch_loss, epoch_acc = np.zeros((M, epochs)), np.zeros((M, epochs))
    offsets = torch.arange(M, device=dev)[:, None] * n
    x_flat, t_flat = x.reshape(M * n, *x.shape[2:]), t.reshape(-1)
    bufs, it = None, 0
    for epoch in range(epochs):
        perm = torch.stack([torch.randperm(n, generator=g) for g in generators]).to(dev)  # (M, n)
        loss_sum = torch.zeros(M, device=dev)
        correct_sum = torch.zeros(M, device=dev, dtype=torch.int64)
        for b in range(nb):
            idx = perm[:, b * batch_size : (b + 1) * batch_size]  # (M, B)
            flat = (idx + offsets).reshape(-1)
            xb = x_flat.index_select(0, flat).reshape(M, -1, *x.shape[2:])  # (M, B, ...)
            tb = t_flat.index_select(0, flat).reshape(M, -1)  # (M, B)
            leaves = [p.detach().requires_grad_(True) for p in params]
            per, correct = per_sample_losses(forward(leaves, xb), tb, kind)  # (M, B), (M,)
            losses = per.mean(1)
            grads = torch.autograd.grad(losses.sum(), leaves, allow_unused=True)
            grads = [torch.zeros_like(p) if g is None else g for p, g in zip(leaves, grads)]
            bufs = sgd_step(
                params,
                grads,
                lr_at(it, nb, epochs, max_lr, schedule),
                momentum=momentum,
                weight_decay=weight_decay,
                clip_grad_norm=clip_grad_norm,
                buffers=bufs,
            )
            with torch.no_grad():
                ld = losses.detach()
                iter_loss[:, it] = ld
                loss_sum += ld * idx.shape[1]
                correct_sum += correct
            it += 1
        epoch_loss[:, epoch] = (loss_sum / n).cpu().numpy()
        epoch_acc[:, epoch] = correct_sum.cpu().numpy() / n
    return iter_loss.cpu().numpy(), epoch_loss, epoch_acc


@torch.no_grad()
def evaluate_stacked(
    forward, params: list, x: torch.Tensor, t: torch.Tensor, kind: str, batch_size: int = 1000
) -> tuple[list, list]:
    """``(accuracies, mean losses)`` of M runs on their test sets ``x`` (M, n, ...), ``t`` (M, n),
    batch by batch, ``forward`` as in :func:`sgd_epochs` (in evaluation mode)."""
    M, n = x.shape[0], x.shape[1]
    acc_sum = torch.zeros(M, dtype=torch.int64)
    l_sum = torch.zeros(M, dtype=torch.float64)
    for i in range(0, n, batch_size):
        per, correct = per_sample_losses(forward(params, x[:, i : i + batch_size]), t[:, i : i + batch_size], kind)
        l_sum += per.sum(1).double().cpu()
        acc_sum += correct.cpu()
    return (acc_sum.numpy() / n).tolist(), (l_sum / n).tolist()


def training_device(device) -> torch.device:
    """The device a training loop runs on (``device`` resolved), keeping freed memory on the CPU
    (:func:`nadcore.kernels.cpu.keep_freed_memory`)."""
    dev = resolve_device(device)
    if dev.type == "cpu":
        keep_freed_memory()
    return dev


def runs_and_generators(models, generators, device) -> tuple[list, list, torch.device]:
    """The runs' models and their batch-order generators as lists, one ``torch.Generator`` each,
    and the device they train on (:func:`training_device`)."""
    models, generators = list(models), list(generators)
    if len(generators) != len(models) or not all(isinstance(g, torch.Generator) for g in generators):
        raise ValueError(
            f"need one torch.Generator per run for the batch order: {len(models)} runs, {len(generators)} generators"
        )
    return models, generators, training_device(device)


def stack_inputs(xs, dtype=None) -> torch.Tensor:
    """(M, n, ...) from a list of M (n, ...) tensors or arrays, or from one (M, n, ...) array."""
    if isinstance(xs, (list, tuple)):
        return torch.stack([as_tensor(x, dtype) for x in xs])
    return as_tensor(xs, dtype)


def results(iter_loss, epoch_loss, epoch_acc, test_acc, test_loss, epochs, seconds, cfg) -> list[TrainResult]:
    """One :class:`TrainResult` per run from :func:`sgd_epochs`'s arrays and the test scores."""
    return [
        TrainResult(
            train_acc=float(epoch_acc[i, -1]) if epochs else float("nan"),
            train_loss=float(epoch_loss[i, -1]) if epochs else float("nan"),
            test_acc=test_acc[i],
            test_loss=test_loss[i],
            epoch_loss=epoch_loss[i],
            epoch_acc=epoch_acc[i],
            iter_loss=iter_loss[i],
            iterations=iter_loss.shape[1],
            seconds=seconds,
            config=cfg,
        )
        for i in range(iter_loss.shape[0])
    ]


# --------------------------------------------------------------------------------------------
# One model
# --------------------------------------------------------------------------------------------
def train_classifier(
    model: nn.Module,
    x_train,
    y_train,
    *,
    epochs: int,
    batch_size: int = 128,
    max_lr: float,
    momentum: float = 0.0,
    weight_decay: float = 0.0,
    clip_grad_norm: float | None = 0.5,
    generator: torch.Generator,
    device="auto",
    x_test=None,
    y_test=None,
    loss: str = "auto",
    eval_batch_size: int = 1000,
    schedule: str = "linear",
    channels_last: bool = False,
    autocast: str | None = None,
) -> TrainResult:
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
        tensor cores prefer. Ignored on the CPU for a model with a convolution narrower than
        :data:`CHANNELS_LAST_MIN` channels (see :func:`channels_last_applies`).
    autocast: None, or "bf16" to train with ``torch.autocast`` in bfloat16 on the model's device
        (a CPU with avx512_bf16 or AMX, or a GPU; the loss in float32). It changes the numbers,
        so it is an experiment's setting, recorded in the result's ``config``. The test set is
        evaluated in the model's own dtype.
    """
    if not isinstance(generator, torch.Generator):
        raise TypeError("train_classifier needs an explicit torch.Generator for the batch order")
    if any(isinstance(m, nn.modules.dropout._DropoutNd) for m in model.modules()):
        with seeded_global_rng(int(torch.randint(1 << 62, (1,), generator=generator))):
            return _train_classifier(
                model,
                x_train,
                y_train,
                epochs,
                batch_size,
                max_lr,
                momentum,
                weight_decay,
                clip_grad_norm,
                generator,
                device,
                x_test,
                y_test,
                loss,
                eval_batch_size,
                schedule,
                channels_last,
                autocast,
            )
    return _train_classifier(
        model,
        x_train,
        y_train,
        epochs,
        batch_size,
        max_lr,
        momentum,
        weight_decay,
        clip_grad_norm,
        generator,
        device,
        x_test,
        y_test,
        loss,
        eval_batch_size,
        schedule,
        channels_last,
        autocast,
    )


CHANNELS_LAST_MIN = 8


def channels_last_applies(model: nn.Module, device) -> bool:
    """Whether channels-last training is safe for ``model`` on ``device``: on the CPU only when
    every convolution has at least :data:`CHANNELS_LAST_MIN` output channels. Measured with torch
    2.14 on an AMD EPYC (AVX2) with one thread: the backward pass of ResNet-18 at widths 4 to 7 in
    channels-last crashes the process (segmentation fault or abort inside oneDNN); widths 8, 16
    and 32, and the same networks in the default layout, train."""
    if resolve_device(device).type != "cpu":
        return True
    return all(m.out_channels >= CHANNELS_LAST_MIN for m in model.modules() if isinstance(m, nn.Conv2d))


def _train_classifier(
    model,
    x_train,
    y_train,
    epochs,
    batch_size,
    max_lr,
    momentum,
    weight_decay,
    clip_grad_norm,
    generator,
    device,
    x_test,
    y_test,
    loss,
    eval_batch_size,
    schedule,
    channels_last=False,
    autocast=None,
) -> TrainResult:
    t0 = time.perf_counter()
    dev = training_device(device)
    amp = autocast_context(autocast, dev)
    channels_last = channels_last and channels_last_applies(model, dev)
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

    named = [(nm, p) for nm, p in model.named_parameters() if p.requires_grad]
    names = [nm for nm, _ in named]
    stacked = [p.detach().unsqueeze(0) for _, p in named]  # views: the model's own parameters, a stack of one

    def forward(leaves, xb):
        with amp:
            out = functional_call(model, {nm: p[0] for nm, p in zip(names, leaves)}, (xb[0],))[None]
        return out.float() if autocast else out  # the loss in float32

    model.train()
    iter_loss, epoch_loss, epoch_acc = sgd_epochs(
        forward,
        stacked,
        x[None],
        t[None],
        [generator],
        epochs=epochs,
        batch_size=batch_size,
        max_lr=max_lr,
        momentum=momentum,
        weight_decay=weight_decay,
        clip_grad_norm=clip_grad_norm,
        schedule=schedule,
        kind=kind,
    )
    test_acc = test_loss = None
    if x_test is not None:
        test_acc, test_loss = evaluate(model, x_test, y_test, batch_size=eval_batch_size, device=dev, loss=kind)
    model.train()
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
        channels_last=bool(channels_last),
        autocast=autocast,
    )
    return results(iter_loss, epoch_loss, epoch_acc, [test_acc], [test_loss], epochs, time.perf_counter() - t0, cfg)[0]


# --------------------------------------------------------------------------------------------
# Many models at once
# --------------------------------------------------------------------------------------------
_UNSUPPORTED = (
    nn.modules.batchnorm._BatchNorm,
    nn.modules.dropout._DropoutNd,
    nn.GroupNorm,
    nn.LayerNorm,
    nn.modules.instancenorm._InstanceNorm,
)


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


def train_many(
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
    device="auto",
    xs_test=None,
    ys_test=None,
    loss: str = "auto",
    eval_batch_size: int = 1000,
    fallback: bool = True,
    schedule: str = "linear",
    channels_last: bool = False,
    autocast: str | None = None,
) -> list[TrainResult]:
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
    vectorised path ignores it), and raise otherwise. ``autocast`` ("bf16") is for those
    models, trained one by one; the vectorised path trains in float32 and refuses it.
    """
    t0 = time.perf_counter()
    models, generators, dev = runs_and_generators(models, generators, device)
    if not models:
        return []
    M = len(models)
    if not all(supports_train_many(m) for m in models):
        if not fallback:
            raise ValueError("train_many cannot vectorise models with buffers or dropout")
        xs_l = [xs_train[i] for i in range(M)]
        ys_l = [ys_train[i] for i in range(M)]
        return [
            train_classifier(
                models[i],
                xs_l[i],
                ys_l[i],
                epochs=epochs,
                batch_size=batch_size,
                max_lr=max_lr,
                momentum=momentum,
                weight_decay=weight_decay,
                clip_grad_norm=clip_grad_norm,
                generator=generators[i],
                device=dev,
                x_test=None if xs_test is None else xs_test[i],
                y_test=None if ys_test is None else ys_test[i],
                loss=loss,
                eval_batch_size=eval_batch_size,
                schedule=schedule,
                channels_last=channels_last,
                autocast=autocast,
            )
            for i in range(M)
        ]
    if autocast is not None:
        raise ValueError(
            f"autocast={autocast!r} is for networks trained one by one (BatchNorm or Dropout); "
            f"train_many trains {type(models[0]).__name__} vectorised, in float32: use autocast=None"
        )

    x = stack_inputs(xs_train, torch.float32).to(dev)
    y = stack_inputs(ys_train)
    if x.shape[0] != M or y.shape[:2] != x.shape[:2]:
        raise ValueError(
            f"xs_train must be (M={M}, n, ...) and ys_train (M, n); got {tuple(x.shape)} and {tuple(y.shape)}"
        )
    n = x.shape[1]
    base = models[0].to(dev)
    k = num_outputs(base, x[0])
    kind = resolve_loss(loss, k)
    t = prepare_labels(y.reshape(-1), kind, k).reshape(M, n).to(dev)

    names = [nm for nm, p in base.named_parameters() if p.requires_grad]
    for m in models:
        if [nm for nm, p in m.named_parameters() if p.requires_grad] != names:
            raise ValueError("train_many needs models of one architecture (parameter names differ)")
    params = [
        torch.stack([dict(m.named_parameters())[nm].detach().to(dev) for m in models]).contiguous() for nm in names
    ]
    f_batched = batched_forward(base, names)
    base.train()
    iter_loss, epoch_loss, epoch_acc = sgd_epochs(
        f_batched,
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

    with torch.no_grad():  # copy the trained parameters back
        for i, m in enumerate(models):
            pd = dict(m.named_parameters())
            for nm, p in zip(names, params):
                pd[nm].copy_(p[i])
    test_acc = test_loss = [None] * M
    if xs_test is not None:
        xt = stack_inputs(xs_test, torch.float32).to(dev)
        yt = stack_inputs(ys_test)
        tt = prepare_labels(yt.reshape(-1), kind, k).reshape(yt.shape[0], -1).to(dev)
        test_acc, test_loss = evaluate_stacked(f_batched, params, xt, tt, kind, eval_batch_size)
    cfg = dict(
        epochs=epochs,
        batch_size=batch_size,
        max_lr=max_lr,
        momentum=momentum,
        weight_decay=weight_decay,
        clip_grad_norm=clip_grad_norm,
        loss=kind,
        n_train=n,
        batched=M,
        schedule=schedule,
    )
    return results(iter_loss, epoch_loss, epoch_acc, test_acc, test_loss, epochs, (time.perf_counter() - t0) / M, cfg)
