"""Tests of chapter 5 (underspecification): the datasets of nadcore.data.underspec, the channel
ablations, cross-sections and experiments of nadcore.chapters.underspecification.runs, and the
seed summaries of nadcore.book.evidence."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch
import torch.nn as nn

from nadcore.book import evidence, profiles
from nadcore.book.cache import Cache
from nadcore.chapters.underspecification import runs as ux
from nadcore.data import cifar
from nadcore.data import underspec as us
from nadcore.nets import build_model, variants
from nadcore.train import lr_at


def _basis(seed=0, k=4):
    """k random orthonormal 1024-vectors (rows)."""
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((1024, k)))
    return q.T.astype(np.float32)


def _linear_model(w, bias=0.0):
    """One-output linear model f(x) = <w, x> + bias on (N, *w.shape) inputs."""
    w = torch.as_tensor(w, dtype=torch.float32)
    m = nn.Sequential(nn.Flatten(), nn.Linear(w.numel(), 1))
    with torch.no_grad():
        m[1].weight.copy_(w.reshape(1, -1))
        m[1].bias.fill_(bias)
    return m


def test_directional_with_labels_is_d_v_given_y():
    v = _basis(1, 1)[0].reshape(1, 32, 32)
    y = torch.tensor([1, -1, -1, 1, 1, -1] * 50)
    x = us.directional_with_labels(v, y, sigma=2.0, epsilon=0.7, generator=torch.Generator().manual_seed(0))
    proj = x.reshape(len(y), -1).double() @ torch.as_tensor(v).reshape(-1).double()
    assert torch.allclose(proj, 0.7 * y.double(), atol=1e-4)
    # the noise orthogonal to v has variance sigma^2 per coordinate
    assert abs(float(x.reshape(len(y), -1).std()) - 2.0) < 0.05
    with pytest.raises(ValueError):
        us.directional_with_labels(v, torch.tensor([0, 1]), 1.0, 1.0, generator=torch.Generator())


def test_underspecified_dataset_shares_labels_and_margins():
    U = _basis(2, 2)
    g = torch.Generator().manual_seed(3)
    x, y = us.underspecified_dataset(U[0], U[1], 400, eps1=1.0, eps2=0.5, sigma=1.0, generator=g)
    assert x.shape == (400, 2, 32, 32) and y.shape == (400,)
    assert set(y.tolist()) == {-1, 1}
    p1 = x[:, 0].reshape(400, -1).double() @ torch.as_tensor(U[0]).double()
    p2 = x[:, 1].reshape(400, -1).double() @ torch.as_tensor(U[1]).double()
    assert torch.allclose(p1, 1.0 * y.double(), atol=1e-4)
    assert torch.allclose(p2, 0.5 * y.double(), atol=1e-4)
    x2, y2 = us.underspecified_dataset(U[0], U[1], 400, generator=torch.Generator().manual_seed(3))
    assert torch.equal(x, x2) and torch.equal(y, y2)


def test_cifar_dv_dataset_appends_directional_channel():
    v = _basis(4, 1)[0]
    xc = np.random.default_rng(0).standard_normal((50, 3, 32, 32)).astype(np.float32)
    y = np.where(np.arange(50) % 3 == 0, 1.0, -1.0)
    x = us.cifar_dv_dataset(xc, y, v, sigma=3.0, epsilon=1.0, generator=torch.Generator().manual_seed(0))
    assert x.shape == (50, 4, 32, 32)
    assert np.array_equal(x[:, :3].numpy(), xc)
    proj = x[:, 3].reshape(50, -1).double() @ torch.as_tensor(v).double()
    assert np.allclose(proj.numpy(), y, atol=1e-4)


def test_channel_ablation_of_known_linear_models():
    U = _basis(5, 2)
    x, y = us.underspecified_dataset(U[0], U[1], 300, sigma=1.0, generator=torch.Generator().manual_seed(1))
    w1 = np.zeros((2, 32, 32), np.float32)
    w1[0] = U[0].reshape(32, 32)
    w2 = np.zeros((2, 32, 32), np.float32)
    w2[1] = U[1].reshape(32, 32)
    groups = {"first": [0], "second": [1]}
    only1 = ux.channel_ablation_accuracy(_linear_model(w1), x, y, groups)
    assert only1["all"] == 1.0 and only1["first"] == 1.0
    # without channel 1 the output is 0 everywhere: prediction -1, accuracy = share of -1 labels
    assert only1["second"] == pytest.approx(float((y < 0).double().mean()))
    only2 = ux.channel_ablation_accuracy(_linear_model(w2), x, y, groups)
    assert only2["all"] == 1.0 and only2["second"] == 1.0
    assert us.zero_channels(x, [1])[:, 1].abs().max() == 0 and torch.equal(us.zero_channels(x, [1])[:, 0], x[:, 0])


def test_plane_points_have_exact_coordinates():
    U = _basis(6, 3)
    e1, e2 = torch.as_tensor(U[0]), torch.as_tensor(U[1])
    anchor = torch.as_tensor(U[2]) * 5 + 0.3 * e1 - 2 * e2
    a, b = np.linspace(-1, 1, 5), np.linspace(-2, 2, 3)
    pts = ux.plane_points(e1, e2, a, b, anchor).double()
    assert pts.shape == (15, 1024)
    A = (pts @ e1.double()).reshape(3, 5)
    B = (pts @ e2.double()).reshape(3, 5)
    assert np.allclose(A.numpy(), a[None, :], atol=1e-5) and np.allclose(B.numpy(), b[:, None], atol=1e-5)
    with pytest.raises(ValueError):
        ux.plane_points(e1, e1, a, b)


@pytest.mark.parametrize("alpha,beta,gamma,bias", [(1.0, 0.5, 0.3, 0.2), (0.2, -1.0, -0.7, 0.05), (2.0, 1.0, 0.0, 0.0)])
def test_cross_section_of_linear_model_is_the_expected_line(alpha, beta, gamma, bias):
    """For f(x) = <w, x> + c with w = alpha e1 + beta e2 + gamma r (r orthogonal to the plane),
    the cross-section through an anchor x0 is the line alpha a + beta b + (gamma <r, x0> + c) = 0."""
    U = _basis(7, 3)
    e1 = np.zeros((2, 32, 32), np.float32)
    e1[0] = U[0].reshape(32, 32)
    e2 = np.zeros((2, 32, 32), np.float32)
    e2[1] = U[1].reshape(32, 32)
    r = np.zeros((2, 32, 32), np.float32)
    r[0] = U[2].reshape(32, 32)
    anchor = torch.as_tensor(0.8 * r + 0.4 * e1 - 1.0 * e2)  # in-plane parts are removed
    model = _linear_model(alpha * e1 + beta * e2 + gamma * r, bias)
    sec = ux.decision_cross_section(model, e1, e2, extent=2.0, resolution=31, anchor=anchor)
    a, b, z = sec["a"], sec["b"], sec["logits"]
    k = gamma * 0.8 + bias
    expected = alpha * a[None, :] + beta * b[:, None] + k
    assert z.shape == (31, 31) and np.allclose(z, expected, atol=1e-5)
    pts = ux.boundary_points(a, b, z)
    assert len(pts) > 10
    residual = np.abs(alpha * pts[:, 0] + beta * pts[:, 1] + k) / math.hypot(alpha, beta)
    assert residual.max() < 1e-4
    assert ux.boundary_angle(a, b, z) == pytest.approx(math.degrees(math.atan2(beta, alpha)), abs=1e-4)


def test_boundary_angle_extremes_and_max_margin():
    a = b = np.linspace(-2, 2, 21)
    A, B = np.meshgrid(a, b)  # A varies along columns, like logits[i, j] at (a[j], b[i])
    assert ux.boundary_angle(a, b, 3 * A) == pytest.approx(0.0, abs=1e-9)
    assert ux.boundary_angle(a, b, B - 0.1) == pytest.approx(90.0, abs=1e-9)
    assert ux.boundary_angle(a, b, 1.0 * A + 0.5 * B) == pytest.approx(ux.MAX_MARGIN_ANGLE)
    assert ux.MAX_MARGIN_ANGLE == pytest.approx(26.565, abs=1e-3)


def test_phase_transition_index():
    idx, thr = ux.phase_transition_index([0, 3, 10, 30, 100], [1.0, 0.99, 0.98, 0.6, 0.5])
    assert idx == 30 and thr == pytest.approx(0.75)
    assert ux.phase_transition_index([0, 10], [0.9, 0.88])[0] is None
    # unsorted input is sorted by index first
    assert ux.phase_transition_index([100, 0, 10], [0.5, 1.0, 0.9])[0] == 100


def test_triangular_learning_rate():
    nb, epochs, m = 10, 5, 0.2
    lrs = [lr_at(i, nb, epochs, m, "triangular") for i in range(nb * epochs)]
    assert max(lrs) == pytest.approx(m) and lrs[-1] == pytest.approx(0.0)
    assert int(np.argmax(lrs)) == 2 * epochs * nb // 5 - 1
    assert lrs[0] == pytest.approx(m / (2 * epochs * nb / 5))
    assert lr_at(3, nb, epochs, m) == lr_at(3, nb, epochs, m, "linear")
    with pytest.raises(ValueError):
        lr_at(0, nb, epochs, m, "cosine")


def test_concat_grid_experiment_runs_and_caches(tmp_path):
    U = _basis(8, 3)
    kw = dict(
        n_train=64,
        n_test=32,
        train=dict(epochs=1, max_lr=0.1, clip_grad_norm=0.5),
        resolution=5,
        extent=1.0,
        seeds=[0, 1],
        device="cpu",
        chunk=3,
    )
    cache = Cache(tmp_path)
    r = ux.concat_grid_experiment("logreg", U, [0, 2], [1, 2], cache=cache, **kw)
    assert r.acc_both.shape == (2, 2, 2) and r.sections.shape == (2, 2, 2, 5, 5)
    assert np.all((r.acc_first >= 0) & (r.acc_first <= 1))
    assert r.section(2, 1)["logits"].shape == (5, 5)
    r2 = ux.concat_grid_experiment("logreg", U, [0, 2], [1, 2], cache=cache, **kw)
    assert np.array_equal(r.acc_both, r2.acc_both) and np.array_equal(r.sections, r2.sections)
    # same pair, same seed -> same run, whatever the grid or chunking around it
    r3 = ux.concat_grid_experiment("logreg", U, [2], [1], cache=None, **{**kw, "chunk": 1, "seeds": [1]})
    assert r3.acc_second[0, 0, 0] == r.acc_second[1, 1, 0]
    assert np.allclose(r3.sections[0, 0, 0], r.sections[1, 1, 0], atol=1e-5)


def test_cifar_dv_experiment_runs(tmp_path):
    U = _basis(9, 2)
    x = np.random.default_rng(0).integers(0, 255, (8, 32, 32, 3), dtype=np.uint8)
    y = np.arange(8, dtype=np.uint8) % 10
    np.savez(tmp_path / cifar.SUBSET_FILE, x_train=x, y_train=y, x_test=x[:4], y_test=y[:4])
    import hashlib

    (tmp_path / "SHA256SUMS").write_text(
        hashlib.sha256((tmp_path / cifar.SUBSET_FILE).read_bytes()).hexdigest() + f"  {cifar.SUBSET_FILE}\n"
    )
    r = ux.cifar_dv_experiment(
        "logreg",
        U,
        [0, 1],
        seeds=[0, 1],
        data_spec={"subset_root": str(tmp_path)},
        data_key={"name": "fixture"},
        sigma=1.0,
        train=dict(epochs=2, max_lr=0.1, clip_grad_norm=0.5, batch_size=4),
        device="cpu",
        cache=Cache(tmp_path / "c"),
        chunk=2,
    )
    assert r.acc_all.shape == r.acc_cifar.shape == r.acc_dv.shape == (2, 2)
    assert np.all((r.acc_dv >= 0) & (r.acc_dv <= 1))


def test_mlp_cifar_architecture():
    m = variants.mlp_cifar(4, 1)
    dims = [l.out_features for l in m.modules() if isinstance(l, nn.Linear)]
    assert dims == [200, 50, 1]
    assert ux.cifar_spec("mlp") == "nadcore.nets.variants:mlp_cifar" and ux.cifar_spec("lenet") == "lenet"
    built = build_model(ux.cifar_spec("mlp"), 3, 1)  # the alias resolves to this factory
    assert [l.out_features for l in built.modules() if isinstance(l, nn.Linear)] == [200, 50, 1]


# --------------------------------------------------------------------------------------------
# Summaries over seeds, tidy tables, executors, data keys, figures, settings (chapter 5)
# --------------------------------------------------------------------------------------------
def test_seed_mean_halfwidth_is_the_t_interval_per_cell():

    a = np.random.default_rng(1).random((3, 2, 4))
    mean, half = evidence.seed_mean_halfwidth(a)
    assert mean.shape == half.shape == (2, 4)
    for i in range(2):
        for j in range(4):
            iv = evidence.t_interval(a[:, i, j])
            assert mean[i, j] == pytest.approx(iv.value) and half[i, j] == pytest.approx(iv.high - iv.value)
    # another axis, and a single seed (no interval)
    m2, h2 = evidence.seed_mean_halfwidth(np.moveaxis(a, 0, 2), axis=2)
    assert np.allclose(m2, mean) and np.allclose(h2, half)
    m1, h1 = evidence.seed_mean_halfwidth(a[:1])
    assert np.allclose(m1, a[0]) and np.isnan(h1).all()


def test_seed_summary_formats_mean_and_halfwidth():
    import pandas as pd

    f = pd.DataFrame(
        {
            "i": [5, 5, 5, 0, 0, 0],
            "acc": [0.9, 0.92, 0.94, 0.5, 0.5, 0.5],
            "angle": [20.0, 30.0, 25.0, 90.0, 80.0, 85.0],
        }
    )
    t = evidence.seed_summary(f, ["i"], ["acc"])
    assert list(t["i"]) == [5, 0]  # order of first appearance, not sorted
    half = 4.303 * 2.0 / math.sqrt(3)  # t_{2, 0.975} * sd(90, 92, 94) / sqrt(3), in points
    assert t["acc"][0] == f"92.0 ± {half:.1f}" and t["acc"][1] == "50.0 ± 0.0"
    assert evidence.seed_summary(f, ["i"], ["angle"], scale=1, digits=0)["angle"][0].startswith("25 ± ")
    assert evidence.seed_summary(f.iloc[[0, 3]], ["i"], ["acc"])["acc"].tolist() == ["90.0", "50.0"]
    # a tiny negative mean prints as 0, never as "-0"
    g = pd.DataFrame({"i": [0, 0, 0], "angle": [-0.3, 0.1, -0.2]})
    assert evidence.seed_summary(g, ["i"], ["angle"], scale=1, digits=0)["angle"][0].startswith("0 ± ")
    assert [evidence.format_fixed(x, d) for x, d in ((-0.2, 0), (-0.04, 1), (2.36, 1))] == ["0", "0.0", "2.4"]


def _concat_result(tmp_path, **over):
    kw = dict(
        n_train=64,
        n_test=32,
        train=dict(epochs=1, max_lr=0.1, clip_grad_norm=0.5),
        resolution=5,
        extent=1.0,
        seeds=[3, 4],
        device="cpu",
        chunk=2,
        cache=Cache(tmp_path),
    )
    return ux.concat_grid_experiment("logreg", _basis(10, 3), [0, 2], [1, 2], **{**kw, **over})


def test_concat_result_tables_match_its_arrays(tmp_path):
    r = _concat_result(tmp_path)
    f = r.frame()
    assert len(f) == 2 * 2 * 2 and set(ux.CONCAT_KEYS) <= set(f.columns)
    row = f[(f.seed == 4) & (f.v1_index == 2) & (f.v2_index == 1)].iloc[0]
    for k in ux.CONCAT_KEYS:
        assert row[k] == pytest.approx(float(getattr(r, k)[1, 1, 0]))
        assert np.array_equal(r.values(k, 2, 1), getattr(r, k)[:, 1, 0])
    s = r.sections_frame([(0, 2), (2, 1)], seed_index=1)
    assert len(s) == 2 * 5 * 5 and set(s.seed) == {4}
    part = s[(s.v1_index == 2) & (s.v2_index == 1)]
    assert np.allclose(part.logit.to_numpy().reshape(5, 5), r.sections[1, 1, 0])
    # a[j] along columns, b[i] along rows, as decision_cross_section lays them out
    assert np.allclose(part.a.to_numpy().reshape(5, 5)[0], r.a)
    assert np.allclose(part.b.to_numpy().reshape(5, 5)[:, 0], r.b)


def test_concat_experiment_same_results_under_an_executor(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    r = _concat_result(tmp_path / "a")
    with ThreadPoolExecutor(2) as ex:
        r2 = _concat_result(tmp_path / "b", executor=ex)
    for k in ux.CONCAT_KEYS:
        assert np.allclose(getattr(r, k), getattr(r2, k), atol=1e-6)
    # different seeds are different runs
    assert not np.array_equal(r.sections[0], r.sections[1])


def _fixture_subset(root):
    import hashlib

    x = np.random.default_rng(0).integers(0, 255, (8, 32, 32, 3), dtype=np.uint8)
    y = np.arange(8, dtype=np.uint8) % 10
    root.mkdir(parents=True, exist_ok=True)
    np.savez(root / cifar.SUBSET_FILE, x_train=x, y_train=y, x_test=x[:4], y_test=y[:4])
    (root / "SHA256SUMS").write_text(
        hashlib.sha256((root / cifar.SUBSET_FILE).read_bytes()).hexdigest() + f"  {cifar.SUBSET_FILE}\n"
    )
    return {"subset_root": str(root)}


def test_cifar_dv_result_table_and_data_key(tmp_path):
    spec = _fixture_subset(tmp_path / "data")
    cache = Cache(tmp_path / "c")
    kw = dict(
        seeds=[0, 1],
        data_spec=spec,
        sigma=1.0,
        device="cpu",
        cache=cache,
        chunk=1,
        train=dict(epochs=1, max_lr=0.1, clip_grad_norm=0.5, batch_size=4),
    )
    r = ux.cifar_dv_experiment("logreg", _basis(11, 3), [0, 2], data_key={"name": "fixture"}, **kw)
    f = r.frame()
    assert len(f) == 4 and set(ux.CIFAR_KEYS) <= set(f.columns)
    row = f[(f.seed == 1) & (f.nad_index == 2)].iloc[0]
    for k in ux.CIFAR_KEYS:
        assert row[k] == pytest.approx(float(getattr(r, k)[1, 1]))
        assert np.array_equal(r.values(k, 2), getattr(r, k)[:, 1])
    jobs = lambda: sum(1 for _ in (tmp_path / "c" / "cifar_dv_job").iterdir())  # noqa: E731
    n = jobs()
    ux.cifar_dv_experiment("logreg", _basis(11, 3), [0, 2], data_key={"name": "fixture"}, **kw)
    assert jobs() == n  # same data key: served from the cache
    ux.cifar_dv_experiment("logreg", _basis(11, 3), [0, 2], data_key={"name": "other"}, **kw)
    assert jobs() == 2 * n  # other images: other cache entries


def test_figures_show_means_intervals_and_one_seed(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from nadcore.chapters.underspecification import figures as up

    r = _concat_result(tmp_path)
    fig = up.ablation_heatmaps(r, title="t")
    texts = [t.get_text() for t in fig.axes[0].texts]
    mean, half = evidence.seed_mean_halfwidth(r.acc_both)
    assert texts[0] == f"{evidence.format_fixed(100 * mean[0, 0], 0)}\n±{evidence.format_fixed(100 * half[0, 0], 0)}"
    assert np.allclose(fig.axes[0].images[0].get_array(), mean)
    fig2 = up.cross_sections(r, [(2, 1)], seed_index=1)
    title = fig2.axes[0].get_title()
    assert f"{ux.boundary_angle(r.a, r.b, r.sections[1, 1, 0]):.0f}°" in title
    up.angle_heatmaps({"logreg": r})
    one = ux.CifarDVResult(
        "m",
        [0, 10],
        [0],
        np.array([[0.9, 0.6]]),
        np.array([[0.6, 0.6]]),
        np.array([[0.9, 0.5]]),
        np.array([[1.0, 1.0]]),
    )
    up.cifar_dv_curves({"m": one}, transitions={"m": (10, 0.7)})  # one seed: no error bars
    plt.close("all")


def test_chapter_settings():
    for p in profiles.PROFILES:
        cfg = profiles.resolve("05_underspecification", p)
        grid = set(cfg["concat_indices"])
        assert all(set(pair) <= grid for pair in cfg["section_pairs"]), p
        for key in ("concat_indices", "cifar_indices"):
            assert cfg[key] == sorted(cfg[key]), (p, key)
        for m in cfg["concat_models"]:
            t = cfg["concat_train"].get(m, cfg["concat_train"]["default"])
            assert {"n_train", "epochs", "max_lr"} <= set(t)
        for m in cfg["cifar_models"]:
            assert "epochs" in cfg["cifar_train"].get(m, cfg["cifar_train"]["default"])
        src = cfg["nad_source"]
        # LeNet: the book's secant NADs from the paper's 10,000 networks on the paper profile; the
        # authors' published ones (the same 10,000) where a CPU cannot afford them
        assert src["lenet"] == ("secant" if p == "paper" else "published") and src["default"] == "gradient"
        assert cfg["seeds"] >= (2 if p == "smoke" else 3), p
    with pytest.raises(ValueError, match="unknown knob"):
        profiles.resolve("05_underspecification", "cpu", {"repeats": 3})


def test_spread_and_fitted():
    acc = np.array([[[0.9, 0.8], [0.7, 0.95]], [[0.5, 0.5], [0.5, 0.6]]])
    train = np.array([[[1.0, 0.96], [0.5, 1.0]], [[1.0, 1.0], [0.9, 1.0]]])
    r = ux.ConcatGridResult(
        "m", [0, 9], [0, 9], [0, 1], acc, acc, acc, train, acc * 90, np.zeros((2, 2, 2, 1, 1)), np.zeros(1), np.zeros(1)
    )
    assert np.allclose(r.spread("acc_both"), [0.25, 0.1]) and np.allclose(r.spread("angle"), [22.5, 9.0])
    assert r.fitted([(0, 0), (0, 9)]) and not r.fitted([(9, 0)]) and not r.fitted()
    assert r.fitted([(9, 0)], threshold=0.5)
    c = ux.CifarDVResult("m", [0, 9], [0, 1], acc[:, 0], acc[:, 0], acc[:, 0], train[:, 1])
    assert not c.fitted() and c.fitted([9]) and c.fitted(threshold=0.5)


def _study(**chapter):
    """Chapter 5's study on the smoke profile, seeds 0 and 1, with ``chapter``'s extra attributes."""
    from types import SimpleNamespace

    from nadcore.chapters.underspecification.study import Study

    ch = SimpleNamespace(
        name="05_underspecification",
        cfg=profiles.resolve("05_underspecification", "smoke"),
        paper_cfg=profiles.resolve("05_underspecification", "paper"),
        seeds=[0, 1],
        params={},
        **chapter,
    )
    return Study(ch)


def test_the_mlps_appendix_b_claims_compare_its_channels_and_read_its_tilt_from_v1():
    study = _study()
    study.networks["mlp"] = 1
    first, second = np.full((2, 2, 2), 0.9), np.full((2, 2, 2), 0.7)
    angle = np.array([[[20.0, 30.0], [25.0, 25.0]], [[30.0, 20.0], [28.0, 22.0]]])
    r = ux.ConcatGridResult(
        "mlp", [0, 9], [0, 9], [0, 1], first, first, second, np.ones((2, 2, 2)), angle,
        np.zeros((2, 2, 2, 1, 1)), np.zeros(1), np.zeros(1),
    )  # fmt: skip
    drop = study.mlp_smaller_drop(r)
    assert drop["interval"].value == pytest.approx(0.2) and all(drop["preconditions"].values())
    assert np.allclose(study.mlp_tilt_first(r)["values"], [25.0, 25.0])
    assert study.mlp_smaller_drop(replace(r, acc_first=second))["interval"].value == pytest.approx(0.0)


def test_campaign_view_reads_the_bundle_and_scores_the_resnet_claims(tmp_path, monkeypatch):
    import json
    from types import SimpleNamespace

    import pandas as pd

    from nadcore.chapters import campaigns

    published, shown = SimpleNamespace(nads=np.eye(1024, dtype=np.float32)[:8], meta={"networks": 1000}), []
    study = _study(
        figure_data=lambda name, frame: shown.append((name, len(frame))),
        nads=lambda spec, source, networks=None: (published, f"{source} NADs of {spec}"),
    )
    ch = study.ch
    cfg, width = campaigns.profile_settings("cpu", "us-fig2", "resnet18")
    assert width == 16 and cfg["concat_indices"] == [0, 30, 1000] != ch.cfg["concat_indices"]
    idx, rng = cfg["concat_indices"], np.random.default_rng(0)
    rows = [
        dict(
            model="resnet18",
            width=w,
            recipe="follow-up",
            precision="fp32",
            v1_index=a,
            v2_index=b,
            seed=s,
            acc_both=0.9,
            acc_first=0.95 if a == 0 else 0.5,
            acc_second=0.97 if b == 0 else 0.5,
            train_acc=1.0,
            angle=rng.uniform(0, 90),
        )
        for w in (16, 8)
        for s in (0, 1, 2)
        for a in idx
        for b in idx
    ]
    rows = [r for r in rows if not (r["seed"] == 2 and r["v1_index"] == 30)]  # seed 2 lacks pairs: it stays out
    fig3 = [
        dict(
            model="resnet18",
            width=16,
            recipe="follow-up",
            precision="fp32",
            sigma=3.0,
            nad_index=i,
            seed=s,
            acc_all=0.8,
            acc_cifar=0.5 if i == 0 else 0.8,
            acc_dv=0.99 if i == 0 else 0.5,
            train_acc=1.0,
        )
        for s in (0, 1, 2)
        for i in campaigns.profile_settings("cpu", "us-fig3", "resnet18")[0]["cifar_indices"]
    ]
    (tmp_path / "cpu" / campaigns.US_CHAPTER).mkdir(parents=True)
    pd.DataFrame(rows).to_csv(tmp_path / "cpu" / campaigns.US_CHAPTER / "us-fig2.csv", index=False)
    pd.DataFrame(fig3).to_csv(tmp_path / "cpu" / campaigns.US_CHAPTER / "us-fig3.csv", index=False)
    (tmp_path / "cpu" / "provenance.json").write_text(json.dumps({"sessions": [], "jobs": {}}))
    monkeypatch.setenv("NADBOOK_RESULTS", str(tmp_path))

    net, runs = study.campaign("us-fig2")
    r = runs["resnet18"]
    assert list(runs) == ["resnet18"] and r.model == "ResNet-18 at width 16" and r.seeds == [0, 1]
    assert shown == [("us-fig2-campaign", 2 * 9)] and "ResNet-18 at width 16, seeds [0, 1]" in net.fig2_summary(runs)
    assert (net.early, net.late) == (0, 1000) and (study.early, study.late) == (0, ch.cfg["concat_indices"][-1])
    assert net.claim_ids() == [
        f"us-fig2-resnet18-{c}" for c in ("ch1-early", "ch1-late", "switch", "max-margin", "tilt-range", "late-poorer")
    ]
    evidence_ = net.fig2_evidence(runs)
    assert list(evidence_) == net.claim_ids()
    switch = evidence_["us-fig2-resnet18-switch"]
    assert switch["interval"].value == pytest.approx(0.97) and switch["profile"] == "campaign cpu"
    assert switch["settings"]["width"] == 16 and switch["settings"]["seeds"] == 2
    assert switch["steps"] == net.concat_budget("resnet18")["steps"] < switch["paper_steps"]
    assert switch["networks"] == 1000 and all(switch["preconditions"].values())
    assert evidence_["us-fig2-resnet18-ch1-late"]["interval"].value == pytest.approx(0.5)

    net3, cifar_runs = study.campaign("us-fig3")
    assert cifar_runs["resnet18"].seeds == [0, 1, 2] and net3.claim_ids()[0] == "us-fig3-resnet18-dv-early"
    ev3 = net3.fig3_evidence(cifar_runs)
    # dv-early: what the CIFAR-10 channels add to the D(v) channel (a preference, not a threshold)
    assert ev3["us-fig3-resnet18-dv-early"]["interval"].value == pytest.approx(0.8 - 0.99)
    assert ev3["us-fig3-resnet18-cifar-late"]["interval"].value == pytest.approx(0.0)
    assert ev3["us-fig3-resnet18-dv-late"]["settings"]["seeds"] == 3
    assert all(all(ev3[f"us-fig3-resnet18-{c}"]["preconditions"].values()) for c in ("dv-late", "cifar-late"))
    # 'exclusively': one channel alone at chance at every index, once the network used each
    exclusive = ev3["us-fig3-resnet18-exclusive"]
    assert exclusive["interval"].value == pytest.approx(0.5) and all(exclusive["preconditions"].values())
    # a network at chance with and without the D(v) channel learned nothing: its 'late' claims
    # say nothing about which channel it uses, so their precondition fails
    r3 = cifar_runs["resnet18"]
    r3 = replace(r3, acc_all=np.full_like(r3.acc_all, 0.5), acc_cifar=np.full_like(r3.acc_cifar, 0.5))
    for claim in (net3.cifar_late, net3.dv_late):
        pre = claim("resnet18", r3)["preconditions"]
        assert not all(pre.values()) and any("learned" in k and not v for k, v in pre.items())
    # never switching to the CIFAR-10 channels is 'exclusive' trivially: the precondition fails
    pre = net3.exclusive("resnet18", r3)["preconditions"]
    assert [k for k, v in pre.items() if not v] == [
        "resnet18 used the CIFAR-10 channels alone at some index (mean accuracy >= 0.6)"
    ]
    pre = net.ch1_late("resnet18", replace(r, acc_both=np.full_like(r.acc_both, 0.5)))["preconditions"]
    assert any("learned" in k and not v for k, v in pre.items())

    for fig in ("us-fig2", "us-fig3"):
        (tmp_path / "cpu" / campaigns.US_CHAPTER / f"{fig}.csv").unlink()
        with pytest.raises(FileNotFoundError, match=f"run_campaign.py --campaign cpu --figures {fig}"):
            study.campaign(fig)
