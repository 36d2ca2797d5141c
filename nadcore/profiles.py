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
    "04_cifar10": {
        # eps on the [0, 1] pixel scale; indices: carrier at NADs (i, i+1); flip_models: trained on
        # original and NAD-flipped images besides the chapter's model (mlp/logreg: control);
        # max_train/max_test: None = every image of the data found; nad_networks: None = chapter 2's
        # secant NADs, else the published ones, else fallback_nad_networks secant networks.
        "smoke": dict(eps=0.05, indices=[0, 1022], epochs=2, max_lr=0.05, momentum=0.9,
                      weight_decay=5e-4, batch_size=128, max_train=1000, max_test=500,
                      flip_models=[], nad_networks=None, fallback_nad_networks=32),
        "cpu": dict(eps=0.05, indices=[0, 2, 8, 32, 96, 256, 512, 1022], epochs=12, max_lr=0.05,
                    momentum=0.9, weight_decay=5e-4, batch_size=128, max_train=None,
                    max_test=None, flip_models=["mlp"], nad_networks=None,
                    fallback_nad_networks=1000),
        "paper": dict(eps=0.05, indices=[0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 384, 512, 768, 1022],
                      epochs=50, max_lr=0.21, momentum=0.9, weight_decay=5e-4, batch_size=128,
                      max_train=None, max_test=None,
                      flip_models=["lenet", "vgg11", "densenet121", "mlp"], nad_networks=None,
                      fallback_nad_networks=10000),
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
