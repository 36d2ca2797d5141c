"""Chapter 1, pooling and aliasing (NAD paper Sec. 2.1, Theorem 1, Lemma 1, Figs. 4a/4b).

* ``settings``: the profiles' settings (``PAPER``, and what ``CPU`` and ``SMOKE`` cut);
* ``claims``: the claims the chapter tests (statement, source, criterion, paper value);
* ``figures``: the chapter's figures.
"""
