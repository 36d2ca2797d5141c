"""The book's chapters, one package each: everything that belongs to one chapter in one place.

A chapter ``chapters/NN_<name>.py`` (the Jupytext notebook) has the package
``nadcore.chapters.<name>`` with its ``settings`` (the profiles), ``claims`` (what it tests, with
the criteria), ``runs`` (its experiments as jobs) and ``figures``. The generic library below
(``theory``, ``data``, ``nets``, ``nads``, ``train``, ``kernels``) knows no chapter; the book
machinery beside it (:mod:`nadcore.book`) finds a chapter's settings and claims by name: this
package registers them (:func:`nadcore.book.profiles.register_chapter`), so the book imports no
chapter.
:mod:`nadcore.chapters.campaigns` defines the campaigns: the chapters' figures that the build
cannot afford, run off-build into committed bundles.
"""

from nadcore.book.profiles import register_chapter
from nadcore.chapters.cifar10 import claims as _cifar10_claims
from nadcore.chapters.cifar10 import settings as _cifar10_settings
from nadcore.chapters.linear_separability import claims as _separability_claims
from nadcore.chapters.linear_separability import settings as _separability_settings
from nadcore.chapters.nad_atlas import claims as _atlas_claims
from nadcore.chapters.nad_atlas import settings as _atlas_settings
from nadcore.chapters.nads import claims as _nads_claims
from nadcore.chapters.nads import settings as _nads_settings
from nadcore.chapters.open_questions import claims as _open_claims
from nadcore.chapters.open_questions import settings as _open_settings
from nadcore.chapters.pooling import claims as _pooling_claims
from nadcore.chapters.pooling import settings as _pooling_settings
from nadcore.chapters.underspecification import claims as _underspec_claims
from nadcore.chapters.underspecification import settings as _underspec_settings

for _name, _settings, _claims in (
    ("pooling", _pooling_settings, _pooling_claims),
    ("nads", _nads_settings, _nads_claims),
    ("linear_separability", _separability_settings, _separability_claims),
    ("cifar10", _cifar10_settings, _cifar10_claims),
    ("underspecification", _underspec_settings, _underspec_claims),
    ("open_questions", _open_settings, _open_claims),
    ("nad_atlas", _atlas_settings, _atlas_claims),
):
    register_chapter(_name, settings=_settings, claims=_claims)
