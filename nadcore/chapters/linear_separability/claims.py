"""Claims of chapter 3, linear separability (the NAD paper's Sec. 2 and 4.1, Figs. 1, 2, 3 and 6).

Tolerances for "within the paper's value" criteria: 0.05 in accuracy. The published Fig. 1 and
Fig. 6 come from one network per cell or index, so a published accuracy carries its own run-to-run
spread (about 0.02-0.03 between seeds of ours at the same cell) and the test set's binomial noise
(0.005 at 10,000 samples); 0.05 allows for both and is small against the effects claimed (0.2-0.5).
A rank correlation over the 16 to 29 NAD indices of one network is noisier: 0.1 around the
published one.

"Much" (Fig. 2's "much longer") is read as everywhere in the book: at least an order of magnitude
(:data:`nadcore.book.evidence.MUCH`).

Fig. 6 has two sets of claims. The paper states sigma = 3 for its D(v) experiments (Sec. 2), and
its Fig. 6 claims are tested there (``fig6-*``). With sigma = 3 LeNet's accuracy falls earlier
along the NADs than the published curve; with sigma = 1 it meets the curve. So the book also
trains at ``fig6_sigma`` = 1, and the claims that compare those runs with the published LeNet
curve are calibrations (``*-calibrated``: the sigma was fitted to that curve), outside the
headline. The fit is a finding (``fig6-sigma-fit``), tested on curves it was not fitted on: the
published curves of the big networks against the campaigns' runs at both sigmas
(``fig6-sigma-validation-<network>``, and ``...-full-width`` for the GPU campaign's full networks);
those verdicts, not this docstring, say whether it holds there. The other candidate explanation of
LeNet's gap is the NAD estimate (the book's own secant NADs from fewer networks, not the authors'):
``fig6-published-nads`` trains LeNet at the paper's sigma = 3 on the authors' published NADs, the
same indices, seeds and runs.

The paper's big networks (ResNet-18, VGG-11, DenseNet-121) come from the committed campaign
bundle (``results/cpu``, reduced width; :mod:`nadcore.chapters.linear_separability.bundled`): one
claim per network, the same quantity and criterion as LeNet's, with the width in the statement;
the full-width networks of the GPU campaign (``results/paper``) have the same claims, their ids
ending in ``-full-width``.
"""

import math

from nadcore.book.evidence import MUCH, UNBOUNDED, ClaimSpec
from nadcore.nets import spec_width

ACC, DIFF, CORR, RATIO = (0.0, 1.0), (-1.0, 1.0), (-1.0, 1.0), (0.0, float("inf"))
TOL, TOL_RHO = 0.05, 0.1
#: a cell counts as learned at this test accuracy (chance is 0.5; the share claims' threshold)
LEARNED = 0.75
NAD = "NAD paper"
#: the paper's big networks, trained by the campaigns
BIG = ("resnet18", "vgg11", "densenet121")
#: the suffix of the Fig. 1 and Fig. 6 claims of a big network trained at full width (the GPU campaign)
FULL = "-full-width"


def width_suffix(arch: str, width) -> str:
    """The end of a big network's claim ids at ``width``: :data:`FULL` at its full width, else none."""
    return FULL if int(width) == spec_width(arch) else ""


def _fig3_improves(network: str) -> list[ClaimSpec]:
    """Fig. 3 without pooling: better where the pooled network is at chance in the published map
    (``blind``); no worse, within 0.05, where it generalises (``seen``): the paper says the accuracy
    is equalised and improves, and the pooled map is near 1.0 on the seen cells."""
    pooling, suffix, pairing = (
        ("pooling layers", "", "per seed") if network == "LeNet" else ("average pooling", "-resnet18", "per cell")
    )
    subject = f"Removing {network}'s {pooling} " + ("({network})" if suffix else "(although it increases its capacity)")
    revised = (
        "it asked for an improvement where the pooled network already generalises, which the "
        "paper does not say (equalised, and improves: the blind cells rise) and which cannot hold "
        "where the published pooled map is near 1.0; it now asks that removing the pool cost no accuracy there"
    )
    sides = {  # where the pooled network ..., what removing the pool does, the test, tolerance, revision
        "blind": ("is at chance", "improves its test accuracy on", (">", 0.0), "", ""),
        "seen": ("generalises", "equalises its accuracy without lowering it on", (">=", -TOL), _T, revised),
    }
    return [
        ClaimSpec(
            f"fig3-nopool-improves-{side}{suffix}",
            "paper",
            f"{NAD}, Sec. 2 and Fig. 3",
            f"{subject} {does} the cells where the pooled {network} {where} in the published map.",
            f"mean test accuracy over {{cells_{side}}}, without minus with pooling (paired {pairing})",
            *test,
            DIFF,
            tolerance=tolerance,
            revised=why,
        )
        for side, (where, does, test, tolerance, why) in sides.items()
    ]


_T = "0.05: one-network-per-cell noise of the published map and the test sets"
_T_RHO = "0.1: a rank correlation over the 16 to 29 NAD indices of one network"
_SIGMA = (
    "sigma = {fig6_sigma} for Fig. 6: chosen because, with it, LeNet's accuracy along its NADs met "
    "this published curve (at the paper's sigma = 3 it fell earlier)"
)


def _fig1_big(arch: str, suffix: str = "") -> list[ClaimSpec]:
    return [
        ClaimSpec(
            f"fig1-train-fit-{arch}{suffix}",
            "paper",
            f"{NAD}, Fig. 1 caption",
            "All networks except LeNet reach nearly 100% train accuracy: {network}.",
            "mean final training accuracy of {network} over its {cells} trained cells",
            ">=",
            0.99,
            ACC,
            paper_value=1.0,
            paper_value_source="Fig. 1 caption: 'nearly 100% train accuracy'",
            tolerance="'nearly 100%' read as at least 99%, as for logistic regression",
        ),
        ClaimSpec(
            f"fig1-matches-published-{arch}{suffix}",
            "paper",
            f"{NAD}, Fig. 1 (published data)",
            "Cell by cell, {network}'s map is the authors' published map of the full network.",
            "mean over the 16x16 grid of |our accuracy - published accuracy|, from {network}'s {cells} "
            "trained cells weighted by their strata's shares of the grid (published accuracy band, "
            "coarse grid or not)",
            "<=",
            TOL,
            ACC,
            paper_value=0.0,
            paper_value_source="identical maps",
            tolerance=_T,
            revised="the mean over the trained cells let the cells a campaign trains first (the coarse "
            "grid, which the narrow networks learn best) speak for the whole map; the map is the grid",
        ),
        ClaimSpec(
            f"fig1-frequency-gap-{arch}{suffix}",
            "paper",
            f"{NAD}, Sec. 2 and Fig. 1",
            "The difference in performance across frequency directions shows {network}'s bias towards "
            "certain frequencies: its accuracy on low minus high frequencies is the published map's gap, "
            "whatever its sign.",
            "mean test accuracy of {network} on max(|k1|,|k2|) <= {low} minus on >= {high} (its {cells} trained cells)",
            "within",
            TOL,
            DIFF,
            paper_value="{published_gap}",
            paper_value_source="the published map of the full network, the same cells",
            tolerance=_T,
            revised="the sentence said that the network generalises on low-frequency directions and not on "
            "high-frequency ones, which the criterion (the published gap +- 0.05) did not test: a "
            "negative gap passed where the published one is near 0 (ResNet-18, whose published map "
            "is a checkerboard). The paper states a bias towards certain frequencies, not a low-pass "
            "one, for every network; the claim now says what it tests, the published map's gap",
        ),
    ]


def _fig6_big(arch: str, suffix: str = "") -> list[ClaimSpec]:
    return [
        ClaimSpec(
            f"fig6-first-vs-beyond-{arch}{suffix}",
            "paper",
            f"{NAD}, Sec. 4.1 and Fig. 6",
            "{network} learns D(u_i) on its first NADs and not on NADs past index 700, by as much as "
            "its published curve (sigma = 3).",
            "mean test accuracy on NADs 0-9 minus on NADs past 700 ({network}, the authors' NADs)",
            "within",
            TOL,
            DIFF,
            paper_value="{published_gap}",
            paper_value_source="the authors' published Fig. 6 data, the same network and indices",
            tolerance=_T,
        ),
        ClaimSpec(
            f"fig6-monotone-{arch}{suffix}",
            "paper",
            f"{NAD}, Sec. 4.1 and Fig. 6",
            "The accuracy of {network} on D(u_i) decreases with the NAD index as in its published curve (sigma = 3).",
            "Spearman(eigenvalue, test accuracy) over the {n_indices} trained NADs",
            "within",
            TOL_RHO,
            CORR,
            paper_value="{published_spearman}",
            paper_value_source="the authors' published Fig. 6 data, the same network and indices",
            tolerance=_T_RHO,
        ),
        *(
            []
            if arch == "vgg11"
            else [
                ClaimSpec(
                    f"fig6-stronger-bias-{arch}{suffix}",
                    "paper",
                    f"{NAD}, Sec. 4.1 and Fig. 6",
                    "ResNet-18 and DenseNet-121, which perform best on ImageNet, are the ones with the stronger "
                    "bias on linearly separable datasets: {network}'s accuracy along its NADs lies below that of "
                    "{other} (sigma = 3).",
                    "mean, over the NAD indices below 700 that both curves have, of the test accuracy of "
                    "{network} minus that of {other} (seed means; the authors' NADs)",
                    "<",
                    0.0,
                    DIFF,
                    paper_value="{published_diff}",
                    paper_value_source="the authors' published Fig. 6 data: the same difference over every "
                    "index below 700 (their full networks)",
                    tolerance="'stronger bias' read as a curve that lies lower before index 700 (past it every "
                    "network is at chance); VGG-11, the other network of Fig. 6 with a published curve, is "
                    "the one it is compared with",
                ),
            ]
        ),
        ClaimSpec(
            f"fig6-sigma-validation-{arch}{suffix}",
            "extension",
            f"{NAD}, Fig. 6 (published data)",
            "The sigma fitted on LeNet's curve (sigma = {fig6_sigma}) also explains {network}'s "
            "published curve, which it was not fitted on: our curve at sigma = {fig6_sigma} is closer "
            "to it than at the paper's sigma = 3.",
            "mean over the NAD indices of |acc(sigma=3) - published| - |acc(sigma={fig6_sigma}) - "
            "published| ({network})",
            ">",
            0.0,
            DIFF,
        ),
    ]


CLAIMS = [
    # Fig. 1 ---------------------------------------------------------------------------------
    ClaimSpec(
        "fig1-frequency-gap",
        "paper",
        f"{NAD}, Sec. 2 and Fig. 1",
        "LeNet generalises on low-frequency directions and not on high-frequency ones, although "
        "every D(v) is linearly separable; the gap is the published map's.",
        "mean test accuracy of lenet on max(|k1|,|k2|) <= {low} minus on >= {high}",
        "within",
        TOL,
        DIFF,
        paper_value="{published_gap}",
        paper_value_source="the authors' published Fig. 1 data (dft_accuracies.csv), LeNet, the same {cells} cells",
        tolerance=_T,
    ),
    ClaimSpec(
        "fig1-matches-published",
        "paper",
        f"{NAD}, Fig. 1 (published data)",
        "Cell by cell, LeNet's map is the authors' published map.",
        "mean over the {cells} cells of |our accuracy - published accuracy| (per seed)",
        "<=",
        TOL,
        ACC,
        paper_value=0.0,
        paper_value_source="identical maps",
        tolerance="0.05: as for the gap; a cell's own seed-to-seed spread is about 0.02-0.03",
    ),
    ClaimSpec(
        "fig1-low-beats-high",
        "extension",
        f"{NAD}, Sec. 2 (for a model the paper did not train)",
        "{model} generalises better on low-frequency directions than on high-frequency ones.",
        "mean test accuracy of {model} on max(|k1|,|k2|) <= {low} minus on >= {high}",
        ">=",
        0.1,
        DIFF,
    ),
    ClaimSpec(
        "fig1-logreg-flat",
        "paper",
        f"{NAD}, Sec. 1 and Fig. 1",
        "Logistic regression generalises equally well in every direction.",
        "|mean test accuracy of logreg on max(|k1|,|k2|) <= {low} minus on >= {high}|",
        "<=",
        0.02,
        ACC,
        paper_value="{published_logreg_gap}",
        paper_value_source="the authors' published Fig. 1 data, logistic regression, the same {cells} cells",
    ),
    ClaimSpec(
        "fig1-logreg-level",
        "paper",
        f"{NAD}, Sec. 1 and Fig. 1",
        "Even logistic regression eclipses the CNNs on this simple linearly separable task: it "
        "generalises on every direction (the published map is 100% on all 256 cells).",
        "lowest test accuracy of logreg over the {cells} cells (seed mean)",
        ">=",
        0.99,
        ACC,
        paper_value=1.0,
        paper_value_source="the authors' published Fig. 1 data: 100% on every cell",
        tolerance="0.99: the test set's binomial noise is 0.002 at 10,000 samples",
    ),
    ClaimSpec(
        "fig1-logreg-train",
        "paper",
        f"{NAD}, Fig. 1 caption",
        "All networks except LeNet reach nearly 100% training accuracy (here: logistic regression).",
        "mean training accuracy of logreg over the grid",
        ">=",
        0.99,
        ACC,
    ),
    *[c for arch in BIG for suffix in ("", FULL) for c in _fig1_big(arch, suffix)],
    ClaimSpec(
        "fig1-densenet-few",
        "paper",
        f"{NAD}, Sec. 1 and Fig. 1",
        "Even the gigantic DenseNet only generalises to a few of these distributions.",
        f"share of {{network}}'s trained cells with test accuracy >= {LEARNED}",
        "<=",
        0.25,
        ACC,
        paper_value="{published_share}",
        paper_value_source="the authors' published DenseNet-121 map, all 256 cells",
        tolerance="'a few' read as at most a quarter of the grid",
    ),
    *[
        ClaimSpec(
            f"spot-check-{arch}",
            "sanity check",
            "this book's campaign bundle (results/cpu)",
            "The committed campaign bundle reproduces on this machine: {network}'s spot cells, re-run "
            "live at {spot_budget}, fall on the same side of chance as in the bundle.",
            "share of the spot cells {spot_cells} whose live test accuracy is on the bundle's side of {spot_threshold}",
            ">=",
            1.0,
            ACC,
        )
        for arch in (*BIG, "lenet_nopool")
    ],
    *[
        ClaimSpec(
            f"precision-bf16-{arch}",
            "sanity check",
            "this book's campaign bundle (results/cpu)",
            "Training {network} in bf16 autocast (the campaign's speed setting) leaves its test "
            "accuracies where float32 training puts them.",
            "mean over the {cells} cells trained in both precisions, with the same seed, of |bf16 - "
            "float32| test accuracy",
            "<=",
            TOL,
            ACC,
            tolerance="0.05: the run-to-run spread between seeds (0.02-0.03) and the test sets' noise",
        )
        for arch in BIG
    ],
    # the campaign trains the follow-up's recipe on ResNet-18 only, the network it was written for
    ClaimSpec(
        "recipe-authors-resnet18",
        "extension",
        "this book's campaign bundle (results/cpu)",
        "The authors' released recipe ({authors_recipe}), with which the book trains the big "
        "networks, brings {network} at least as close to the published map as the follow-up "
        "paper's ResNet-18 recipe ({follow_up_recipe}).",
        "mean over the cells {recipe_cells} of |follow-up - published| - |authors - published| "
        "test accuracy ({network})",
        ">=",
        -TOL,
        DIFF,
        tolerance=_T,
    ),
    *[
        ClaimSpec(
            f"width-diagnostics-{arch}-{w}",
            "extension",
            "this book's width study",
            "The directional bias of {network} is set by its topology, not its width: on the "
            "diagnostic cells it behaves as the full-width network of the published map.",
            "mean over the diagnostic cells {diagnostic_cells} of |accuracy of {network} - published "
            "accuracy of the full network|",
            "<=",
            TOL,
            ACC,
            paper_value=0.0,
            paper_value_source="the published map of the full-width network",
            tolerance=_T,
        )
        for arch in ("resnet18", "vgg11")
        for w in (8, 16, 32)
    ],
    *[
        ClaimSpec(
            f"width-stand-in-{arch}",
            "extension",
            "this book's width study",
            "{network} stands in for the full-width network: on the cells trained at both widths "
            "its accuracy is that of the full network (this book's GPU runs).",
            "mean over the {cells} cells trained at both widths of |accuracy of {network} - accuracy at full width|",
            "<=",
            TOL,
            ACC,
            paper_value=0.0,
            paper_value_source="this book's runs of the full-width network (results/paper)",
            tolerance=_T,
        )
        for arch in BIG
    ],
    # Fig. 2 ---------------------------------------------------------------------------------
    ClaimSpec(
        "fig2-low-frequencies-fit-faster",
        "paper",
        f"{NAD}, Sec. 2 and Fig. 2",
        "With little noise (sigma = {fig2_sigma}) {model} takes much longer to fit some directions "
        "than others: the high frequencies need many more SGD iterations than the low ones.",
        "mean iterations to loss < {fig2_threshold} on max(|k1|,|k2|) >= {high} over the mean on <= {low} "
        "(censored = budget, so a lower bound)",
        ">=",
        MUCH,
        RATIO,
        tolerance=f"'much longer' read as at least {MUCH:g} times (the book's one reading of 'much')",
    ),
    ClaimSpec(
        "fig2-blind-fit-slower-resnet18",
        "paper",
        f"{NAD}, Sec. 2 and Fig. 2",
        "With little noise (sigma = {fig2_sigma}) ResNet-18 ({network}) takes much longer to fit "
        "some directions than others: those where the pooled network is at chance in the "
        "published Fig. 1 need many more SGD iterations than those where it generalises.",
        "log10(geometric-mean iterations to loss < {fig2_threshold} on {cells_blind} over those on "
        "{cells_seen}) (censored = budget, so a lower bound; Welch over cells)",
        ">=",
        math.log10(MUCH),
        UNBOUNDED,
        tolerance=f"'much longer' read as at least {MUCH:g} times (the book's one reading of 'much')",
    ),
    # Fig. 3 ---------------------------------------------------------------------------------
    *[c for network in ("LeNet", "ResNet-18") for c in _fig3_improves(network)],
    ClaimSpec(
        "fig3-nopool-uniform",
        "paper",
        f"{NAD}, Sec. 2 and Fig. 3",
        "Without pooling, LeNet's accuracy no longer depends on the frequency (it is equalised).",
        "|mean test accuracy of lenet_nopool on max(|k1|,|k2|) <= {low} minus on >= {high}|",
        "<=",
        TOL,
        ACC,
    ),
    ClaimSpec(
        "sec3-random-alike",
        "paper",
        f"{NAD}, Sec. 3, footnote 4",
        "On D(v) for random directions v, {model} performs alike (which is why training on random "
        "directions would be an inefficient way to find its NADs).",
        "mean over {directions} random directions of |seed-mean test accuracy - their median| "
        "({model}, sigma = {sigma})",
        "<=",
        TOL,
        ACC,
        paper_value=0.0,
        paper_value_source="footnote 4: 'for most of these datasets the network outputs the same performance'",
        tolerance="0.05, as Fig. 3's 'equalised' (fig3-nopool-uniform); the footnote asks for the same "
        "performance, not a high one, so no level is required (the settings name the mean accuracy)",
    ),
    ClaimSpec(
        "fig3-nopool-uniform-resnet18",
        "paper",
        f"{NAD}, Sec. 2 and Fig. 3",
        "Without its average pool, ResNet-18's accuracy no longer depends on the frequency ({network}).",
        "mean test accuracy of resnet18_nopool on max(|k1|,|k2|) <= {low} minus on >= {high} (Welch over cells)",
        "within",
        TOL,
        DIFF,
        paper_value=0.0,
        paper_value_source="'their performance on different frequencies is equalized' (Sec. 2)",
        tolerance="0.05, as LeNet's fig3-nopool-uniform",
    ),
    # Fig. 6 ---------------------------------------------------------------------------------
    ClaimSpec(
        "fig6-first-vs-beyond",
        "paper",
        f"{NAD}, Sec. 4.1 and Fig. 6",
        "{model} learns D(u_i) on its first NADs and not on NADs past index 700, by as much as the "
        "published LeNet curve (sigma = {sigma}, as Sec. 2 states).",
        "mean test accuracy on secant NADs 0-9 minus on NADs past 700 ({model}, sigma = {sigma})",
        "within",
        TOL,
        DIFF,
        paper_value="{published_first_beyond}",
        paper_value_source="the authors' published Fig. 6 data (nads.csv), LeNet, the same indices",
        tolerance="0.05: one network per published index, and the test sets",
    ),
    ClaimSpec(
        "fig6-monotone",
        "paper",
        f"{NAD}, Sec. 4.1 and Fig. 6",
        "The accuracy of {model} on D(u_i) decreases monotonically with the NAD index, as in the "
        "published curve (sigma = {sigma}).",
        "Spearman(eigenvalue, test accuracy) over the {n_indices} trained secant NADs (sigma = {sigma})",
        "within",
        TOL_RHO,
        CORR,
        paper_value="{published_spearman}",
        paper_value_source="the authors' published Fig. 6 data, LeNet, the same indices",
        tolerance=_T_RHO,
    ),
    ClaimSpec(
        "fig6-crossing",
        "paper",
        f"{NAD}, Fig. 6 (published data)",
        "LeNet's accuracy on D(u_i) falls to 0.75 where the published curve does (NAD index "
        "{crossing}; sigma = {sigma}).",
        "test accuracy of lenet on D(u_{crossing}) (secant NADs, sigma = {sigma})",
        "within",
        TOL,
        ACC,
        paper_value="{published_crossing}",
        paper_value_source="the authors' published Fig. 6 data, LeNet, index {crossing}: the first "
        "index where the published curve is below 0.75",
        tolerance=_T,
    ),
    ClaimSpec(
        "fig6-matches-published",
        "paper",
        f"{NAD}, Fig. 6 (published data)",
        "LeNet's accuracies along the NADs are the authors' published curve (sigma = {sigma}).",
        "mean over the {n_indices} trained NAD indices of |our accuracy - published accuracy| (per seed)",
        "<=",
        TOL,
        ACC,
        paper_value=0.0,
        paper_value_source="identical curves",
        tolerance=_T,
    ),
    ClaimSpec(
        "fig6-published-nads",
        "paper",
        f"{NAD}, Sec. 4.1 and Fig. 6 (published data)",
        "Trained on the authors' own published LeNet NADs at the paper's sigma = {sigma}, LeNet's "
        "accuracies along the NADs are the authors' published curve.",
        "mean over the {n_indices} trained NAD indices of |our accuracy - published accuracy| (the "
        "authors' NADs, sigma = {sigma}, per seed)",
        "<=",
        TOL,
        ACC,
        paper_value=0.0,
        paper_value_source="identical curves",
        tolerance=_T,
    ),
    ClaimSpec(
        "fig6-first-vs-beyond-calibrated",
        "calibration",
        f"{NAD}, Sec. 4.1 and Fig. 6",
        "At the fitted sigma, {model}'s gap between its first NADs and NADs past 700 is the published curve's.",
        "mean test accuracy on secant NADs 0-9 minus on NADs past 700 ({model}, sigma = {fig6_sigma})",
        "within",
        TOL,
        DIFF,
        paper_value="{published_first_beyond}",
        paper_value_source="the authors' published Fig. 6 data, LeNet, the same indices",
        tolerance=_T,
        fitted=_SIGMA,
    ),
    ClaimSpec(
        "fig6-crossing-calibrated",
        "calibration",
        f"{NAD}, Fig. 6 (published data)",
        "At the fitted sigma, LeNet's accuracy on D(u_i) falls to 0.75 where the published curve "
        "does (NAD index {crossing}).",
        "test accuracy of lenet on D(u_{crossing}) (secant NADs, sigma = {fig6_sigma})",
        "within",
        TOL,
        ACC,
        paper_value="{published_crossing}",
        paper_value_source="the authors' published Fig. 6 data, LeNet, index {crossing}",
        tolerance=_T,
        fitted=_SIGMA,
    ),
    ClaimSpec(
        "fig6-matches-published-calibrated",
        "calibration",
        f"{NAD}, Fig. 6 (published data)",
        "At the fitted sigma, LeNet's accuracies along the NADs are the published curve.",
        "mean over the {n_indices} trained NAD indices of |our accuracy - published accuracy| "
        "(sigma = {fig6_sigma}, per seed)",
        "<=",
        TOL,
        ACC,
        paper_value=0.0,
        paper_value_source="identical curves",
        tolerance=_T,
        fitted=_SIGMA,
    ),
    ClaimSpec(
        "fig6-sigma-fit",
        "extension",
        f"{NAD}, Sec. 2 (sigma = 3) against Fig. 6 (published data)",
        "The published Fig. 6 of LeNet was made with less noise than Sec. 2 states: our curve at "
        "sigma = {fig6_sigma} is closer to it than at sigma = {sigma}.",
        "mean over the NAD indices of |acc(sigma={sigma}) - published| - |acc(sigma={fig6_sigma}) - "
        "published| (lenet, paired per seed)",
        ">",
        0.0,
        DIFF,
    ),
    *[c for arch in BIG for suffix in ("", FULL) for c in _fig6_big(arch, suffix)],
    ClaimSpec(
        "fig6-secant-vs-gradient",
        "extension",
        f"{NAD}, Sec. 3-4.1 (a question it leaves open)",
        "The authors' secant NADs rank the directions by trainability better than exact-gradient NADs "
        "({gradient_points} evaluation points).",
        "Spearman(eigenvalue, accuracy) over the {n_gradient} shared indices: secant minus gradient NADs "
        "(paired per seed)",
        ">",
        0.0,
        (-2.0, 2.0),
    ),
]
