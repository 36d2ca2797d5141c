"""Chapter 2, computing NADs (paper Sec. 3, Fig. 5).

Networks per architecture for each estimator (an architecture missing from ``secant_networks``
uses the authors' published NADs in the gallery); ``convergence``: network counts at which the
running estimates are recorded; ``architectures``: the gallery of Fig. 5; ``gradient_points``: evaluation points averaged by the gradient
estimator in the "several points" comparison. LogReg gets the same networks for both
estimators: for a linear model they must agree.
"""
PAPER = dict(architectures=["logreg", "lenet", "vgg11", "resnet18", "densenet121"],
             secant_networks={"logreg": 10000, "lenet": 10000, "vgg11": 10000, "resnet18": 10000,
                              "densenet121": 10000},
             gradient_networks={"logreg": 10000, "lenet": 100000, "vgg11": 10000, "resnet18": 10000,
                                "densenet121": 10000},
             convergence=[625, 1250, 2500, 5000, 10000], gradient_points=8)
CPU = dict(secant_networks={"logreg": 2000, "lenet": 4000},
           gradient_networks={"logreg": 2000, "lenet": 20000, "vgg11": 600, "resnet18": 600,
                              "densenet121": 300},
           convergence=[250, 500, 1000, 2000, 4000], gradient_points=4)
SMOKE = dict(secant_networks={"logreg": 64, "lenet": 48},
             gradient_networks={"logreg": 64, "lenet": 256, "vgg11": 6, "resnet18": 6, "densenet121": 3},
             convergence=[16, 32], gradient_points=2)
