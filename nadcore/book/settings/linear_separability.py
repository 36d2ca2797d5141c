"""Chapter 3, linear separability (paper Sec. 2 and 4.1, Figs. 1, 2, 3 and 6).

D(v) with ``sigma``, ``epsilon`` and the ``signal`` convention ("authors": exactly balanced
classes, x = +-(eps/2) v + noise, as their code; "paper": x = eps y v + noise, as their text);
``outputs`` 2 = two logits and cross-entropy (the authors' code), 1 = one logit and the logistic
loss. ``train[arch]`` (or ``"default"``): n_train and the SGD recipe (linear decay to 0 and
gradient clipping 0.5 always); ``n_test`` test samples per run; ``seeds`` independent runs per
direction. Grids: the 16x16 Fourier grid of Fig. 1, every ``*_every``-th cell (1 = full grid).
``chunk``: runs trained together by train_many; ``workers``: processes (1 = in-process).
``fig6_indices``: NAD indices for Fig. 6 (secant and gradient NADs of chapter 2 on the same
profile).
"""
_LENET = dict(n_train=10000, epochs=20, max_lr=0.5, momentum=0.0, weight_decay=0.0, batch_size=128)
PAPER = dict(grid=16, sigma=3.0, epsilon=1.0, signal="authors", outputs=2, n_test=10000, seeds=3,
             chunk=16, workers=1,
             fig1_models=["logreg", "lenet", "vgg11", "resnet18", "densenet121"], fig1_every=1,
             fig3_models=["lenet_nopool", "resnet18_nopool"], fig3_every=1,
             fig2_models=["lenet", "resnet18"], fig2_every=1, fig2_sigma=0.5, fig2_threshold=0.1,
             fig2_train=dict(n_train=10000, epochs=20),
             fig6_indices=sorted(set(range(0, 32)) | set(range(32, 1024, 16)) | {1023}),
             train={"logreg": _LENET, "lenet": _LENET, "lenet_nopool": _LENET,
                    # not given in the NAD paper: the follow-up's ResNet-18 recipe (max_lr 0.1,
                    # momentum 0.9, wd 1e-5, 30 epochs) for the big networks
                    "default": dict(n_train=10000, epochs=30, max_lr=0.1, momentum=0.9,
                                    weight_decay=1e-5, batch_size=128)})
CPU = dict(n_test=2000, chunk=8, workers=2, fig1_models=["logreg", "lenet"],
           fig3_models=["lenet_nopool"], fig3_every=2, fig2_models=["lenet"], fig2_every=2,
           fig2_threshold=0.2, fig2_train=dict(n_train=1000, epochs=16),
           fig6_indices=[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256,
                         384, 512, 640, 704, 768, 832, 896, 960, 1023],
           train={"logreg": dict(_LENET, n_train=4000, epochs=10),
                  "lenet_nopool": dict(_LENET, n_train=2000, epochs=5),
                  "default": dict(_LENET, n_train=3000, epochs=8)})
SMOKE = dict(n_test=256, seeds=2, chunk=16, workers=1, fig1_every=4, fig3_every=8, fig2_every=8,
             fig2_train=dict(n_train=256, epochs=2), fig6_indices=[0, 1, 2, 100, 800, 1000],
             train={"logreg": dict(_LENET, n_train=256, epochs=2),
                    "default": dict(_LENET, n_train=256, epochs=2)})
