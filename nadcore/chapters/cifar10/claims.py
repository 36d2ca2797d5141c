"""Chapter 4, CIFAR-10 poisoning and flipping: the NAD paper's Sec. 4.2 (Figs. 7 and 8).

The paper states both results in words and gives Figs. 7 and 8 as plots, without numbers in the
text; its blog post says the same of Fig. 7 at the extremes ("fully overfits", "can generalize").
Fig. 7's claims are therefore written on a scale that carries over from the paper's ResNet-18 on
the full CIFAR-10 to any network and training set: the share of what the clean network learned
above chance (10% on ten classes) that a carrier takes away,
(baseline - poisoned) / (baseline - 0.1): 1 when the poisoned network is at chance, 0 when it
generalises as well as the clean one.
"""

from nadcore.book.evidence import ClaimSpec

NAD = "NAD paper (Ortiz-Jimenez et al., NeurIPS 2020)"
BLOG_URL = "the authors' blog post (lts4.github.io/neural-anisotropy-directions)"
BLOG = f"{BLOG_URL}, 'Poisoning CIFAR-10'"
BLOG_FLIP = f"{BLOG_URL}, 'NADs are necessary for generalization'"
SHARE = (
    "share of the clean baseline's accuracy above chance (10%) lost with carriers at NADs {which}: "
    "(baseline - poisoned) / (baseline - 0.1)"
)


def _fig7(suffix: str = "") -> list[ClaimSpec]:
    """Fig. 7's claims on the chapter's model, or (``suffix`` ``-resnet18``) on the committed
    campaign's runs of the paper's own network, which the claim names (``{network}``)."""
    on = "" if not suffix else " ({network}: the paper's network, from the campaign)"
    return [
        ClaimSpec(
            id=f"fig7-early-carriers-hurt{suffix}",
            kind="paper",
            source=f"{NAD}, Sec. 4.2, Fig. 7; {BLOG}",
            statement="With the carrier on the first NADs the test accuracy is very low: the network ignores "
            "most generalising features (the blog post: it 'fully overfits')." + on,
            quantity=SHARE.replace("{which}", "{early}"),
            op=">=",
            threshold=0.5,
            paper_value=1.0,
            paper_value_source="the blog post: 'when the dataset is poisoned on the first NAD index the network "
            "fully overfits', i.e. clean test accuracy at chance, the whole share lost (Fig. 7 "
            "itself is a plot without numbers in the text)",
            tolerance="'ignores most generalising features': more than half of the above-chance accuracy lost "
            "(the paper's value 1 minus 0.5)",
        ),
        ClaimSpec(
            id=f"fig7-late-carriers-harmless{suffix}",
            kind="paper",
            source=f"{NAD}, Sec. 4.2, Fig. 7; {BLOG}",
            statement="With the carrier at the end of the NAD sequence the network can almost perfectly "
            "generalise: it loses almost nothing against the clean baseline." + on,
            quantity=SHARE.replace("{which}", "{late}"),
            op="<=",
            threshold=0.1,
            paper_value=0.0,
            paper_value_source="Sec. 4.2: 'the network can almost perfectly generalize' (nothing lost against "
            "the clean network; Fig. 7 is a plot without numbers in the text)",
            tolerance="'almost perfectly': at most a tenth of the above-chance accuracy lost",
        ),
        ClaimSpec(
            id=f"fig7-carrier-learned{suffix}",
            kind="extension",
            source=f"{NAD}, Sec. 4.2 (the explanation of Fig. 7)",
            statement="The paper's explanation of Fig. 7, tested directly: a carrier on the first NADs is "
            "picked up, so test images carrying it are classified much better than clean ones." + on,
            quantity="test accuracy with the carrier minus on the clean test set, mean over carriers at NADs {early}",
            op=">=",
            threshold=0.2,
            bounds=(-1.0, 1.0),
            tolerance="'picked up': 20 points of test accuracy, far beyond the test-set and seed noise",
        ),
    ]


def _fig8(suffix: str = "") -> ClaimSpec:
    """Fig. 8's claim on the chapter's model, or (``suffix`` ``-resnet18``, ``-vgg11``,
    ``-densenet121``) on the committed campaign's runs of one of the paper's CNNs."""
    on = "" if not suffix else " ({model}: one of the paper's CNNs, from the campaign)"
    return ClaimSpec(
        id=f"fig8-flip-hurts-cnn{suffix}",
        kind="paper",
        source=f"{NAD}, Sec. 4.2, Fig. 8; {BLOG_FLIP}",
        statement="A CNN trained on the NAD-flipped representation of CIFAR-10 generalises significantly "
        "worse than on the original, both fitted with the same hyperparameters ('approximately "
        "0% training error')." + on,
        quantity="{model} test accuracy, original minus flipped representation",
        op=">=",
        threshold=0.05,
        bounds=(-1.0, 1.0),
        tolerance="'significantly lower' (no number in the text; Fig. 8 is a bar chart): at least 5 points "
        "of test accuracy, with the whole interval (seeds and test-set noise) above it",
    )


#: the paper's CNNs of Fig. 8 besides LeNet, which the cpu campaign trains (its Fig. 8 stages)
FIG8_NETWORKS = ("resnet18", "vgg11", "densenet121")
#: the claims on the campaign's runs of the paper's networks (chapter 4's ``Study.campaign``)
CAMPAIGN_CLAIMS = [c.id for c in _fig7("-resnet18")] + [_fig8(f"-{a}").id for a in FIG8_NETWORKS]

CLAIMS = [
    *_fig7(),
    *_fig7("-resnet18"),
    _fig8(),
    *[_fig8(f"-{a}") for a in FIG8_NETWORKS],
    ClaimSpec(
        id="fig8-flip-mlp-unaffected",
        kind="extension",
        source="",
        statement="Control (ours): a fully connected MLP, which has no preferred directions, does not lose "
        "accuracy on the flipped representation.",
        quantity="mlp test accuracy, original minus flipped representation",
        op="<=",
        threshold=0.05,
        bounds=(-1.0, 1.0),
        tolerance="'unaffected': less than the 5 points that count as a loss for the CNN",
    ),
]
