"""Chapter 2, computing NADs (NAD paper Sec. 3, Fig. 5): the estimators compared, convergence, the width study.

* ``settings``: the profiles' settings (``PAPER``, and what ``CPU`` and ``SMOKE`` cut);
* ``claims``: the claims the chapter tests (statement, source, criterion, paper value);
* ``figures``: the chapter's figures;
* ``quantities``: Fig. 5 against Fig. 1 (supports, combs of spikes) and the width study;
* ``study``: the chapter's computations on one run's settings, one method per paper quantity
  and one per claim (the page's science, without its plumbing).
"""
