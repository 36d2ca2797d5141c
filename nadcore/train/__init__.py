"""Training with the papers' recipe (:mod:`.recipe`: schedule, losses, the one SGD update), one
model (:func:`train_classifier`) or many side by side (:func:`train_many`) (:mod:`.loops`)."""
from nadcore.train.loops import batched_forward, supports_train_many, train_classifier, train_many
from nadcore.train.recipe import TrainResult, evaluate, lr_at, sgd_step

__all__ = ["TrainResult", "train_classifier", "train_many", "evaluate", "lr_at", "sgd_step",
           "batched_forward", "supports_train_many"]
