"""Chapter 4, CIFAR-10 poisoning and flipping (paper Sec. 4.2, Figs. 7 and 8).

``eps`` on the [0, 1] pixel scale; ``indices``: carrier at NADs (i, i+1); ``epochs``: poisoning
runs; ``flip_epochs``: the original/flipped pairs (longer, so both come close to fitting the
training set); ``flip_models``: trained on both representations besides the chapter's model
(mlp/logreg: a control with the model's NADs); ``max_train``/``max_test``: None = every image
found; ``nad_networks``: secant networks for an architecture chapter 2 does not cover and the
authors did not publish; ``seeds``: independent runs per configuration.
"""
PAPER = dict(eps=0.05, indices=[0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 384, 512, 768, 1022], epochs=50,
             flip_epochs=50, max_lr=0.21, momentum=0.9, weight_decay=5e-4, batch_size=128,
             max_train=None, max_test=None, flip_models=["resnet18", "vgg11", "densenet121", "lenet", "mlp"],
             nad_networks=10000, seeds=3)
# cpu: LeNet on the subset; no weight decay and max_lr 0.1 so that it fits the subset quickly
CPU = dict(indices=[0, 1, 2, 4, 8, 16, 32, 96, 256, 512, 1022], epochs=20, flip_epochs=60,
           max_lr=0.1, weight_decay=0.0, flip_models=["mlp"], nad_networks=1000)
SMOKE = dict(indices=[0, 1022], epochs=3, flip_epochs=3, max_train=1000, max_test=500, flip_models=[],
             nad_networks=32, seeds=2)
