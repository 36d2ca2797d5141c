"""nadcore: the library behind the NAD book (Neural Anisotropy Directions, NeurIPS 2020, and its
follow-up on underspecification).

Subpackages mirror the papers; imports only point down this list (tests/test_layout.py):

=================  ============================================================================
``chapters``       one package per chapter: its settings, claims, runs and figures; campaigns
``book``           the machinery the chapters share: setup and profiles, the job runner and its
                   cache, evidence and the scorecard, campaigns and bundles, the explorers
``train``          the papers' SGD recipe, one model or many side by side
``nads``           the two estimators, the gradient covariance, its eigenvectors (the NADs)
``kernels``        speed-only paths (C kernels, structured estimators, fast draws), optional
``nets``           the papers' architectures, variants, the model registry, seeded initialisation
``data``           Fourier directions and D(v), CIFAR-10, poisoning and flipping
``theory``         pooling, aliasing and the Bayes bound: pure functions, one per equation
``runtime``        devices, seeds and digests
=================  ============================================================================

``python -m nadcore`` is a command line tool (``nads``, ``compare``, ``show``). Nothing is
computed, and nothing compiled, at import time.
"""

__version__ = "0.3.0"
