"""nadcore: the library behind the NAD book (Neural Anisotropy Directions, NeurIPS 2020).

Submodules: ``models``, ``nads``, ``theory``, ``data``, ``train``, ``cache``, ``plots``,
``profiles``, ``utils``. Nothing is computed at import time.
"""
__version__ = "0.1.0"
