"""Chapter 5, underspecification (the follow-up paper, Figs. 2 and 3).

* ``settings``: the profiles' settings (``PAPER``, and what ``CPU`` and ``SMOKE`` cut);
* ``claims``: the claims the chapter tests (statement, source, criterion, paper value);
* ``runs``: the chapter's experiments as jobs of the book's runner;
* ``figures``: the chapter's figures;
* ``study``: the chapter's paper quantities and claims' evidence on one run's settings (``Study``).
"""
