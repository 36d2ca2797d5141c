"""Chapter 7's library side: patch embeddings as pooling (nadcore.theory.patches), the atlas
functions (nadcore.chapters.nad_atlas.runs), the claims registered before the run."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.stats import t as student_t

from nadcore.book import claims, profiles
from nadcore.chapters.nad_atlas import runs as atlas
from nadcore.nads import NADResult, compute_nads, jackknife_statistic
from nadcore.runtime import threads
from nadcore.theory.patches import alias_energy_fraction, token_alias_mask


def _orthonormal(k, D, seed):
    Q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((D, k)))
    return Q.T


# ------------------------------------------------------------------ theory
@pytest.mark.parametrize("p", [1, 2, 4, 8, 16, 32])
def test_token_alias_mask_is_the_lattice_of_multiples_of_D_over_p(p):
    m = token_alias_mask(32, p)
    k = np.arange(32)
    axis = k % (32 // p) == 0
    assert m.sum() == p * p
    np.testing.assert_array_equal(m, np.outer(axis, axis))


def test_mask_matches_a_patch_embedding_that_ignores_token_positions():
    """A stride-p patch embedding followed by the mean over tokens is a linear functional whose
    gradient is p-periodic: its Fourier energy lies on the mask, and only there."""
    p = 4
    conv = torch.nn.Conv2d(1, 8, p, stride=p)
    head = torch.nn.Linear(8, 1)
    x = torch.randn(1, 1, 32, 32, requires_grad=True)
    head(conv(x).mean((2, 3))).sum().backward()
    g = x.grad[0, 0].numpy()
    assert alias_energy_fraction(g.reshape(1, -1) / np.linalg.norm(g), token_alias_mask(32, p)) > 1 - 1e-9
    # and a mask of a patch size that does not match (p = 2 folds onto zero only multiples of 16)
    assert alias_energy_fraction(g.reshape(1, -1) / np.linalg.norm(g), token_alias_mask(32, 2)) < 0.9


def test_alias_energy_fraction_is_a_property_of_the_subspace():
    U = _orthonormal(6, 1024, 0)
    R, _ = np.linalg.qr(np.random.default_rng(1).standard_normal((6, 6)))
    mask = token_alias_mask(32, 8)
    assert alias_energy_fraction(U, mask) == pytest.approx(alias_energy_fraction(R @ U, mask), abs=1e-12)
    # isotropic directions put the set's share of the frequencies there, on average
    many = _orthonormal(1024, 1024, 2)
    assert alias_energy_fraction(many, mask) == pytest.approx(mask.mean(), abs=1e-9)


# ------------------------------------------------------------------ fingerprints
def _result(U, networks=64):
    return NADResult(
        np.linspace(1, 0.01, len(U)),
        U,
        {"networks": networks, "input_shape": [1, 32, 32]},
        {"split_half": np.array([0.9, 0.9, 0.9, 0.9])},
    )


def test_fingerprint_distances_and_tree_separate_two_families():
    base_a, base_b = _orthonormal(32, 1024, 0), _orthonormal(32, 1024, 5)
    rng = np.random.default_rng(3)

    def near(B):  # a small rotation of B: the same top subspace, nearly
        Q, _ = np.linalg.qr(B.T + 0.003 * rng.standard_normal(B.T.shape))
        return Q.T

    results = {"a1": _result(base_a), "a2": _result(near(base_a)), "b1": _result(base_b), "b2": _result(near(base_b))}
    pairs = atlas.fingerprint_distances(results, 16)
    assert len(pairs) == 6 and set(pairs.columns) >= {"a", "b", "overlap", "distance"}
    M = atlas.distance_matrix(pairs, results)
    assert np.allclose(M, M.T) and np.all(np.diag(M) == 0)
    assert M[0, 1] < 0.2 and M[2, 3] < 0.2 and M[0, 2] > 0.9
    text = atlas.describe_fingerprints(
        M, list(results), {"a1": "A", "a2": "A", "b1": "B", "b2": "B"}, atlas.noise_floor(results, 16), 2
    )
    assert "{a1, a2} (A)" in text and "{b1, b2} (B)" in text and "0 of the 2 clusters mix families" in text
    distinct, told = atlas.distinct_architectures(M, list(results), {l: 0.1 for l in results})
    assert told == list(results) and distinct == []  # each has a twin nearer than its noise 0.1
    distinct, _ = atlas.distinct_architectures(M, list(results), {l: 0.001 for l in results})
    assert distinct == list(results)


def test_jackknife_statistic_brackets_the_estimate():
    with threads(1, blas=True):
        r = compute_nads("logreg", (1, 8, 8), 64, seed=0, method="gradient", device="cpu", lanes=1)
    v, lo, hi = jackknife_statistic(r, lambda U: float(np.sum(U[:, :8] ** 2)), 4)
    assert lo <= v <= hi and hi - lo > 0
    # the plain delete-one-group jackknife, by hand, on the top 4 NADs of each group's estimate
    s = np.array([np.sum(V[:4, :8] ** 2) for V in r.extras["jackknife_nads"]])
    half = student_t.ppf(0.975, len(s) - 1) * np.sqrt((len(s) - 1) / len(s) * np.sum((s - s.mean()) ** 2))
    np.testing.assert_allclose([v, lo, hi], [np.sum(r.nads[:4, :8] ** 2), v - half, v + half], rtol=1e-6)
    # clipped to the statistic's bounds where given
    assert jackknife_statistic(r, lambda U: float(np.sum(U[:, :8] ** 2)), 4, bounds=(0, v))[2] == v


def test_random_directions_are_seeded_unit_vectors():
    a, b, c = (atlas.random_directions(5, 1024, s) for s in (1, 1, 2))
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0)


# ------------------------------------------------------------------ settings and claims
@pytest.mark.parametrize("profile", ["smoke", "cpu", "paper"])
def test_profiles_have_what_the_chapter_needs(profile):
    cfg = profiles.resolve("07_nad_atlas", profile)
    archs = cfg["architectures"]
    assert set(cfg["index_models"]) <= set(archs) and set(cfg["secant_networks"]) <= set(archs)
    assert {"ViT/4", "ViT/8", "MLP-Mixer/4"} <= set(archs)
    if profile != "smoke":
        assert len(archs) >= 12 and {"LogReg", "LeNet", "VGG-11", "ResNet-18", "DenseNet-121", "ConvNeXt"} <= set(archs)
        assert len(cfg["index_indices"]) >= 16 and cfg["seeds"] >= 3 and cfg["index_random"] >= 1
        assert cfg["signal"] == "paper"
    assert set(cfg["families"]) >= set(archs)


def test_claims_are_registered_as_extensions():
    found = claims.specs("07_nad_atlas")
    assert len(found) >= 5 and all(s.kind == "extension" for s in found.values())
    cfg = profiles.resolve("07_nad_atlas", "paper")
    for slug in cfg["index_models"].values():
        assert f"atlas-index-{slug}-ranks" in found and f"atlas-index-{slug}-vs-random" in found
