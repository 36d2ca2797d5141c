"""Chapter 2, computing NADs (NAD paper Sec. 3, Fig. 5): the estimators compared, convergence, the width study.

* ``settings``: the profiles' settings (``PAPER``, and what ``CPU`` and ``SMOKE`` cut);
* ``claims``: the claims the chapter tests (statement, source, criterion, paper value);
* ``figures``: the chapter's figures.
"""
