"""nadcore: the library behind the NAD book (Neural Anisotropy Directions, NeurIPS 2020).

Layers, top to bottom (imports only point down): ``book`` (chapter setup: profiles, parameters,
scorecard) -> experiments (``separability``, ``poisoning``, ``underspec_experiments``, run as jobs
by ``experiments``) -> ``train`` / ``nads`` -> ``models``, ``initialisation``, ``data``,
``theory``, ``linear_pooling``, ``cifar``, ``cache``. ``plots`` and ``explorer`` draw;
``evidence`` turns measurements into verdicts. Nothing is computed at import time.
"""
__version__ = "0.2.0"
