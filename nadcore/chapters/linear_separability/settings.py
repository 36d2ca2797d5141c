"""Chapter 3, linear separability (paper Sec. 2 and 4.1, Figs. 1, 2, 3 and 6).

D(v) with ``sigma``, ``epsilon`` and the ``signal`` convention ("paper": x = eps y v + noise, as
their text and as their published Fig. 1 was made; "authors": exactly balanced classes,
x = +-(eps/2) v + noise, as their released code);
``outputs`` 2 = two logits and cross-entropy (the authors' code), 1 = one logit and the logistic
loss. ``train[arch]`` (or ``"default"``): n_train and the SGD recipe (linear decay to 0 and
gradient clipping 0.5 always); ``n_test`` test samples per run; ``seeds`` independent runs per
direction (each its own data, initialisation and batch order). ``low``/``high``: the frequency
bands of the claims, max(|k1|, |k2|) <= low and >= high.

Fig. 1: the 16x16 Fourier grid of ``grid`` cells per side, every ``fig1_every``-th cell (1 = full
grid); ``fig1_transpose``: train only the cells with k1 <= k2 and mirror them (exact in
distribution, see nadcore.chapters.linear_separability.runs.grid_sweep); ``contrast_cells``: the cells on
which the chapter's model is also trained with the other ``signal`` convention. Figs. 2 and 3: ``fig2_cells`` / ``fig3_cells``, a list of [k1, k2] (None = the Fig. 1
grid). Fig. 2 trains with ``fig2_sigma``, ``fig2_train`` (n_train, epochs) and ``fig2_seeds`` seeds and counts the
iterations until the loss averaged over 20 mini-batches falls below ``fig2_threshold``. Fig. 6:
``fig6_indices`` NAD indices of the chapter's model for its secant NADs, trained at the paper's
``sigma`` (its claims), and ``fig6_gradient_indices`` trained at ``fig6_sigma`` (fitted on
LeNet's published curve: calibrations) for the secant NADs and for the gradient NADs averaged
over chapter 2's ``gradient_points`` evaluation points, index by index; ``fig6_models``: further
architectures trained on the authors' published NADs (the paper profile; the cpu profile gets
them from the campaign); ``fig6_random``: random unit directions (uniform on the sphere, drawn
from the chapter's seed) on which the chapter's model trains at ``sigma`` (footnote 4).
``converged_k`` / ``converged_overlap``: an estimator counts as converged when the split-half
overlap of its top-k NADs reaches this value. ``chunk``: runs
trained together by train_many; ``workers``: processes (1 = in-process). ``recipes``: the
training recipes the big networks may use (the campaigns train with ``"authors"``; the recipe check
compares it with ``"follow-up"``; the ablation adds the follow-up's changes to the authors' recipe
one at a time, ``"authors+<setting>"``, and takes them out of the follow-up's one at a time,
``"follow-up-<setting>"``).

The paper's big networks on the cpu profile: the committed bundle of campaign ``campaign``
(:mod:`nadcore.chapters.campaigns`), and from it too Fig. 3's LeNet without pooling where the
bundle has its runs at the chapter's settings and seeds (else the chapter trains it);
``spot_cells`` of each are re-run live at ``spot_train`` (n_train, epochs; the rest of the
authors' recipe) with ``spot_n_test`` test samples, and must land on the bundle's side of
``spot_threshold``; ``spot_autocast``: the networks whose live runs train in that autocast
precision, as their bundle runs did, where the device runs it natively (a GPU, or a CPU with
:data:`nadcore.runtime.BF16_FLAGS`; float32 elsewhere).
"""

_LENET = dict(n_train=10000, epochs=20, max_lr=0.5, momentum=0.0, weight_decay=0.0, batch_size=128)
# the follow-up paper's ResNet-18 recipe (its appendix): the campaign's recipe check trains it beside
# the authors' on ResNet-18's recipe cells (nadcore.chapters.linear_separability.campaign.RECIPE_CELLS)
_FOLLOWUP = dict(n_train=10000, epochs=30, max_lr=0.1, momentum=0.9, weight_decay=1e-5, batch_size=128)
# the recipe ablation (on nadcore.chapters.linear_separability.campaign.ABLATION_CELLS): which of the follow-up recipe's
# four changes to the authors' erases ResNet-18's checkerboard. "authors+<setting>": the authors'
# recipe with that one setting of the follow-up's; "follow-up-<setting>": the follow-up's recipe
# with that one setting back at the authors' value; then the authors' with the two settings without
# which the follow-up's recipe failed on an ablation cell (momentum and max_lr: the campaign's
# jobs 372-373 and 376-377)
_CHANGES = ("momentum", "weight_decay", "max_lr", "epochs")
ABLATION = {
    **{f"authors+{k}": dict(_LENET, **{k: _FOLLOWUP[k]}) for k in _CHANGES},
    **{f"follow-up-{k}": dict(_FOLLOWUP, **{k: _LENET[k]}) for k in _CHANGES},
    "authors+momentum+max_lr": dict(_LENET, momentum=_FOLLOWUP["momentum"], max_lr=_FOLLOWUP["max_lr"]),
}
# Fig. 6: every NAD index up to 160 in steps of 4 or so, then sparser; 0-9 and past 700 for the
# first-vs-beyond claim; 130-140 around where the published LeNet curve crosses 0.75 (index 133)
_FIG6 = sorted(set(range(0, 10)) | set(range(10, 160, 6)) | {133} | set(range(160, 1023, 40)) | {1022})
#: the data the chapter reads (checked by the build before the first chapter runs)
DATA = ("published NADs",)

PAPER = dict(
    grid=16,
    sigma=3.0,
    epsilon=1.0,
    signal="paper",
    outputs=2,
    n_test=10000,
    seeds=3,
    chunk=16,
    workers=1,
    low=4,
    high=8,
    fig1_models=["logreg", "lenet", "vgg11", "resnet18", "densenet121"],
    fig1_every=1,
    fig1_transpose=True,
    contrast_cells=[[0, 0], [0, -4], [0, -8], [0, -12], [-12, 0]],
    fig2_models=["lenet", "resnet18"],
    fig2_cells=None,
    fig2_sigma=0.5,
    fig2_threshold=0.1,
    fig2_train=dict(n_train=10000, epochs=20),
    fig2_seeds=3,
    fig3_models=["lenet_nopool", "resnet18_nopool"],
    fig3_cells=None,
    fig6_sigma=1.0,
    fig6_indices=_FIG6,
    fig6_gradient_indices=_FIG6,
    fig6_models=["vgg11", "resnet18", "densenet121"],
    fig6_random=16,
    converged_k=16,
    converged_overlap=0.8,
    campaign="cpu",
    spot_cells={
        "resnet18": [[0, 0], [2, 2]],
        "vgg11": [[0, 0], [0, -8]],
        "densenet121": [[0, 0], [2, -8]],
        # Fig. 3 (the cpu build takes its runs from the bundle): a cell where the
        # pooled LeNet is blind in the published map, and one where it sees
        "lenet_nopool": [[0, -12], [0, 4]],
    },
    # the fewest epochs tried at which the learned spot cells of each network reached
    # 0.75 or more for seeds 0-3 (another CPU's rounding moves a run as another seed
    # does; one-thread workers, 2026-12-02, Intel Xeon; test accuracy): VGG-11 at width 8
    # on (0, 0) 0.558-0.878 at 2 epochs, 0.876-0.942 at 3, 0.850-0.965 at 4, 0.966-0.988
    # at 6; LeNet without pooling on (0, -12) and (0, 4) 0.616-0.761 at 2, 0.724-0.876 at
    # 3, 0.802-0.924 at 4; ResNet-18 at width 16 on (0, 0) 0.888-0.978 at 2; DenseNet-121
    # at growth rate 8 on (0, 0) 0.792-0.879 at 1
    spot_train={
        "default": dict(n_train=10000, epochs=2),
        "vgg11": dict(n_train=10000, epochs=3),
        "lenet_nopool": dict(n_train=10000, epochs=4),
        "densenet121": dict(n_train=10000, epochs=1),
    },
    spot_n_test=2000,
    spot_threshold=0.6,
    # DenseNet-121's bundle runs are bf16, and so are its live ones where bf16 is native:
    # its spot cells at 1 epoch, seeds 0-3, two one-thread workers (2026-12-02, Intel Xeon
    # with AMX, idle): (0, 0) 0.792, 0.879, 0.870, 0.810 in float32 and 0.815, 0.844,
    # 0.890, 0.782 in bf16 (mean |diff| 0.026, inside the seeds' spread); (2, -8)
    # 0.474-0.511 and 0.490-0.505; the eight runs took 500 s in float32, 336 s in bf16
    spot_autocast={"densenet121": "bf16"},
    # the big networks' recipe: the authors' released directional_bias.py trains every
    # network with LeNet's call (20 epochs, max_lr 0.5, no momentum); the follow-up's
    # ResNet-18 recipe is the alternative the campaign measures on a few cells
    recipes={"authors": _LENET, "follow-up": _FOLLOWUP, **ABLATION},
    train={
        "logreg": _LENET,
        "lenet": _LENET,
        "lenet_nopool": _LENET,
        # on a GPU: the big networks side by side (BatchNorm and Dropout nets
        # included) with bf16 autocast (nadcore.train.train_side_by_side)
        "default": dict(_LENET, trainer="side_by_side", autocast="bf16"),
    },
)
# cpu: LeNet and logistic regression get the paper's budget (10,000 samples, 20 epochs, 1,580 SGD
# steps) and three seeds on every second frequency of the paper's grid (8x8); Figs. 2 and 3 take a
# few cells (Fig. 3: two where the pooled LeNet is blind in the published map, two where it
# generalises), Fig. 6 sixteen NAD indices at the paper's sigma and eight at the fitted one.
CPU = dict(
    chunk=8,
    workers=2,
    fig1_models=["logreg", "lenet"],
    fig1_every=2,
    fig2_models=["lenet"],
    fig2_cells=[[0, 4], [-4, 0], [4, 4], [12, 12], [-16, 8], [8, -12]],
    # five seeds: over three, the ratio's interval cleared its bound by less than what another
    # CPU's rounding moves an interval of runs (six LeNet runs a seed)
    fig2_seeds=5,
    fig3_models=["lenet_nopool"],
    fig3_cells=[[0, 4], [0, -12], [0, 8], [12, 12]],
    fig6_indices=[0, 3, 6, 9, 20, 40, 64, 90, 110, 125, 133, 145, 160, 300, 720, 1000],
    fig6_gradient_indices=[0, 6, 20, 64, 133, 300, 720, 1000],
    fig6_models=[],
    fig6_random=8,
    contrast_cells=[[0, 0], [0, -4], [0, -8], [0, -12]],
)
SMOKE = dict(
    n_test=256,
    seeds=2,
    chunk=16,
    workers=1,
    fig1_every=4,
    contrast_cells=[[0, 0], [0, 8]],
    fig6_gradient_indices=[0, 1, 800, 1000],
    fig2_cells=[[0, 0], [-16, 8]],
    fig2_train=dict(n_train=256, epochs=2),
    fig2_seeds=2,
    fig3_cells=[[0, 4], [0, 8]],
    fig6_indices=[0, 1, 800, 1000],
    fig6_random=3,
    spot_train={"default": dict(n_train=256, epochs=1)},
    spot_n_test=256,
    spot_autocast={},
    train={"default": dict(_LENET, n_train=256, epochs=2)},
)
