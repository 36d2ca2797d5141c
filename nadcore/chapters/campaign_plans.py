"""The campaigns' plans: the stages each campaign trains, in order (the machinery that reads
them: :mod:`nadcore.chapters.campaigns`; what a stage names: its docstring).

The order is the issue's plan: the width study's diagnostic cells first (they decide whether the
reduced widths are usable), then the two full rows k1 = 0 and k1 = 2 of Fig. 1 for each network
(ResNet-18's checkerboard, DenseNet-121's cross and VGG-11's diamond all cross them), Fig. 6 at
the paper's sigma and at the sigma chapter 3 fitted on LeNet, then Figs. 3 and 2, more cells,
more seeds, and where the scorecard's power calculation ("to settle") priced a claim, the runs
that decide it.
"""

from __future__ import annotations

from nadcore.chapters.linear_separability.campaign import (
    ABLATION_CELLS,
    DIAGNOSTIC,
    FIG2_CELLS,
    FIG3_CELLS,
    FIG3_SEEN_ROWS,
    FIG6_ENDS,
    FIG6_ENDS_ALTERNATING,
    FIG6_INDICES,
    FIG6_MIDDLE,
    FIG6_SPREAD,
    FIG6_SPREAD_HALVES,
    RECIPE_CELLS,
    ROWS,
)
from nadcore.chapters.linear_separability.settings import ABLATION as BUILD_ABLATION
from nadcore.chapters.linear_separability.settings import CPU as BUILD_CPU
from nadcore.chapters.nad_atlas.prediction import ATLAS_CELLS
from nadcore.chapters.nad_atlas.settings import PAPER as ATLAS_PAPER
from nadcore.chapters.underspecification.settings import CAMPAIGN_CPU as US_CAMPAIGN_CPU

__all__ = ["CPU", "PAPER", "TINY"]

#: The cpu campaign's widths, chosen from the width study's first two widths on its first cells
#: (VGG-11 at width 8 within 0.03 of the published accuracies on (0, 4) and (4, 4); ResNet-18 at
#: width 8 off by 0.10-0.15 on both of its cells, so width 16). On all the diagnostic cells, mean
#: |ours - published| falls with width: VGG-11 0.105 / 0.073 / 0.026 and ResNet-18 0.128 / 0.065
#: / 0.026 at widths 8 / 16 / 32 (VGG-11's (0, 6) and ResNet-18's (2, 4) need width 32); over 2
#: and 4 cells the intervals are wide, and only VGG-11 at width 32 has its whole interval within
#: 0.05. The maps at the narrow widths are weaker stand-ins on those cells. DenseNet-121 at
#: growth rate 8 (what a CPU can afford: about 23 minutes a cell), its rows checked against the
#: published map.
CPU = dict(
    device="cpu",
    widths={"resnet18": 16, "resnet18_nopool": 16, "vgg11": 8, "densenet121": 8},
    train=dict(trainer="many", channels_last=True),
    chunk=1,
    fig6_nads="published",
    stages=[
        # 1. the width study: the diagnostic cells at two widths each (DenseNet-121: the book's)
        dict(figure="fig1", arch="vgg11", cells=DIAGNOSTIC["vgg11"], widths=[8, 16]),
        dict(figure="fig1", arch="resnet18", cells=DIAGNOSTIC["resnet18"], widths=[8, 16]),
        # 2. VGG-11, the cheapest: Fig. 1's two full rows k1 = 0 and k1 = 2 (32 cells), and Fig. 6
        #    on the published NADs at the paper's sigma and at the one fitted on LeNet
        dict(figure="fig1", arch="vgg11", cells=ROWS),
        dict(figure="fig6", arch="vgg11", sigmas=[3.0, 1.0], indices=FIG6_INDICES),
        # 3. the same rows for ResNet-18, 8 of DenseNet-121's, then ResNet-18's Fig. 6
        dict(figure="fig1", arch="resnet18", cells=ROWS),
        dict(figure="fig1", arch="densenet121", cells=ROWS, limit=8, autocast="bf16"),
        dict(figure="fig6", arch="resnet18", sigmas=[3.0, 1.0], indices=FIG6_INDICES),
        # 4. the recipe: the follow-up's on ResNet-18's recipe cells, against the authors'
        dict(figure="fig1", arch="resnet18", cells=RECIPE_CELLS["resnet18"], recipe="follow-up"),
        # 5. Fig. 3 (ResNet-18 without its average pool) and Fig. 2 (iterations to fit)
        dict(figure="fig3", arch="resnet18_nopool", cells=FIG3_CELLS),
        dict(figure="fig2", arch="resnet18", cells=FIG2_CELLS),
        # 6. the width study: more seeds on the diagnostic cells, a third width; DenseNet-121's
        #    rows to the end
        dict(figure="fig1", arch="vgg11", cells=DIAGNOSTIC["vgg11"], widths=[8, 16], seeds=[1, 2]),
        dict(figure="fig1", arch="resnet18", cells=DIAGNOSTIC["resnet18"], widths=[8, 16], seeds=[1, 2]),
        dict(figure="fig1", arch="vgg11", cells=DIAGNOSTIC["vgg11"], widths=[32]),
        dict(figure="fig1", arch="densenet121", cells=ROWS, autocast="bf16"),
        dict(figure="fig1", arch="resnet18", cells=DIAGNOSTIC["resnet18"], widths=[32]),
        # 7. the rest of the grid, coarse to fine, then more seeds
        dict(figure="fig1", arch="vgg11", cells="grid"),
        dict(figure="fig1", arch="resnet18", cells="grid"),
        dict(figure="fig1", arch="vgg11", cells=ROWS, seeds=[1, 2]),
        dict(figure="fig1", arch="resnet18", cells=ROWS, seeds=[1, 2]),
        dict(figure="fig1", arch="densenet121", cells="grid", autocast="bf16"),
        # 8. LeNet without its pooling layers on the cpu build's Fig. 3 cells and seeds: six times
        #    a pooled LeNet's cost, so the build takes these runs from here (where its settings
        #    and seeds are the campaign's) and re-runs two of the cells live
        dict(figure="fig3", arch="lenet_nopool", cells=BUILD_CPU["fig3_cells"], seeds=[0, 1, 2]),
        # 9. Fig. 7 with the paper's network: the narrow ResNet-18 on the CIFAR-10 subset poisoned
        #    along the published ResNet-18 NADs, with chapter 4's cpu carriers, data and recipe
        #    (those of its LeNet), seed by seed
        dict(figure="fig7", arch="resnet18", profile="cpu", seeds=[0, 1, 2]),
        # 10. Fig. 8 with the paper's CNNs: the narrow networks on the original and the flipped
        #     CIFAR-10 subset (flipped with the published NADs of each full network), with chapter
        #     4's cpu data, recipe and flip_epochs (those of its LeNet), seed by seed. VGG-11 at
        #     width 16: at the campaign's width 8 it fits neither representation in 50 epochs
        #     (final train accuracy 0.92-0.93 original, 0.72-0.76 flipped; jobs 217-222), which
        #     the paper's comparison at equal fit needs; at width 16 it fits the original
        #     (0.993-0.997) but not yet the flipped one (0.859-0.870; jobs 229-234); at width 32
        #     both (0.999-1.000 and 0.989-0.996; jobs 235-240)
        dict(figure="fig8", arch="vgg11", profile="cpu", seeds=[0, 1, 2], widths=[32]),
        dict(figure="fig8", arch="resnet18", profile="cpu", seeds=[0, 1, 2]),
        dict(figure="fig8", arch="densenet121", profile="cpu", seeds=[0, 1, 2]),
        # 11. the follow-up's ResNet-18 (its Figs. 2 and 3): the narrow network on chapter 5's cpu
        #     grid of NAD pairs and NAD indices, data and seeds, with the published NADs
        dict(figure="us-fig2", arch="resnet18", profile="cpu", overrides=US_CAMPAIGN_CPU, seeds=[0, 1, 2]),
        dict(figure="us-fig3", arch="resnet18", profile="cpu", overrides=US_CAMPAIGN_CPU, seeds=[0, 1, 2]),
        # 12. DenseNet-121's Fig. 6 (bf16, about 20 minutes a NAD index per worker): first every
        #     other index of the sequence at the paper's sigma, the two ends first (its claims
        #     need a first NAD and one past 700: the first two jobs already span the sequence),
        #     then every index at both noise levels
        dict(
            figure="fig6", arch="densenet121", sigmas=[3.0], indices=[0, 720, 6, 160, 20, 133, 64, 110], autocast="bf16"
        ),
        dict(figure="fig6", arch="densenet121", sigmas=[3.0, 1.0], indices=FIG6_INDICES, autocast="bf16"),
        # 13. Fig. 6's two ends at every index chapter 3's paper profile has there (0-9, and every
        #     40th past 700), the cheapest network first: ten first NADs and nine past 700
        #     against four and two, for the intervals of the first-vs-beyond claims; DenseNet-121
        #     (14 minutes a job) with the ends alternating, sigma 1 first once its first NADs at
        #     sigma 3 had run: every index it then trains pairs with a sigma-3 run, which its
        #     sigma validation compares
        dict(figure="fig6", arch="vgg11", sigmas=[3.0, 1.0], indices=FIG6_ENDS),
        dict(figure="fig6", arch="resnet18", sigmas=[3.0, 1.0], indices=FIG6_ENDS),
        dict(figure="fig6", arch="densenet121", sigmas=[1.0, 3.0], indices=FIG6_ENDS_ALTERNATING, autocast="bf16"),
        # 14. the recipe ablation, on ResNet-18's ablation cells (about 5 minutes a job per worker,
        #     7-8 with 30 epochs): each of the follow-up recipe's four changes alone on top of the
        #     authors' recipe, then the follow-up's recipe without each of them, then the two
        #     it could not do without together: which of them erases the checkerboard
        *[dict(figure="fig1", arch="resnet18", cells=ABLATION_CELLS["resnet18"], recipe=r) for r in BUILD_ABLATION],
        # 15. chapter 7's test of the Fig. 1 predicted from the NADs on architectures nobody has
        #     mapped: each atlas architecture of predict_models on its 12 cells spread over its
        #     predicted range (chosen before training), with the authors' recipe, as Fig. 1
        *[
            dict(figure="atlas-fig1", arch=slug, spec=ATLAS_PAPER["architectures"][label], cells=ATLAS_CELLS[label])
            for label, slug in ATLAS_PAPER["predict_models"].items()
        ],
        # 16. more seeds where the scorecard's power calculation said a few would decide a claim
        #     (its "to settle"): the follow-up's ResNet-18 at seeds 3 and 4, as chapter 5's LeNet
        #     and MLP (us-fig2-resnet18-ch1-early needed 4 seeds, us-fig3-resnet18-dv-early 5)
        dict(figure="us-fig2", arch="resnet18", profile="cpu", overrides=US_CAMPAIGN_CPU, seeds=[3, 4]),
        dict(figure="us-fig3", arch="resnet18", profile="cpu", overrides=US_CAMPAIGN_CPU, seeds=[3, 4]),
        # 17. and two more for us-fig2-resnet18-max-margin, whose interval at five seeds lay inside
        #     its band by less than the CPU margin (the scorecard's "to settle": 2 seeds, 0.21 h)
        dict(figure="us-fig2", arch="resnet18", profile="cpu", overrides=US_CAMPAIGN_CPU, seeds=[5, 6]),
        # 18. one more cell for fig2-blind-fit-slower-resnet18 ("to settle": 1 cell, 0.12 h): (2, 10),
        #     both frequencies 2 mod 4, at chance in the published map like (2, 2) and (2, -6)
        dict(figure="fig2", arch="resnet18", cells=[[2, 10]]),
        # 19. three more seeds of Fig. 7 (fig7-late-carriers-harmless-resnet18: 3 seeds, 1.5 h), then
        #     VGG-11's Fig. 6 at the rest of the paper's indices (fig6-monotone-vgg11: 50 indices)
        dict(figure="fig7", arch="resnet18", profile="cpu", seeds=[3, 4, 5]),
        dict(figure="fig6", arch="vgg11", sigmas=[3.0], indices=FIG6_MIDDLE),
        # 20. five more seeds of ResNet-18's diagnostic cells at width 16: whether the seed accounts
        #     for (2, 4) at 0.86-0.95 in three seeds against 0.97 published
        dict(figure="fig1", arch="resnet18", cells=DIAGNOSTIC["resnet18"], seeds=[3, 4, 5, 6, 7]),
        # 21. a seventh seed of Fig. 7, whose late carriers at six seeds missed by their CPU margin
        dict(figure="fig7", arch="resnet18", profile="cpu", seeds=[6]),
        # 22. ResNet-18 without its pool on every cell of Fig. 1's two rows where the pooled network
        #     generalises in the published map and that Fig. 3 lacked, one cell of each mirror pair
        #     (k1 = 0: (0, k2) is (0, -k2)), chosen by that rule before training:
        #     fig3-nopool-improves-seen-resnet18 had 6 cells ("to settle": 16 cells, 2.0 h)
        dict(figure="fig3", arch="resnet18_nopool", cells=FIG3_SEEN_ROWS),
        # 23. VGG-11's Fig. 6 on every 4th NAD index, coarse to fine: fig6-monotone-vgg11 had 65
        #     indices ("to settle": 160 more, 1.7 h); the published curve has all 1,023
        dict(figure="fig6", arch="vgg11", sigmas=[3.0], indices=FIG6_SPREAD),
        # 24. and on the indices halfway between, spread the same way: at 189 indices it was still
        #     inconclusive (0.752 [0.680, 0.810] against the band from 0.822; "to settle": 172 more
        #     indices, 2.3 h). Every other index of the sequence (512) is the cap: past it, runs at
        #     neighbouring indices sample one stretch of the curve again
        dict(figure="fig6", arch="vgg11", sigmas=[3.0], indices=FIG6_SPREAD_HALVES),
    ],
)

#: the GPU campaign: full width, every big network side by side with bf16 autocast
PAPER = dict(
    device="cuda",
    widths={},
    train=dict(trainer="side_by_side", autocast="bf16"),
    chunk=8,
    fig6_nads="published",  # 8 runs side by side: a job ends well inside a lease's 10-minute command
    stages=[
        # the width study's diagnostic cells first, at full width: they settle whether the cpu
        # campaign's narrow networks stand in for the full ones where the published map is decisive
        dict(figure="fig1", arch="resnet18", cells=DIAGNOSTIC["resnet18"]),
        dict(figure="fig1", arch="densenet121", cells=DIAGNOSTIC["densenet121"]),
        dict(figure="fig1", arch="vgg11", cells=DIAGNOSTIC["vgg11"]),
        dict(figure="fig1", arch="resnet18", cells="grid"),
        dict(figure="fig1", arch="vgg11", cells="grid"),
        dict(figure="fig1", arch="densenet121", cells="grid"),
        dict(figure="fig6", arch="resnet18", sigmas=[3.0, 1.0], indices=FIG6_INDICES),
        dict(figure="fig6", arch="vgg11", sigmas=[3.0, 1.0], indices=FIG6_INDICES),
        dict(figure="fig6", arch="densenet121", sigmas=[3.0, 1.0], indices=FIG6_INDICES),
        dict(figure="fig3", arch="resnet18_nopool", cells="grid"),
        dict(figure="fig2", arch="resnet18", cells="grid"),
    ],
)

#: tiny networks and sizes, for CPU tests of the machinery (never results)
TINY = dict(
    device="cpu",
    widths={"resnet18": 4, "resnet18_nopool": 4, "vgg11": 4, "densenet121": 2},
    train=dict(trainer="many"),
    chunk=2,
    fig6_nads="published",
    overrides=dict(
        n_test=64,
        recipes={
            r: dict(n_train=64, epochs=1, max_lr=0.05, momentum=0.0, weight_decay=0.0, batch_size=32)
            for r in ("authors", "follow-up")
        },
        fig2_train=dict(n_train=64, epochs=1),
    ),
    stages=[
        dict(figure="fig1", arch="resnet18", cells=ROWS, limit=5),
        dict(figure="fig6", arch="resnet18", sigmas=[3.0, 1.0], indices=[0, 1, 500, 1000]),
        dict(figure="fig1", arch="vgg11", cells=[[0, 4]], widths=[2, 4]),
        dict(figure="fig1", arch="vgg11", cells=[[0, 4]], widths=[4], autocast="bf16"),
        dict(figure="fig3", arch="lenet_nopool", cells=[[0, 4]]),  # a network without a width
        dict(figure="fig7", arch="resnet18", profile="smoke", overrides=dict(max_train=64, max_test=64, epochs=1)),
        dict(
            figure="fig8",
            arch="vgg11",
            profile="smoke",
            overrides=dict(max_train=64, max_test=64, flip_epochs=1),
            seeds=[0, 1],
        ),
        dict(
            figure="us-fig2",
            arch="resnet18",
            profile="smoke",
            overrides=dict(n_test=64, resolution=5, concat_train={"resnet18": dict(n_train=64, epochs=1, max_lr=0.1)}),
        ),
        dict(
            figure="us-fig3",
            arch="resnet18",
            profile="smoke",
            overrides=dict(max_train=64, max_test=64, cifar_train={"resnet18": dict(epochs=1, max_lr=0.1)}),
        ),
    ],
)
