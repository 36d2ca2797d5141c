"""The results of chapter 5's two experiments, one array per measured quantity over the seeds and
the grid of NAD pairs (:class:`ConcatGridResult`) or NAD indices (:class:`CifarDVResult`), with
what the claims read off them (spreads, fits, a seed's values) and their tidy tables; rebuilt
from a campaign bundle's rows where the runs were made off the build."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

__all__ = ["ConcatGridResult", "CifarDVResult", "CONCAT_KEYS", "CIFAR_KEYS"]

#: the quantities of one D(v1) (+) D(v2) run, and of one binary CIFAR-10 (+) D(v) run
CONCAT_KEYS = ("acc_both", "acc_first", "acc_second", "train_acc", "angle")
CIFAR_KEYS = ("acc_all", "acc_cifar", "acc_dv", "train_acc")


def _seed_grid(frame: pd.DataFrame, axes: list[str], keys, what: str) -> tuple[list, dict]:
    """A tidy frame of runs as arrays (seeds, *axes): the sorted values of ``seed`` and of each
    of ``axes``, and ``{key: array}``; every seed must have run ``what`` (every combination of
    the axes' values) once."""
    levels = [sorted(int(x) for x in frame[c].unique()) for c in ["seed", *axes]]
    grid = frame.set_index(["seed", *axes]).sort_index()
    full = pd.MultiIndex.from_product(levels)
    if len(grid) != len(full) or not grid.index.equals(full):
        raise ValueError(f"the runs must cover {what} for every seed, once")
    shape = tuple(map(len, levels))
    return levels, {k: grid[k].to_numpy(dtype=np.float64).reshape(shape) for k in keys}


@dataclass
class ConcatGridResult:
    """Per seed (axis 0) and pair of NAD indices (rows: v1, columns: v2): test accuracy with both
    channels (``acc_both``), channel 1 only (``acc_first``), channel 2 only (``acc_second``), the
    last epoch's running training accuracy, the boundary's tilt ``angle`` (degrees) and the
    network's outputs on the cross-section grid ``a`` x ``b`` (``sections``, (S, n1, n2, R, R));
    ``seconds``: the wall time of its jobs as they measured it when they ran (NaN for a bundle's)."""

    model: str
    indices1: list
    indices2: list
    seeds: list
    acc_both: np.ndarray
    acc_first: np.ndarray
    acc_second: np.ndarray
    train_acc: np.ndarray
    angle: np.ndarray
    sections: np.ndarray
    a: np.ndarray
    b: np.ndarray
    settings: dict = field(default_factory=dict)
    seconds: float = float("nan")

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, model: str, settings: dict | None = None) -> "ConcatGridResult":
        """The result whose :meth:`frame` is ``frame`` (every seed with every pair of its grid),
        without cross-sections (a campaign bundle keeps only their ``angle``)."""
        (seeds, i1s, i2s), arr = _seed_grid(frame, ["v1_index", "v2_index"], CONCAT_KEYS, "every pair of the NAD grid")
        shape = (len(seeds), len(i1s), len(i2s))
        return cls(
            model=model,
            indices1=i1s,
            indices2=i2s,
            seeds=seeds,
            **arr,
            sections=np.zeros((*shape, 0, 0), np.float32),
            a=np.zeros(0),
            b=np.zeros(0),
            settings=dict(settings or {}),
        )

    def section(self, i1: int, i2: int, seed_index: int = 0) -> dict:
        """The cross-section of the pair of NAD indices ``(i1, i2)`` for one seed."""
        r, c = self.indices1.index(i1), self.indices2.index(i2)
        return {"a": self.a, "b": self.b, "logits": self.sections[seed_index, r, c]}

    def values(self, key: str, i1: int, i2: int) -> np.ndarray:
        """``key`` (e.g. ``"acc_first"``, ``"angle"``) of the pair ``(i1, i2)``, one value per seed."""
        return np.asarray(getattr(self, key))[:, self.indices1.index(i1), self.indices2.index(i2)]

    def spread(self, key: str) -> np.ndarray:
        """Per seed, ``max - min`` of ``key`` over the whole grid of NAD pairs."""
        a = np.asarray(getattr(self, key))
        return np.ptp(a.reshape(a.shape[0], -1), axis=1)

    def fitted(self, cells=None, threshold: float = 0.95) -> bool:
        """Whether every seed's network fitted its training set (last-epoch training accuracy
        >= ``threshold``) at every pair ``(i1, i2)`` of ``cells`` (default: the whole grid)."""
        cells = cells if cells is not None else [(i1, i2) for i1 in self.indices1 for i2 in self.indices2]
        return bool(all((self.values("train_acc", *c) >= threshold).all() for c in cells))

    def frame(self):
        """Tidy table: one row per seed and pair (model, seed, v1_index, v2_index, the three test
        accuracies, train_acc, angle)."""
        return pd.DataFrame(
            [
                {
                    "model": self.model,
                    "seed": s,
                    "v1_index": i1,
                    "v2_index": i2,
                    **{k: float(getattr(self, k)[k0, a, b]) for k in CONCAT_KEYS},
                }
                for k0, s in enumerate(self.seeds)
                for a, i1 in enumerate(self.indices1)
                for b, i2 in enumerate(self.indices2)
            ]
        )

    def sections_frame(self, pairs, seed_index: int = 0):
        """Tidy table of the cross-sections of ``pairs`` for one seed: model, seed, v1_index,
        v2_index, a (along v1 (+) 0), b (along 0 (+) v2), logit (the network's output)."""
        bb, aa = np.meshgrid(self.b, self.a, indexing="ij")
        parts = [
            pd.DataFrame(
                {
                    "model": self.model,
                    "seed": self.seeds[seed_index],
                    "v1_index": i1,
                    "v2_index": i2,
                    "a": aa.ravel(),
                    "b": bb.ravel(),
                    "logit": self.section(i1, i2, seed_index)["logits"].ravel(),
                }
            )
            for i1, i2 in pairs
        ]
        return pd.concat(parts, ignore_index=True)


@dataclass
class CifarDVResult:
    """Per seed (axis 0) and NAD index of ``v``: test accuracy with all four channels
    (``acc_all``), with the CIFAR channels only (``acc_cifar``), with the D(v) channel only
    (``acc_dv``), and the last epoch's running training accuracy; ``seconds``: the wall time of
    its jobs as they measured it when they ran (NaN for a bundle's)."""

    model: str
    indices: list
    seeds: list
    acc_all: np.ndarray
    acc_cifar: np.ndarray
    acc_dv: np.ndarray
    train_acc: np.ndarray
    settings: dict = field(default_factory=dict)
    seconds: float = float("nan")

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, model: str, settings: dict | None = None) -> "CifarDVResult":
        """The result whose :meth:`frame` is ``frame`` (every seed at every NAD index)."""
        (seeds, indices), arr = _seed_grid(frame, ["nad_index"], CIFAR_KEYS, "every NAD index")
        return cls(model=model, indices=indices, seeds=seeds, **arr, settings=dict(settings or {}))

    def values(self, key: str, index: int) -> np.ndarray:
        """``key`` (e.g. ``"acc_dv"``) at NAD index ``index``, one value per seed."""
        return np.asarray(getattr(self, key))[:, self.indices.index(index)]

    def fitted(self, indices=None, threshold: float = 0.95) -> bool:
        """Whether every seed's network fitted its training set (last-epoch training accuracy
        >= ``threshold``) at every NAD index of ``indices`` (default: all)."""
        return bool(
            all(
                (self.values("train_acc", i) >= threshold).all()
                for i in (indices if indices is not None else self.indices)
            )
        )

    def frame(self):
        """Tidy table: one row per seed and NAD index (model, seed, nad_index, the three test
        accuracies, train_acc)."""
        return pd.DataFrame(
            [
                {
                    "model": self.model,
                    "seed": s,
                    "nad_index": i,
                    **{k: float(getattr(self, k)[k0, j]) for k in CIFAR_KEYS},
                }
                for k0, s in enumerate(self.seeds)
                for j, i in enumerate(self.indices)
            ]
        )
