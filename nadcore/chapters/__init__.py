"""The book's chapters, one package each: everything that belongs to one chapter in one place.

A chapter ``chapters/NN_<name>.py`` (the Jupytext notebook) has the package
``nadcore.chapters.<name>`` with its ``settings`` (the profiles), ``claims`` (what it tests, with
the criteria), ``runs`` (its experiments as jobs) and ``figures``. The generic library below
(``theory``, ``data``, ``nets``, ``nads``, ``train``, ``kernels``) knows no chapter; the book
machinery beside it (:mod:`nadcore.book`) finds a chapter's settings and claims by name.
:mod:`nadcore.chapters.campaigns` defines the campaigns: the chapters' figures that the build
cannot afford, run off-build into committed bundles.
"""
