"""Figure functions of the NAD book, one submodule per chapter (e.g. ``nadcore.plots.pooling``).

Every function returns a :class:`matplotlib.figure.Figure`; none calls ``plt.show`` or selects a
backend.
"""
