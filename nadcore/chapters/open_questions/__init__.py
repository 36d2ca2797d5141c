"""Chapter 6, the reviewers' open questions and the paper's untested theory.

* ``settings``: the profiles' settings (``PAPER``, and what ``CPU`` and ``SMOKE`` cut);
* ``claims``: the claims the chapter tests (statement, source, criterion, paper value);
* ``runs``: the chapter's experiments as jobs of the book's runner;
* ``figures``: the chapter's figures;
* ``study``: the page's quantities, figures and claims' evidence on one run's settings.
"""
