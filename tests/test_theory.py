"""Tests of nadcore.theory: eq. (1), Theorem 1 (closed form == exact == simulation) in
nadcore.theory.pooling, Lemma 1 in nadcore.theory.linear_pooling."""

import math

import numpy as np
import pytest
import torch

from nadcore.chapters.pooling import runs as simulation
from nadcore.runtime import generator
from nadcore.theory import linear_pooling as L
from nadcore.theory import pooling as T

D, S = 128, 4
M = D // S


@pytest.fixture(autouse=True)
def _one_thread():
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def test_aliasing_matrix_shape_and_values():
    A = T.aliasing_matrix(D, S)
    assert A.shape == (M, D)
    assert np.allclose(A, np.hstack([np.eye(M)] * S) / S)
    assert np.allclose(A.sum(1), 1.0)
    with pytest.raises(ValueError):
        T.aliasing_matrix(10, 4)
    assert T.check_pooling_shape(D, S) == M
    for bad in [(10, 4), (0, 4), (8, 0), (-8, 4)]:
        with pytest.raises(ValueError, match="divisible"):
            T.check_pooling_shape(*bad)


def test_threads_limits_and_restores_the_callers_threads():
    from threadpoolctl import threadpool_info

    from nadcore.runtime import threads

    saved = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with threads(1, "cpu"):
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
        with threads(1, "meta"):  # not the CPU: untouched
            assert torch.get_num_threads() == 2
        with threads(1, blas=True):
            assert all(p["num_threads"] == 1 for p in threadpool_info() if p["user_api"] == "blas")
    finally:
        torch.set_num_threads(saved)


def test_average_prefilter_is_dirichlet_kernel():
    m = T.average_pooling_prefilter(D, S)
    assert m[0] == pytest.approx(1.0)
    l = np.arange(1, D)
    dirichlet = np.abs(np.sin(np.pi * l * S / D) / (S * np.sin(np.pi * l / D)))
    assert np.allclose(np.abs(m[1:]), dirichlet)
    # the S aliases of any bin carry unit total energy (box of length S, subsampling by S)
    for t in range(M):
        assert sum(abs(m[t + k * M]) ** 2 for k in range(S)) == pytest.approx(1.0)


@pytest.mark.parametrize("kind", ["average", "lowpass", "random"])
def test_pooling_operator_satisfies_eq1(kind):
    rng = np.random.default_rng(0)
    if kind == "random":
        m_hat = np.fft.fft(rng.standard_normal(D) * np.exp(-np.arange(D) / 3.0))
        P = T.pooling_operator(D, S, m_hat=m_hat)
    else:
        m_hat = T.average_pooling_prefilter(D, S) if kind == "average" else T.ideal_lowpass_prefilter(D, S)
        P = T.pooling_operator(D, S, kind=kind)
    x = rng.standard_normal(D)
    assert P.shape == (M, D)
    assert np.allclose(np.fft.fft(P @ x), T.aliasing_matrix(D, S) @ (m_hat * np.fft.fft(x)))


def test_pooling_operator_average_of_constant_and_blocks():
    P = T.pooling_operator(D, S)
    assert np.allclose(P @ np.full(D, 3.5), 3.5)
    x = np.arange(D, dtype=float)
    assert np.allclose(P @ x, x.reshape(M, S).mean(1))
    assert np.allclose(P, T.pooling_operator(D, S, m_hat=T.average_pooling_prefilter(D, S)))


def test_gamma_closed_form_equals_exact_formula_for_generic_frequencies():
    m_hat = T.average_pooling_prefilter(D, S)
    P = T.pooling_operator(D, S)
    for ell in [1, 3, 7, 13, 20, 27, 31, 37, 40, 55, 63]:
        assert (2 * ell) % M != 0
        for phase in [0.0, 0.7, -np.pi / 2]:
            exact = T.linear_snr(P, T.real_fourier_direction(ell, D, phase))
            assert exact == pytest.approx(T.gamma(ell, m_hat, S), rel=1e-9)
            acc = T.bayes_accuracy_linear(P, T.real_fourier_direction(ell, D, phase), 1.0, 2.0)
            assert acc == pytest.approx(T.bayes_accuracy_after_pooling(ell, m_hat, S, 1.0, 2.0), abs=1e-12)


def test_gamma_real_equals_exact_everywhere_for_several_prefilters():
    rng = np.random.default_rng(1)
    filters = [
        T.average_pooling_prefilter(D, S),
        T.ideal_lowpass_prefilter(D, S),
        np.fft.fft(rng.standard_normal(D) * np.exp(-np.arange(D) / 3.0)),
    ]
    for m_hat in filters:
        P = T.pooling_operator(D, S, m_hat=m_hat)
        for phase in [0.0, 0.4, np.pi / 2]:
            for ell in range(0, D // 2 + 1):
                try:
                    v = T.real_fourier_direction(ell, D, phase)
                except ValueError:
                    continue
                exact, g = T.linear_snr(P, v), T.gamma_real(ell, m_hat, S, phase)
                if math.isinf(exact) or math.isinf(g):
                    assert math.isinf(exact) and math.isinf(g), (ell, phase)
                else:
                    assert exact == pytest.approx(g, rel=1e-8, abs=1e-10), (ell, phase)


def test_special_frequencies_and_edge_cases():
    m_hat = T.average_pooling_prefilter(D, S)
    # l = 0: no aliased energy -> infinite SNR, accuracy 1; l = M, D/2: the box kills the signal
    assert math.isinf(T.gamma(0, m_hat, S))
    assert T.bayes_accuracy_after_pooling(0, m_hat, S, 1.0, 3.0) == 1.0
    assert T.gamma(M, m_hat, S) == 0.0 and T.gamma(D // 2, m_hat, S) == 0.0
    assert T.bayes_accuracy_after_pooling(M, m_hat, S, 1.0, 1.0) == 0.5
    # l = M/2: l and -l alias together; the closed form is the real value at cos^2(psi) = 1/2
    ell = M // 2
    psi0 = -np.angle(m_hat[ell])
    assert T.gamma_real(ell, m_hat, S, psi0 + np.pi / 4) == pytest.approx(T.gamma(ell, m_hat, S))
    assert T.gamma_real(ell, m_hat, S, psi0 + np.pi / 2) == pytest.approx(0.0, abs=1e-7)
    assert T.gamma_real(ell, m_hat, S, psi0) > T.gamma(ell, m_hat, S)
    # vectorised call agrees with scalar calls
    ells = np.arange(10)
    assert np.allclose(T.gamma(ells, m_hat, S), [T.gamma(int(l), m_hat, S) for l in ells])


def test_theorem1_matches_monte_carlo():
    m_hat = T.average_pooling_prefilter(D, S)
    n = 20_000
    for i, ell in enumerate([1, 20, 40]):
        acc, se = simulation.monte_carlo_accuracy_after_pooling(ell, D, S, 1.0, 1.0, n, generator(0, i))
        theory = T.bayes_accuracy_after_pooling(ell, m_hat, S, 1.0, 1.0)
        se0 = math.sqrt(theory * (1 - theory) / n)
        assert se == pytest.approx(math.sqrt(acc * (1 - acc) / n))
        if se0 == 0:
            assert acc == 1.0
        else:
            assert abs(acc - theory) < 4 * se0, (ell, acc, theory)
    rows = simulation.compare_theorem1_monte_carlo([16, 40], D, S, 1.0, 1.0, 5000, generator(1))
    assert all(r["z"] < 4 for r in rows)
    assert rows[0]["exact"] < rows[0]["closed_form"] - 0.1  # cosine at l = M/2 loses more


def test_zeta_monotone_for_box_filter():
    m = np.abs(T.average_pooling_prefilter(D, S))
    z = L.zeta(np.arange(M + 1), m, 1.0, 0.5)
    assert z[0] == pytest.approx(4.0)
    assert np.all(np.diff(z) < 0)
    assert z[M] == pytest.approx(0.0, abs=1e-20)
    assert L.zeta(3, m, 1.0, 0.5) == pytest.approx(z[3])


def test_expected_hessian_matches_average():
    m = np.abs(T.average_pooling_prefilter(16, 4))
    H = L.expected_hessian_phi(3, m, 1.0, 0.5, 1.0, 4)
    Hemp = L.empirical_hessian_phi(3, m, 1.0, 0.5, 1.0, 4, 40_000, generator(2))
    assert np.allclose(H, np.diag(np.diag(H)))
    assert np.abs(Hemp - H).max() < 0.05 * np.abs(H).max()


def test_linear_pooling_model_trains_faster_at_low_frequency():
    m = np.abs(T.average_pooling_prefilter(D, S))
    kw = dict(D=D, S=S, m=m, eps=1.0, sigma=0.5, n_train=512, iters=400, lr=0.2, batch=64, repeats=3)
    low = L.train_linear_pooling_model(1, generator=generator(3), **kw)
    high = L.train_linear_pooling_model(26, generator=generator(3), **kw)
    for r in (low, high):
        assert r["loss"].shape == (401,) and r["losses"].shape == (3, 401)
        assert np.allclose(r["loss"], r["losses"].mean(0))
        assert r["loss"][-1] < 0.7 * r["loss"][0]
    assert low["loss"][-1] < 1.3 * low["bayes_loss"]
    level = 0.5 * (1 + low["bayes_loss"])
    t_low, t_high = L.convergence_iteration(low["loss"], level), L.convergence_iteration(high["loss"], level)
    assert t_low is not None and (t_high is None or 3 * t_low < t_high), (t_low, t_high)
    assert low["zeta"] > 10 * high["zeta"]


def test_linear_pooling_model_matches_autograd_sgd():
    # the recorded losses are the plain training loss before and after one autograd SGD step
    m = torch.as_tensor(np.abs(T.average_pooling_prefilter(16, 4)))
    lr, B = 0.3, 8
    r = L.train_linear_pooling_model(2, 16, 4, m.numpy(), 1.0, 0.5, 64, 1, lr, B, generator(5), repeats=2)
    g = generator(5)
    y = torch.randint(0, 2, (2, 64), generator=g).double() * 2 - 1
    x = 0.5 * torch.randn(2, 64, 16, generator=g, dtype=torch.float64)
    x[:, :, 2] += y
    theta = (0.5 * torch.randn(2, 4, generator=g, dtype=torch.float64)).requires_grad_()
    phi = (0.5 * torch.randn(2, 16, generator=g, dtype=torch.float64)).requires_grad_()
    idx = torch.randint(0, 64, (2, B), generator=g)
    A = torch.as_tensor(T.aliasing_matrix(16, 4))

    def f(th, ph, xx):
        return torch.einsum("rm,md,rnd->rn", th, A, m * ph[:, None, :] * xx)

    loss0 = ((y - f(theta, phi, x)) ** 2).mean(1)
    rows = torch.arange(2)[:, None]
    batch_loss = ((y[rows, idx] - f(theta, phi, x[rows, idx])) ** 2).mean(1).sum()
    gth, gph = torch.autograd.grad(batch_loss, (theta, phi))
    with torch.no_grad():
        loss1 = ((y - f(theta - lr * gth, phi - lr * gph, x)) ** 2).mean(1)
    assert np.allclose(r["losses"][:, 0], loss0.detach().numpy())
    assert np.allclose(r["losses"][:, 1], loss1.numpy())
