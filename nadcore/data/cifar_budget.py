"""How many CIFAR-10 training images a run had against the papers' (the full training set), and
why fewer: what a claim's row says beside its SGD steps (the ``samples`` of
:meth:`nadcore.book.setup.Chapter.claim`; with the steps: :func:`nadcore.train.budget.cifar_budget`)."""

from __future__ import annotations

__all__ = ["CIFAR10_TRAIN_IMAGES", "training_images"]

#: the images of CIFAR-10's training set, what both papers train on
CIFAR10_TRAIN_IMAGES = 50_000


def training_images(description: dict, max_train: int | None = None) -> tuple[int, int, str]:
    """``(images here, the papers' 50,000, why fewer)`` for CIFAR-10 data with ``description``
    (:class:`nadcore.data.cifar.CIFAR10Data`'s, or its :func:`nadcore.data.cifar.cifar_data_key`)
    loaded with ``max_train``: the profile's cap where it cut the set, else the genuine subset
    where that is all this machine holds."""
    n = int(description["n_train"])
    why = ""
    if max_train is not None and n <= int(max_train) and n < CIFAR10_TRAIN_IMAGES:
        why = f"the profile's max_train ({int(max_train):,})"
    elif description.get("is_subset") or description.get("source") == "subset":
        why = "all of the CIFAR-10 subset this machine holds"
    return n, CIFAR10_TRAIN_IMAGES, why
