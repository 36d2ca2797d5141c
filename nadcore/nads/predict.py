"""What a network can learn, predicted from its NADs alone, without training it.

The paper's thesis (Ortiz-Jimenez et al., NeurIPS 2020, Secs. 3-4) is that the directions a
network learns easily are those its NADs span: the gradient covariance ``Sigma = E_theta[g g^T]``
of the randomly initialised network puts much energy along them. :func:`predicted_learnability`
turns that into a score with no fitted parameter: the energy of ``Sigma`` along a unit direction
``v`` relative to an isotropic covariance of the same trace,

    score(v) = D * v^T Sigma v / tr(Sigma) = D * sum_i lambda_i (u_i . v)^2 / sum_i lambda_i,

so 1 means "as much as an average direction", above 1 favoured, below 1 disfavoured.
:func:`predicted_fig1_map` scores every Fourier direction of the paper's Fig. 1 grid.
"""

from __future__ import annotations

import numpy as np

from nadcore.data.directions import FourierGrid, fourier_directions, fourier_grid
from nadcore.nads.covariance import NADResult

__all__ = ["predicted_learnability", "predicted_fig1_map"]


def predicted_learnability(result: NADResult, directions) -> np.ndarray:
    """The predicted learnability of each direction (rows of ``directions``, any shape that
    flattens to the NADs' dimension D): ``D v^T Sigma v / (|v|^2 tr Sigma)`` with ``Sigma`` rebuilt
    from ``result``'s eigenvalues and NADs (1 for an isotropic network; see the module docstring).
    A truncated basis (the authors published 1023 of 1024 NADs) uses the components it has."""
    U = np.asarray(result.nads, dtype=np.float64)
    lam = np.clip(np.asarray(result.eigenvalues, dtype=np.float64), 0.0, None)
    V = np.asarray(directions, dtype=np.float64).reshape(-1, U.shape[1])
    if lam.shape[0] != U.shape[0]:
        raise ValueError(f"{lam.shape[0]} eigenvalues for {U.shape[0]} NADs")
    if lam.sum() <= 0:
        raise ValueError("the NADs' eigenvalues are all zero: the network's input gradient vanishes")
    norms = np.einsum("ij,ij->i", V, V)
    if np.any(norms == 0):
        raise ValueError("a direction is zero")
    energy = ((V @ U.T) ** 2) @ lam
    return U.shape[1] * energy / (norms * lam.sum())


def predicted_fig1_map(result: NADResult, grid: FourierGrid | None = None) -> np.ndarray:
    """:func:`predicted_learnability` of every Fourier direction of ``grid`` (default: the paper's
    16x16 grid on 32x32 inputs), as a ``grid.shape`` array laid out as Fig. 1 (cell (i, j) holds
    frequency ``(grid.k1[i, j], grid.k2[i, j])``). Multi-channel NADs score the direction repeated
    on every channel, as Fig. 1's data put it."""
    side = result.input_shape[-1]
    grid = grid or fourier_grid(side)
    channels = result.input_shape[0] if len(result.input_shape) == 3 else 1
    V = fourier_directions(grid, channels=channels).numpy()
    return predicted_learnability(result, V).reshape(grid.shape)
