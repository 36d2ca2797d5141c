"""Chapter 1, pooling and aliasing (NAD paper Sec. 2.1, Theorem 1, Lemma 1, Figs. 4a/4b).

* ``settings``: the profiles' settings (``PAPER``, and what ``CPU`` and ``SMOKE`` cut);
* ``claims``: the claims the chapter tests (statement, source, criterion, paper value);
* ``runs``: the simulation (Theorem 1 checked by Monte Carlo in pixel space);
* ``study``: one function per paper quantity the page computes, and one per claim returning
  the keywords of ``ch.claim``;
* ``figures``: the chapter's figures.
"""
