"""Chapter 2, computing NADs (paper Sec. 3, Fig. 5).

Networks per architecture for each estimator (an architecture missing from ``secant_networks`` uses
the authors' published NADs in the gallery); ``convergence``: network counts at which the running
estimates are recorded; ``architectures``: the gallery of Fig. 5; ``width_study``: per big network,
the reduced widths (DenseNet-121: growth rates) whose gradient NADs (``gradient_networks`` of the
full network, the same seed) are compared with the full network's, beside a second full-width
estimate (seed + 1) and the published NADs, at top ``width_k``; ``gradient_points``: evaluation
points averaged by the gradient estimator in the "several points" comparison. LogReg gets the same
networks for both estimators: for a linear model they must agree. ``secant_precision``: the
arithmetic of an architecture's secant (:func:`nadcore.kernels.precision.precision_mode`; "tf32" and
"bf16" are for a GPU, where they run on the tensor cores; "bf16" is slower than float32 on a CPU);
chapter 2 checks any other than float32 against float32 on the first ``precision_check_networks``
networks. On the paper profile: bf16 for ResNet-18 (its NADs keep a top-16 overlap of 0.9998 with
float32's), TF32 for VGG-11 and DenseNet-121 (bf16 moves DenseNet-121's to 0.66), as measured by
``python benchmarks/bench_gpu.py`` on an H100 (benchmarks/README.md, "On a GPU").
``volume_networks``: the random networks, beyond those of the model's gradient estimate, whose
dipole scores along its NADs test eq. (6).
"""

#: the data the chapter reads (checked by the build before the first chapter runs)
DATA = ("published NADs",)

PAPER = dict(
    architectures=["logreg", "lenet", "vgg11", "resnet18", "densenet121"],
    secant_networks={"logreg": 10000, "lenet": 10000, "vgg11": 10000, "resnet18": 10000, "densenet121": 10000},
    gradient_networks={"logreg": 10000, "lenet": 100000, "vgg11": 10000, "resnet18": 10000, "densenet121": 10000},
    convergence=[625, 1250, 2500, 5000, 10000],
    gradient_points=8,
    secant_precision={"vgg11": "tf32", "resnet18": "bf16", "densenet121": "tf32"},
    precision_check_networks=256,
    volume_networks=10000,
    width_study={"resnet18": [8, 16, 32], "vgg11": [8, 16, 32], "densenet121": [8, 16]},
    width_k=16,
)
CPU = dict(
    secant_networks={"logreg": 2000, "lenet": 4000},
    gradient_networks={"logreg": 2000, "lenet": 20000, "vgg11": 600, "resnet18": 600, "densenet121": 300},
    convergence=[250, 500, 1000, 2000, 4000],
    gradient_points=4,
    secant_precision={},
    volume_networks=4000,
)
SMOKE = dict(
    secant_networks={"logreg": 64, "lenet": 48},
    gradient_networks={"logreg": 64, "lenet": 256, "vgg11": 6, "resnet18": 6, "densenet121": 3},
    convergence=[16, 32],
    gradient_points=2,
    # exercises chapter 2's precision check (on a CPU tf32 is IEEE float32: same numbers)
    secant_precision={"lenet": "tf32"},
    precision_check_networks=16,
    volume_networks=64,
)
