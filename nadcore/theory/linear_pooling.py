"""The deep linear model of pooling, ``f(x) = theta^T A (m . phi . x)`` (NAD paper, Sec. 2.2 and 3).

Lemma 1 (the average curvature of its loss, :func:`expected_hessian_phi`, :func:`zeta`), its SGD
training (:func:`train_linear_pooling_model`, Fig. 4b), and the worked example of Sec. 3: the
gradient covariance (eq. (4), :func:`expected_gradient_covariance`) and the Gram matrix of the
mixed Hessian (eq. (5), :func:`expected_mixed_gram`). Conventions as in :mod:`nadcore.theory.pooling`:
signals of length ``D``, pooling by ``S``, ``M = D // S``, ``A = (1/S) [I_M ... I_M]``.
"""

from __future__ import annotations

import numpy as np
import torch

from nadcore.runtime import threads
from nadcore.theory.pooling import check_pooling_shape

__all__ = [
    "linear_pooling_weights",
    "zeta",
    "expected_hessian_phi",
    "empirical_hessian_phi",
    "train_linear_pooling_model",
    "convergence_iteration",
    "expected_gradient_covariance",
    "expected_mixed_gram",
]


def linear_pooling_weights(theta, phi, m, S: int):
    """The deep linear model of pooling as one linear map: ``f(x) = theta^T A (m . phi . x) =
    c . x`` with ``c = (A^T theta) . m . phi``, ``A = (1/S) [I_M ... I_M]`` (input bin ``t`` feeds
    output bin ``t mod M``). ``theta`` (..., M), ``phi`` and ``m`` (..., D), torch tensors; any
    leading batch axes broadcast. With ``phi`` replaced by ``x`` it is ``grad_phi f``."""
    D = phi.shape[-1]
    fold = torch.arange(D, device=phi.device) % (D // S)
    return theta[..., fold] * m * phi / S


def zeta(ell, m, eps: float, sigma: float):
    """Lemma 1's ratio of signal curvature to the largest noise curvature (paper Sec. 2.2).

    ``zeta(l) = eps^2 m[l]^2 / (sigma^2 max_t m[t]^2)`` with ``m`` the (real, nonnegative)
    prefilter magnitude, e.g. ``abs(average_pooling_prefilter(D, S))``.
    """
    m2 = np.abs(np.asarray(m, dtype=float)) ** 2
    z = eps**2 * m2[np.asarray(ell) % m2.shape[0]] / (sigma**2 * m2.max())
    return z if np.ndim(z) else float(z)


def expected_hessian_phi(ell: int, m, eps: float, sigma: float, s_theta: float, S: int) -> np.ndarray:
    """Lemma 1: ``E[grad^2_phi J] = (2 s_theta^2 / S^2) (eps^2 m[l]^2 diag(e_l) + sigma^2 diag(m^2))``.

    For ``f = theta^T A (m . phi . x)`` and ``J = (y - f)^2`` with ``theta ~ N(0, s_theta^2 I_M)``,
    ``x = eps y e_l + w``, ``w ~ N(0, sigma^2 I_D)`` (real-valued model). The Hessian does not depend
    on ``phi`` (``f`` is linear in ``phi``). The paper states the result without the ``1/S^2``,
    which comes from the ``1/S`` in ``A``; it rescales both terms equally and leaves ``zeta``
    unchanged.
    """
    m2 = np.abs(np.asarray(m, dtype=float)) ** 2
    D = m2.shape[0]
    check_pooling_shape(D, S)
    diag = sigma**2 * m2
    diag[ell % D] += eps**2 * m2[ell % D]
    return np.diag(2 * s_theta**2 / S**2 * diag)


def empirical_hessian_phi(
    ell: int, m, eps: float, sigma: float, s_theta: float, S: int, n: int, generator: torch.Generator
) -> np.ndarray:
    """Monte Carlo average of ``grad^2_phi J = 2 g g^T``, ``g = (A^T theta) . m . x``, over ``n``
    draws of ``(theta, x, y)`` (check of :func:`expected_hessian_phi`)."""
    dev = generator.device
    m_t = torch.as_tensor(np.abs(np.asarray(m, dtype=float)), dtype=torch.float64, device=dev)
    D = m_t.shape[0]
    M = check_pooling_shape(D, S)
    kw = dict(generator=generator, dtype=torch.float64, device=dev)
    y = torch.randint(0, 2, (n,), generator=generator, device=dev).to(torch.float64) * 2 - 1
    x = sigma * torch.randn(n, D, **kw)
    x[:, ell % D] += eps * y
    theta = s_theta * torch.randn(n, M, **kw)
    g = linear_pooling_weights(theta, x, m_t, S)  # grad_phi f
    return (2 * g.T @ g / n).cpu().numpy()


def train_linear_pooling_model(
    ell: int,
    D: int,
    S: int,
    m,
    eps: float,
    sigma: float,
    n_train: int,
    iters: int,
    lr: float,
    batch: int,
    generator: torch.Generator,
    s_theta: float = 0.5,
    s_phi: float = 0.5,
    repeats: int = 1,
) -> dict:
    """SGD on the deep linear model of pooling ``f(x) = theta^T A (m . phi . x)`` (paper Sec. 2.2).

    Real-valued simplification of the paper's spectral model: ``m`` is a real magnitude (e.g.
    ``abs(average_pooling_prefilter(D, S))``), data ``x = eps y e_l + w``, ``w ~ N(0, sigma^2 I_D)``
    (``n_train`` fixed samples), loss ``mean (y - f)^2``, initialisation ``theta ~ N(0, s_theta^2 I_M)``,
    ``phi ~ N(0, s_phi^2 I_D)``, plain minibatch SGD with step ``lr`` for ``iters`` steps.
    ``repeats`` independent runs (own data, initialisation and minibatches) are trained side by side.
    Returns ``{"loss": (iters+1,) full training loss before each step and after the last, averaged
    over the runs; "losses": (repeats, iters+1); "ell"; "zeta"; "bayes_loss"}`` where
    ``bayes_loss = sigma^2 / (eps^2 + sigma^2)`` is the smallest population loss of any linear
    predictor.
    """
    M = check_pooling_shape(D, S)
    dev = generator.device
    R = int(repeats)
    m_t = torch.as_tensor(np.abs(np.asarray(m, dtype=float)), dtype=torch.float64, device=dev)
    if m_t.shape != (D,):
        raise ValueError(f"m must have shape ({D},), got {tuple(m_t.shape)}")
    kw = dict(generator=generator, dtype=torch.float64, device=dev)
    y = torch.randint(0, 2, (R, n_train), generator=generator, device=dev).to(torch.float64) * 2 - 1
    x = sigma * torch.randn(R, n_train, D, **kw)
    x[:, :, ell % D] += eps * y
    theta = s_theta * torch.randn(R, M, **kw)
    phi = s_phi * torch.randn(R, D, **kw)
    fold = torch.arange(D, device=dev) % M  # input bin t -> output bin t mod M (A = 1/S [I..I])
    rows = torch.arange(R, device=dev)[:, None]
    # full training loss from sufficient statistics: mean (y - c.x)^2 = 1 - 2 c.b + c^T G c
    G = torch.einsum("rnd,rne->rde", x, x) / n_train
    b = torch.einsum("rn,rnd->rd", y, x) / n_train
    losses = torch.empty(R, iters + 1, dtype=torch.float64, device=dev)
    with threads(1, dev):
        for it in range(iters + 1):
            c = linear_pooling_weights(theta, phi, m_t, S)  # f(x) = c . x, shape (R, D)
            losses[:, it] = 1.0 - 2.0 * (c * b).sum(1) + torch.einsum("rd,rde,re->r", c, G, c)
            if it == iters:
                break
            idx = torch.randint(0, n_train, (R, batch), generator=generator, device=dev)
            xb, yb = x[rows, idx], y[rows, idx]  # (R, B, D), (R, B)
            resid = yb - torch.einsum("rbd,rd->rb", xb, c)
            grad_c = -2.0 * torch.einsum("rb,rbd->rd", resid, xb) / batch  # dJ/dc
            grad_phi = grad_c * linear_pooling_weights(theta, torch.ones_like(phi), m_t, S)
            grad_theta = torch.zeros(R, M, dtype=torch.float64, device=dev).index_add_(1, fold, grad_c * m_t * phi / S)
            phi = phi - lr * grad_phi
            theta = theta - lr * grad_theta
    losses = losses.cpu().numpy()
    return dict(
        loss=losses.mean(0),
        losses=losses,
        ell=int(ell),
        zeta=zeta(ell, m_t.cpu().numpy(), eps, sigma),
        bayes_loss=sigma**2 / (eps**2 + sigma**2),
    )


def convergence_iteration(loss, level: float) -> int | None:
    """First iteration at which ``loss`` drops below ``level`` (None if it never does)."""
    below = np.nonzero(np.asarray(loss) < level)[0]
    return int(below[0]) if below.size else None


def expected_gradient_covariance(m, s_theta: float, s_phi: float, S: int) -> np.ndarray:
    """Eq. (4): ``E[grad_x f grad_x f^T] = (s_theta^2 s_phi^2 / S^2) diag(m^2)`` for
    ``f(x) = theta^T A (m . phi . x)``, ``theta ~ N(0, s_theta^2 I_M)``, ``phi ~ N(0, s_phi^2 I_D)``.

    ``grad_x f = (A^T theta) . m . phi`` and ``(A^T theta)_t = theta_{t mod M} / S``. The paper
    prints ``s_phi^2 s_theta^2 diag(m^2)``: the ``1/S^2`` comes from the ``1/S`` in ``A``."""
    m2 = np.abs(np.asarray(m, dtype=float)) ** 2
    check_pooling_shape(m2.shape[0], S)
    return np.diag(s_theta**2 * s_phi**2 / S**2 * m2)


def expected_mixed_gram(m, s_theta: float, s_phi: float, S: int) -> np.ndarray:
    """Eq. (5): ``E[J^T J] = ((s_theta^2 + s_phi^2) / S^2) diag(m^2)`` with
    ``J = d^2 f / d(theta, phi) dx`` for the model of :func:`expected_gradient_covariance`.

    ``J`` stacks ``d^2 f / d phi dx = diag((A^T theta) . m)`` and
    ``d^2 f / d theta dx = A diag(m . phi)``; with ``A^T A`` equal to ``1/S^2`` on the pairs
    ``t = t' (mod M)`` and ``E[phi phi^T] = s_phi^2 I`` only the diagonal survives. The extracted
    text of the paper reads ``(s_theta^2 + s_phi^2 / S) diag(m^2)`` (the scaling depends on the
    normalisation of ``A``); the eigenvectors, the canonical basis ordered by ``m^2``, are those of
    eq. (4) either way."""
    m2 = np.abs(np.asarray(m, dtype=float)) ** 2
    check_pooling_shape(m2.shape[0], S)
    return np.diag((s_theta**2 + s_phi**2) / S**2 * m2)
