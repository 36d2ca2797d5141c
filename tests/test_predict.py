"""Fig. 1 predicted from the NADs (nadcore.nads.predict), its scores against a measured map
(nadcore.chapters.nad_atlas.prediction) and ``python -m nadcore predict``."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
import torch

import nadcore.__main__ as cli
from nadcore.book.evidence import auc_interval
from nadcore.chapters.nad_atlas.prediction import (
    ATLAS_CELLS,
    cells_spanning_prediction,
    class_means,
    mirror_classes,
    prediction_agreement,
)
from nadcore.data.directions import fourier_directions, fourier_grid
from nadcore.nads import NADResult
from nadcore.nads.predict import predicted_fig1_map, predicted_learnability

GRID = fourier_grid(32)


def _result(U, lam, side=32):
    return NADResult(
        np.asarray(lam, dtype=np.float64),
        np.asarray(U, dtype=np.float32),
        {"model": "toy", "method": "gradient", "networks": 10, "input_shape": [1, side, side]},
    )


def test_isotropic_nads_predict_every_direction_alike():
    Q, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((1024, 1024)))
    score = predicted_fig1_map(_result(Q.T, np.ones(1024)))
    assert score.shape == GRID.shape
    np.testing.assert_allclose(score, 1.0, atol=1e-5)


def test_a_single_nad_predicts_its_own_direction_and_nothing_orthogonal():
    V = fourier_directions(GRID).numpy().reshape(256, -1)
    target = 37
    u = V[target] / np.linalg.norm(V[target])
    Q, _ = np.linalg.qr(np.column_stack([u, np.random.default_rng(1).standard_normal((1024, 1023))]))
    U = Q.T
    U[0] = u  # QR may flip the sign; the covariance does not care
    lam = np.r_[1.0, np.zeros(1023)]
    score = predicted_learnability(_result(U, lam), V)
    assert score[target] == pytest.approx(1024.0, rel=1e-4)  # all the energy of the trace, on one of D directions
    assert score.argmax() == target
    # the other Fourier directions are orthogonal to it (their 2-D frequency differs)
    assert np.sort(score)[-2] < 1e-6 * score[target]


def test_the_predictor_reads_any_truncated_basis_and_refuses_bad_input():
    U = np.eye(1024)[:10]
    r = _result(U, np.linspace(1, 0.1, 10))
    assert np.isfinite(predicted_learnability(r, np.eye(1024)[:3])).all()
    with pytest.raises(ValueError, match="eigenvalues"):
        predicted_learnability(_result(U, np.ones(9)), np.eye(1024)[:3])
    with pytest.raises(ValueError, match="zero"):
        predicted_learnability(r, np.zeros((1, 1024)))


def test_mirror_classes_match_the_published_maps_symmetry():
    classes = mirror_classes(GRID)
    assert len(classes) == 144 and sorted(i for c in classes for i in c) == list(range(256))
    freqs = GRID.frequencies
    for c in classes:
        k1s = {freqs[i][0] for i in c}
        k2s = {abs(freqs[i][1]) % 32 for i in c}
        assert len(k1s) == 1 and len(k2s) == 1
    assert np.allclose(class_means(np.arange(256.0), classes)[0], np.mean([0.0]))


def test_agreement_of_a_perfect_and_of_a_reversed_prediction():
    rng = np.random.default_rng(2)
    acc = np.where(rng.random(144) < 0.5, 0.98, 0.52)  # one value per distinct cell
    pred = 10 ** (acc - 0.75 + 0.001 * rng.standard_normal(acc.shape))
    good, bad = prediction_agreement(pred, acc), prediction_agreement(1 / pred, acc)
    assert good["auc"].value == 1.0 and good["auc"].low > 0.95 and good["rank"].value > 0.8
    assert bad["auc"].value == 0.0 and bad["rank"].value < -0.8
    assert good["learnable"] + good["chance"] == good["cells"] == 144


def test_auc_interval_has_width_even_at_a_perfect_separation_of_few_points():
    iv = auc_interval([1, 2, 3, 4, 5, 6, 7, 8], [False] * 4 + [True] * 4)
    assert iv.value == 1.0 and 0.75 < iv.low < 0.95 and iv.high == 1.0
    assert np.isnan(auc_interval([1, 2], [True, True]).value)


def test_cells_spanning_the_prediction_cover_both_clusters_once_each():
    pred = np.ones(GRID.shape)
    pred[(GRID.k1 % 8 == 0) & (GRID.k2 % 8 == 0)] = 30.0  # an alias set, as a patch embedding's
    cells = cells_spanning_prediction(pred, GRID, 12)
    assert len(cells) == 12 and len({frozenset({c, c[::-1]}) for c in cells}) == 12
    high = [c for c in cells if c[0] % 8 == 0 and c[1] % 8 == 0]
    assert 4 <= len(high) <= 8


def test_atlas_cells_are_on_the_grid_and_distinct():
    on_grid = set(GRID.frequencies)
    for label, cells in ATLAS_CELLS.items():
        assert len(cells) >= 8, label
        assert all(tuple(c) in on_grid for c in cells), label
        assert len({frozenset({tuple(c), tuple(c[::-1])}) for c in cells}) == len(cells), label


def test_predict_command_writes_a_table_and_an_image(tmp_path, capsys):
    out = tmp_path / "map.csv"
    assert cli.main(["predict", "--model", "lenet", "--networks", "8", "--quiet", "--out", str(out)]) == 0
    meta = json.loads(capsys.readouterr().out.splitlines()[0])
    assert meta["networks"] == 8 and len(meta["highest"]) == 2
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 256 and {"k1", "k2", "predicted"} <= set(rows[0])
    assert all(float(r["predicted"]) > 0 for r in rows)
    png = tmp_path / "map.png"
    assert cli.main(["predict", "--model", "published:lenet", "--out", str(png)]) == 0
    assert png.stat().st_size > 10_000
    assert not list(tmp_path.glob("*.part"))


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--model", "no_such_net", "--out", "m.csv"], "no_such_net"),
        (["--model", "lenet", "--out", "m.txt"], ".csv"),
    ],
)
def test_predict_command_bad_input_is_a_clear_error(tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["predict", *argv]) == 2
    assert message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_predict_command_needs_two_networks(tmp_path, capsys):
    with pytest.raises(SystemExit):
        cli.main(["predict", "--model", "lenet", "--networks", "1", "--out", str(tmp_path / "m.csv")])
    assert "networks" in capsys.readouterr().err


def test_predicted_map_of_a_multichannel_network_scores_the_repeated_direction():
    Q, _ = np.linalg.qr(np.random.default_rng(3).standard_normal((3 * 1024, 3 * 1024)))
    r = NADResult(
        np.ones(3 * 1024),
        Q.T.astype(np.float32),
        {"model": "toy", "method": "gradient", "networks": 10, "input_shape": [3, 32, 32]},
    )
    assert np.allclose(predicted_fig1_map(r), 1.0, atol=1e-4)
    assert torch.is_tensor(fourier_directions(GRID, channels=3))
