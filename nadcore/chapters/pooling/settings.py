"""Chapter 1, pooling and aliasing (paper Sec. 2.1-2.2, Fig. 4).

Fig. 4a: D-dimensional 1-D signals, average pooling by S; Theorem 1 curves for every sigma in
``sigmas`` (eps fixed), Monte Carlo at ``mc_ells`` with ``mc_samples`` draws each; the agreement
table is printed for ``table_sigma``. Fig. 4b: the deep linear model of pooling trained with SGD on
x = lemma_eps*y*e_l + N(0, lemma_sigma^2 I) for every l in ``lemma_ells``, one independent run
per seed (``seeds``); ``hessian_samples`` draws check Lemma 1's expected Hessian.
"""

#: the data the chapter reads (checked by the build before the first chapter runs)
DATA = ()

PAPER = dict(
    D=128,
    S=4,
    eps=1.0,
    sigmas=[0.5, 1.0, 3.0],
    table_sigma=1.0,
    phase=0.0,
    mc_samples=1_000_000,
    mc_ells=list(range(0, 65)),
    lemma_ells=[1, 8, 16, 24, 28, 30, 31],
    lemma_iters=10_000,
    lemma_train=10_000,
    lemma_eps=1.0,
    lemma_sigma=0.5,
    lemma_lr=0.2,
    lemma_batch=64,
    lemma_init=0.5,
    seeds=16,
    hessian_samples=200_000,
)
CPU = dict(
    mc_samples=100_000,
    mc_ells=list(range(0, 65, 4)),
    lemma_ells=[1, 8, 16, 24, 28, 30],
    lemma_iters=1500,
    lemma_train=2048,
    seeds=8,
    hessian_samples=50_000,
)
SMOKE = dict(
    sigmas=[1.0],
    mc_samples=4000,
    mc_ells=[1, 16, 20, 40],
    lemma_ells=[1, 28],
    lemma_iters=400,
    lemma_train=512,
    seeds=3,
    hessian_samples=10_000,
)
