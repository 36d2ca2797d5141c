"""Training with the original papers' recipe, and training many small models at once.

The recipe of the authors' code (``utils.train`` in LTS4/neural-anisotropy-directions), used for
every ``D(v)`` experiment of the NAD paper (Sec. 2 and 4.1, Figs. 1-3 and 6):

* plain SGD (optionally momentum / weight decay, PyTorch's ``torch.optim.SGD`` semantics);
* a learning rate that decays *linearly* from ``max_lr`` to 0 over all iterations, updated before
  every batch: batch ``b`` of epoch ``e`` uses ``np.interp(e + (b + 1) / B, [0, epochs], [max_lr, 0])``
  where ``B`` is the number of batches per epoch (so the very last step has learning rate 0);
* the gradient's global norm clipped to 0.5 (``nn.utils.clip_grad_norm_``) before every step;
* batches of 128 drawn by a fresh random permutation of the training set every epoch.

Two losses: labels in {-1, +1} with ONE output use the logistic loss (the prediction is the sign
of the output); integer labels 0..K-1 with K outputs use cross-entropy (the authors' two-output
binary problems).

``train_classifier`` trains one model. ``train_many`` trains M independent copies of a small
architecture (each with its own initialisation, dataset and batch order) in one vectorised
program (:mod:`nadcore.train_batched`) with the semantics of M calls of ``train_classifier``:
same schedule, per-model clipping, same batches given the same generators.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from nadcore.train_batched import batched_forward
from nadcore.utils import keep_freed_memory, resolve_device

__all__ = [
    "TrainResult", "train_classifier", "train_many", "evaluate", "lr_at",
    "supports_train_many",
]


# --------------------------------------------------------------------------------------------
# Results and small helpers
# --------------------------------------------------------------------------------------------
@dataclass
class TrainResult:
    """What a training run returns (accuracies are fractions in [0, 1]).

    ``train_acc`` / ``train_loss``: running accuracy / mean loss over the last epoch's batches,
    as the original code reported them. ``epoch_loss`` / ``epoch_acc``: the same per epoch.
    ``iter_loss``: the loss of every mini-batch, in order (``epochs * batches_per_epoch`` values);
    ``nadcore.separability.iterations_to_loss`` turns it into the paper's Fig. 2 quantity.
    ``test_acc`` / ``test_loss``:
    after training, model in eval mode (None without a test set).
    """

    train_acc: float
    train_loss: float
    test_acc: float | None
    test_loss: float | None
    epoch_loss: np.ndarray
    epoch_acc: np.ndarray
    iter_loss: np.ndarray
    iterations: int
    seconds: float
    config: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


SCHEDULES = ("linear", "triangular")


def lr_at(iteration: int, iters_per_epoch: int, epochs: int, max_lr: float,
          schedule: str = "linear") -> float:
    """Learning rate of 0-based ``iteration``, with ``t = epoch + (batch + 1) / iters_per_epoch``:

    * ``"linear"`` (default, the NAD paper's code): ``np.interp(t, [0, epochs], [max_lr, 0])``;
    * ``"triangular"`` (the underspecification paper's "triangular (cyclic)" rate, one cycle):
      ``np.interp(t, [0, 2 epochs / 5, epochs], [0, max_lr, 0])``, up linearly for the first
      two fifths of training, then down to 0.
    """
    epoch, b = divmod(int(iteration), int(iters_per_epoch))
    t = epoch + (b + 1) / iters_per_epoch
    if schedule == "linear":
        return float(np.interp([t], [0, epochs], [max_lr, 0])[0])
    if schedule == "triangular":
        return float(np.interp([t], [0, 2 * epochs / 5, epochs], [0, max_lr, 0])[0])
    raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")


def _as_tensor(x, dtype=None) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        return x if dtype is None else x.to(dtype)
    return torch.as_tensor(np.asarray(x), dtype=dtype)


def _resolve_loss(loss: str, num_outputs: int) -> str:
    if loss == "auto":
        return "logistic" if num_outputs == 1 else "cross_entropy"
    if loss not in ("logistic", "cross_entropy"):
        raise ValueError(f"loss must be 'auto', 'logistic' or 'cross_entropy', got {loss!r}")
    return loss


def _prepare_labels(y: torch.Tensor, kind: str, num_outputs: int) -> torch.Tensor:
    """Logistic: float targets in {0, 1} (from labels in {-1, +1} or {0, 1}); CE: int64 classes."""
    if kind == "logistic":
        if num_outputs != 1:
            raise ValueError(f"the logistic loss needs a model with 1 output, got {num_outputs}")
        vals = torch.unique(y)
        if not bool(torch.all((vals == -1) | (vals == 1) | (vals == 0))):
            raise ValueError(f"binary labels must be in {{-1, +1}} (or {{0, 1}}); got values {vals.tolist()[:10]}")
        return (y > 0).to(torch.float32)
    y = y.to(torch.int64)
    if y.numel() and (int(y.min()) < 0 or int(y.max()) >= num_outputs):
        raise ValueError(f"cross-entropy labels must be integers in [0, {num_outputs}); "
                         f"got range [{int(y.min())}, {int(y.max())}] (binary +-1 labels need a 1-output model)")
    return y


def _loss_and_correct(out: torch.Tensor, t: torch.Tensor, kind: str):
    """Mean loss and number of correct predictions of one model's batch (out: (B, K))."""
    per, correct = _per_sample_losses(out[None], t[None], kind)
    return per.mean(), correct[0]


def _per_sample_losses(out: torch.Tensor, t: torch.Tensor, kind: str):
    """Losses (M, B) and numbers of correct predictions (M,) of M models' outputs (M, B, K)."""
    if kind == "logistic":
        z = out[..., 0]
        return (F.binary_cross_entropy_with_logits(z, t, reduction="none"),
                ((z > 0).to(t.dtype) == t).sum(1))
    M, B, K = out.shape
    return (F.cross_entropy(out.reshape(-1, K), t.reshape(-1), reduction="none").reshape(M, B),
            (out.argmax(-1) == t).sum(1))


def _num_outputs(model: nn.Module, x: torch.Tensor) -> int:
    was = model.training
    model.eval()
    with torch.no_grad():
        k = model(x[:2]).shape[-1]
    model.train(was)
    return int(k)


@torch.no_grad()
def evaluate(model: nn.Module, x, y, *, batch_size: int = 1000, device="auto", loss: str = "auto"):
    """``(accuracy, mean loss)`` of ``model`` (eval mode) on ``(x, y)``."""
    dev = resolve_device(device)
    x = _as_tensor(x, torch.float32)
    y = _as_tensor(y)
    model = model.to(dev)
    was = model.training
    model.eval()
    kind = _resolve_loss(loss, _num_outputs(model, x.to(dev)))
    k = 1 if kind == "logistic" else _num_outputs(model, x.to(dev))
    t = _prepare_labels(y, kind, k)
    tot_loss, tot_correct = 0.0, 0
    for i in range(0, len(x), batch_size):
        xb, tb = x[i:i + batch_size].to(dev), t[i:i + batch_size].to(dev)
        l, c = _loss_and_correct(model(xb), tb, kind)
        tot_loss += float(l) * len(xb)
        tot_correct += int(c)
    model.train(was)
    n = max(len(x), 1)
    return tot_correct / n, tot_loss / n


# --------------------------------------------------------------------------------------------
# One model
# --------------------------------------------------------------------------------------------
def train_classifier(model: nn.Module, x_train, y_train, *, epochs: int, batch_size: int = 128,
                     max_lr: float, momentum: float = 0.0, weight_decay: float = 0.0,
                     clip_grad_norm: float | None = 0.5, generator: torch.Generator,
                     device="auto", x_test=None, y_test=None, loss: str = "auto",
                     eval_batch_size: int = 1000, schedule: str = "linear") -> TrainResult:
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
        ``generator`` and held under :func:`nadcore.initialisation.seeded_global_rng`, so
        concurrent threads take turns and results stay reproducible.
    x_test, y_test: optional test set, evaluated once after training.
    loss: "auto" (1 output -> logistic, K > 1 -> cross-entropy), "logistic" or "cross_entropy".
    schedule: "linear" (decay from ``max_lr`` to 0) or "triangular" (see :func:`lr_at`).
    """
    if not isinstance(generator, torch.Generator):
        raise TypeError("train_classifier needs an explicit torch.Generator for the batch order")
    if any(isinstance(m, nn.modules.dropout._DropoutNd) for m in model.modules()):
        from nadcore.initialisation import seeded_global_rng

        with seeded_global_rng(int(torch.randint(1 << 62, (1,), generator=generator))):
            return _train_classifier(model, x_train, y_train, epochs, batch_size, max_lr, momentum,
                                     weight_decay, clip_grad_norm, generator, device, x_test, y_test,
                                     loss, eval_batch_size, schedule)
    return _train_classifier(model, x_train, y_train, epochs, batch_size, max_lr, momentum,
                             weight_decay, clip_grad_norm, generator, device, x_test, y_test, loss,
                             eval_batch_size, schedule)


def _train_classifier(model, x_train, y_train, epochs, batch_size, max_lr, momentum, weight_decay,
                      clip_grad_norm, generator, device, x_test, y_test, loss, eval_batch_size,
                      schedule) -> TrainResult:
    t0 = time.perf_counter()
    dev = resolve_device(device)
    if dev.type == "cpu":
        keep_freed_memory()
    model = model.to(dev)
    x = _as_tensor(x_train, torch.float32).to(dev)
    y = _as_tensor(y_train)
    n = len(x)
    if n == 0 or len(y) != n:
        raise ValueError(f"x_train has {n} samples and y_train {len(y)}; need the same positive number")
    k = _num_outputs(model, x)
    kind = _resolve_loss(loss, k)
    t = _prepare_labels(y, kind, k).to(dev)

    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.SGD(params, lr=max_lr, momentum=momentum, weight_decay=weight_decay)
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
            for g in opt.param_groups:
                g["lr"] = lr_at(it, nb, epochs, max_lr, schedule)
            out = model(xb)
            l, c = _loss_and_correct(out, tb, kind)
            opt.zero_grad(set_to_none=True)
            l.backward()
            if clip_grad_norm is not None:
                nn.utils.clip_grad_norm_(params, clip_grad_norm)
            opt.step()
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
               schedule=schedule)
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


def supports_train_many(model: nn.Module) -> bool:
    """True when ``train_many`` can vectorise ``model``: no buffers (BatchNorm running stats) and no
    randomness in the forward pass (Dropout). Other models are trained one by one."""
    if any(True for _ in model.buffers()):
        return False
    return not any(isinstance(m, _UNSUPPORTED) for m in model.modules())


def _stack_datasets(xs, dtype=None) -> torch.Tensor:
    if isinstance(xs, (list, tuple)):
        return torch.stack([_as_tensor(x, dtype) for x in xs])
    return _as_tensor(xs, dtype)


def train_many(models: Sequence[nn.Module], xs_train, ys_train, *, epochs: int, batch_size: int = 128,
               max_lr: float, momentum: float = 0.0, weight_decay: float = 0.0,
               clip_grad_norm: float | None = 0.5,
               generators: Sequence[torch.Generator], device="auto",
               xs_test=None, ys_test=None, loss: str = "auto", eval_batch_size: int = 1000,
               fallback: bool = True, schedule: str = "linear") -> list[TrainResult]:
    """Train M independent models, each on its own dataset, in one vectorised program.

    ``models``: M modules of the SAME architecture (each already initialised its own way);
    ``xs_train``: (M, n, C, H, W) or a list of M (n, C, H, W) tensors (the same n for all), with
    labels ``ys_train`` (M, n); ``generators``: one ``torch.Generator`` per model, drawing that
    model's batch order exactly as ``train_classifier(generator=...)`` would. Every model follows
    the same recipe as ``train_classifier`` (same linear learning-rate decay, gradient clipping
    applied to each model's own global norm, the SGD update of ``torch.optim.SGD``), so the
    result equals M separate calls up to floating-point reassociation. The trained parameters
    are copied back into ``models``.

    Models with BatchNorm or Dropout (see ``supports_train_many``) are trained one by one with
    ``train_classifier`` when ``fallback`` is true, and raise otherwise.
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
                                 eval_batch_size=eval_batch_size, schedule=schedule) for i in range(M)]

    x = _stack_datasets(xs_train, torch.float32).to(dev)
    y = _stack_datasets(ys_train)
    if x.shape[0] != M or y.shape[:2] != x.shape[:2]:
        raise ValueError(f"xs_train must be (M={M}, n, ...) and ys_train (M, n); got "
                         f"{tuple(x.shape)} and {tuple(y.shape)}")
    n = x.shape[1]
    base = models[0].to(dev)
    k = _num_outputs(base, x[0])
    kind = _resolve_loss(loss, k)
    t = _prepare_labels(y.reshape(-1), kind, k).reshape(M, n).to(dev)

    names = [nm for nm, p in base.named_parameters() if p.requires_grad]
    for m in models:
        if [nm for nm, p in m.named_parameters() if p.requires_grad] != names:
            raise ValueError("train_many needs models of one architecture (parameter names differ)")
    params = [torch.stack([dict(m.named_parameters())[nm].detach().to(dev) for m in models]).contiguous()
              for nm in names]
    bufs = [None] * len(params)

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
            per, correct = _per_sample_losses(f_batched(leaves, xb), tb, kind)  # (M, B), (M,)
            losses = per.mean(1)
            grads = torch.autograd.grad(losses.sum(), leaves)
            with torch.no_grad():
                if clip_grad_norm is not None:
                    norms = torch.stack([g.reshape(M, -1).norm(dim=1) for g in grads], 1).norm(dim=1)
                    coef = (clip_grad_norm / (norms + 1e-6)).clamp(max=1.0)
                    grads = [g * coef.view(M, *([1] * (g.dim() - 1))) for g in grads]
                new = []
                for j, (p, g) in enumerate(zip(params, grads)):
                    d = g if weight_decay == 0 else g.add(p, alpha=weight_decay)
                    if momentum != 0:
                        bufs[j] = d.clone() if bufs[j] is None else bufs[j].mul_(momentum).add_(d)
                        d = bufs[j]
                    new.append(p.add(d, alpha=-lr))
                params = new
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
        tt = _prepare_labels(yt.reshape(-1), kind, k).reshape(yt.shape[0], -1)
        acc_sum = torch.zeros(M)
        l_sum = torch.zeros(M)
        with torch.no_grad():
            for i in range(0, xt.shape[1], eval_batch_size):
                xb = xt[:, i:i + eval_batch_size].to(dev)
                tb = tt[:, i:i + eval_batch_size].to(dev)
                per, correct = _per_sample_losses(f_batched(params, xb), tb, kind)
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
