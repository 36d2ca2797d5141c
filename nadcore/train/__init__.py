"""Training with the papers' recipe (:mod:`.recipe`: schedule, losses, the one SGD update), one
model (:func:`train_classifier`) or many side by side (:func:`train_many`) (:mod:`.loops`); R runs
of any architecture, BatchNorm and Dropout included, side by side on a GPU
(:func:`train_side_by_side`, :mod:`.side_by_side`)."""

from nadcore.train.loops import batched_forward, supports_train_many, train_classifier, train_many
from nadcore.train.recipe import TrainResult, evaluate, lr_at, sgd_step
from nadcore.train.side_by_side import train_side_by_side

__all__ = [
    "TrainResult",
    "train_classifier",
    "train_many",
    "evaluate",
    "lr_at",
    "sgd_step",
    "batched_forward",
    "supports_train_many",
    "train_side_by_side",
]
