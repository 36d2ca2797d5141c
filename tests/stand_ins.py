"""Stand-ins for the objects a chapter's study is built from, for tests that need no cache or workers."""

from __future__ import annotations

from types import SimpleNamespace


def chapter_stand_in(**settings) -> SimpleNamespace:
    """A chapter run (:class:`nadcore.book.setup.Chapter`) without its cache or workers: the given
    settings (``cfg``, ``seed``, ``seeds``, ``profile``, ``paper_cfg``, ...), with the real
    :meth:`Chapter.seeds_of`."""
    from nadcore.book.setup import Chapter

    ch = SimpleNamespace(cache=None, executor=lambda: None, device="cpu", **settings)
    ch.seeds_of = lambda setting: Chapter.seeds_of(ch, setting)
    return ch
