"""The machinery every chapter shares: the chapter setup (profiles, parameters, device,
provenance), the job runner and its content-addressed cache, evidence (intervals, criteria,
verdicts) and the scorecard page, campaigns and their committed bundles, the interactive
explorers of the web book. Only this package knows about profiles; it finds a chapter's settings
and claims by name (:func:`nadcore.book.profiles.chapter_module`) and never imports a chapter.

A chapter starts with ``ch = setup("03_linear_separability", profile=..., seed=..., knobs=...)``
and ends with ``ch.finish()``; see :class:`nadcore.book.setup.Chapter`.
"""

from nadcore.book.profiles import PROFILES, knob_names, resolve  # noqa: F401
from nadcore.book.setup import Chapter, setup  # noqa: F401
