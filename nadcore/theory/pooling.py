"""Pooling as an anisotropic channel: Theorem 1 and Lemma 1 of the NAD paper.

Ortiz-Jimenez, Modas, Moosavi-Dezfooli, Frossard, "Neural Anisotropy Directions", NeurIPS 2020,
Sec. 2.1 (anisotropic loss of information, eq. (1), Theorem 1, Fig. 4a). Sec. 2.2 (Lemma 1, the
deep linear model of pooling) is :mod:`nadcore.theory.linear_pooling`. The book's chapter 1
(``chapters/01_pooling.py``) derives every formula implemented here.

Conventions (used throughout this module)
-----------------------------------------
* Signals have length ``D``; the pooling layer keeps one sample out of ``S``; ``M = D // S``.
* DFTs are numpy's *non-unitary* forward transform, ``X[l] = sum_n x[n] exp(-2i pi l n / D)``.
  With this convention a prefilter's spectrum has ``m_hat[0] = sum_n h[n]`` (1 for an averaging
  filter) and eq. (1) holds exactly: ``DFT_M(subsample_S(h * x)) = A (m_hat . DFT_D(x))`` with
  ``A = (1/S) [I_M ... I_M]``. The SNR ``gamma`` is a ratio of spectral energies, so it does not
  depend on the normalisation of the DFT at all.
* ``D(v)``: ``x = eps * y * v + w`` with ``y`` uniform in {-1, +1} and
  ``w ~ N(0, sigma^2 (I - v v^T))`` (paper Sec. 2).
* Real directions: ``real_fourier_direction(l, D, phase)`` is the unit vector proportional to
  ``cos(2 pi l n / D + phase)``. The paper's Theorem 1 is stated for the complex Fourier atom
  ``F^-1(e_l)``; :func:`gamma` is that closed form and :func:`gamma_real` its exact counterpart for
  real data (they coincide except when ``l`` and ``-l`` alias into the same output bin, i.e.
  ``2 l = 0 mod M``).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "aliasing_matrix",
    "average_pooling_prefilter",
    "ideal_lowpass_prefilter",
    "pooling_operator",
    "real_fourier_direction",
    "Q",
    "Phi",
    "gamma",
    "gamma_real",
    "bayes_accuracy_after_pooling",
    "linear_snr",
    "bayes_accuracy_linear",
    "stacked_pooling_operator_2d",
    "bayes_accuracy_map",
    "optimal_linear_classifier",
]

_TOL = 1e-12  # relative threshold under which a spectral energy counts as exactly zero


def check_pooling_shape(D: int, S: int) -> int:
    if D <= 0 or S <= 0 or D % S:
        raise ValueError(f"need positive D divisible by S, got D={D}, S={S}")
    return D // S


# --------------------------------------------------------------------------------------------
# Sec. 2.1: the pooling layer in the Fourier domain, eq. (1)
# --------------------------------------------------------------------------------------------


def aliasing_matrix(D: int, S: int) -> np.ndarray:
    """Aliasing matrix ``A = (1/S) [I_M  I_M ... I_M]`` of shape (M, D), ``M = D/S`` (paper eq. (1)).

    Output bin ``t`` of ``A u`` is ``(1/S) sum_k u[t + k M]``: subsampling by ``S`` folds the ``S``
    input frequencies ``t, t+M, ..., t+(S-1)M`` onto one output frequency.
    """
    M = check_pooling_shape(D, S)
    return np.tile(np.eye(M), (1, S)) / S


def average_pooling_prefilter(D: int, S: int) -> np.ndarray:
    """Spectrum ``m_hat`` (complex, length D) of average pooling's prefilter (paper eq. (1)).

    Average pooling computes ``z[j] = (1/S) sum_{i<S} x[jS + i]`` (PyTorch's ``AvgPool1d``), i.e.
    the circular convolution with the box ``h[-i mod D] = 1/S`` (i = 0..S-1) followed by keeping
    every S-th sample. ``m_hat`` is the non-unitary DFT of ``h``: ``m_hat[0] = 1`` and
    ``|m_hat[l]| = |sin(pi l S / D) / (S sin(pi l / D))|`` (a Dirichlet kernel with zeros at the
    multiples of ``M = D/S``). Its phase, ``pi l (S-1) / D``, only matters for real directions at
    the frequencies where ``l`` and ``-l`` alias together (see :func:`gamma_real`).
    """
    check_pooling_shape(D, S)
    h = np.zeros(D)
    h[(-np.arange(S)) % D] = 1.0 / S
    return np.fft.fft(h)


def ideal_lowpass_prefilter(D: int, S: int) -> np.ndarray:
    """Spectrum of the ideal anti-aliasing (brick-wall) prefilter for subsampling by ``S``.

    ``m_hat[l] = 1`` for ``|l| < M/2``, ``1/2`` at ``|l| = M/2`` (M even; keeps the filter real and
    symmetric) and 0 elsewhere, with ``|l|`` the circular distance of ``l`` to 0.
    """
    M = check_pooling_shape(D, S)
    l = np.arange(D)
    dist = np.minimum(l, D - l)
    m = np.where(2 * dist < M, 1.0, 0.0)
    m = np.where(2 * dist == M, 0.5, m)
    return m.astype(complex)


def pooling_operator(D: int, S: int, kind: str = "average", m_hat=None) -> np.ndarray:
    """Real (M, D) matrix ``P`` of a linear pooling layer: circular prefilter, then keep 1 in ``S``.

    ``kind="average"``: ``P[j, jS:(j+1)S] = 1/S`` (average pooling, prefilter
    :func:`average_pooling_prefilter`). ``kind="lowpass"``: the ideal low-pass prefilter.
    ``m_hat``: any conjugate-symmetric prefilter spectrum (overrides ``kind``). In every case
    ``fft(P @ x) == aliasing_matrix(D, S) @ (m_hat * fft(x))`` (paper eq. (1)).
    """
    M = check_pooling_shape(D, S)
    if m_hat is None:
        if kind == "average":
            P = np.zeros((M, D))
            for j in range(M):
                P[j, j * S : (j + 1) * S] = 1.0 / S
            return P
        if kind == "lowpass":
            m_hat = ideal_lowpass_prefilter(D, S)
        else:
            raise ValueError(f"unknown pooling kind {kind!r}; use 'average' or 'lowpass' or pass m_hat")
    m_hat = np.asarray(m_hat)
    if m_hat.shape != (D,):
        raise ValueError(f"m_hat must have shape ({D},), got {m_hat.shape}")
    h = np.fft.ifft(m_hat)
    if np.abs(h.imag).max() > 1e-9 * max(np.abs(h).max(), 1e-300):
        raise ValueError("m_hat is not conjugate-symmetric: the prefilter would not be real")
    h = h.real
    # (h * x)[n] = sum_k h[(n - k) mod D] x[k]; keep rows n = 0, S, 2S, ...
    rows = np.arange(M)[:, None] * S
    cols = np.arange(D)[None, :]
    return h[(rows - cols) % D]


def real_fourier_direction(ell: int, D: int, phase: float = 0.0) -> np.ndarray:
    """Unit vector ``v_l`` proportional to ``cos(2 pi l n / D + phase)``, n = 0..D-1.

    Its spectrum lives on the conjugate pair ``{l, D-l}`` (a single bin for l = 0, D/2). ``l`` and
    ``D-l`` give the same direction up to the sign of the phase. Raises if the vector vanishes
    (``l`` in {0, D/2} with ``cos(phase) = 0``).
    """
    n = np.arange(D)
    v = np.cos(2 * np.pi * ell * n / D + phase)
    norm = np.linalg.norm(v)
    if norm < 1e-8:
        raise ValueError(f"cos(2 pi {ell} n / {D} + {phase}) is identically zero: pick another phase")
    return v / norm


# --------------------------------------------------------------------------------------------
# Theorem 1: Bayes-optimal accuracy after pooling
# --------------------------------------------------------------------------------------------


def Phi(x):
    """Standard normal CDF (works on scalars and arrays, ``Phi(inf) = 1``)."""
    x = np.asarray(x, dtype=float)
    out = 0.5 * np.vectorize(math.erfc, otypes=[float])(-x / math.sqrt(2.0))
    return out if out.ndim else float(out)


def Q(x):
    """Gaussian tail function ``Q(x) = 1 - Phi(x)`` (the ``Q`` of Theorem 1)."""
    x = np.asarray(x, dtype=float)
    out = 0.5 * np.vectorize(math.erfc, otypes=[float])(x / math.sqrt(2.0))
    return out if out.ndim else float(out)


def _ratio(num, den, scale):
    """num/den with exact zeros: den ~ 0 -> inf (or 0 if num ~ 0 too); num ~ 0 -> 0."""
    zero_num = num <= _TOL * scale
    zero_den = den <= _TOL * scale
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(zero_den, np.inf, num / np.where(zero_den, 1.0, den))
    return np.where(zero_num, 0.0, r)


def gamma(ell, m_hat, S: int):
    """Theorem 1's SNR ``gamma(l)`` (paper eq. (2)), the closed form for a complex Fourier atom.

    ``gamma(l)^2 = |m_hat[l]|^2 / sum_{k=1}^{S-1} |m_hat[(l + k M) mod D]|^2``, ``M = D/S``.
    After pooling, output bin ``l mod M`` receives the signal ``(1/S) m_hat[l] eps y`` and the noise
    of the ``S-1`` input bins that alias onto it; the noise in bin ``l`` itself is orthogonal to
    the signal. Returns ``inf`` where the aliased energy is (numerically) zero and 0 where
    ``m_hat[l]`` is; scalars in, float out; arrays in, array out. (The extracted paper text shows an
    extra ``S`` in eq. (2); with the normalisation of D(v) used here, the Monte Carlo check of the
    book's chapter 1 confirms the formula without it.)
    """
    m2 = np.abs(np.asarray(m_hat)) ** 2
    D = m2.shape[0]
    M = check_pooling_shape(D, S)
    ell = np.asarray(ell) % D
    num = m2[ell]
    den = sum(m2[(ell + k * M) % D] for k in range(1, S)) if S > 1 else np.zeros_like(num)
    g = np.sqrt(_ratio(num, den, m2.max()))
    return g if g.ndim else float(g)


def gamma_real(ell, m_hat, S: int, phase: float = 0.0):
    """Exact SNR after pooling for the REAL direction ``v ~ cos(2 pi l n / D + phase)``.

    Let ``K_l = {(l + k M) mod D}`` be the input bins that alias onto output bin ``l mod M``.
    * If ``-l`` is not in ``K_l`` (generic ``l``) the answer is :func:`gamma` (the paper's form):
      the noise that shares the signal's own bin is in quadrature with it and costs nothing.
    * If ``l = -l mod D`` (``l`` = 0 or D/2) it is also :func:`gamma`.
    * If ``-l`` is in ``K_l`` but ``l != -l`` (i.e. ``2l = 0 mod M``), the two halves of the real
      cosine land in the same real output coefficient and interfere. With
      ``psi = phase + arg m_hat[l]``:
      ``gamma_real^2 = 2|m_hat[l]|^2 cos^2 psi / (2|m_hat[l]|^2 sin^2 psi + sum_{i in K_l minus {l,-l}} |m_hat[i]|^2)``.
      It equals :func:`gamma` at ``cos^2 psi = 1/2``, ranges from 0 to
      ``sqrt(2|m_hat[l]|^2 / sum_{others})`` and depends on the phase of the direction relative to
      the pooling grid. Assumes a real prefilter (``m_hat[-l] = conj(m_hat[l])``).
    """
    m_hat = np.asarray(m_hat)
    D = m_hat.shape[0]
    M = check_pooling_shape(D, S)
    ells = np.atleast_1d(np.asarray(ell) % D)
    out = np.empty(ells.shape, dtype=float)
    m2 = np.abs(m_hat) ** 2
    scale = m2.max()
    for i, l in enumerate(ells.ravel()):
        l = int(l)
        neg = (-l) % D
        aliases = {(l + k * M) % D for k in range(S)}
        if neg == l or neg not in aliases:
            out.flat[i] = gamma(l, m_hat, S)
            continue
        psi = phase + np.angle(m_hat[l])
        sig = 2 * m2[l] * math.cos(psi) ** 2
        others = sum(m2[a] for a in aliases - {l, neg})
        noise = 2 * m2[l] * math.sin(psi) ** 2 + others
        out.flat[i] = math.sqrt(float(_ratio(np.array(sig), np.array(noise), scale)))
    return out.reshape(np.shape(ell)) if np.ndim(ell) else float(out[0])


def bayes_accuracy_after_pooling(ell, m_hat, S: int, eps: float, sigma: float, phase=None):
    """Theorem 1: best achievable accuracy on pooled samples of ``D(v_l)``: ``1 - Q(eps gamma / sigma)``.

    ``phase=None`` uses the paper's closed form :func:`gamma`; a float uses the exact value for the
    real direction ``cos(2 pi l n / D + phase)`` (:func:`gamma_real`). ``gamma = inf`` gives 1,
    ``gamma = 0`` gives 1/2.
    """
    g = gamma(ell, m_hat, S) if phase is None else gamma_real(ell, m_hat, S, phase)
    return Phi(eps * np.asarray(g) / sigma)


# --------------------------------------------------------------------------------------------
# The exact answer for any linear feature map P (used to validate Theorem 1)
# --------------------------------------------------------------------------------------------


def _snr_parts(P: np.ndarray, v: np.ndarray):
    P = np.asarray(P, dtype=float)
    v = np.asarray(v, dtype=float)
    v = v / np.linalg.norm(v)
    b = P @ v  # class mean (per unit eps)
    K = P @ P.T - np.outer(b, b)  # noise covariance (per unit sigma^2)
    lam, U = np.linalg.eigh(K)
    c = U.T @ b
    big = lam > 1e-10 * max(lam.max(), 1e-300)
    return b, lam, U, c, big


def linear_snr(P: np.ndarray, v: np.ndarray) -> float:
    """``sqrt(mu^T Sigma^+ mu)`` per unit ``eps/sigma`` for ``z = P x``, ``x ~ D(v)``; ``inf`` if the
    mean has a component outside ``range(Sigma)`` (the classes are then perfectly separable).

    Class means ``+-eps P v``; covariance ``sigma^2 P (I - v v^T) P^T``.
    """
    b, lam, U, c, big = _snr_parts(P, v)
    bnorm = np.linalg.norm(b)
    if bnorm == 0:
        return 0.0
    if np.linalg.norm(c[~big]) > 1e-7 * bnorm:
        return math.inf
    return float(math.sqrt(np.sum(c[big] ** 2 / lam[big])))


def bayes_accuracy_linear(P: np.ndarray, v: np.ndarray, eps: float, sigma: float) -> float:
    """Exact Bayes accuracy for classifying ``z = P x``, ``x ~ D(v)``: ``Phi(eps/sigma * linear_snr)``.

    Two Gaussians with means ``+-eps P v`` and shared covariance ``sigma^2 P (I - v v^T) P^T`` and
    equal priors: the Bayes rule is linear and its accuracy is ``Phi(sqrt(mu^T Sigma^+ mu))``
    (1 when ``mu`` leaves the range of ``Sigma``). Valid for any real matrix ``P`` and unit ``v``.
    """
    return float(Phi(eps * linear_snr(P, v) / sigma))


def stacked_pooling_operator_2d(size: int, pools: int, S: int = 2) -> np.ndarray:
    """The matrix of ``pools`` stacked S x S average poolings of a ``size`` x ``size`` image
    (row-major pixels): the separable 2-D operator ``kron(P, P)``, P the 1-D product of
    :func:`pooling_operator` s."""
    P, d = np.eye(size), size
    for _ in range(pools):
        P, d = pooling_operator(d, S) @ P, d // S
    return np.kron(P, P)


def bayes_accuracy_map(P: np.ndarray, directions, eps: float, sigma: float) -> np.ndarray:
    """Theorem 1 over many directions: :func:`bayes_accuracy_linear` after the linear layer
    ``P`` for each unit direction of ``directions`` (flattened). For LeNet's two poolings (a
    linear stand-in for its max poolings), ``P = stacked_pooling_operator_2d(32, 2)``."""
    return np.array(
        [bayes_accuracy_linear(P, np.asarray(v, dtype=np.float64).reshape(-1), eps, sigma) for v in directions]
    )


def optimal_linear_classifier(P: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Weights ``w`` of the Bayes classifier ``sign(w^T z)`` for ``z = P x``, ``x ~ D(v)``.

    ``w = Sigma^+ mu`` (LDA with the true covariance), or the part of ``mu`` outside
    ``range(Sigma)`` when there is one (a noiseless, perfectly separating direction).
    """
    b, lam, U, c, big = _snr_parts(P, v)
    bnorm = np.linalg.norm(b)
    if bnorm > 0 and np.linalg.norm(c[~big]) > 1e-7 * bnorm:
        return U[:, ~big] @ c[~big]
    return U[:, big] @ (c[big] / lam[big]) if bnorm > 0 else np.zeros_like(b)


# --------------------------------------------------------------------------------------------
# Monte Carlo check of Theorem 1 in pixel space
# --------------------------------------------------------------------------------------------
