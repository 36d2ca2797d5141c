"""Execution profiles: ``smoke`` (CI, seconds per chapter), ``cpu`` (default build, minutes on a
2-core laptop) and ``paper`` (the papers' settings, meant for a GPU).

Each chapter has its own block of settings. A chapter's parameters cell holds ``profile`` and
knobs that default to ``None``; ``resolve(chapter, profile, **knobs)`` returns the profile's
settings with every non-None knob overriding the profile's value.
"""
from __future__ import annotations

import copy

PROFILE_NAMES = ("smoke", "cpu", "paper")

# chapter -> profile -> settings. Chapters register their blocks here (one dict per chapter).
SETTINGS: dict[str, dict[str, dict]] = {
    "01_pooling": {
        # Fig. 4a: D-dimensional 1-D signals, average pooling by S; Theorem 1 curves for every sigma
        # in `sigmas` (eps fixed), Monte Carlo at `mc_ells` with `mc_samples` draws each; the
        # agreement table is printed for `table_sigma`. Fig. 4b: the deep linear model of pooling
        # trained with SGD on x = lemma_eps*y*e_l + N(0, lemma_sigma^2 I) for every l in `lemma_ells`
        # (`lemma_repeats` independent runs averaged per l).
        "smoke": dict(D=128, S=4, eps=1.0, sigmas=[1.0], table_sigma=1.0, phase=0.0,
                      mc_samples=4000, mc_ells=[1, 16, 20, 40],
                      lemma_ells=[1, 28], lemma_iters=400, lemma_train=512, lemma_eps=1.0,
                      lemma_sigma=0.5, lemma_lr=0.2, lemma_batch=64, lemma_init=0.5,
                      lemma_repeats=2, hessian_samples=10_000),
        "cpu": dict(D=128, S=4, eps=1.0, sigmas=[0.5, 1.0, 3.0], table_sigma=1.0, phase=0.0,
                    mc_samples=100_000, mc_ells=list(range(0, 65, 4)),
                    lemma_ells=[1, 8, 16, 24, 28, 30], lemma_iters=1500, lemma_train=2048,
                    lemma_eps=1.0, lemma_sigma=0.5, lemma_lr=0.2, lemma_batch=64, lemma_init=0.5,
                    lemma_repeats=8, hessian_samples=50_000),
        "paper": dict(D=128, S=4, eps=1.0, sigmas=[0.5, 1.0, 3.0], table_sigma=1.0, phase=0.0,
                      mc_samples=1_000_000, mc_ells=list(range(0, 65)),
                      lemma_ells=[1, 8, 16, 24, 28, 30, 31], lemma_iters=10_000, lemma_train=10_000,
                      lemma_eps=1.0, lemma_sigma=0.5, lemma_lr=0.2, lemma_batch=64, lemma_init=0.5,
                      lemma_repeats=16, hessian_samples=200_000),
    },
    "02_nads": {
        # networks per architecture for each estimator; None = use the published NADs instead
        # LogReg gets the same networks for both estimators: for a linear model they must agree.
        "smoke": dict(secant_networks={"logreg": 64, "lenet": 48},
                      gradient_networks={"logreg": 64, "lenet": 256, "vgg11": 6, "resnet18": 6,
                                         "densenet121": 3},
                      convergence=[16, 32]),
        "cpu": dict(secant_networks={"logreg": 2000, "lenet": 4000},
                    gradient_networks={"logreg": 2000, "lenet": 20000, "vgg11": 600,
                                       "resnet18": 600, "densenet121": 300},
                    convergence=[250, 500, 1000, 2000, 4000]),
        "paper": dict(secant_networks={"logreg": 10000, "lenet": 10000, "vgg11": 10000,
                                       "resnet18": 10000, "densenet121": 10000},
                      gradient_networks={"logreg": 10000, "lenet": 100000, "vgg11": 10000,
                                         "resnet18": 10000, "densenet121": 10000},
                      convergence=[625, 1250, 2500, 5000, 10000]),
    },
    "03_linear_separability": {
        # D(v) with x = eps*y*v + w (paper Sec. 2); grid: the 16x16 Fourier grid of Fig. 1; *_every:
        # every k-th cell of it (1 = full grid); train: per-architecture SGD settings ("default" for
        # any other model), linear decay to 0 and gradient clipping 0.5 always; n_test: test samples
        # per direction; chunk: directions trained together by train_many; workers: processes
        # (1 = in-process); fig6_indices: NAD indices for Fig. 6 (secant and gradient NADs come
        # from chapter 2's cache with chapter 2's number of networks on the same profile).
        "smoke": dict(grid=16, sigma=3.0, epsilon=1.0, n_test=256, chunk=16, workers=1,
                      fig1_models=["logreg", "lenet"], fig1_every=4,
                      fig3_models=["lenet_nopool"], fig3_every=8,
                      fig2_models=["lenet"], fig2_every=8, fig2_sigma=0.5, fig2_threshold=0.2,
                      fig2_train=dict(n_train=256, epochs=2),
                      fig6_indices=[0, 1, 2, 100, 800, 1000],
                      train={"logreg": dict(n_train=256, epochs=2, max_lr=0.5),
                             "default": dict(n_train=256, epochs=2, max_lr=0.5)}),
        "cpu": dict(grid=16, sigma=3.0, epsilon=1.0, n_test=2000, chunk=8, workers=2,
                    fig1_models=["logreg", "lenet"], fig1_every=1,
                    fig3_models=["lenet_nopool"], fig3_every=2,
                    fig2_models=["lenet"], fig2_every=2, fig2_sigma=0.5, fig2_threshold=0.2,
                    fig2_train=dict(n_train=1000, epochs=16),
                    fig6_indices=[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 24, 32, 48, 64, 96, 128,
                                  192, 256, 384, 512, 640, 704, 768, 832, 896, 960, 1023],
                    train={"logreg": dict(n_train=4000, epochs=10, max_lr=0.5),
                           "lenet_nopool": dict(n_train=2000, epochs=5, max_lr=0.5),
                           "default": dict(n_train=3000, epochs=8, max_lr=0.5)}),
        "paper": dict(grid=16, sigma=3.0, epsilon=1.0, n_test=10000, chunk=16, workers=1,
                      fig1_models=["logreg", "lenet", "vgg11", "resnet18", "densenet121"],
                      fig1_every=1,
                      fig3_models=["lenet_nopool", "resnet18_nopool"], fig3_every=1,
                      fig2_models=["lenet", "resnet18"], fig2_every=1, fig2_sigma=0.5,
                      fig2_threshold=0.1, fig2_train=dict(n_train=10000, epochs=20),
                      fig6_indices=sorted(set(range(0, 32)) | set(range(32, 1024, 16)) | {1023}),
                      train={"logreg": dict(n_train=10000, epochs=20, max_lr=0.5),
                             "lenet": dict(n_train=10000, epochs=20, max_lr=0.5),
                             "lenet_nopool": dict(n_train=10000, epochs=20, max_lr=0.5),
                             # not given in the NAD paper: the follow-up's ResNet-18 recipe
                             # (max_lr 0.1, momentum 0.9, wd 1e-5, 30 epochs) for all big nets
                             "default": dict(n_train=10000, epochs=30, max_lr=0.1, momentum=0.9,
                                             weight_decay=1e-5)}),
    },
    "04_cifar10": {
        # eps on the [0, 1] pixel scale; indices: carrier at NADs (i, i+1); epochs: poisoning runs;
        # flip_epochs: the original/flipped pairs (longer, so that both come close to fitting the
        # training set); flip_models: trained on both representations besides the chapter's model
        # (mlp/logreg: control with the model's NADs); max_train/max_test: None = every image found;
        # nad_networks: None = chapter 2's secant NADs, else the published ones, else
        # fallback_nad_networks secant networks.
        "smoke": dict(eps=0.05, indices=[0, 1022], epochs=3, flip_epochs=3, max_lr=0.1,
                      momentum=0.9, weight_decay=0.0, batch_size=128, max_train=1000, max_test=500,
                      flip_models=[], nad_networks=None, fallback_nad_networks=32),
        # cpu: LeNet on the subset; no weight decay and max_lr 0.1 so that it fits the subset quickly
        # (about 0.5 s an epoch on an idle 2-core machine: the chapter takes about 4 minutes)
        "cpu": dict(eps=0.05, indices=[0, 1, 2, 4, 8, 16, 32, 96, 256, 512, 1022], epochs=20,
                    flip_epochs=60, max_lr=0.1, momentum=0.9, weight_decay=0.0, batch_size=128,
                    max_train=None, max_test=None, flip_models=["mlp"], nad_networks=None,
                    fallback_nad_networks=1000),
        "paper": dict(eps=0.05, indices=[0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 384, 512, 768, 1022],
                      epochs=50, flip_epochs=50, max_lr=0.21, momentum=0.9, weight_decay=5e-4,
                      batch_size=128, max_train=None, max_test=None,
                      flip_models=["resnet18", "vgg11", "densenet121", "lenet", "mlp"],
                      nad_networks=None, fallback_nad_networks=10000),
    },
    "05_underspecification": {
        # Follow-up paper (arXiv:2104.14372), appendix A. Experiment 1, D(v1) (+) D(v2):
        # concat_indices = NAD indices of v1 and v2 (grid rows x columns); eps1, eps2, sigma;
        # concat_train[model] (or "default"): n_train, epochs, max_lr, momentum, weight_decay,
        # clip_grad_norm, schedule ("triangular" = the appendix's one-cycle rate); section_pairs:
        # cross-sections drawn (Fig. 2b), on a resolution^2 grid over [-extent, extent]^2.
        # Experiment 2, binary CIFAR-10 (+) D(v): cifar_models ("mlp" = the appendix's 200-50 MLP),
        # cifar_sigma[model], cifar_indices, cifar_train as above, max_train/max_test (None = all
        # images found). NADs: lenet = chapter 2's secant NADs on the same profile, resnet18 = the
        # authors' published ones, others = exact-gradient NADs from gradient_networks networks
        # (nad_source[model] or "default": "secant", "published", "gradient" or "auto").
        # repeats: seeds averaged (seed, seed+1, ...); chunk: runs trained together by train_many.
        "smoke": dict(concat_models=["mlp", "lenet"], concat_indices=[0, 1000], eps1=1.0, eps2=0.5,
                      sigma=1.0, n_test=256,
                      concat_train={"default": dict(n_train=256, epochs=2, max_lr=0.2, momentum=0.9,
                                                    weight_decay=0.0, clip_grad_norm=0.5,
                                                    schedule="triangular")},
                      section_pairs=[[0, 0], [0, 1000], [1000, 0], [1000, 1000]], extent=2.0,
                      resolution=21,
                      cifar_models=["mlp", "lenet"], cifar_indices=[0, 1000], cifar_eps=1.0,
                      cifar_sigma={"mlp": 3.0, "lenet": 1.0, "resnet18": 3.0, "default": 1.0},
                      cifar_train={"default": dict(epochs=2, max_lr=0.15, momentum=0.9,
                                                   weight_decay=1e-5, clip_grad_norm=0.5,
                                                   schedule="triangular")},
                      max_train=512, max_test=256, gradient_networks=64, repeats=1,
                      concat_chunk=8, cifar_chunk=4,
                      nad_source={"lenet": "secant", "resnet18": "published", "default": "gradient"}),
        "cpu": dict(concat_models=["mlp", "lenet"], concat_indices=[0, 5, 30, 200, 1000],
                    eps1=1.0, eps2=0.5, sigma=1.0, n_test=1000,
                    concat_train={"mlp": dict(n_train=4000, epochs=10, max_lr=0.2, momentum=0.9,
                                              weight_decay=0.0, clip_grad_norm=0.5,
                                              schedule="triangular"),
                                  "default": dict(n_train=2000, epochs=10, max_lr=0.2, momentum=0.9,
                                                  weight_decay=0.0, clip_grad_norm=0.5,
                                                  schedule="triangular")},
                    section_pairs=[[0, 0], [0, 1000], [200, 0], [1000, 1000]], extent=2.0,
                    resolution=41,
                    cifar_models=["mlp", "lenet"], cifar_indices=[0, 3, 10, 30, 100, 300, 1000],
                    cifar_eps=1.0,
                    cifar_sigma={"mlp": 3.0, "lenet": 1.0, "resnet18": 3.0, "default": 1.0},
                    cifar_train={"default": dict(epochs=10, max_lr=0.15, momentum=0.9,
                                                 weight_decay=1e-5, clip_grad_norm=0.5,
                                                 schedule="triangular")},
                    max_train=None, max_test=None, gradient_networks=1200, repeats=1,
                    concat_chunk=5, cifar_chunk=4,
                    nad_source={"lenet": "secant", "resnet18": "published", "default": "gradient"}),
        "paper": dict(concat_models=["mlp", "lenet", "resnet18"],
                      concat_indices=[0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000], eps1=1.0,
                      eps2=0.5, sigma=1.0, n_test=10000,
                      concat_train={"resnet18": dict(n_train=10000, epochs=30, max_lr=0.1,
                                                     momentum=0.9, weight_decay=1e-5,
                                                     clip_grad_norm=0.5, schedule="triangular"),
                                    "default": dict(n_train=10000, epochs=50, max_lr=0.2,
                                                    momentum=0.9, weight_decay=0.0,
                                                    clip_grad_norm=0.5, schedule="triangular")},
                      section_pairs=[[0, 0], [0, 1000], [10, 10], [100, 0], [1000, 0],
                                     [1000, 1000]], extent=2.0, resolution=81,
                      cifar_models=["mlp", "lenet", "resnet18"],
                      cifar_indices=[0, 1, 2, 3, 5, 10, 20, 30, 50, 100, 200, 500, 1000],
                      cifar_eps=1.0,
                      cifar_sigma={"mlp": 3.0, "lenet": 1.0, "resnet18": 3.0, "default": 1.0},
                      cifar_train={"mlp": dict(epochs=60, max_lr=0.15, momentum=0.9,
                                               weight_decay=1e-5, clip_grad_norm=0.5,
                                               schedule="triangular"),
                                   "default": dict(epochs=40, max_lr=0.15, momentum=0.9,
                                                   weight_decay=1e-5, clip_grad_norm=0.5,
                                                   schedule="triangular")},
                      max_train=None, max_test=None, gradient_networks=10000, repeats=3,
                      concat_chunk=8, cifar_chunk=2,
                      nad_source={"lenet": "secant", "resnet18": "published", "default": "gradient"}),
    },
}


def resolve(chapter: str, profile: str, **knobs) -> dict:
    """Settings of ``chapter`` on ``profile``, with non-None ``knobs`` overriding them."""
    if profile not in PROFILE_NAMES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILE_NAMES)}")
    if chapter not in SETTINGS:
        raise KeyError(f"no profile settings for chapter {chapter!r}; known: {', '.join(SETTINGS)}")
    out = copy.deepcopy(SETTINGS[chapter][profile])
    for k, v in knobs.items():
        if v is not None:
            out[k] = v
    out["profile"] = profile
    return out
