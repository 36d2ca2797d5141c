"""Data: Fourier directions and the linearly separable family D(v) (:mod:`.directions`), CIFAR-10
(:mod:`.cifar`), its NAD poisoning and flipping (:mod:`.poisoning`), and the follow-up's
underspecified datasets (:mod:`.underspec`)."""

from nadcore.data.directions import (
    SIGNALS,
    FourierGrid,
    concat_channels,
    directional_dataset,
    directional_train_test,
    fourier_basis_vector,
    fourier_directions,
    fourier_energy,
    fourier_grid,
    low_frequency_fraction,
    unit,
)

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
