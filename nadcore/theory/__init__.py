"""The paper's theory of pooling, as pure functions, one per equation (chapter 1).

* :mod:`nadcore.theory.pooling`: linear pooling as an anisotropic channel, Theorem 1 (the
  Bayes-optimal accuracy after pooling, gamma(l)), also over a grid of directions (its Monte
  Carlo check, an experiment, is chapter 1's: :mod:`nadcore.chapters.pooling.runs`);
* :mod:`nadcore.theory.linear_pooling`: the deep linear model of pooling, Lemma 1 (zeta) and its
  SGD training, the gradient covariance of eq. (4);
* :mod:`nadcore.theory.patches`: patch embeddings as pooling: the pixel frequencies a stride-p
  embedding folds onto the token grid's zero frequency (chapter 7).
"""
