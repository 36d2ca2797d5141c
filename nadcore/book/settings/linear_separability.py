"""Chapter 3, linear separability (paper Sec. 2 and 4.1, Figs. 1, 2, 3 and 6).

D(v) with ``sigma``, ``epsilon`` and the ``signal`` convention ("authors": exactly balanced
classes, x = +-(eps/2) v + noise, as their code; "paper": x = eps y v + noise, as their text);
``outputs`` 2 = two logits and cross-entropy (the authors' code), 1 = one logit and the logistic
loss. ``train[arch]`` (or ``"default"``): n_train and the SGD recipe (linear decay to 0 and
gradient clipping 0.5 always); ``n_test`` test samples per run; ``seeds`` independent runs per
direction (each its own data, initialisation and batch order). ``low``/``high``: the frequency
bands of the claims, max(|k1|, |k2|) <= low and >= high.

Fig. 1: the 16x16 Fourier grid of ``grid`` cells per side, every ``fig1_every``-th cell (1 = full
grid). Figs. 2 and 3: ``fig2_cells`` / ``fig3_cells``, a list of [k1, k2] (None = the Fig. 1
grid). Fig. 2 trains with ``fig2_sigma`` and ``fig2_train`` (n_train, epochs) and counts the
iterations until the loss averaged over 20 mini-batches falls below ``fig2_threshold``. Fig. 6:
``fig6_indices`` NAD indices of the chapter's model, for its secant NADs and its gradient NADs
averaged over chapter 2's ``gradient_points`` evaluation points; ``fig6_models``: further
architectures trained on the authors' published NADs (their curves are drawn in any case).
``converged_k`` / ``converged_overlap``: an estimator counts as converged when the split-half
overlap of its top-k NADs reaches this value. ``chunk``: runs trained together by train_many;
``workers``: processes (1 = in-process).
"""
_LENET = dict(n_train=10000, epochs=20, max_lr=0.5, momentum=0.0, weight_decay=0.0, batch_size=128)
PAPER = dict(grid=16, sigma=3.0, epsilon=1.0, signal="authors", outputs=2, n_test=10000, seeds=3,
             chunk=16, workers=1, low=4, high=8,
             fig1_models=["logreg", "lenet", "vgg11", "resnet18", "densenet121"], fig1_every=1,
             fig2_models=["lenet", "resnet18"], fig2_cells=None, fig2_sigma=0.5, fig2_threshold=0.1,
             fig2_train=dict(n_train=10000, epochs=20),
             fig3_models=["lenet_nopool", "resnet18_nopool"], fig3_cells=None,
             fig6_indices=sorted(set(range(0, 32)) | set(range(32, 1023, 16)) | {1022}),
             fig6_models=["vgg11", "resnet18", "densenet121"],
             converged_k=16, converged_overlap=0.8,
             train={"logreg": _LENET, "lenet": _LENET, "lenet_nopool": _LENET,
                    # not given in the NAD paper: the follow-up's ResNet-18 recipe (max_lr 0.1,
                    # momentum 0.9, wd 1e-5, 30 epochs) for the big networks
                    # trained side by side (BatchNorm and Dropout nets included) with bf16
                    # autocast on a GPU (nadcore.train.train_side_by_side)
                    "default": dict(n_train=10000, epochs=30, max_lr=0.1, momentum=0.9,
                                    weight_decay=1e-5, batch_size=128, trainer="side_by_side",
                                    autocast="bf16")})
# cpu: every LeNet (and LogReg) run gets the paper's 10,000 samples for 8 epochs (632 SGD steps,
# 0.4 of the paper's 1,580; with 4 epochs LeNet's training accuracy stayed near 55% on every
# direction); the grids are coarsened instead of the seeds.
_CPU_LENET = dict(_LENET, epochs=8)
CPU = dict(n_test=2000, chunk=8, workers=2, fig1_models=["logreg", "lenet"], fig1_every=2,
           fig2_models=["lenet"], fig2_cells=[[0, 4], [-4, 0], [4, 4], [12, 12], [-16, 8], [8, -12]],
           fig2_threshold=0.2, fig2_train=dict(n_train=2560, epochs=16),
           fig3_models=["lenet_nopool"], fig3_cells=[[0, 4], [-4, 0], [-16, 8]],
           fig6_indices=[0, 2, 5, 9, 64, 300, 750, 1000], fig6_models=[],
           train={"logreg": _CPU_LENET, "lenet": _CPU_LENET, "lenet_nopool": _CPU_LENET,
                  "default": _CPU_LENET})
SMOKE = dict(n_test=256, seeds=2, chunk=16, workers=1, fig1_every=4,
             fig2_cells=[[0, 0], [-16, 8]], fig2_train=dict(n_train=256, epochs=2),
             fig3_cells=[[0, 0], [-16, 8]], fig6_indices=[0, 1, 800, 1000],
             train={"default": dict(_LENET, n_train=256, epochs=2)})
