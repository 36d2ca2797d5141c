"""The budget of a run, what a claim's row compares with the paper's: its SGD steps
(:func:`steps_per_run`) and, on CIFAR-10, its training images against the papers' 50,000
(:func:`cifar_budget`)."""

from __future__ import annotations

from nadcore.data.cifar_budget import training_images

__all__ = ["steps_per_run", "cifar_budget"]


def steps_per_run(settings: dict) -> int:
    """SGD steps of one run with ``settings`` (``epochs``, ``n_train``, ``batch_size``, default
    128): ``epochs * ceil(n_train / batch_size)``."""
    return int(settings["epochs"]) * -(-int(settings["n_train"]) // int(settings.get("batch_size", 128)))


def cifar_budget(here: dict, paper: dict, description: dict, max_train: int | None = None) -> dict:
    """The budget of one run on CIFAR-10 data with ``description`` loaded with ``max_train``, as
    a claim takes it: ``steps`` with the recipe ``here`` (``epochs``, ``batch_size``) on the
    images it had, ``paper_steps`` with the papers' recipe ``paper`` on their 50,000, and
    ``samples``: :func:`training_images`."""
    images = training_images(description, max_train)
    return dict(
        steps=steps_per_run({**here, "n_train": images[0]}),
        paper_steps=steps_per_run({**paper, "n_train": images[1]}),
        samples=images,
    )
