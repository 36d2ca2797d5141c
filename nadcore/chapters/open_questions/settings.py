"""Chapter 6, open questions (the NeurIPS reviews, the NAD paper's Sec. 3, the follow-up's eq. (2)).

Q1 downsampling: the LeNet variants ``variants`` (label -> model spec) trained on D(v) for every
Fourier direction v of the quadrant grid k1, k2 in ``grid_ticks`` (the part of the Fig.-1 map this
chapter studies; cells with k1 > k2 reuse the runs of their transpose (k2, k1), exact in
distribution for these networks, see ``grid_sweep(transpose_symmetric=True)``), with ``dv`` (D(v): sigma, epsilon, signal,
n_train, n_test) and ``dv_train`` (the SGD recipe of the authors' LeNet runs: linear decay, clipping
0.5); at most ``chunk`` runs per job, in as many jobs as a multiple of ``workers``. Off-centre
cells have max(k1, k2) >= ``off_centre``; an island is an off-centre cell with accuracy >=
``island``. NADs (Q1, Q2, Q4, Q5, Q6): exact-gradient NADs from
``nad_networks`` networks at one evaluation point.
Q2 NADs during training: ``dynamics_direction`` [k1, k2] of D(v) (``dv``, ``dv_train``), binary
CIFAR-10 (``cifar_train``, ``max_train``/``max_test``: None = every image found); the networks'
NADs over ``eval_points`` test inputs, overlaps for ``overlap_ks``; ``reference_nads``: the source
(see Chapter.nads) of the architecture's NADs compared with (Q2), removed from images (Q3) and
used for the secant alpha(v) (Q6).
Q3 the same CIFAR-10 networks tested with ``removal_ks`` components removed.
Q4 ``resnets`` (label -> spec), narrow residual networks with and without skips, their gradient
NADs from ``skip_nad_networks`` networks per seed (split-half agreement recorded).
Q5 eqs. (4)-(5) on the linear model of pooling (``linear_D``, ``linear_S``, ``linear_sigmas``:
sigma_theta, sigma_phi; ``linear_draws`` Monte Carlo draws); the mixed-Hessian Gram of LeNet from
``hessian_networks`` networks per seed against its gradient NADs (``nad_networks``).
``seeds``: independent repetitions; ``workers``: processes for the jobs (1 = in-process).
"""

_VARIANTS = {
    "max-pool": "lenet",
    "average pool": "nadcore.nets.variants:lenet_avgpool",
    "strided conv": "nadcore.nets.variants:lenet_strided",
    "blur-pool": "nadcore.nets.variants:lenet_blurpool",
}
#: the data the chapter reads (checked by the build before the first chapter runs)
DATA = ("published NADs", "CIFAR-10")

PAPER = dict(
    variants=_VARIANTS,
    grid_ticks=list(range(0, 17, 2)),
    dv=dict(sigma=3.0, epsilon=1.0, signal="paper", n_train=10000, n_test=10000),
    dv_train=dict(epochs=20, max_lr=0.5, momentum=0.0, weight_decay=0.0, batch_size=128),
    chunk=16,
    off_centre=8,
    island=0.6,
    nad_networks=20000,
    dynamics_direction=[0, 4],
    eval_points=1024,
    overlap_ks=[1, 4, 16],
    cifar_train=dict(epochs=30, max_lr=0.1, momentum=0.9, weight_decay=5e-4, batch_size=128),
    max_train=None,
    max_test=None,
    removal_ks=[1, 4, 16, 64, 256],
    reference_nads="published",
    resnets={"with skip": "nadcore.nets.variants:resnet_skip", "without skip": "nadcore.nets.variants:resnet_noskip"},
    skip_nad_networks=20000,
    linear_D=32,
    linear_S=4,
    linear_sigmas=[0.7, 1.3],
    linear_draws=20000,
    hessian_networks=256,
    seeds=3,
    workers=1,
)
# cpu: a quadrant grid with stride 4, an easier D(v) (sigma 1, fewer samples and epochs) and batches
# of 32 (four times the SGD steps for the same compute: with batches of 128 the short runs of the
# average- and blur-pooling networks did not even fit their training sets); fewer networks for the
# NADs and the mixed Hessian
CPU = dict(
    grid_ticks=[0, 4, 8, 12, 16],
    dv=dict(sigma=1.0, epsilon=1.0, signal="paper", n_train=1200, n_test=1000),
    dv_train=dict(epochs=10, max_lr=0.5, momentum=0.0, weight_decay=0.0, batch_size=32),
    chunk=38,
    nad_networks=8000,
    skip_nad_networks=4000,
    eval_points=256,
    cifar_train=dict(epochs=8, max_lr=0.1, momentum=0.9, weight_decay=0.0, batch_size=128),
    removal_ks=[1, 4, 16, 64],
    linear_draws=4000,
    hessian_networks=24,
    workers=2,
)
SMOKE = dict(
    grid_ticks=[0, 16],
    dv=dict(sigma=1.0, epsilon=1.0, signal="paper", n_train=128, n_test=128),
    dv_train=dict(epochs=2, max_lr=0.5, momentum=0.0, weight_decay=0.0, batch_size=32),
    chunk=4,
    nad_networks=32,
    skip_nad_networks=32,
    eval_points=32,
    cifar_train=dict(epochs=1, max_lr=0.1, momentum=0.9, weight_decay=0.0, batch_size=128),
    max_train=256,
    max_test=128,
    removal_ks=[1, 16],
    linear_D=16,
    linear_draws=100,
    hessian_networks=5,
    seeds=2,
    workers=1,
)
