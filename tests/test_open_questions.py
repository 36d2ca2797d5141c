"""Chapter 6's library code: the downsampling variants (nadcore.nets.variants), the mixed-Hessian
operator (nadcore.nads.mixed_hessian), eqs. (4)-(5) (nadcore.pooling.linear_pooling), the NADs of
trained networks (nadcore.nads.trained) and the anisotropy summaries and jobs
(nadcore.chapters.open_questions.runs)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from nadcore.chapters.open_questions import runs as oq
from nadcore.data import fourier_basis_vector
from nadcore.nads import mixed_hessian, subspace_overlap
from nadcore.nads import trained as T
from nadcore.nads.sampling import Sampler
from nadcore.nets import build_model, init_plan, variants
from nadcore.runtime import generator, resolve_device
from nadcore.theory import linear_pooling, pooling
from nadcore.train import batched_forward, train_classifier

VARIANT_SPECS = list(variants.VARIANTS.values())
RESNETS = ["nadcore.nets.variants:resnet_skip", "nadcore.nets.variants:resnet_noskip"]


# --------------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", VARIANT_SPECS + RESNETS)
@pytest.mark.parametrize("channels", [1, 3])
def test_models_shapes_and_seeded_init(spec, channels):
    m = build_model(spec, channels, 1, seed=5)
    assert init_plan(m) is not None, "every parameter must follow the default init (batched NADs)"
    assert m(torch.zeros(4, channels, 32, 32)).shape == (4, 1)
    again = build_model(spec, channels, 1, seed=5)
    other = build_model(spec, channels, 1, seed=6)
    p, q, r = (torch.cat([x.flatten() for x in mm.parameters()]) for mm in (m, again, other))
    assert torch.equal(p, q) and not torch.equal(p, r)


@pytest.mark.parametrize("kind", variants.DOWNSAMPLING)
def test_lenet_variants_keep_lenet_sizes(kind):
    m = variants.DownsamplingLeNet(1, 1, kind)
    h = m.downsample(F.relu(m.conv1(torch.zeros(2, 1, 32, 32))))
    assert h.shape == (2, 6, 14, 14)
    assert m.downsample(F.relu(m.conv2(h))).shape == (2, 16, 5, 5)


def test_max_variant_is_lenet():
    a = build_model("lenet", 1, 1, seed=3)
    b = variants.DownsamplingLeNet(1, 1, "max")
    b.load_state_dict(a.state_dict())
    x = torch.randn(5, 1, 32, 32, generator=generator(0, 61))
    assert torch.allclose(a(x), b(x))


def test_blur_downsample_is_binomial_filter_then_subsample():
    x = torch.randn(2, 3, 14, 14, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    k = torch.tensor([1.0, 2.0, 1.0], dtype=torch.float64)
    k2 = torch.outer(k, k) / 16
    pad = F.pad(x, (1, 1, 1, 1), mode="reflect")
    full = torch.stack([F.conv2d(pad[:, c : c + 1], k2[None, None]) for c in range(3)], 1)[:, :, 0]
    assert torch.allclose(variants.blur_downsample(x), full[:, :, ::2, ::2])
    const = torch.ones(1, 1, 8, 8)
    assert torch.allclose(variants.blur_downsample(const), torch.ones(1, 1, 4, 4))  # DC gain 1


@pytest.mark.parametrize("spec", VARIANT_SPECS[1:])
def test_batched_lenet_path_equals_the_modules(spec):
    """train_many's grouped-convolution path (lenet_layout) computes what each module computes."""
    models = [build_model(spec, 1, 1, seed=s) for s in range(3)]
    names = [n for n, _ in models[0].named_parameters()]
    params = [torch.stack([dict(m.named_parameters())[n].detach() for m in models]) for n in names]
    x = torch.randn(3, 4, 1, 32, 32, generator=torch.Generator().manual_seed(2))
    out = batched_forward(models[0], names)(params, x)
    ref = torch.stack([m(x[i]) for i, m in enumerate(models)])
    assert torch.allclose(out, ref, atol=1e-5)


def test_resnet_without_skip_has_no_shortcut():
    a = variants.ResidualNet(skip=True)
    b = variants.ResidualNet(skip=False)
    assert b.proj is None and a.proj is not None
    assert sum(p.numel() for p in a.parameters()) > sum(p.numel() for p in b.parameters())


# --------------------------------------------------------------------------------------------
# The mixed Hessian
# --------------------------------------------------------------------------------------------
def _tiny_net():
    g = torch.Generator().manual_seed(3)
    params = {
        "w1": torch.randn(5, 6, generator=g, dtype=torch.float64),
        "b1": torch.randn(5, generator=g, dtype=torch.float64),
        "w2": torch.randn(5, generator=g, dtype=torch.float64),
    }

    def f(p, x):
        return p["w2"] @ torch.tanh(p["w1"] @ x + p["b1"])

    return f, params, torch.randn(6, generator=g, dtype=torch.float64)


def test_mixed_gram_product_against_dense_jacobian():
    f, params, x = _tiny_net()
    names = list(params)

    def grad_theta(xx):
        g = torch.func.grad(f)(params, xx)
        return torch.cat([g[n].reshape(-1) for n in names])

    J = torch.autograd.functional.jacobian(grad_theta, x)  # (P, D), dense
    dense = J.T @ J
    op = mixed_hessian.mixed_gram_product(f, params, x, torch.eye(6, dtype=torch.float64))
    assert torch.allclose(op, dense, atol=1e-12)


def test_network_moments_use_the_networks_of_the_nad_estimator():
    """Same networks and evaluation point as compute_nads(..., method="gradient") of the seed; for
    logistic regression f = w.x + b, so grad_x f = w and J = d(grad_theta f)/dx = [I; 0]."""
    r = mixed_hessian.network_moments("logreg", 3, seed=4, block=512)
    rows = Sampler("logreg", (1, 32, 32), 4, "gradient", 1.0, resolve_device("cpu"), "auto", 1, "float32").rows(
        np.arange(3)
    )
    assert rows.shape == (1, 3, 1024)
    assert np.allclose(r["gradients"], rows[0], atol=1e-6)
    assert np.allclose(r["mixed"], np.eye(1024), atol=1e-6)
    # the chapter's job computes the same moments
    arrays, meta = oq.mixed_moments_job({"model": "logreg", "networks": 3, "seed": 4, "input_shape": [1, 32, 32]})
    assert np.allclose(arrays["gradients"], r["gradients"]) and np.allclose(arrays["mixed"], r["mixed"])
    assert meta["seconds"] > 0


def test_eq4_eq5_closed_forms_exact_and_monte_carlo():
    D, S, st, sp = 16, 4, 0.7, 1.3
    m = np.abs(pooling.average_pooling_prefilter(D, S))
    closed = {
        "gradient": linear_pooling.expected_gradient_covariance(m, st, sp, S),
        "mixed": linear_pooling.expected_mixed_gram(m, st, sp, S),
    }
    exact = mixed_hessian.linear_pooling_moments(m, S, st, sp)
    for k in closed:
        assert np.abs(exact[k] - closed[k]).max() < 1e-12 * np.abs(closed[k]).max()
    mc = mixed_hessian.linear_pooling_monte_carlo(m, S, st, sp, 3000, generator(0, 61))
    for k in closed:
        assert np.abs(mc[k] - closed[k]).max() < 0.25 * np.abs(closed[k]).max()
    # the two matrices share their eigenvectors: one is a multiple of the other
    ratio = (st**2 + sp**2) / (st**2 * sp**2)
    assert np.allclose(closed["mixed"], ratio * closed["gradient"])


# --------------------------------------------------------------------------------------------
# NADs of trained networks
# --------------------------------------------------------------------------------------------
def test_network_nads_equal_the_eigenvectors_of_the_egop():
    G = np.random.default_rng(0).standard_normal((40, 64)) * np.linspace(3, 0.1, 64)
    lam, V = T.network_nads(G, 8)
    w, E = np.linalg.eigh(G.T @ G / 40)
    assert np.allclose(lam, w[::-1][:8])
    assert subspace_overlap(V, E[:, ::-1].T, 8) == pytest.approx(1.0, abs=1e-9)
    assert np.allclose(V @ V.T, np.eye(8), atol=1e-9)


def test_input_gradients_per_sample():
    m = build_model("lenet", 1, 1, seed=0)
    x = torch.randn(3, 1, 32, 32, generator=generator(0, 61))
    G = T.input_gradients(m, x, batch=2)
    xx = x[1:2].clone().requires_grad_(True)
    (g,) = torch.autograd.grad(m(xx).sum(), xx)
    assert G.shape == (3, 1024)
    assert np.allclose(G[1], g.reshape(-1).double().numpy(), atol=1e-6)


def test_epoch_snapshots_record_the_start_of_every_epoch():
    m = build_model("logreg", 1, 1, seed=0)
    x = torch.randn(60, 1, 32, 32, generator=torch.Generator().manual_seed(1))
    y = torch.where(x[:, 0, 0, 0] > 0, 1, -1)
    start = {k: v.clone() for k, v in m.state_dict().items()}
    with T.epoch_snapshots(m, iters_per_epoch=2) as snaps:  # 60 samples, batch 32: 2 per epoch
        train_classifier(
            m, x, y, epochs=3, batch_size=32, max_lr=0.1, generator=torch.Generator().manual_seed(2), device="cpu"
        )
    assert len(snaps) == 3
    assert all(torch.equal(snaps[0][k], start[k]) for k in start)
    assert not torch.equal(snaps[1]["fc.weight"], snaps[0]["fc.weight"])
    assert not torch.equal(snaps[2]["fc.weight"], m.state_dict()["fc.weight"])


def test_remove_components_per_channel():
    g = torch.Generator().manual_seed(0)
    U = T.random_orthonormal(5, 64, g)
    assert np.allclose(U @ U.T, np.eye(5))
    x = np.random.default_rng(1).standard_normal((4, 3, 8, 8)).astype(np.float32)
    xr = T.remove_components(x, U)
    assert np.abs(xr.reshape(12, 64) @ U.T).max() < 1e-5
    assert np.allclose(T.remove_components(xr, U), xr, atol=1e-5)
    P = T.principal_directions(x)
    assert P.shape == (64, 64) and np.allclose(P @ P.T, np.eye(64), atol=1e-8)


# --------------------------------------------------------------------------------------------
# Anisotropy summaries
# --------------------------------------------------------------------------------------------
def test_alpha_is_the_quadratic_form_of_the_covariance():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((16, 16))
    C = A @ A.T
    w, E = np.linalg.eigh(C)
    V = rng.standard_normal((5, 16))
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    raw = oq.alpha(w, E.T, V, normalise=False)
    assert np.allclose(raw, np.einsum("id,de,ie->i", V, C, V))
    assert np.allclose(oq.alpha(w, E.T, V), raw / (np.trace(C) / 16))
    assert oq.alpha(np.ones(16), np.eye(16), V) == pytest.approx(np.ones(5))  # isotropic


def test_quadrant_grid_and_map_summary():
    g = oq.quadrant_grid([0, 4, 8, 12, 16])
    assert g.shape == (5, 5) and g.frequencies[0] == (0, 0) and g.frequencies[-1] == (16, 16)
    with pytest.raises(ValueError):
        oq.quadrant_grid([0, 20])
    acc = np.full((2, 5, 5), 0.5)
    acc[:, 0, 0] = 0.9
    acc[0, 4, 1] = 0.8  # one island, seed 0 only
    s = oq.map_summary(acc, g, off_centre=8, island=0.6)
    far = 25 - 4
    assert s["islands"] == pytest.approx([1 / far, 0.0])
    assert s["centre"] == pytest.approx([0.6, 0.6])
    assert s["spread"] == pytest.approx([0.4, 0.4])
    off = (0.5 * (far - 1) + 0.8) / far
    assert s["gap"] == pytest.approx([abs(0.6 - off), 0.1])
    assert list(s["learned"]) == [True, True]
    r = {"test_acc": acc, "train_acc": np.ones_like(acc), "trained": g.k1 <= g.k2}
    t = oq.map_table({"m": r}, g, [3, 4])
    assert len(t) == 2 * 25 and t["trained"].sum() == 2 * 15
    row = t[(t.seed == 3) & (t.k1 == 16) & (t.k2 == 4)]
    assert row["test_acc"].item() == pytest.approx(0.8) and not row["trained"].item()
    assert list(oq.summary_frame({"m": s}, {"m": r}).index) == ["m"]


def test_linear_pooling_check_is_exact():
    c = oq.linear_pooling_check(16, 4, (0.7, 1.3), 50, generator(0, 61))
    assert c["exact"] < 1e-12 and 0 < c["monte_carlo"] < 1
    assert c["ratio"][0] == pytest.approx(c["ratio_closed"]) and c["ratio"][1] == pytest.approx(c["ratio_closed"])


def test_spectrum_summary_on_fourier_directions():
    U = np.stack([fourier_basis_vector(0, 1).numpy().ravel(), fourier_basis_vector(16, 16).numpy().ravel()])
    s = oq.spectrum_summary(np.array([3.0, 1.0]), U, k=1, radius=8)
    assert s["top_k"] == pytest.approx(0.75)
    assert s["first_low"] == pytest.approx(1.0)
    assert s["low_frequency"] == pytest.approx(0.75)


def test_nad_table_is_tidy():
    U = np.eye(16)[:3]
    t = oq.nad_table({"a": U}, (0, 2), seed=7)
    assert len(t) == 2 * 16 and set(t.columns) == {"nads", "index", "row", "col", "value", "seed"}
    one = t[(t["index"] == 2) & (t["value"] == 1.0)]
    assert (int(one.row.iloc[0]), int(one.col.iloc[0])) == (0, 2)
