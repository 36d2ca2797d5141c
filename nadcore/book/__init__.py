"""The chapter-setup layer of the NAD book: profiles, parameters, device, cache, provenance and
the scorecard. Only this package knows about profiles; the rest of nadcore takes plain arguments.

A chapter starts with ``ch = setup("03_linear_separability", profile=..., seed=..., knobs=...)``
and ends with ``ch.finish()``; see :class:`nadcore.book.setup.Chapter`.
"""
from nadcore.book.setup import Chapter, setup  # noqa: F401
from nadcore.book.profiles import PROFILES, resolve, knob_names  # noqa: F401
