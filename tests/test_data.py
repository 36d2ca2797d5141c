"""nadcore.data: Fourier directions, the Fig. 1 grid, D(v) datasets, channel concatenation."""

import numpy as np
import pytest
import torch

from nadcore.data import (
    concat_channels,
    directional_dataset,
    directional_train_test,
    fourier_basis_vector,
    fourier_directions,
    fourier_grid,
)


def test_fourier_vectors_are_an_orthonormal_basis():
    size = 8
    V = np.stack([fourier_basis_vector(a, b, size).numpy().ravel() for a in range(size) for b in range(size)]).astype(
        np.float64
    )
    assert V.shape == (size * size, size * size)
    np.testing.assert_allclose(V @ V.T, np.eye(size * size), atol=1e-5)


def test_fourier_vector_lives_on_its_frequency():
    v = fourier_basis_vector(3, -5, 32).numpy()
    assert v.shape == (1, 32, 32) and v.dtype == np.float32
    assert abs(np.linalg.norm(v) - 1) < 1e-6
    e = np.abs(np.fft.fft2(v[0])) ** 2
    support = {tuple(int(t) for t in ij) for ij in np.argwhere(e > 1e-6 * e.max())}
    assert support == {(3, 32 - 5), (32 - 3, 5)}
    # periodic in the frequency and self-conjugate frequencies give the cosine
    np.testing.assert_allclose(fourier_basis_vector(3 + 32, -5, 32), v, atol=1e-6)
    nyq = fourier_basis_vector(16, 0, 32).numpy()[0]
    np.testing.assert_allclose(nyq, np.cos(np.pi * np.arange(32))[:, None] * np.ones((1, 32)) / 32, atol=1e-6)


def test_grid_layout_low_frequencies_at_the_centre():
    g = fourier_grid(32, 16)
    assert g.shape == (16, 16) and g.stride == 2
    assert (g.k1[8, 8], g.k2[8, 8]) == (0, 0)
    assert (g.k1[0, 0], g.k2[0, 0]) == (-16, -16)
    assert (g.k1[0, 15], g.k2[0, 15]) == (-16, 14)
    assert g.frequencies[0] == (-16, -16) and len(set(g.frequencies)) == 256
    sub = g.subgrid(2)
    assert sub.shape == (8, 8) and (0, 0) in sub.frequencies and sub.stride == 4
    D = fourier_directions(g.subgrid(4))
    assert D.shape == (16, 1, 32, 32)
    gram = D.reshape(16, -1) @ D.reshape(16, -1).T
    torch.testing.assert_close(gram, torch.eye(16), atol=1e-5, rtol=0)


def test_directional_dataset_definition():
    v = fourier_basis_vector(2, 4)
    g = torch.Generator().manual_seed(0)
    x, y = directional_dataset(v * 3.0, 4000, sigma=2.0, epsilon=0.7, generator=g)
    assert x.shape == (4000, 1, 32, 32) and x.dtype == torch.float32
    assert y.dtype == torch.int64 and set(y.unique().tolist()) == {-1, 1}
    assert abs(y.float().mean().item()) < 0.06  # balanced in expectation
    proj = x.reshape(4000, -1) @ v.reshape(-1)
    torch.testing.assert_close(proj, 0.7 * y.float(), atol=1e-4, rtol=0)  # separable, margin eps
    w = x.reshape(4000, -1) - proj[:, None] * v.reshape(1, -1)
    assert abs(w.var().item() * 1024 / 1023 - 4.0) < 0.05  # sigma^2 off the direction
    x2, y2 = directional_dataset(v, 4000, 2.0, 0.7, generator=torch.Generator().manual_seed(0))
    assert torch.equal(y, y2)  # v is normalised
    torch.testing.assert_close(x, x2, atol=1e-5, rtol=0)
    x3, _ = directional_dataset(v * 3.0, 4000, 2.0, 0.7, generator=torch.Generator().manual_seed(0))
    assert torch.equal(x3, x)  # seeded: reproducible


def test_authors_signal_is_balanced_with_half_the_margin():
    v = fourier_basis_vector(2, 4)
    x, y = directional_dataset(
        v, 1001, sigma=3.0, epsilon=1.0, generator=torch.Generator().manual_seed(0), signal="authors"
    )
    assert int((y == 1).sum()) == 501 and int((y == -1).sum()) == 500  # exactly balanced
    proj = x.reshape(1001, -1) @ v.reshape(-1)
    torch.testing.assert_close(proj, 0.5 * y.float(), atol=1e-4, rtol=0)  # +-(eps/2) v
    with pytest.raises(ValueError, match="signal"):
        directional_dataset(v, 10, generator=torch.Generator(), signal="mine")
    with pytest.raises(TypeError, match="explicit torch.Generator"):
        directional_dataset(v, 10, generator=None)


@pytest.mark.parametrize("n", [1, 511, 1300])
@pytest.mark.parametrize("signal", ["paper", "authors"])
def test_directional_dataset_has_the_plain_expressions_bits(n, signal):
    """Computed in place, block by block: bit for bit the one-line expression of D(v)."""
    v = torch.randn(3, 8, 8, generator=torch.Generator().manual_seed(n))
    x, y = directional_dataset(v, n, 2.5, 0.75, generator=torch.Generator().manual_seed(3), signal=signal)
    g = torch.Generator().manual_seed(3)
    flat = (v.double() / v.double().norm()).float().reshape(-1)
    if signal == "paper":
        y0, s = torch.randint(0, 2, (n,), generator=g) * 2 - 1, 0.75
    else:
        y0, s = torch.cat([torch.ones(n - n // 2), -torch.ones(n // 2)]).long(), 0.375
    w = torch.randn((n, flat.numel()), generator=g, dtype=torch.float32) * 2.5
    w = w - (w @ flat)[:, None] * flat[None, :]
    plain = w + s * y0.to(torch.float32)[:, None] * flat[None, :]
    assert torch.equal(y, y0) and torch.equal(x, plain.reshape(n, 3, 8, 8))


def test_train_and_test_are_independent_draws_of_the_requested_sizes():
    v = fourier_basis_vector(0, 2)
    xtr, ytr, xte, yte = directional_train_test(v, 300, 120, 3.0, 1.0, generator=torch.Generator().manual_seed(1))
    assert len(xtr) == len(ytr) == 300 and len(xte) == len(yte) == 120
    assert not torch.allclose(xtr[:120], xte)


def test_concat_channels():
    a, b = torch.zeros(5, 1, 8, 8), torch.ones(5, 2, 8, 8)
    c = concat_channels(a, b)
    assert c.shape == (5, 3, 8, 8) and c[:, 1:].eq(1).all()
    with pytest.raises(ValueError):
        concat_channels(a, torch.ones(4, 1, 8, 8))
