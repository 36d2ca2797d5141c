"""The mixed Hessian ``d^2 f / d theta d x`` of a network and the input basis it defines (NAD paper,
Sec. 3: Lemma 2, eqs. (3)-(5)).

Lemma 2 of Ortiz-Jimenez et al. (NeurIPS 2020) bounds how fast a network can learn to separate a
discriminative dipole ``(x, x + v)`` by two quadratic forms in ``v``:

* ``v^T E_theta[grad_x f grad_x f^T] v``: the gradient covariance, whose eigenvectors are the NADs;
* ``v^T E_theta[J^T J] v`` with ``J = d^2 f / d theta d x`` (P x D, P parameters): its
  eigenvectors are the expected right singular vectors of the mixed Hessian.

The paper remarks that the two bases "need not coincide" but are "surprisingly aligned for most
networks". This module computes the second one without ever forming ``J`` or a Hessian: for one
network, ``J w`` is a forward-mode derivative (``jvp``) of ``grad_theta f`` along the input
direction ``w``, and ``J^T u`` a reverse-mode one (``vjp``), so ``J^T J W`` for a block of
directions ``W`` costs two passes per column (:func:`mixed_gram_product`). Applying it to the
columns of the identity gives the D x D matrix exactly (:func:`network_moments`), on the very
networks and evaluation point that :func:`nadcore.nads.compute_nads` uses for the same seed.

For the deep linear model of pooling of :mod:`nadcore.theory.linear_pooling`, where both matrices are
known in closed form (eqs. (4)-(5)), :func:`linear_pooling_moments` computes the expectations
exactly: the output is bilinear in ``(theta, phi)``, so averages over Gaussian parameters reduce
to sums over basis vectors.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from torch.func import functional_call, grad, jvp, vjp, vmap

from nadcore.nads.estimators import evaluation_point
from nadcore.nets import build_model, init_plan, spec_name
from nadcore.nets.init import draw_parameters
from nadcore.runtime import derived_seeds
from nadcore.theory.linear_pooling import linear_pooling_weights

__all__ = [
    "mixed_gram_product",
    "network_moments",
    "linear_pooling_output",
    "linear_pooling_moments",
    "linear_pooling_monte_carlo",
]


def mixed_gram_product(f, params: dict, x: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """``J^T J w`` for every row ``w`` of ``W`` (b, D), with ``J = d/dx grad_theta f(params, x)``;
    ``f(params, x)`` is a scalar function, ``x`` of any shape with ``D`` entries. Returns (b, D)."""
    shape = x.shape

    def g(xx):
        return grad(f)(params, xx)

    _, pull = vjp(g, x)
    with warnings.catch_warnings():  # forward-mode AD's first use warns about torch.jit.script
        warnings.filterwarnings("ignore", message=".*torch.jit.script.*", category=FutureWarning)
        Jw = vmap(lambda w: jvp(g, (x,), (w.reshape(shape),))[1])(W)
    return vmap(lambda u: pull(u)[0])(Jw).reshape(W.shape[0], -1)


def _network_functional(spec, input_shape):
    C, H = int(input_shape[0]), int(input_shape[-1])
    model = build_model(spec, C, 1, H, check=False).eval()
    plan = init_plan(model)
    if plan is None:
        raise ValueError(f"{spec_name(spec)!r} has no initialisation plan (declare default_init = True)")
    buffers = dict(model.named_buffers())

    def f(params, x):
        return functional_call(model, (params, buffers), (x.unsqueeze(0),)).reshape(())

    return f, plan


def network_moments(
    spec, networks: int, seed: int = 0, input_shape=(1, 32, 32), block: int = 256, threads: int | None = None
) -> dict:
    """Both second moments of Lemma 2 for networks ``0..networks-1`` of ``seed`` at the
    evaluation point of ``seed``, the networks and point of
    ``nadcore.nads.compute_nads(spec, input_shape, networks, seed, method="gradient")``.

    Returns ``gradients`` (N, D) float64 (``grad_x f`` of each network: their second moment
    ``G^T G / N`` is the gradient covariance) and ``mixed`` (D, D) float64, the Monte Carlo average
    ``(1/N) sum_n J_n^T J_n`` of the Gram matrix of the mixed Hessian, computed column block by
    column block with :func:`mixed_gram_product` (no Hessian is formed)."""
    if threads:
        torch.set_num_threads(int(threads))
    f, plan = _network_functional(spec, input_shape)
    x = evaluation_point(input_shape, seed)
    D = x.numel()
    eye = torch.eye(D)
    seeds = derived_seeds(seed, range(int(networks)))
    G = np.zeros((len(seeds), D))
    A = np.zeros((D, D))
    for n, s in enumerate(seeds):
        params = {k: v[0] for k, v in draw_parameters(plan, [s]).items()}
        G[n] = grad(f, argnums=1)(params, x).reshape(-1).double().numpy()
        for c in range(0, D, block):
            A[c : c + block] += mixed_gram_product(f, params, x, eye[c : c + block]).double().numpy()
    A /= len(seeds)
    return {"gradients": G, "mixed": (A + A.T) / 2}


# --------------------------------------------------------------------------------------------
# The deep linear model of pooling (eqs. (4)-(5))
# --------------------------------------------------------------------------------------------
def linear_pooling_output(params: dict, x: torch.Tensor, m: torch.Tensor, S: int) -> torch.Tensor:
    """``f(x) = theta^T A (m . phi . x)`` with ``A = (1/S) [I_M ... I_M]`` (the model of
    :func:`nadcore.theory.linear_pooling.train_linear_pooling_model`); ``params``: ``theta`` (M,),
    ``phi`` (D,)."""
    return (linear_pooling_weights(params["theta"], params["phi"], m, S) * x).sum(-1)


def linear_pooling_moments(m, S: int, s_theta: float, s_phi: float) -> dict:
    """Both second moments of Lemma 2 for the linear model of pooling, exactly, by autograd:
    ``grad_x f`` is bilinear in ``(theta, phi)`` and ``J = d^2 f / d(theta, phi) dx`` linear, so
    for independent ``theta ~ N(0, s_theta^2 I_M)``, ``phi ~ N(0, s_phi^2 I_D)``

        E[g g^T] = s_theta^2 s_phi^2 sum_{j, t} g(e_j, e_t) g(e_j, e_t)^T,
        E[J^T J] = s_theta^2 sum_j J(e_j, 0)^T J(e_j, 0) + s_phi^2 sum_t J(0, e_t)^T J(0, e_t).

    The mixed term goes through :func:`mixed_gram_product`, the code used for real networks.
    Returns ``gradient`` and ``mixed`` (D, D) float64."""
    m = torch.as_tensor(np.asarray(m, dtype=np.float64))
    D = m.shape[0]
    M = D // S
    x = torch.zeros(D, dtype=torch.float64)  # f is linear in x: its derivatives do not depend on x

    def f(params, xx):
        return linear_pooling_output(params, xx, m, S)

    gx = grad(f, argnums=1)
    eM, eD = torch.eye(M, dtype=torch.float64), torch.eye(D, dtype=torch.float64)
    g = vmap(lambda th: vmap(lambda ph: gx({"theta": th, "phi": ph}, x))(eD))(eM).reshape(M * D, D)
    C_grad = s_theta**2 * s_phi**2 * (g.T @ g)
    C_mix = torch.zeros(D, D, dtype=torch.float64)
    zM, zD = torch.zeros(M, dtype=torch.float64), torch.zeros(D, dtype=torch.float64)
    for j in range(M):
        C_mix += s_theta**2 * mixed_gram_product(f, {"theta": eM[j], "phi": zD}, x, eD)
    for t in range(D):
        C_mix += s_phi**2 * mixed_gram_product(f, {"theta": zM, "phi": eD[t]}, x, eD)
    return {"gradient": C_grad.numpy(), "mixed": C_mix.numpy()}


def linear_pooling_monte_carlo(
    m, S: int, s_theta: float, s_phi: float, draws: int, generator: torch.Generator, batch: int = 500
) -> dict:
    """Monte Carlo averages of ``g g^T`` and ``J^T J`` over ``draws`` random ``(theta, phi)`` for
    the linear model of pooling (same return as :func:`linear_pooling_moments`), ``batch`` draws
    at a time."""
    m = torch.as_tensor(np.asarray(m, dtype=np.float64))
    D = m.shape[0]
    M = D // S
    x = torch.zeros(D, dtype=torch.float64)

    def f(params, xx):
        return linear_pooling_output(params, xx, m, S)

    eD = torch.eye(D, dtype=torch.float64)
    C_grad = torch.zeros(D, D, dtype=torch.float64)
    C_mix = torch.zeros(D, D, dtype=torch.float64)
    for start in range(0, int(draws), batch):
        b = min(batch, int(draws) - start)
        p = {
            "theta": s_theta * torch.randn(b, M, generator=generator, dtype=torch.float64),
            "phi": s_phi * torch.randn(b, D, generator=generator, dtype=torch.float64),
        }
        g = vmap(lambda q: grad(f, argnums=1)(q, x))(p)
        C_grad += g.T @ g
        C_mix += vmap(lambda q: mixed_gram_product(f, q, x, eD))(p).sum(0)
    return {"gradient": (C_grad / draws).numpy(), "mixed": (C_mix / draws).numpy()}
