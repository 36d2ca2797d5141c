"""Chapter 4, CIFAR-10 poisoning and flipping (paper Sec. 4.2, Figs. 7 and 8).

``eps``: the carrier's value on the [0, 1] pixel scale; ``indices``: carrier at NADs (i, i+1);
``early`` / ``late``: the indices (among ``indices``) whose mean the Fig. 7 claims compare with
the clean baseline (``late``: the last NADs, the paper's "end of the sequence"); ``epochs``: the
poisoning runs and their clean baseline; ``flip_epochs``: the original/flipped pairs of Fig. 8
(long enough for both to fit the training set); ``max_lr``, ``momentum``, ``weight_decay``,
``batch_size``: SGD with the authors' linear decay and clipping;
``flip_models``: trained on both representations besides the chapter's model (``mlp`` and
``logreg`` are controls flipped with the model's NADs, CNNs use their own); ``fit``: the final
training accuracy that counts as having fitted the training set; ``max_train``/``max_test``:
None = every image found; ``seeds``: independent runs (initialisation, batch order) per
configuration, paired across versions; ``flip_seeds``: the same for the CNNs of Fig. 8 (each
seed two runs, original and flipped); ``control_seeds``: the same for the (cheap) fully
connected controls, whose paired differences are noisier; ``workers``: processes (1 = in-process);
``campaign``: the committed campaign whose Fig. 7 runs of the paper's network (ResNet-18 at the
campaign's width, on the settings of its stage) the chapter draws and scores beside its own.
"""

#: the data the chapter reads (checked by the build before the first chapter runs)
DATA = ("published NADs", "CIFAR-10")

PAPER = dict(
    eps=0.05,
    indices=[0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 384, 512, 768, 1000, 1010, 1022],
    early=[0, 1, 2],
    late=[1000, 1010, 1022],
    epochs=50,
    flip_epochs=50,
    max_lr=0.21,
    momentum=0.9,
    weight_decay=5e-4,
    batch_size=128,
    max_train=None,
    max_test=None,
    flip_models=["resnet18", "vgg11", "densenet121", "lenet", "mlp"],
    fit=0.98,
    seeds=3,
    flip_seeds=3,
    control_seeds=6,
    workers=1,
    campaign="cpu",
)
# cpu: LeNet on the 5,170-image subset, no weight decay, max_lr 0.2: the flipped images are fitted
# within the paper's 50 epochs; the poisoning runs stop at 20 (they need not fit, see the chapter).
# Fig. 8 takes five seeds: its gap's interval over three clears the 5-point bound by less than
# what another CPU's rounding moves an interval of runs (two more pairs of LeNet runs)
CPU = dict(
    flip_seeds=5,
    indices=[0, 1, 2, 8, 32, 128, 1000, 1022],
    late=[1000, 1022],
    epochs=20,
    max_lr=0.2,
    weight_decay=0.0,
    flip_models=["mlp"],
    workers=2,
)
SMOKE = dict(
    indices=[0, 1, 1022],
    early=[0, 1],
    late=[1022],
    epochs=10,
    flip_epochs=10,
    max_train=500,
    max_test=500,
    seeds=2,
    flip_seeds=2,
    control_seeds=2,
)
