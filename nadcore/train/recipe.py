"""The papers' training recipe: the learning-rate schedule, the losses, the one SGD update.

The recipe of the authors' code (``utils.train`` in LTS4/neural-anisotropy-directions), used for
every ``D(v)`` experiment of the NAD paper (Sec. 2 and 4.1, Figs. 1-3 and 6):

* plain SGD (optionally momentum / weight decay, PyTorch's ``torch.optim.SGD`` semantics):
  :func:`sgd_step`, for one model or many stacked along a first axis;
* a learning rate that decays *linearly* from ``max_lr`` to 0 over all iterations, updated before
  every batch: batch ``b`` of epoch ``e`` uses ``np.interp(e + (b + 1) / B, [0, epochs], [max_lr, 0])``
  where ``B`` is the number of batches per epoch (so the very last step has learning rate 0):
  :func:`lr_at`;
* the gradient's global norm clipped to 0.5 (as ``nn.utils.clip_grad_norm_``) before every step;
* batches of 128 drawn by a fresh random permutation of the training set every epoch
  (:mod:`nadcore.train.loops`).

Two losses: labels in {-1, +1} with ONE output use the logistic loss (the prediction is the sign
of the output); integer labels 0..K-1 with K outputs use cross-entropy (the authors' two-output
binary problems).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from nadcore.runtime import resolve_device

__all__ = [
    "TrainResult",
    "lr_at",
    "sgd_step",
    "evaluate",
    "SCHEDULES",
    "AUTOCAST",
    "autocast_context",
    "as_tensor",
    "resolve_loss",
    "prepare_labels",
    "per_sample_losses",
    "loss_and_correct",
    "num_outputs",
    "input_dtype",
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
    ``nadcore.chapters.linear_separability.runs.iterations_to_loss`` turns it into the paper's Fig. 2 quantity.
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
#: mixed precision for a training forward pass: None (the model's own dtype) or "bf16"
#: (``torch.autocast`` with bfloat16: matrix products and convolutions in bf16, the loss in float32)
AUTOCAST = (None, "bf16")


def autocast_context(autocast: str | None, device: torch.device):
    """The context a training forward pass runs in for ``autocast`` (:data:`AUTOCAST`) on
    ``device``; a clear error for any other value."""
    if autocast not in AUTOCAST:
        raise ValueError(f"autocast must be one of {AUTOCAST}, got {autocast!r}")
    if autocast == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return torch.autocast(device.type, enabled=False)


def lr_at(iteration: int, iters_per_epoch: int, epochs: int, max_lr: float, schedule: str = "linear") -> float:
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


@torch.no_grad()
def sgd_step(
    params: list,
    grads: list,
    lr: float,
    *,
    momentum: float = 0.0,
    weight_decay: float = 0.0,
    clip_grad_norm: float | None = 0.5,
    buffers: list | None = None,
) -> list:
    """One SGD step of M models at once, in place: ``params`` and ``grads`` are lists of tensors
    stacked along a first axis of M models. Each model's gradient is clipped to global norm
    ``clip_grad_norm`` (coefficient ``min(1, clip / (norm + 1e-6))``, as
    ``nn.utils.clip_grad_norm_``), then ``d = g + weight_decay * p``, with momentum
    ``buf <- momentum * buf + d`` (``buf = d`` at the first step) and ``d = buf``, and
    ``p <- p - lr * d``: ``torch.optim.SGD``'s update without dampening or Nesterov. ``buffers``:
    the momentum buffers (a list of None at the start); returns them."""
    buffers = [None] * len(params) if buffers is None else buffers
    if clip_grad_norm is not None:
        M = params[0].shape[0]
        norms = torch.stack([g.reshape(M, -1).norm(dim=1) for g in grads], 1).norm(dim=1)
        coef = (clip_grad_norm / (norms + 1e-6)).clamp(max=1.0)
        grads = [g * coef.view(M, *([1] * (g.dim() - 1))) for g in grads]
    for j, (p, g) in enumerate(zip(params, grads)):
        d = g if weight_decay == 0 else g.add(p, alpha=weight_decay)
        if momentum != 0:
            buffers[j] = d.clone() if buffers[j] is None else buffers[j].mul_(momentum).add_(d)
            d = buffers[j]
        p.add_(d, alpha=-lr)
    return buffers


def as_tensor(x, dtype=None) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        return x if dtype is None else x.to(dtype)
    return torch.as_tensor(np.asarray(x), dtype=dtype)


def resolve_loss(loss: str, num_outputs: int) -> str:
    if loss == "auto":
        return "logistic" if num_outputs == 1 else "cross_entropy"
    if loss not in ("logistic", "cross_entropy"):
        raise ValueError(f"loss must be 'auto', 'logistic' or 'cross_entropy', got {loss!r}")
    return loss


def prepare_labels(y: torch.Tensor, kind: str, num_outputs: int) -> torch.Tensor:
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
        raise ValueError(
            f"cross-entropy labels must be integers in [0, {num_outputs}); "
            f"got range [{int(y.min())}, {int(y.max())}] (binary +-1 labels need a 1-output model)"
        )
    return y


def loss_and_correct(out: torch.Tensor, t: torch.Tensor, kind: str):
    """Mean loss and number of correct predictions of one model's batch (out: (B, K))."""
    per, correct = per_sample_losses(out[None], t[None], kind)
    return per.mean(), correct[0]


def per_sample_losses(out: torch.Tensor, t: torch.Tensor, kind: str):
    """Losses (M, B) and numbers of correct predictions (M,) of M models' outputs (M, B, K)."""
    if kind == "logistic":
        z = out[..., 0]
        return (F.binary_cross_entropy_with_logits(z, t, reduction="none"), ((z > 0).to(t.dtype) == t).sum(1))
    M, B, K = out.shape
    return (
        F.cross_entropy(out.reshape(-1, K), t.reshape(-1), reduction="none").reshape(M, B),
        (out.argmax(-1) == t).sum(1),
    )


def input_dtype(model: nn.Module) -> torch.dtype:
    """The dtype inputs are cast to: the model's floating-point parameters' (float32 for the
    book's models; float64 for exactness tests), float32 for a model without parameters."""
    p = next((p for p in model.parameters() if p.is_floating_point()), None)
    return torch.float32 if p is None else p.dtype


def num_outputs(model: nn.Module, x: torch.Tensor) -> int:
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
    x = as_tensor(x, input_dtype(model))
    y = as_tensor(y)
    model = model.to(dev)
    was = model.training
    model.eval()
    kind = resolve_loss(loss, num_outputs(model, x.to(dev)))
    k = 1 if kind == "logistic" else num_outputs(model, x.to(dev))
    t = prepare_labels(y, kind, k)
    tot_loss, tot_correct = 0.0, 0
    for i in range(0, len(x), batch_size):
        xb, tb = x[i : i + batch_size].to(dev), t[i : i + batch_size].to(dev)
        l, c = loss_and_correct(model(xb), tb, kind)
        tot_loss += float(l) * len(xb)
        tot_correct += int(c)
    model.train(was)
    n = max(len(x), 1)
    return tot_correct / n, tot_loss / n
