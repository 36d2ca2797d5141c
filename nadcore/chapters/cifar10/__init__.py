"""Chapter 4, CIFAR-10 (NAD paper Sec. 4.2, Figs. 7 and 8): poisoning and NAD flipping.

* ``settings``: the profiles' settings (``PAPER``, and what ``CPU`` and ``SMOKE`` cut);
* ``claims``: the claims the chapter tests (statement, source, criterion, paper value);
* ``runs``: the chapter's experiments as jobs of the book's runner;
* ``figures``: the chapter's figures;
* ``study``: the chapter's quantities, figures and claims' evidence on one run's settings
  (:class:`study.Study`), one method per paper quantity.
"""
