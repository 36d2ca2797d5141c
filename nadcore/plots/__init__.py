"""Figures of the NAD book, one submodule per chapter (e.g. ``nadcore.plots.pooling``), and the
interactive explorers of the web book (:mod:`nadcore.plots.explorer`).

Every figure function returns a :class:`matplotlib.figure.Figure`; none calls ``plt.show`` or
selects a backend.
"""
