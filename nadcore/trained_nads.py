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
import time

import numpy as np
import torch

from nadcore.nads import subspace_overlap

__all__ = ["epoch_snapshots", "input_gradients", "network_nads", "captured_fraction", "dynamics",
           "remove_components", "random_orthonormal", "principal_directions", "dv_dynamics_job",
           "cifar_dynamics_job", "REMOVALS"]

#: the direction sets removed from test images (:func:`cifar_dynamics_job`)
REMOVALS = ("first NADs", "last NADs", "random", "data PCs")


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
        xb = x[i:i + batch].clone().requires_grad_(True)
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
    return {"overlap_initial": ov, "spectrum": np.array(spectra),
            "first_nads": np.stack([V[:first] for V in sets]).astype(np.float32), "sets": sets}


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


# --------------------------------------------------------------------------------------------
# Jobs (nadcore.experiments): one seed each
# --------------------------------------------------------------------------------------------
def _train_with_snapshots(model, x, y, xt, yt, train: dict, generator, device):
    """Train on ``device``; the model and its snapshots come back on the CPU for the analysis."""
    from nadcore.train import train_classifier

    nb = -(-len(x) // int(train.get("batch_size", 128)))
    with epoch_snapshots(model, nb) as snaps:
        res = train_classifier(model, x, y, generator=generator, device=device, x_test=xt, y_test=yt,
                               **train)
    snaps.append({k: v.detach().clone() for k, v in model.state_dict().items()})
    return res, [{k: v.cpu() for k, v in s.items()} for s in snaps], model.cpu()


def _epoch_accuracy(model, snaps, x, y) -> np.ndarray:
    from nadcore.train import evaluate

    acc = []
    for s in snaps:
        model.load_state_dict(s)
        acc.append(evaluate(model, x, y, device="cpu")[0])
    return np.array(acc)


def dv_dynamics_job(config: dict, v, reference, device: str = "cpu"):
    """Train LeNet-like ``config["model"]`` on D(v) (one seed) and follow its NADs: arrays
    ``overlap_initial`` (T, K), ``overlap_reference`` (T, K) with the rows of ``reference`` (the
    architecture's NADs), ``captured_v`` (T, K) the fraction of ``v`` in the top-k NADs,
    ``spectrum``, ``first_nads``, ``test_acc`` (T,) of every snapshot, ``train_acc``."""
    from nadcore.data import directional_train_test
    from nadcore.models import build_model
    from nadcore.utils import generator

    t0 = time.perf_counter()
    d, ks, s = config["data"], config["ks"], int(config["seed"])
    v = torch.as_tensor(np.asarray(v, dtype=np.float32))
    x, y, xt, yt = directional_train_test(v, int(d["n_train"]), int(d["n_test"]), float(d["sigma"]),
                                          float(d["epsilon"]), generator=generator(s, 0))
    model = build_model(config["model"], v.shape[0], 1, v.shape[-1], seed=(s, 1))
    res, snaps, model = _train_with_snapshots(model, x, y, xt, yt, config["train"], generator(s, 2), device)
    x_eval = xt[: int(config["eval_points"])]
    dyn = dynamics(model, snaps, x_eval, ks, max(ks))
    ref = np.asarray(reference, dtype=np.float64)
    vv = v.numpy().ravel()
    arrays = {"overlap_initial": dyn["overlap_initial"],
              "overlap_reference": np.array([[subspace_overlap(V, ref, k) for k in ks] for V in dyn["sets"]]),
              "captured_v": np.array([[captured_fraction(V[:k], vv) for k in ks] for V in dyn["sets"]]),
              "spectrum": dyn["spectrum"], "first_nads": dyn["first_nads"],
              "test_acc": _epoch_accuracy(model, snaps, xt, yt), "train_acc": np.array(res.train_acc)}
    return arrays, {"seconds": time.perf_counter() - t0}


def cifar_dynamics_job(config: dict, nad_basis, data_spec: dict, device: str = "cpu"):
    """Train ``config["model"]`` (3 channels, one output) on binary CIFAR-10 (one seed), follow its
    NADs over the epochs (as :func:`dv_dynamics_job`, without ``v`` and reference), then test it
    on images whose components along k directions were removed in every channel
    (:data:`REMOVALS`; ``nad_basis``: the architecture's NADs, rows): arrays ``removal_acc``
    (len(REMOVALS), len(removal_ks)), ``removal_energy`` (same: the fraction of the test images'
    squared norm removed), ``clean_acc``."""
    from nadcore import cifar
    from nadcore.models import build_model
    from nadcore.train import evaluate
    from nadcore.utils import generator

    t0 = time.perf_counter()
    s, ks = int(config["seed"]), config["ks"]
    data = cifar.load_cifar10_spec(data_spec)
    x, xt = cifar.normalise(data.x_train), cifar.normalise(data.x_test)
    y, yt = cifar.binarise_labels(data.y_train), cifar.binarise_labels(data.y_test)
    model = build_model(config["model"], 3, 1, 32, seed=(s, 1))
    res, snaps, model = _train_with_snapshots(model, torch.as_tensor(x), torch.as_tensor(y), xt, yt,
                                              config["train"], generator(s, 2), device)
    dyn = dynamics(model, snaps, xt[: int(config["eval_points"])], ks, max(ks))
    U = np.asarray(nad_basis, dtype=np.float64)
    D = U.shape[1]
    P = principal_directions(x)
    sets = {"first NADs": lambda k: U[:k], "last NADs": lambda k: U[D - k:],
            "random": lambda k: random_orthonormal(k, D, generator(s, 3, k)), "data PCs": lambda k: P[:k]}
    acc = np.zeros((len(REMOVALS), len(config["removal_ks"])))
    energy = np.zeros_like(acc)
    total = float(np.sum(xt.astype(np.float64) ** 2))
    for i, name in enumerate(REMOVALS):
        for j, k in enumerate(config["removal_ks"]):
            xr = remove_components(xt, sets[name](int(k)))
            acc[i, j] = evaluate(model, xr, yt, device="cpu")[0]
            energy[i, j] = 1.0 - float(np.sum(xr.astype(np.float64) ** 2)) / total
    arrays = {"overlap_initial": dyn["overlap_initial"], "spectrum": dyn["spectrum"],
              "first_nads": dyn["first_nads"], "test_acc": _epoch_accuracy(model, snaps, xt, yt),
              "train_acc": np.array(res.train_acc), "removal_acc": acc, "removal_energy": energy,
              "clean_acc": np.array(res.test_acc)}
    return arrays, {"seconds": time.perf_counter() - t0}
