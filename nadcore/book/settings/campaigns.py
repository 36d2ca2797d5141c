"""Campaigns: what the 30-minute cpu build cannot afford, run off-build by
``scripts/run_campaign.py`` (:mod:`nadcore.book.campaign`) into committed result bundles under
``results/<campaign>/``.

A campaign trains the paper's big networks with chapter 3's ``paper`` settings (10,000 samples,
10,000 test samples, sigma 3, the authors' released recipe: 20 epochs, max_lr 0.5, no momentum,
gradient clipping 0.5), on its ``device``, at its ``widths`` (registry options, see
:data:`nadcore.nets.OPTIONS`; a missing name is trained at full width), with its ``train``
overrides (the trainer and speed-only options). Its ``stages`` run in order, job by job; a stage
is a dict:

* ``figure``: the bundle CSV it writes (``fig1``, ``fig2``, ``fig3``, ``fig6``);
* ``arch``: a registry name; ``widths``: the widths to train it at (default: the campaign's);
* ``cells`` (Figs. 1-3): a list of ``[k1, k2]``, or ``"rows:0,2"`` (every cell of those rows of
  the 16x16 grid, coarse to fine: every 8th frequency first, then every 4th, then the rest), or
  ``"grid"`` (every cell distinct under the transposition, coarse to fine); ``limit``: only the
  first N of them (a later stage with the same cells continues where this one stopped: a job is
  never run twice);
* ``seeds``: the seeds (default ``[0]``); ``recipe``: a name of chapter 3's ``recipes``
  (default ``"authors"``);
* ``sigmas`` and ``indices`` (Fig. 6): the noise levels and NAD indices; the NADs are
  ``fig6_nads`` (``"published"``: the authors' published NADs of the full-width network).

The order is the issue's plan: the width study's diagnostic cells first (they decide whether the
reduced widths are usable), then the two full rows k1 = 0 and k1 = 2 of Fig. 1 for each network
(ResNet-18's checkerboard, DenseNet-121's cross and VGG-11's diamond all cross them), Fig. 6 at
the paper's sigma and at the sigma chapter 3 fitted on LeNet, then Figs. 3 and 2, more cells,
more seeds.
"""
ROWS = "rows:0,2"
#: the width study's diagnostic cells: per network, a cell the published map has at chance and
#: one it has well above (ResNet-18: both frequencies 2 mod 4 against one of them 0 mod 4)
DIAGNOSTIC = {"resnet18": [[2, 2], [2, 4]], "vgg11": [[4, 4], [0, 4]], "densenet121": [[2, 2], [2, 0]]}
#: Fig. 6 indices (chapter 3's cpu indices)
FIG6_INDICES = [0, 3, 6, 9, 20, 40, 64, 90, 110, 125, 133, 145, 160, 300, 720, 1000]
#: Fig. 3 and Fig. 2 cells: on the rows, coarse, both sides of ResNet-18's checkerboard
FIG3_CELLS = [[0, 0], [0, 8], [0, -16], [2, 2], [2, 4], [2, -6], [2, 8], [2, -16]]
FIG2_CELLS = [[0, 4], [2, 4], [2, 2], [0, -16], [2, -6], [2, 8]]

CPU = dict(
    device="cpu",
    widths={"resnet18": 16, "resnet18_nopool": 16, "vgg11": 16, "densenet121": 8},
    train=dict(trainer="many", channels_last=True),
    chunk=1, fig6_nads="published",
    stages=[
        # 1. the width study: the diagnostic cells at two widths each (DenseNet-121: the book's)
        dict(figure="fig1", arch="vgg11", cells=DIAGNOSTIC["vgg11"], widths=[8, 16]),
        dict(figure="fig1", arch="resnet18", cells=DIAGNOSTIC["resnet18"], widths=[8, 16]),
        # 2. Fig. 1, the two full rows k1 = 0 and k1 = 2 (32 cells), DenseNet-121 8 of them first
        dict(figure="fig1", arch="vgg11", cells=ROWS),
        dict(figure="fig1", arch="resnet18", cells=ROWS),
        dict(figure="fig1", arch="densenet121", cells=ROWS, limit=8),
        # 3. Fig. 6 on the published NADs, at the paper's sigma and at the one fitted on LeNet
        dict(figure="fig6", arch="resnet18", sigmas=[3.0, 1.0], indices=FIG6_INDICES),
        dict(figure="fig6", arch="vgg11", sigmas=[3.0, 1.0], indices=FIG6_INDICES),
        # 4. the recipe: the follow-up's on the diagnostic cells, against the authors'
        dict(figure="fig1", arch="resnet18", cells=DIAGNOSTIC["resnet18"], recipe="follow-up"),
        # 5. Fig. 3 (ResNet-18 without its average pool) and Fig. 2 (iterations to fit)
        dict(figure="fig3", arch="resnet18_nopool", cells=FIG3_CELLS),
        dict(figure="fig2", arch="resnet18", cells=FIG2_CELLS),
        # 6. the width study at a third width, DenseNet-121's rows to the end
        dict(figure="fig1", arch="vgg11", cells=DIAGNOSTIC["vgg11"], widths=[32]),
        dict(figure="fig1", arch="densenet121", cells=ROWS),
        dict(figure="fig1", arch="resnet18", cells=DIAGNOSTIC["resnet18"], widths=[32]),
        # 7. the rest of the grid, coarse to fine, then more seeds
        dict(figure="fig1", arch="vgg11", cells="grid"),
        dict(figure="fig1", arch="resnet18", cells="grid"),
        dict(figure="fig1", arch="vgg11", cells=ROWS, seeds=[1, 2]),
        dict(figure="fig1", arch="resnet18", cells=ROWS, seeds=[1, 2]),
        dict(figure="fig1", arch="densenet121", cells="grid"),
    ],
)

#: the GPU campaign: full width, every big network side by side with bf16 autocast
PAPER = dict(
    device="cuda", widths={},
    train=dict(trainer="side_by_side", autocast="bf16"),
    chunk=16, fig6_nads="published",
    stages=[
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
    train=dict(trainer="many"), chunk=2, fig6_nads="published",
    overrides=dict(n_test=64, recipes={r: dict(n_train=64, epochs=1, max_lr=0.05, momentum=0.0, weight_decay=0.0,
                                                batch_size=32) for r in ("authors", "follow-up")},
                   fig2_train=dict(n_train=64, epochs=1)),
    stages=[
        dict(figure="fig1", arch="resnet18", cells=ROWS, limit=5),
        dict(figure="fig6", arch="resnet18", sigmas=[3.0, 1.0], indices=[0, 1, 500, 1000]),
        dict(figure="fig1", arch="vgg11", cells=[[0, 4]], widths=[2, 4]),
    ],
)

CAMPAIGNS = {"cpu": CPU, "paper": PAPER, "tiny": TINY}
