"""Chapter 1, pooling and aliasing: the claims of the NAD paper's Sec. 2.1-2.2 (Theorem 1, Lemma 1,
Fig. 4). Theorem 1 and Lemma 1 are exact statements, so their criteria are exact up to rounding or
to the Monte Carlo error of a check; Fig. 4b is stated in words only ("much slower", read as
everywhere in the book: at least an order of magnitude, :data:`nadcore.book.evidence.MUCH`).

The closed form of Theorem 1 evaluated where it is exact (``thm1-anisotropic``, ``thm1-blind``)
cannot fail short of a bug in the book's own algebra: those are ``check`` s, not evidence. The
simulation (``thm1-monte-carlo``) and the sampled Hessian (``lemma1-hessian``) can."""

import math

from nadcore.book.evidence import MUCH, ClaimSpec

NAD = "NAD paper (Ortiz-Jimenez et al., NeurIPS 2020)"

CLAIMS = [
    ClaimSpec(
        id="thm1-anisotropic",
        kind="check",
        source=f"{NAD}, Sec. 2.1, Theorem 1 (eq. 2), Fig. 4a",
        statement="After average pooling the best achievable accuracy depends on the discriminative "
        "frequency: pooling is an anisotropic lossy channel, from no loss at l = 0 to chance "
        "where the prefilter vanishes.",
        quantity="max - min over l of Theorem 1's Bayes accuracy (sigma={table_sigma})",
        op=">=",
        threshold=0.5 - 1e-9,
        bounds=(0.0, 0.5),
        paper_value=0.5,
        paper_value_source="Theorem 1 (eq. 2): 1 - Q(inf) = 1 at l = 0 (gamma infinite) and "
        "1 - Q(0) = 1/2 where the prefilter vanishes, so the range is 1/2",
        tolerance="exact: the closed form, up to rounding (1e-9)",
        trained=False,
    ),
    ClaimSpec(
        id="thm1-blind",
        kind="check",
        source=f"{NAD}, Sec. 2.1, Theorem 1 (eq. 2)",
        statement="Where the pooling prefilter vanishes (l a nonzero multiple of M) even the "
        "Bayes-optimal classifier is at chance.",
        quantity="largest Bayes accuracy at l in {blind}",
        op="<=",
        threshold=0.5 + 1e-9,
        bounds=(0.5, 1.0),
        paper_value=0.5,
        paper_value_source="Theorem 1 (eq. 2): m_hat[l] = 0 gives gamma = 0 and 1 - Q(0) = 1/2",
        tolerance="exact: the optimum for any linear layer, up to rounding (1e-9)",
        trained=False,
    ),
    ClaimSpec(
        id="thm1-monte-carlo",
        kind="paper",
        source=f"{NAD}, Sec. 2.1, Theorem 1, Fig. 4a",
        statement="Theorem 1's closed form is the accuracy the best classifier reaches after pooling "
        "(checked by simulation in pixel space, with the normalisation of D(v) used here).",
        quantity="largest |z| of simulation vs exact optimum over {pairs} (frequency, sigma) pairs",
        op="<=",
        threshold=4.0,
        bounds=(0.0, float("inf")),
        tolerance="sampling error only: |z| <= 4 for every pair (a pair exceeds it with probability "
        "6e-5 when the theorem holds)",
        trained=False,
    ),
    ClaimSpec(
        id="lemma1-hessian",
        kind="paper",
        source=f"{NAD}, Sec. 2.2, Lemma 1",
        statement="The expected Hessian of the loss of the deep linear model of pooling is the sum of a "
        "signal and a noise curvature term (Lemma 1's closed form).",
        quantity="max |sampled - Lemma 1| / max |Lemma 1|",
        op="<=",
        threshold="{hessian_tolerance}",
        bounds=(0.0, float("inf")),
        paper_value=0.0,
        paper_value_source="Lemma 1 is exact: the sampled average converges to it",
        tolerance="12 / sqrt(hessian_samples): the Monte Carlo error of an average of products of four "
        "Gaussians, a few times 1/sqrt(n)",
        trained=False,
    ),
    ClaimSpec(
        id="fig4b-zeta-speed",
        kind="paper",
        source=f"{NAD}, Sec. 2.2, Fig. 4b",
        statement="SGD on the linear model of pooling converges much more slowly at frequencies with a "
        "small curvature ratio zeta (zeta << 1) than at those with a large one.",
        quantity="log10(iterations at l={slow_ell} / iterations at l={fast_ell})",
        op=">=",
        threshold=math.log10(MUCH),
        tolerance=f"'much slower' for zeta << 1, read as at least {MUCH:g} times, the book's one reading of "
        "'much' (the paper gives Fig. 4b as a plot, no number)",
    ),
]
