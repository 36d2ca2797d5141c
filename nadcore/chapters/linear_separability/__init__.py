"""Chapter 3, linear separability (NAD paper Sec. 2 and 4.1, Figs. 1, 2, 3 and 6).

* ``settings``: the profiles' settings (``PAPER``, and what ``CPU`` and ``SMOKE`` cut);
* ``claims``: the claims the chapter tests (statement, source, criterion, paper value);
* ``runs``: the chapter's experiments as jobs of the book's runner;
* ``figures``: the chapter's figures.
"""
