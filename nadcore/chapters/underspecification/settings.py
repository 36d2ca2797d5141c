"""Chapter 5, underspecification (arXiv:2104.14372, appendix A).

Experiment 1, D(v1) (+) D(v2): ``concat_models``; ``concat_indices`` = NAD indices of v1 and v2
(grid rows x columns; the claims compare the first and last entries: "early" and "late");
``eps1``, ``eps2``, ``sigma``; ``concat_train[model]`` (or "default"): n_train, epochs, max_lr,
momentum, weight_decay, clip_grad_norm, schedule ("triangular" = the appendix's one-cycle rate);
``n_test`` test samples per run; ``section_pairs``: cross-sections drawn (Fig. 2b), on a
resolution^2 grid over [-extent, extent]^2. Experiment 2, binary CIFAR-10 (+) D(v):
``cifar_models`` ("mlp" = the appendix's 200-50 MLP), ``cifar_sigma[model]``, ``cifar_indices``,
``cifar_eps``, ``cifar_train[model]`` as above, ``max_train``/``max_test`` (None = all images
found). NADs: ``nad_source[model]`` (or "default"): "auto", "secant", "published" or "gradient"
(see Chapter.nads), with ``gradient_networks`` networks for gradient NADs. ``seeds``:
independent runs (each: its own initialisation, data and batch order); ``*_chunk``: runs trained
together by train_many; ``workers``: processes (1 = in-process). ``campaign``: the committed
campaign whose runs of the follow-up's ResNet-18 (at the campaign's width, on the settings of its
stages) the chapter draws and scores beside its own.
"""

_CONCAT = dict(
    n_train=10000, epochs=50, max_lr=0.2, momentum=0.9, weight_decay=0.0, clip_grad_norm=0.5, schedule="triangular"
)
_CIFAR = dict(epochs=40, max_lr=0.15, momentum=0.9, weight_decay=1e-5, clip_grad_norm=0.5, schedule="triangular")
#: the data the chapter reads (checked by the build before the first chapter runs)
DATA = ("published NADs", "CIFAR-10")

PAPER = dict(
    concat_models=["mlp", "lenet", "resnet18"],
    concat_indices=[0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000],
    eps1=1.0,
    eps2=0.5,
    sigma=1.0,
    n_test=10000,
    concat_train={
        "resnet18": dict(_CONCAT, n_train=10000, epochs=30, max_lr=0.1, weight_decay=1e-5),
        "default": _CONCAT,
    },
    section_pairs=[[0, 0], [0, 1000], [10, 10], [100, 0], [1000, 0], [1000, 1000]],
    extent=2.0,
    resolution=81,
    cifar_models=["mlp", "lenet", "resnet18"],
    cifar_indices=[0, 1, 2, 3, 5, 10, 20, 30, 50, 100, 200, 500, 1000],
    cifar_eps=1.0,
    cifar_sigma={"mlp": 3.0, "lenet": 1.0, "resnet18": 3.0, "default": 1.0},
    cifar_train={"mlp": dict(_CIFAR, epochs=60), "default": _CIFAR},
    max_train=None,
    max_test=None,
    gradient_networks=10000,
    seeds=3,
    concat_chunk=8,
    cifar_chunk=2,
    workers=1,
    nad_source={"lenet": "secant", "resnet18": "published", "default": "gradient"},
    campaign="cpu",
)
# cpu: the follow-up's samples (10,000), epochs (50), test samples (10,000) and random networks
# for the MLP's and LeNet's D(v1) (+) D(v2) (LeNet on the authors' published NADs, 10,000
# networks, as the follow-up's ResNet-18), on the grid's two ends only (early / late: every claim
# compares them; the paper's 11 x 11 grid would cost 30 times as much); four NAD indices on the
# CIFAR-10 subset (all 5,170 images), LeNet 30 epochs (20 left one seed's LeNet short of fitting the
# subset at u_1000), the MLP 10 (it fits in fewer). ResNet-18 (trained off the build by the cpu
# campaign, on the settings its stage pins) is not trained here. Five seeds, not the paper's
# three: at three, LeNet's CIFAR-10 (+) D(v) claims sat within their intervals' reach of their
# bounds, and the spread measured there said four to five settle them (their to_settle); five is
# the cap
CPU = dict(
    concat_models=["mlp", "lenet"],
    concat_indices=[0, 1000],
    concat_train={
        "resnet18": dict(_CONCAT, n_train=2000, epochs=10, max_lr=0.1, weight_decay=1e-5),
        "default": _CONCAT,
    },
    section_pairs=[[0, 0], [0, 1000], [1000, 0], [1000, 1000]],
    resolution=41,
    cifar_models=["mlp", "lenet"],
    cifar_indices=[0, 10, 100, 1000],
    cifar_train={"mlp": dict(_CIFAR, epochs=10), "default": dict(_CIFAR, epochs=30)},
    nad_source={"lenet": "published", "resnet18": "published", "default": "gradient"},
    concat_chunk=2,
    cifar_chunk=2,
    workers=2,
    seeds=5,
)
#: the settings of chapter 5's cpu profile on which the cpu campaign trained the follow-up's
#: ResNet-18 (a 3 x 3 grid of NAD pairs, 2,000 samples and 10 epochs, 1,000 test samples): its
#: stages pin them, so that its committed runs stay its runs
CAMPAIGN_CPU = dict(
    concat_indices=[0, 30, 1000],
    n_test=1000,
    concat_train={"resnet18": dict(_CONCAT, n_train=2000, epochs=10, max_lr=0.1, weight_decay=1e-5)},
)
SMOKE = dict(
    concat_indices=[0, 1000],
    n_test=256,
    concat_train={"default": dict(_CONCAT, n_train=256, epochs=2)},
    resolution=21,
    cifar_indices=[0, 1000],
    cifar_train={"default": dict(_CIFAR, epochs=2)},
    max_train=512,
    max_test=256,
    gradient_networks=64,
    seeds=2,
    concat_chunk=8,
    cifar_chunk=4,
    workers=1,
)
