"""Neural anisotropy directions (NADs): their definition, their estimation, and comparing them.

* :mod:`nadcore.nads.estimators`: a network's input sensitivity, by the authors' secant (step 100)
  or by the exact gradient (the paper's definition): the two plain reference estimators;
* :mod:`nadcore.nads.covariance`: the gradient covariance ``E_theta[g g^T]``, its eigenvectors,
  convergence (split halves, jackknife) and subspace overlaps;
* :mod:`nadcore.nads.sampling`: :func:`compute_nads`, thousands of random networks;
* :mod:`nadcore.nads.mixed_hessian`: the second basis of Lemma 2;
* :mod:`nadcore.nads.trained`: the analogue for one trained network;
* :mod:`nadcore.nads.published`: the authors' published NADs and Fig. 6 data.
"""

from nadcore.nads.covariance import (
    GROUPS,
    OVERLAP_KS,
    NADResult,
    complete_basis,
    gradient_covariance,
    identifiable_overlap,
    jackknife_statistic,
    overlap_interval,
    subspace_overlap,
    top_eigenvectors,
)
from nadcore.nads.estimators import evaluation_point, input_gradient, input_sensitivity_secant
from nadcore.nads.sampling import METHODS, compute_nads

__all__ = [
    "NADResult",
    "compute_nads",
    "input_sensitivity_secant",
    "input_gradient",
    "evaluation_point",
    "gradient_covariance",
    "top_eigenvectors",
    "subspace_overlap",
    "identifiable_overlap",
    "overlap_interval",
    "jackknife_statistic",
    "complete_basis",
    "OVERLAP_KS",
    "GROUPS",
    "METHODS",
]
