"""Data for the NAD experiments: Fourier directions, the linearly separable family D(v), channel
concatenation.

Paper: Ortiz-Jimenez et al., "Neural Anisotropy Directions", NeurIPS 2020, Sec. 2 (D(v), Figs. 1-3)
and Sec. 4.1 (D(u_i) on NADs, Fig. 6); the follow-up on underspecification concatenates such
datasets along the channel axis.

Fourier directions (the convention used everywhere in the book)
----------------------------------------------------------------
For an ``N x N`` image and integer frequencies ``(k1, k2)`` (``k1`` along rows / the vertical
axis, ``k2`` along columns), let ``theta[m, n] = 2 pi (k1 m + k2 n) / N``. The standard 2D-DFT
basis vector is ``exp(-i theta) = cos(theta) - i sin(theta)``. Its real and imaginary parts are two
real directions that are not independent across frequencies (``(k1, k2)`` and ``(-k1, -k2)`` give
the same pair up to sign). We use their difference, ``Re - Im = cos(theta) + sin(theta)`` (the
Hartley "cas" function), normalised to unit norm. Over all ``N^2`` frequencies these vectors form an
orthonormal basis of R^(N x N) with exactly one real direction per DFT coefficient, so each cell of
a frequency grid is one distinct direction (at the self-conjugate frequencies, where sin vanishes,
it is the cosine).

The paper's Fig. 1 grid is 16 x 16 with the lowest frequencies at the centre and the highest at the
corners. ``fourier_grid(size=32, grid=16)`` reproduces that layout by sampling every
``stride = size // grid = 2``-nd frequency: cell ``(i, j)`` (row i, column j) holds
``(k1, k2) = (stride * (i - grid // 2), stride * (j - grid // 2))``, i.e. k in {-16, -14, ..., 14},
so the centre cell (8, 8) is the constant (DC) direction and the corners are the Nyquist
frequencies: the whole spectrum is covered, as in ``np.fft.fftshift``.

D(v) (paper Sec. 2)
-------------------
Two conventions, chosen with ``signal``:

* ``"paper"``: ``x = eps * y * v + w`` with ``y`` uniform in {-1, +1} (the paper's text);
* ``"authors"``: the authors' code (``directional_bias.py``): exactly balanced classes (the first
  ``ceil(n/2)`` samples have ``y = +1``, the rest ``-1``) and ``x = (eps / 2) * y * v + w``, a
  margin half as large.

In both, ``w ~ N(0, sigma^2 (I - v v^T))``: isotropic noise with its component along ``v``
projected out, so the data are linearly separable along ``v``. The training and test sets are
independent draws of the requested sizes (the authors' test set silently had the training set's
size).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

__all__ = [
    "fourier_basis_vector",
    "fourier_grid",
    "FourierGrid",
    "fourier_directions",
    "directional_dataset",
    "directional_train_test",
    "concat_channels",
    "unit",
    "SIGNALS",
    "fourier_energy",
    "low_frequency_fraction",
]


def unit(v) -> torch.Tensor:
    """``v / ||v||`` as a float32 tensor (any shape)."""
    v = v.detach().to(torch.float64) if isinstance(v, torch.Tensor) else torch.tensor(np.array(v, dtype=np.float64))
    n = v.norm()
    if not torch.isfinite(n) or n == 0:
        raise ValueError("cannot normalise a zero or non-finite vector")
    return (v / n).to(torch.float32)


def fourier_basis_vector(k1: int, k2: int, size: int = 32, channels: int = 1) -> torch.Tensor:
    """Unit-norm real Fourier direction of frequency ``(k1, k2)``, shape (channels, size, size).

    ``cos(theta) + sin(theta)`` with ``theta = 2 pi (k1 m + k2 n) / size`` (the real part minus the
    imaginary part of the DFT basis vector ``exp(-i theta)``), normalised; see the module
    docstring. Frequencies are taken modulo ``size``. With ``channels > 1`` the same pattern is
    repeated in every channel (and the whole tensor normalised).
    """
    m = np.arange(size)[:, None]
    n = np.arange(size)[None, :]
    theta = 2 * np.pi * ((k1 % size) * m + (k2 % size) * n) / size
    v = np.cos(theta) + np.sin(theta)
    v = np.broadcast_to(v, (channels, size, size))
    return unit(v)


@dataclass(frozen=True)
class FourierGrid:
    """Layout of a frequency grid: cell (i, j) holds frequency ``(k1[i, j], k2[i, j])``."""

    size: int
    grid: int
    stride: int
    k1: np.ndarray  # (grid, grid) int
    k2: np.ndarray  # (grid, grid) int

    @property
    def shape(self):
        return (self.grid, self.grid)

    @property
    def cells(self) -> list[tuple[int, int]]:
        """Row-major list of (i, j)."""
        return [(i, j) for i in range(self.grid) for j in range(self.grid)]

    @property
    def frequencies(self) -> list[tuple[int, int]]:
        """Row-major list of (k1, k2)."""
        return [(int(self.k1[i, j]), int(self.k2[i, j])) for i, j in self.cells]

    @property
    def ticks(self) -> np.ndarray:
        """Frequency value of each row / column (same for both axes)."""
        return self.stride * (np.arange(self.grid) - self.grid // 2)

    def subgrid(self, every: int) -> "FourierGrid":
        """Every ``every``-th cell in both axes, keeping the centre (DC) cell."""
        c = self.grid // 2
        idx = np.arange(c % every, self.grid, every)
        return FourierGrid(
            self.size, len(idx), self.stride * every, self.k1[np.ix_(idx, idx)], self.k2[np.ix_(idx, idx)]
        )


def fourier_grid(size: int = 32, grid: int = 16) -> FourierGrid:
    """The paper's Fig. 1 grid: ``grid x grid`` frequencies, low at the centre, high at the corners.

    Cell (i, j) holds ``(k1, k2) = (s (i - grid//2), s (j - grid//2))`` with ``s = size // grid``.
    """
    if size % grid:
        raise ValueError(f"grid ({grid}) must divide size ({size})")
    s = size // grid
    t = s * (np.arange(grid) - grid // 2)
    k1, k2 = np.meshgrid(t, t, indexing="ij")
    return FourierGrid(size=size, grid=grid, stride=s, k1=k1, k2=k2)


def fourier_directions(grid: FourierGrid, channels: int = 1) -> torch.Tensor:
    """All directions of ``grid`` in row-major order: (grid*grid, channels, size, size)."""
    return torch.stack([fourier_basis_vector(a, b, grid.size, channels) for a, b in grid.frequencies])


SIGNALS = ("authors", "paper")
_BLOCK = 512  # rows of D(v) per block: a block's temporaries stay in cache


def directional_dataset(
    v, n: int, sigma: float = 3.0, epsilon: float = 1.0, *, generator: torch.Generator, signal: str = "paper"
):
    """``n`` samples of D(v) (paper Sec. 2): ``x = s * y * v + w``, ``w ~ N(0, sigma^2 (I - v v^T))``,
    with ``s = epsilon`` and i.i.d. uniform labels (``signal="paper"``) or ``s = epsilon / 2`` and
    exactly balanced labels (``signal="authors"``, their code).

    ``v``: any shape (e.g. (1, 32, 32)); it is normalised. Returns ``x`` (n, *v.shape) float32 and
    ``y`` (n,) int64 in {-1, +1}, drawn from ``generator`` (labels first, then noise).
    """
    if signal not in SIGNALS:
        raise ValueError(f"signal must be one of {SIGNALS}, got {signal!r}")
    if not isinstance(generator, torch.Generator):
        raise TypeError("directional_dataset needs an explicit torch.Generator (generator=...)")
    u = unit(v)
    shape = tuple(u.shape)
    flat = u.reshape(-1)
    if signal == "paper":
        y = torch.randint(0, 2, (n,), generator=generator) * 2 - 1
        scale = float(epsilon)
    else:
        y = torch.cat([torch.ones(n - n // 2, dtype=torch.int64), -torch.ones(n // 2, dtype=torch.int64)])
        scale = float(epsilon) / 2
    # x = w - (w v) v^T + s y v^T with w = sigma z, z ~ N(0, I): computed in place, one n x D
    # array (a fresh one per step costs more in page faults than in arithmetic) and block by block
    # of rows, with the same float32 operations as that one-line expression, bit for bit
    x = torch.randn((n, flat.numel()), generator=generator, dtype=torch.float32).mul_(float(sigma))
    along, shift = x @ flat, scale * y.to(torch.float32)
    for a in range(0, n, _BLOCK):
        xb = x[a : a + _BLOCK]
        xb -= along[a : a + _BLOCK, None] * flat[None, :]
        xb += shift[a : a + _BLOCK, None] * flat[None, :]
    return x.reshape(n, *shape), y


def directional_train_test(
    v,
    n_train: int,
    n_test: int,
    sigma: float = 3.0,
    epsilon: float = 1.0,
    *,
    generator: torch.Generator,
    signal: str = "paper",
):
    """Independent train and test draws of D(v) of the requested sizes:
    ``(x_train, y_train, x_test, y_test)``."""
    x_tr, y_tr = directional_dataset(v, n_train, sigma, epsilon, generator=generator, signal=signal)
    x_te, y_te = directional_dataset(v, n_test, sigma, epsilon, generator=generator, signal=signal)
    return x_tr, y_tr, x_te, y_te


def concat_channels(*xs) -> torch.Tensor:
    """Concatenate datasets along the channel axis: each (n, C_i, H, W) -> (n, sum C_i, H, W).

    Used for the underspecification experiments (D(v1) (+) D(v2), or an image channel (+) a
    D(v) channel). All inputs must have the same number of samples and spatial size; labels are
    the caller's business (they must be shared).
    """
    ts = [torch.as_tensor(x) for x in xs]
    if not ts:
        raise ValueError("nothing to concatenate")
    n, hw = ts[0].shape[0], tuple(ts[0].shape[2:])
    for t in ts:
        if t.dim() != 4 or t.shape[0] != n or tuple(t.shape[2:]) != hw:
            raise ValueError(
                f"concat_channels needs (n, C, H, W) tensors with equal n and H, W; got {[tuple(t.shape) for t in ts]}"
            )
    return torch.cat([t.to(torch.float32) for t in ts], dim=1)


def fourier_energy(nad: np.ndarray) -> np.ndarray:
    """``|fftshift(fft2(u))|^2`` of a NAD image (summed over channels), low frequencies centred."""
    a = np.asarray(nad, dtype=np.float64)
    if a.ndim == 1:
        s = int(np.sqrt(a.size).round())
        a = a.reshape(s, s)
    if a.ndim == 3:
        return sum(np.abs(np.fft.fftshift(np.fft.fft2(c))) ** 2 for c in a)
    return np.abs(np.fft.fftshift(np.fft.fft2(a))) ** 2


def low_frequency_fraction(nad: np.ndarray, radius: float = 8.0) -> float:
    """Fraction of a NAD's Fourier energy within ``radius`` of the zero frequency."""
    E = fourier_energy(nad)
    h, w = E.shape
    yy, xx = np.mgrid[:h, :w]
    r = np.hypot(yy - h // 2, xx - w // 2)
    return float(E[r <= radius].sum() / E.sum())
