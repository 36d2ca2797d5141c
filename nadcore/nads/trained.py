"""NADs of trained networks, followed epoch by epoch, and how a trained network depends on the NAD
components of its inputs (chapter 6, the reviewers' questions on training dynamics and on
whether trained CNNs use NAD directions).

The NAD paper (Ortiz-Jimenez et al., NeurIPS 2020, Sec. 3) defines the NADs of an *architecture*
as the eigenvectors of ``E_theta[grad_x f grad_x f^T]``, an average over random initialisations
at a fixed input. A trained network is one ``theta``: the average over initialisations has
nothing left to average (three seeds give a covariance of rank three). The analogue for one
network averages over its *inputs* instead:

    C(theta) = E_x[ grad_x f_theta(x) grad_x f_theta(x)^T ],

the expected gradient outer product over a fixed set of evaluation inputs (here the test inputs of
the task). Its eigenvectors, the *network's* NADs (:func:`network_nads`), say which input
directions change this network's output; at epoch 0 they are those of one random network. The
same definition at every epoch makes the epochs comparable (:func:`dynamics`).

:func:`epoch_snapshots` records a model's weights at the start of every epoch of
:func:`nadcore.train.train_classifier` (a forward pre-hook: the training loop is untouched), and
:func:`remove_components` projects NAD components out of images, channel by channel.
"""

from __future__ import annotations

import contextlib

import numpy as np
import torch

from nadcore.nads.covariance import subspace_overlap

__all__ = [
    "epoch_snapshots",
    "input_gradients",
    "network_nads",
    "captured_fraction",
    "dynamics",
    "remove_components",
    "random_orthonormal",
    "principal_directions",
]


@contextlib.contextmanager
def epoch_snapshots(model: torch.nn.Module, iters_per_epoch: int):
    """Yield a list that receives a copy of ``model``'s parameters before the first training-mode
    forward pass of every epoch (``iters_per_epoch`` passes each); append the final state yourself
    after training."""
    snaps: list[dict] = []
    count = [0]

    def hook(module, args):
        if module.training:
            if count[0] % iters_per_epoch == 0:
                snaps.append({k: v.detach().clone() for k, v in module.state_dict().items()})
            count[0] += 1

    handle = model.register_forward_pre_hook(hook)
    try:
        yield snaps
    finally:
        handle.remove()


def input_gradients(model: torch.nn.Module, x, batch: int = 512) -> np.ndarray:
    """``grad_x f(x)`` of a one-output model (eval mode) at every input: (n, D) float64."""
    model.eval()
    x = torch.as_tensor(x, dtype=torch.float32)
    out = []
    for i in range(0, len(x), batch):
        xb = x[i : i + batch].clone().requires_grad_(True)
        (g,) = torch.autograd.grad(model(xb).sum(), xb)  # samples are independent in eval mode
        out.append(g.reshape(len(xb), -1).double())
    return torch.cat(out).numpy()


def network_nads(G: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top-``k`` eigenvalues and eigenvectors (rows) of ``C = G^T G / n``, the expected gradient
    outer product of one network over the ``n`` inputs behind the gradients ``G`` (n, D), through
    the n x n Gram matrix ``G G^T / n`` (``C`` has rank at most ``n``)."""
    G = np.asarray(G, dtype=np.float64) / np.sqrt(len(G))
    w, E = np.linalg.eigh(G @ G.T)  # the n x n Gram matrix shares C's nonzero eigenvalues
    order = np.argsort(w)[::-1][:k]
    w, E = np.clip(w[order], 1e-300, None), E[:, order]
    return w, (G.T @ E / np.sqrt(w)).T


def captured_fraction(nads: np.ndarray, v: np.ndarray) -> float:
    """``||V v||^2 / ||v||^2``: the fraction of ``v`` inside the span of the rows of ``nads``."""
    v = np.asarray(v, dtype=np.float64).ravel()
    return float(np.sum((np.asarray(nads) @ v) ** 2) / (v @ v))


def dynamics(model, snapshots: list[dict], x_eval, ks, k_max: int, first: int = 4) -> dict:
    """For every snapshot: the network's NADs (:func:`network_nads` over ``x_eval``), their
    overlap with those of the first snapshot for each ``k`` in ``ks`` (``overlap_initial``,
    (T, len(ks))), the normalised spectrum (``spectrum``, (T, k_max)) and the ``first`` NADs
    (``first_nads``, (T, first, D))."""
    sets, spectra = [], []
    for s in snapshots:
        model.load_state_dict(s)
        lam, V = network_nads(input_gradients(model, x_eval), k_max)
        sets.append(V)
        spectra.append(lam / lam[0])
    ov = np.array([[subspace_overlap(V, sets[0], k) for k in ks] for V in sets])
    return {
        "overlap_initial": ov,
        "spectrum": np.array(spectra),
        "first_nads": np.stack([V[:first] for V in sets]).astype(np.float32),
        "sets": sets,
    }


def remove_components(x, directions) -> np.ndarray:
    """``x - U^T U x`` in every channel: ``x`` (n, C, H, W), ``directions`` (k, H*W) orthonormal rows."""
    x = np.asarray(x, dtype=np.float32)
    n, C, H, W = x.shape
    U = np.asarray(directions, dtype=np.float32).reshape(-1, H * W)
    flat = x.reshape(n * C, H * W)
    return (flat - (flat @ U.T) @ U).reshape(n, C, H, W)


def random_orthonormal(k: int, D: int, generator: torch.Generator) -> np.ndarray:
    """``k`` orthonormal rows spanning a uniformly random ``k``-dimensional subspace of R^D."""
    Q, _ = torch.linalg.qr(torch.randn(D, k, generator=generator, dtype=torch.float64))
    return Q.T.numpy()


def principal_directions(x) -> np.ndarray:
    """Principal directions (rows, by decreasing variance) of the pixels of ``x`` (n, C, H, W),
    every channel of every image counted as one (H*W)-vector (uncentred second moment)."""
    x = np.asarray(x, dtype=np.float64)
    flat = x.reshape(-1, x.shape[-2] * x.shape[-1])
    w, V = np.linalg.eigh(flat.T @ flat / len(flat))
    return V[:, np.argsort(w)[::-1]].T
