"""Patch embeddings as pooling: which input frequencies a stride-p patch embedding folds together.

A patch embedding (ViT, MLP-Mixer, ResMLP, ...) cuts a ``D x D`` image into ``p x p`` patches and
maps each patch linearly to a token: a convolution with a ``p x p`` kernel and stride ``p``. That
is chapter 1's linear pooling layer (paper eq. (1)) in two dimensions, with a prefilter that is
the (random) patch kernel instead of a box, followed by keeping one sample in ``p`` along each
axis. Along each axis, :func:`nadcore.theory.pooling.aliasing_matrix` ``(D, p)`` folds the ``p``
input frequencies ``t, t + M, ..., t + (p-1) M`` (``M = D / p``) onto the token grid's frequency
``t``.

A network that treats every token alike (identical tokens give identical outputs: at
initialisation, near-uniform attention over tokens, or a global average over them) sees only the
token grid's zero frequency, so its input gradient can only carry the pixel frequencies folded
onto it: those that are multiples of ``M`` along both axes (:func:`token_alias_mask`). This is the
prediction chapter 7 tests on the NADs of ViTs and MLP-Mixers. The mask changes with ``p``:
halving the patch count per axis (doubling ``p``) halves the spacing of the lattice.
"""

from __future__ import annotations

import numpy as np

from nadcore.theory.pooling import aliasing_matrix

__all__ = ["token_alias_mask", "alias_energy_fraction"]


def token_alias_mask(D: int, p: int, token_frequencies=(0,)) -> np.ndarray:
    """Boolean ``(D, D)`` mask over the (unshifted, numpy ``fft2``) frequencies of a ``D x D``
    image: the pixel frequencies ``(k1, k2)`` that a stride-``p`` patch embedding folds onto one
    of the token-grid frequencies ``token_frequencies`` along each axis (default: only the zero
    frequency; then the multiples of ``D / p`` along both axes, ``p^2`` of the ``D^2``
    frequencies). Built from :func:`nadcore.theory.pooling.aliasing_matrix` (paper eq. (1))."""
    A = aliasing_matrix(D, p)  # (M, D): row t has 1/p at the D frequencies folded onto t
    axis = np.zeros(D, dtype=bool)
    for t in token_frequencies:
        axis |= A[int(t) % A.shape[0]] != 0
    return np.outer(axis, axis)


def alias_energy_fraction(vectors: np.ndarray, mask: np.ndarray) -> float:
    """Mean fraction of the Fourier energy of the unit rows of ``vectors`` (``(k, D*D)`` or
    ``(k, D, D)``) inside ``mask`` (an unshifted ``(D, D)`` frequency mask, e.g.
    :func:`token_alias_mask`). For orthonormal rows this is ``||P_mask F U^T||_F^2 / k``: a
    property of the subspace they span, not of the basis chosen in it."""
    V = np.asarray(vectors, dtype=np.float64)
    D = mask.shape[0]
    V = V.reshape(len(V), D, D)
    E = np.abs(np.fft.fft2(V)) ** 2
    return float(np.mean(E[:, mask].sum(1) / E.reshape(len(V), -1).sum(1)))
