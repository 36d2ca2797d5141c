"""Chapter 7's figure in a campaign (:mod:`nadcore.chapters.campaigns`): the atlas architectures of
``predict_models`` trained as chapter 3's Fig. 1 (its settings and the authors' recipe) on the
cells chosen for them before training (:data:`nadcore.chapters.nad_atlas.prediction.ATLAS_CELLS`),
each stage naming its model ``spec``; the rows go to chapter 7's bundle folder."""

from __future__ import annotations

from nadcore.chapters.linear_separability.campaign import fourier_figure

__all__ = ["CHAPTER", "ATLAS_FIG1"]

#: the chapter whose bundle folder holds the atlas architectures' cells
CHAPTER = "07_nad_atlas"
ATLAS_FIG1 = fourier_figure("atlas-fig1", CHAPTER)
