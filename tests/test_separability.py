"""nadcore.chapters.linear_separability.runs: the summaries behind chapter 3's claims and the tidy figure tables."""

from __future__ import annotations

import numpy as np
import pytest

from nadcore.book.cache import Cache
from nadcore.chapters.linear_separability import quantities as q
from nadcore.chapters.linear_separability import runs as sep
from nadcore.chapters.linear_separability.figures import map_on_grid
from nadcore.data import fourier_grid
from nadcore.nads import OVERLAP_KS, NADResult
from nadcore.train.budget import steps_per_run

GRID = fourier_grid(32, 16).subgrid(4)  # 4x4, k in {-16, -8, 0, 8}
TINY = dict(epochs=1, max_lr=0.5, batch_size=16, n_train=32, n_test=32, sigma=1.0, epsilon=1.0, signal="authors")


def _fake_grid_result(seeds=2, grid=GRID):
    """test_acc[s, i, j] = s + i / 10 + j / 100 (each entry tells where it came from)."""
    S, (g, _) = seeds, grid.shape
    acc = np.arange(S)[:, None, None] + np.arange(g)[None, :, None] / 10 + np.arange(g)[None, None, :] / 100
    return {
        "test_acc": acc,
        "train_acc": acc + 1000,
        "train_loss": acc,
        "iters_to_loss": acc.astype(int),
        "iter_loss": np.zeros((S, g, g, 3)),
        "grid": grid,
        "frequencies": grid.frequencies,
    }


def test_band_means_per_seed_over_low_and_high_cells():
    r = q.cell_radius(GRID)
    vals = np.stack([np.where(r <= 4, 0.9, 0.5), np.where(r <= 4, 0.7, 0.6)]).reshape(2, 4, 4)
    b = q.band_means(vals, GRID, low=4, high=8)
    np.testing.assert_allclose(b["low"], [0.9, 0.7])
    np.testing.assert_allclose(b["high"], [0.5, 0.6])
    np.testing.assert_allclose(b["gap"], [0.4, 0.1])
    # the same with a list of cells, NaN cells skipped, and a band without cells
    cells = [(0, 0), (0, 8), (-16, 8), (8, 8)]
    b = q.band_means([[1.0, 0.5, np.nan, 0.7]], cells)
    assert b["low"][0] == 1.0 and b["high"][0] == pytest.approx(0.6)
    assert np.isnan(q.band_means([[0.5, 0.6]], [(8, 8), (-16, 0)])["low"][0])
    with pytest.raises(ValueError, match="3 cells of values but 4 frequencies"):
        q.band_means(np.zeros((1, 3)), cells)


def test_band_means_middle_band_is_in_neither():
    cells = [(0, 2), (6, 0), (0, 10)]  # radius 2 (low), 6 (neither), 10 (high)
    b = q.band_means([[0.9, 0.0, 0.6]], cells, low=4, high=8)
    assert b["low"][0] == pytest.approx(0.9) and b["high"][0] == pytest.approx(0.6)


def test_censored_iterations_count_as_the_budget():
    it = q.censored_iterations(np.array([[5, -1], [-1, 40]]), 100)
    np.testing.assert_array_equal(it, [[5.0, 100.0], [100.0, 40.0]])
    assert it.dtype == np.float64
    # consistent with iterations_to_loss: a run that never gets below the threshold is censored
    losses = np.array([np.linspace(1, 0, 50), np.ones(50)])
    got = q.censored_iterations(q.iterations_to_loss(losses, 0.3, 5), 50)
    assert 30 < got[0] < 50 and got[1] == 50


def test_rank_correlations_per_seed():
    ref = np.array([4.0, 3.0, 2.0, 1.0])
    acc = np.array([[0.9, 0.8, 0.6, 0.5], [0.5, 0.6, 0.8, 0.9], [0.7, 0.7, 0.7, 0.7]])
    rho = q.rank_correlations(acc, ref)
    assert rho[0] == pytest.approx(1.0) and rho[1] == pytest.approx(-1.0) and np.isnan(rho[2])
    # NaN references (an index the published data lack) are left out
    rho = q.rank_correlations([0.9, 0.8, 0.1], [3.0, 2.0, np.nan])
    assert rho[0] == pytest.approx(1.0)


def test_fourier_table_has_one_row_per_model_cell_and_seed():
    res = {"lenet": _fake_grid_result(), "logreg": _fake_grid_result()}
    df = q.fourier_table(res, seeds=[7, 8])
    assert list(df.columns) == ["model", "k1", "k2", "seed", "test_acc", "train_acc", "trained"]
    assert len(df) == 2 * 16 * 2
    row = df[(df.model == "lenet") & (df.seed == 8) & (df.k1 == -8) & (df.k2 == 8)].iloc[0]
    i, j = 1, 3  # ticks are -16, -8, 0, 8
    assert (GRID.k1[i, j], GRID.k2[i, j]) == (-8, 8)
    assert row.test_acc == pytest.approx(1 + i / 10 + j / 100)
    assert row.train_acc == pytest.approx(1000 + 1 + i / 10 + j / 100)


def test_select_cells_picks_the_same_runs():
    full = _fake_grid_result()
    sel = sep.select_cells(full, [(8, -16), (0, 0)])
    assert sel["frequencies"] == [(8, -16), (0, 0)]
    np.testing.assert_allclose(sel["test_acc"][:, 0], full["test_acc"][:, 3, 0])
    np.testing.assert_allclose(sel["test_acc"][:, 1], full["test_acc"][:, 2, 2])
    assert sel["iter_loss"].shape == (2, 2, 3)
    with pytest.raises(ValueError, match="not among"):
        sep.select_cells(full, [(2, 2)])


def test_covering_subgrid_and_map_on_grid():
    g16 = fourier_grid(32, 16)
    assert sep.covering_subgrid(g16, [(0, 0), (-16, 0)]).stride == 16  # every 8th cell: k in {-16, 0}
    assert sep.covering_subgrid(g16, [(0, 0), (-16, 8)]).stride == 8
    assert sep.covering_subgrid(g16, [(0, 4), (-4, 0)]).grid == 8
    assert sep.covering_subgrid(g16, [(0, 2)]).grid == 16
    with pytest.raises(ValueError):
        sep.covering_subgrid(g16, [(1, 0)])
    m = map_on_grid([0.7, 0.9], [(0, 0), (8, -16)], GRID)
    assert m[2, 2] == 0.7 and m[3, 0] == 0.9 and np.isnan(m).sum() == 14
    with pytest.raises(ValueError, match="not a cell"):
        map_on_grid([0.5], [(4, 4)], GRID)


def test_grid_sweep_and_fourier_sweep_label_runs_by_frequency(tmp_path):
    g = fourier_grid(32, 16).subgrid(8)  # 2x2
    out = sep.grid_sweep("logreg", g, TINY, seeds=[0, 1], chunk=8, cache=Cache(tmp_path), outputs=2)
    assert out["test_acc"].shape == (2, 2, 2) and out["frequencies"] == g.frequencies
    # the same cell as a one-run sweep: the same data, initialisation and batch order
    one = sep.fourier_sweep("logreg", [g.frequencies[3]], TINY, seeds=[1], chunk=8, cache=Cache(tmp_path), outputs=2)
    np.testing.assert_allclose(one["iter_loss"][0, 0], out["iter_loss"][1, 1, 1], rtol=1e-4, atol=1e-5)
    df = q.fourier_table({"logreg": out}, [0, 1])
    assert len(df) == 8 and df.test_acc.between(0, 1).all()


def test_balanced_jobs_keep_every_run_once():
    V = np.ones((9, 1, 32, 32), np.float32)
    jobs = sep.direction_jobs(V, list(range(9)), [0, 1], model="logreg", settings=TINY, chunk=8, balance=2)
    sizes = [len(j.config["runs"]) for j in jobs]
    assert len(sizes) % 2 == 0 and max(sizes) <= 8 and max(sizes) - min(sizes) <= 1
    runs = [tuple(map(str, r)) for j in jobs for r in j.config["runs"]]
    assert len(runs) == 18 == len(set(runs))
    plain = sep.direction_jobs(V, list(range(9)), [0, 1], model="logreg", settings=TINY, chunk=8)
    assert [len(j.config["runs"]) for j in plain] == [8, 8, 2]


def test_nad_table_rows_and_eigenvalue_ratio():
    res = {"test_acc": np.array([[0.9, 0.5]]), "train_acc": np.array([[1.0, 0.8]])}
    df = q.nad_index_table("lenet", "secant", [0, 5], res, [3], np.arange(10, 0, -1.0))
    assert list(df.columns) == [
        "model",
        "estimator",
        "nad_index",
        "seed",
        "test_acc",
        "train_acc",
        "eigenvalue",
        "eigenvalue_ratio",
    ]
    assert df.eigenvalue.tolist() == [10.0, 5.0] and df.eigenvalue_ratio.tolist() == [1.0, 0.5]


def test_split_half_table_reads_the_full_split_half():
    D = 16
    sh = np.array([0.5, 0.6, 0.7, 0.8])
    r = NADResult(np.ones(D), np.eye(D, dtype=np.float32), {"networks": 64, "points": 2}, {"split_half": sh})
    bare = NADResult(np.ones(D), np.eye(D, dtype=np.float32), {"networks": 20})
    t = q.split_half_table({"a": r, "b": bare})
    assert t.loc["a", "networks"] == 64 and t.loc["a", "points"] == 2
    assert t.loc["a", "k=1"] == 0.5 and t.loc["a", "k=16"] == 0.7
    assert np.isnan(t.loc["a", "k=64"])  # 32 networks per half: k = 64 is not identifiable
    assert t.loc[["b"], [f"k={k}" for k in OVERLAP_KS]].isna().all(axis=None)


def test_published_fig6_table_numbers():
    df = q.published_fig6_table()
    assert set(df.model) == {"lenet", "resnet18", "densenet121", "vgg11"}
    ln = df[df.model == "lenet"].set_index("nad_index")
    assert ln.test_acc.loc[:9].mean() == pytest.approx(1.00, abs=0.005)
    assert ln.test_acc[ln.index > 700].mean() == pytest.approx(0.508, abs=0.001)
    assert ln.eigenvalue_ratio.iloc[0] == 1.0


def test_steps_per_run_counts_partial_batches():
    assert steps_per_run(dict(n_train=10000, epochs=20, batch_size=128)) == 20 * 79
    assert steps_per_run(dict(n_train=2560, epochs=16)) == 320


def test_nad_index_summary_first_beyond_and_eigenvalue_rank():
    idx = [0, 3, 9, 10, 500, 701, 1000]
    ev = np.linspace(1.0, 0.0, 1024)  # sorted eigenvalues: index order = eigenvalue order
    acc = np.array([0.95, 0.9, 0.85, 0.7, 0.6, 0.52, 0.5])
    s = q.nad_index_summary(idx, acc, ev)
    assert s["first_n"] == 3 and s["beyond_n"] == 2
    assert s["first_mean"] == pytest.approx(0.9) and s["beyond_mean"] == pytest.approx(0.51)
    assert s["spearman"] == pytest.approx(1.0)
    assert q.nad_index_summary(idx, acc[::-1], ev)["spearman"] == pytest.approx(-1.0)


def test_fourier_directions_transpose_into_each_other():
    from nadcore.data import fourier_basis_vector

    for a, b in [(0, 4), (-12, 8), (-16, 4), (12, -4)]:
        np.testing.assert_allclose(
            fourier_basis_vector(a, b).numpy().reshape(32, 32).T,
            fourier_basis_vector(b, a).numpy().reshape(32, 32),
            atol=1e-6,
        )
    # (k1, k2) and (-k1, -k2) are orthogonal directions, not v and -v
    v, w = fourier_basis_vector(4, 8).numpy().ravel(), fourier_basis_vector(-4, -8).numpy().ravel()
    assert abs(float(v @ w)) < 1e-5


def test_lenet_is_transpose_equivariant_under_a_weight_map():
    """Transposing every image and every square kernel of LeNet (and permuting its first dense
    layer accordingly) gives the same outputs: the transposed network is another LeNet, as likely
    under i.i.d. initialisation, so D(v(k2, k1)) is D(v(k1, k2)) in distribution."""
    import torch

    from nadcore.nets import build_model

    net = build_model("lenet", 1, 2, 32, seed=(3, 1), check=False).eval()
    twin = build_model("lenet", 1, 2, 32, seed=(3, 1), check=False).eval()
    convs = [m for m in twin.modules() if isinstance(m, torch.nn.Conv2d)]
    dense = [m for m in twin.modules() if isinstance(m, torch.nn.Linear)][0]
    with torch.no_grad():
        for c in convs:
            c.weight.copy_(c.weight.transpose(-1, -2).clone())
        C = convs[-1].out_channels
        side = int(round((dense.in_features // C) ** 0.5))
        w = dense.weight.reshape(dense.out_features, C, side, side).transpose(-1, -2).clone()
        dense.weight.copy_(w.reshape(dense.out_features, -1))
    x = torch.randn(5, 1, 32, 32, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(twin(x.transpose(-1, -2)), net(x), rtol=1e-4, atol=1e-5)


def test_grid_sweep_transpose_symmetric_trains_one_of_each_pair(tmp_path):
    g = fourier_grid(32, 16).subgrid(4)  # 4x4: 10 cells with k1 <= k2
    out = sep.grid_sweep(
        "logreg", g, TINY, seeds=[0], chunk=16, cache=Cache(tmp_path), outputs=2, transpose_symmetric=True
    )
    assert out["trained"].sum() == 10 and out["test_acc"].shape == (1, 4, 4)
    np.testing.assert_array_equal(out["test_acc"][0], out["test_acc"][0].T)
    full = sep.grid_sweep("logreg", g, TINY, seeds=[0], chunk=16, cache=Cache(tmp_path), outputs=2)
    upper = np.triu(np.ones((4, 4), dtype=bool))  # k1 <= k2: rows and columns share the ticks
    np.testing.assert_allclose(out["test_acc"][0][upper], full["test_acc"][0][upper])
    df = q.fourier_table({"logreg": out}, [0])
    assert df.trained.sum() == 10


def test_published_fig1_map_and_pooling_theory():
    g = fourier_grid(32, 16).subgrid(2)
    pub = q.published_fig1_map("lenet", g).reshape(8, 8)
    ticks = list(range(-16, 16, 4))
    at = lambda k1, k2: pub[ticks.index(k1), ticks.index(k2)]  # noqa: E731
    assert at(0, 0) > 0.7 and at(0, 12) > 0.7 and at(0, 8) < 0.52 and at(-16, -16) < 0.52
    theory = q.pooling_bayes_map(g).reshape(8, 8)
    lines = q.fig1_regions(g)["blind lines"].reshape(8, 8)
    np.testing.assert_allclose(theory[lines], 0.5, atol=1e-9)  # two 2x2 poolings blind |k| = 8
    assert theory[ticks.index(0), ticks.index(12)] > 0.5  # k = 12 aliases onto -4
    assert q.transpose_asymmetry(np.eye(3)) == 0.0
    with pytest.raises(ValueError, match="published"):
        from nadcore.nads.published import load_published_fig1

        load_published_fig1(["mynet"])
