"""Poisoning and flipping CIFAR-10 along NADs (paper Sec. 4.2, Figs. 7 and 8).

Poisoning (Fig. 7): every training image gets a carrier, its component along one of NADs (i, i+1)
in one colour channel replaced by ``+-eps`` (:func:`poison`, the substitution of the authors'
``poison_cifar.py``, on the ``[0, 1]`` pixel scale before normalisation). Flipping (Fig. 8): the
images in the NAD basis with the order of their coordinates reversed, ``x' = U flip(U^T x)``
(:func:`flip_representation`, per colour channel, on normalised images). NADs are given as ROWS,
``(K, H*W)``, the layout of the published ``<Arch>_NADs.npy``; a full basis comes from
:func:`nadcore.nads.complete_basis`. Chapter 4's training jobs are
:mod:`nadcore.chapters.cifar10.runs`.
"""

from __future__ import annotations

import numpy as np

from nadcore.data.cifar import as_numpy, like

__all__ = [
    "carrier_assignment",
    "poison_carriers",
    "poison",
    "flip_matrix",
    "flip_representation",
    "leading_energy",
    "poison_change",
    "carrier_visibility",
    "EXPERIMENTS",
    "FLIP_CONTROLS",
]

EXPERIMENTS = ("clean", "poison", "flip")
#: Fully connected models, the controls of Fig. 8: they have no preferred input directions, so
#: they are flipped with the NADs of the architecture they are compared with.
FLIP_CONTROLS = ("mlp", "logreg")


# --------------------------------------------------------------------------------------------
# Poisoning (paper Sec. 4.2, Fig. 7)
# --------------------------------------------------------------------------------------------
def carrier_assignment(num_classes: int = 10, num_channels: int = 3) -> list[tuple[int, int, int]]:
    """``(nad_offset, channel, sign)`` of each class's carrier, as in the authors' code.

    Class ``t`` uses NAD ``index + t // (2 * num_channels)`` in colour channel
    ``t % num_channels`` with sign ``2 * (t % 2) - 1``. For CIFAR-10 (10 classes, 3 channels)
    classes 0-5 use NAD ``i`` and 6-9 NAD ``i + 1``; every class gets a distinct
    (NAD, channel, sign) triple, so the carriers alone separate the ten classes.
    """
    out = []
    for t in range(num_classes):
        out.append((t // (2 * num_channels), t % num_channels, 2 * (t % 2) - 1))
    if len(set(out)) != num_classes:
        raise ValueError(f"{num_classes} classes do not get distinct carriers with {num_channels} channels")
    return out


def poison_carriers(
    nads, index: int, num_classes: int = 10, num_channels: int = 3, shape=(32, 32)
) -> tuple[np.ndarray, np.ndarray]:
    """Unit-norm carriers ``(num_classes, C, H, W)`` and signs ``(num_classes,)`` for NADs (i, i+1).

    ``nads``: ``(K, H*W)``, one NAD per row. Each carrier is the class's NAD placed in one colour
    channel (zeros elsewhere), rescaled to unit norm (a no-op for orthonormal NADs up to float
    rounding; it makes "the component along the carrier" exact).
    """
    V = np.asarray(as_numpy(nads), dtype=np.float64)
    H, W = shape
    if V.ndim != 2 or V.shape[1] != H * W:
        raise ValueError(f"nads must be (K, {H * W}) with one NAD per row; got {V.shape}")
    assign = carrier_assignment(num_classes, num_channels)
    top = index + max(a[0] for a in assign)
    if index < 0 or top >= V.shape[0]:
        raise IndexError(
            f"carrier at NAD index {index} needs NADs {index}..{top}; "
            f"only {V.shape[0]} given (complete them with nadcore.nads.complete_basis)"
        )
    carriers = np.zeros((num_classes, num_channels, H, W))
    signs = np.zeros(num_classes)
    for t, (off, ch, sign) in enumerate(assign):
        v = V[index + off]
        carriers[t, ch] = (v / np.linalg.norm(v)).reshape(H, W)
        signs[t] = sign
    return carriers, signs


def poison(x, y, nads, index: int, eps: float, num_classes: int = 10):
    """Poisoned copy of ``x``: the component of each image along its class's carrier becomes ``sign * eps``.

    With ``c_t`` the unit carrier of class ``t`` and ``s_t = +-1`` (:func:`poison_carriers`),
    ``x' = x + (s_t eps - <x, c_t>) c_t``: ``<x', c_t> = s_t eps`` exactly, and ``x' - x`` is
    parallel to ``c_t`` (nothing changes orthogonally to the carrier). This is the substitution of
    the authors' ``poison_with_NADs`` (applied on the ``[0, 1]`` pixel scale, before normalisation,
    without clipping). Works on numpy arrays or torch tensors ``(N, C, H, W)``; returns the same kind.
    """
    xn = as_numpy(x)
    yn = np.asarray(as_numpy(y)).astype(np.int64)
    if xn.ndim != 4 or len(xn) != len(yn):
        raise ValueError(f"x must be (N, C, H, W) with one label per image; got {xn.shape}, {yn.shape}")
    carriers, signs = poison_carriers(nads, index, num_classes, xn.shape[1], xn.shape[2:])
    flat = xn.reshape(len(xn), -1).astype(np.float64)
    cflat = carriers.reshape(num_classes, -1)
    c = cflat[yn]  # (N, C*H*W): each image's carrier
    coef = eps * signs[yn] - np.einsum("nd,nd->n", flat, c)
    out = (flat + coef[:, None] * c).reshape(xn.shape).astype(xn.dtype)
    return like(out, x)


# --------------------------------------------------------------------------------------------
# Flipping (paper Sec. 4.2, Fig. 8)
# --------------------------------------------------------------------------------------------
def flip_matrix(nads) -> np.ndarray:
    """``M = U R U^T`` for the NAD basis ``U`` (NADs as columns; given here as ROWS, ``nads`` =
    ``U^T``, (D, D) orthonormal) and ``R`` the index-reversal permutation: coefficient k goes to
    D-1-k. ``M`` is orthogonal, symmetric and an involution (``M @ M = I``)."""
    V = np.asarray(as_numpy(nads), dtype=np.float64)
    if V.ndim != 2 or V.shape[0] != V.shape[1]:
        raise ValueError(
            f"the basis must be square (D, D), one NAD per row; got {V.shape} "
            "(complete it with nadcore.nads.complete_basis)"
        )
    err = np.abs(V @ V.T - np.eye(len(V))).max()
    if err > 1e-4:
        raise ValueError(f"the NADs are not orthonormal (max |U^T U - I| = {err:.2e}); use nadcore.nads.complete_basis")
    return V.T @ V[::-1]


def flip_representation(x, nads):
    """NAD-flipped images ``x' = U flip(U^T x)``, applied to each colour channel separately.

    ``nads`` (D, D): the full orthonormal NAD basis, one NAD per row, D = H*W of ONE channel (the NADs are those of a
    1-channel copy of the architecture, as in the paper). ``flip`` reverses the order of the NAD
    coefficients: what lay along the first NAD now lies along the last and vice versa. The map is
    a rotation/reflection of input space (orthogonal, norms preserved) and its own inverse, so no
    information is lost. Channels are flipped separately because the NADs live in one channel;
    mixing channels would be a different, arbitrary extension. The chapter applies it to the
    normalised images (see there why). Numpy or torch ``(N, C, H, W)``; returns the same kind.
    """
    xn = as_numpy(x)
    if xn.ndim != 4:
        raise ValueError(f"x must be (N, C, H, W); got {xn.shape}")
    N, C, H, W = xn.shape
    M = flip_matrix(nads)
    if M.shape[0] != H * W:
        raise ValueError(f"the basis is {M.shape} but one channel has {H * W} pixels")
    work = np.float64 if xn.dtype == np.float64 else np.float32
    out = (xn.reshape(N * C, H * W).astype(work) @ M.astype(work)).reshape(N, C, H, W)
    return like(out.astype(xn.dtype, copy=False), x)


def leading_energy(x, nads, k: int) -> np.ndarray:
    """Fraction of each image's energy (all channels) along the first ``k`` NADs of every
    channel, ``sum_c ||V[:k] x_c||^2 / ||x||^2``: what :func:`flip_representation` moves from the
    first NADs to the last ones. ``x``: ``(N, C, H, W)``; ``nads``: rows ``(K >= k, H*W)``."""
    xn = np.asarray(as_numpy(x), dtype=np.float64)
    V = np.asarray(as_numpy(nads), dtype=np.float64)[:k]
    flat = xn.reshape(len(xn), xn.shape[1], -1)
    along = np.einsum("ncd,kd->nck", flat, V)
    return (along**2).sum(axis=(1, 2)) / np.maximum((flat**2).sum(axis=(1, 2)), 1e-30)


def poison_change(x, x_poisoned) -> dict:
    """How much poisoning moved the images ([0, 1] scale): mean L2 norm of the change, mean and
    max absolute pixel change."""
    d = (np.asarray(x_poisoned, dtype=np.float64) - np.asarray(x, dtype=np.float64)).reshape(len(x), -1)
    return dict(
        l2_change=float(np.linalg.norm(d, axis=1).mean()),
        mean_abs_change=float(np.abs(d).mean()),
        max_abs_change=float(np.abs(d).max()),
    )


def carrier_visibility(x, y, nads, indices, eps: float) -> list[dict]:
    """How visible the carrier at each NAD index is (the reviewers' question): one row per index
    with :func:`poison_change` of ``poison(x, y, nads, index, eps)``, the change relative to the
    mean L2 norm of the clean images (``relative_l2_change``), and ``dc_cosine``, the larger
    ``|cos|`` of NADs i and i+1 with a constant image: near 1, substituting the component along
    the carrier changes a channel's overall brightness."""
    xn = np.asarray(as_numpy(x))
    V = np.asarray(as_numpy(nads), dtype=np.float64)
    clean = float(np.linalg.norm(xn.reshape(len(xn), -1).astype(np.float64), axis=1).mean())
    top = 1 + max(a[0] for a in carrier_assignment(10, xn.shape[1]))
    rows = []
    for i in indices:
        change = poison_change(xn, poison(xn, y, V, int(i), eps))
        dc = max(abs(V[j].sum()) / (np.linalg.norm(V[j]) * np.sqrt(V.shape[1])) for j in range(i, i + top))
        rows.append(dict(index=int(i), **change, relative_l2_change=change["l2_change"] / clean, dc_cosine=float(dc)))
    return rows
