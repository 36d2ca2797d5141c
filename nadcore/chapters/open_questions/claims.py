"""Claims of chapter 6, open questions: the NeurIPS 2020 reviewers' questions (Reviews 2, 3 and 4),
the NAD paper's Sec. 3 (Lemma 2, eqs. (4)-(5)) and the follow-up's eq. (2).

Kinds: a question a reviewer asked, answered directly, is a "reviewer question"; a prediction the
book derives from the papers' theory (the aliasing reading of Theorem 1 for networks the paper did
not train, a control experiment) is an "extension"; Sec. 3 and eq. (2) are "paper" and
"follow-up"; a check of the book's own Monte Carlo code is a "sanity check".

Where a sentence is qualitative, the tolerance says how it is read: "equalised"/"free of the bias"
as chapter 3 reads Fig. 3 (an accuracy gap of at most 0.05); "a monotonically increasing function"
as a rank correlation of at least 0.8, since the follow-up gives no correlation to compare with
(chapter 3's Fig. 6 claims, which have the published curves, ask for their rank correlation
within 0.1).
"""

from nadcore.book.evidence import ClaimSpec

ACC, DIFF, CORR, SHARE, SPREAD = (0.0, 1.0), (-1.0, 1.0), (-1.0, 1.0), (0.0, 1.0), (0.0, float("inf"))
TOL = 0.05
OFF = "off-centre cells (max(k1, k2) >= {off_centre})"
LEARNED = "test accuracy >= {island}"
EQ2 = (
    "The accuracy of a network on D(v) is a monotonically increasing function of "
    "alpha(v) = v^T E_theta[grad_x f grad_x f^T] v, the alignment of v with the input-gradient "
    "covariance at initialisation"
)
EQ2_TOLERANCE = (
    "a monotonically increasing function has rank correlation 1 with its argument; 0.8 "
    "allows for the test sets' noise and for ties among cells at chance, and is what a "
    "flat or non-monotone relation over the grid does not reach (the follow-up gives no value)"
)

CLAIMS = [
    # Q1: pooling against other downsampling (Review 4) ------------------------------------------
    ClaimSpec(
        "oq1-maxpool-islands",
        "extension",
        "NAD paper, Theorem 1 and Fig. 1 (chapter 1's aliasing reading)",
        "Subsampling folds high frequencies onto low ones, so max-pool LeNet learns some directions "
        "far from the centre of the map (islands, as on the axes at |k| = 12 of the published Fig. 1).",
        f"share of the {OFF} that max-pool LeNet learns ({LEARNED})",
        ">=",
        TOL,
        SHARE,
        tolerance="0.05: at least one off-centre cell in 20 (the published map's axis islands (0, 12) and "
        "(12, 0) are 2 of the cpu quadrant's 21)",
    ),
    ClaimSpec(
        "oq1-blur-removes-islands",
        "extension",
        "NAD paper, Theorem 1 (for a network the paper did not train)",
        "An anti-aliasing low-pass filter before subsampling removes the off-centre islands: blur-pool "
        "LeNet learns none of the off-centre directions.",
        f"share of the {OFF} that blur-pool LeNet learns ({LEARNED})",
        "<=",
        0.0,
        SHARE,
    ),
    ClaimSpec(
        "oq1-blur-below-avg",
        "extension",
        "NAD paper, Theorem 1 (for networks the paper did not train)",
        "With the better low-pass prefilter (binomial instead of box) high-frequency directions lose more "
        "information, so blur-pool does worse off centre than average pooling.",
        f"mean test accuracy over the {OFF}, blur-pool minus average pooling (paired per seed)",
        "<",
        0.0,
        DIFF,
    ),
    ClaimSpec(
        "oq1-strided-islands",
        "extension",
        "NAD paper, Theorem 1 (for a network the paper did not train)",
        "Subsampling without a low-pass prefilter (a strided convolution) makes many more off-centre "
        "directions learnable than max-pooling.",
        f"share of the {OFF} learned ({LEARNED}), strided conv minus max-pool (paired per seed)",
        ">=",
        0.1,
        DIFF,
        tolerance="'many more' read as at least a tenth of the off-centre cells more",
    ),
    ClaimSpec(
        "oq1-strided-isotropic",
        "reviewer question",
        "NeurIPS 2020, Review 4",
        "Would a network that downsamples by striding, like the All Convolutional Net, be free of the "
        "directional bias? Read as the NAD paper reads Fig. 3 without pooling: the strided LeNet's "
        "accuracy no longer depends on the frequency.",
        f"|mean test accuracy of strided conv on the cells with max(k1, k2) < {{off_centre}} minus on the {OFF}|",
        "<=",
        TOL,
        ACC,
        tolerance="0.05, as chapter 3 tests Fig. 3's 'equalised' (fig3-nopool-uniform)",
    ),
    # Q2: NADs during training (Review 2) -----------------------------------------------------------
    ClaimSpec(
        "oq2-dv-turns-to-v",
        "reviewer question",
        "NeurIPS 2020, Review 2 (how do NADs change during training?)",
        "Training on D(v) turns the network's first NAD towards the discriminative direction v.",
        "share of v in the trained network's first NAD (D(v), last epoch)",
        ">=",
        0.5,
        SHARE,
        tolerance="'towards v' read as v holding at least half of the first NAD",
    ),
    ClaimSpec(
        "oq2-cifar-nads-persist",
        "reviewer question",
        "NeurIPS 2020, Review 2 (how do NADs change during training?)",
        "Read NADs computed at initialisation as a lasting property of the network: most of a network's "
        "initial top-k NAD subspace survives training on binary CIFAR-10.",
        "top-{k_max} overlap of the trained network's NADs with its initial NADs (binary CIFAR-10)",
        ">",
        0.5,
        SHARE,
        tolerance="'most' read as more than half of the subspace",
    ),
    # Q3: do trained CNNs use NAD directions? (Review 3) --------------------------------------------
    ClaimSpec(
        "oq3-first-vs-last",
        "reviewer question",
        "NeurIPS 2020, Review 3 (items 4 and 6)",
        "Review 3 doubted that trained CNNs rely on NAD directions and proposed removing NAD components "
        "of test images. The NAD paper's Sec. 4 (NADs determine the features CNNs pick on CIFAR-10) "
        "implies: removing the first {k_removed} NADs hurts a trained network more than removing the last "
        "{k_removed}.",
        "test accuracy with the last {k_removed} NADs removed minus with the first {k_removed} removed "
        "(paired per seed)",
        ">",
        0.0,
        DIFF,
    ),
    ClaimSpec(
        "oq3-beyond-energy",
        "extension",
        "NeurIPS 2020, Review 3 (a control for its question)",
        "The first NADs matter beyond the image energy they carry: removing them hurts more than removing "
        "as many of the training images' principal directions.",
        "test accuracy with the first {k_removed} principal directions removed minus with the first "
        "{k_removed} NADs removed (paired per seed)",
        ">",
        0.0,
        DIFF,
    ),
    # Q4: skip connections (Review 2) -----------------------------------------------------------------
    ClaimSpec(
        "oq4-skip-high-frequency",
        "extension",
        "NeurIPS 2020, Review 2 (skip connections), the aliasing reading",
        "The skip path subsamples (a 1x1 convolution with stride 2) without a prefilter, so with skips the "
        "input gradients carry more high-frequency energy.",
        "low-frequency share of the gradient energy, with minus without skips (per seed)",
        "<",
        0.0,
        DIFF,
        trained=False,
    ),
    ClaimSpec(
        "oq4-skip-changes-nads",
        "reviewer question",
        "NeurIPS 2020, Review 2 (how do NADs change with skip connections?)",
        "Removing the skip connections changes the top NAD subspace by more than Monte Carlo noise.",
        "top-16 overlap of the NADs with and without skips minus the split-half overlap of the estimate "
        "with skips (per seed)",
        "<",
        0.0,
        DIFF,
        trained=False,
    ),
    # Q5: Sec. 3, Lemma 2 ---------------------------------------------------------------------------
    ClaimSpec(
        "oq5-eq4-eq5-exact",
        "check",
        "NAD paper, Sec. 3, eqs. (4)-(5)",
        "For the linear model of pooling, the gradient covariance and the Gram matrix of the mixed Hessian "
        "are both proportional to diag(m^2), so their eigenbases coincide.",
        "largest relative difference of the exact Gaussian averages from the closed forms",
        "<=",
        1e-9,
        SPREAD,
        paper_value=0.0,
        paper_value_source="eqs. (4)-(5) (closed forms)",
        trained=False,
        tolerance="1e-9: floating-point rounding of sums over basis vectors",
    ),
    ClaimSpec(
        "oq5-eq4-eq5-monte-carlo",
        "sanity check",
        "NAD paper, Sec. 3, eqs. (4)-(5)",
        "Monte Carlo averages over {linear_draws} random parameter draws, by the same mixed-Hessian code "
        "that serves LeNet, agree with the closed forms.",
        "largest relative difference of the Monte Carlo averages from the closed forms",
        "<=",
        "{mc_tolerance}",
        SPREAD,
        trained=False,
        tolerance="12 / sqrt(draws): a few standard errors of a fourth-moment average",
    ),
    ClaimSpec(
        "oq5-gradient-more-stable",
        "paper",
        "NAD paper, Sec. 3.1",
        "The approximation of NADs through the eigendecomposition of the gradient covariance is "
        "numerically more stable than through the mixed Hessian: two estimates from independent "
        "networks agree better.",
        "top-4 overlap of two independent estimates ({hessian_networks} networks each): gradient "
        "covariance minus mixed Hessian (paired per seed)",
        ">",
        0.0,
        (-1.0, 1.0),
    ),
    ClaimSpec(
        "oq5-lenet-aligned",
        "paper",
        "NAD paper, Sec. 3 (after eq. (5))",
        "The NADs and the expected right singular vectors of the mixed Hessian are 'surprisingly aligned "
        "for most networks' (here {model}).",
        "top-4 overlap of the mixed-Hessian basis ({hessian_networks} networks) with the gradient NADs "
        "({nad_networks} networks)",
        ">=",
        0.5,
        SHARE,
        trained=False,
        tolerance="'aligned' read as at least half of the top-4 subspace shared (chance: 4/1024)",
    ),
    # Q6: the follow-up's eq. (2) ---------------------------------------------------------------------
    ClaimSpec(
        "oq6-alpha-gradient",
        "follow-up",
        "Underspecification paper, Sec. 2, eq. (2)",
        EQ2 + " (alpha from exact gradients of {nad_networks} networks, as eq. (2) writes it; max-pool LeNet).",
        "Spearman correlation of alpha(v) with max-pool LeNet's test accuracy over the {cells} grid cells "
        "(per seed, averaged in Fisher's z)",
        ">=",
        0.8,
        CORR,
        paper_value=1.0,
        paper_value_source="eq. (2): a monotonically increasing function",
        tolerance=EQ2_TOLERANCE,
    ),
    ClaimSpec(
        "oq6-alpha-secant",
        "follow-up",
        "Underspecification paper, Sec. 2, eq. (2)",
        EQ2 + " (alpha from the authors' published secant NADs, the covariance they computed; max-pool LeNet).",
        "Spearman correlation of alpha(v) (published secant NADs) with max-pool LeNet's test accuracy over "
        "the {cells} grid cells (per seed, averaged in Fisher's z)",
        ">=",
        0.8,
        CORR,
        paper_value=1.0,
        paper_value_source="eq. (2): a monotonically increasing function",
        tolerance=EQ2_TOLERANCE,
    ),
]
