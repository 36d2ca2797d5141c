"""Chapter 7, a NAD atlas (the paper's Sec. 5, "a natural next step": other families of
architectures; NADs as "a signature" of an architecture).

``architectures``: label -> model spec, the paper's five from nadcore's registry and modern
families from timm, built from scratch for 1x32x32 inputs and one output (``nadcore.nets.hub``;
small widths or depths where the full model would not fit the cpu profile; layer-scale gains set
to 1 and zero-initialised heads drawn with std 0.02 where the defaults hide blocks from the input
gradient or make it zero). ``families``: label -> family, for the tables and the generated text
only. ``from_chapter2``: registry names whose gradient NADs are chapter 2's (same seed, its
number of networks on the profile: the book computes them once); ``networks``: random networks
per other architecture for the gradient NADs (``{label: n}`` with a ``"default"``);
``secant_networks``: architectures that also get secant NADs (step 100), where affordable.
``k``: the top-k NAD subspace of the fingerprints and the patch test; ``clusters``: the groups
the fingerprint tree is cut into for the text. ``patch_models``: label -> patch size of the
architectures with a patch embedding (the test of ``nadcore.theory.patches``).

Fig. 6-style run: ``index_models`` (labels of small modern architectures of the atlas, whose
NADs it shares), trained on D(u_i) for ``index_indices`` and on ``index_random`` random
directions (the control), ``seeds`` seeds; the data (``n_train``,
``n_test``, ``sigma``, ``epsilon``, ``signal="paper"``: x = eps y v + noise, the paper's formula)
and the SGD recipe ``index_train``; ``first``: NAD indices below it count as "first NADs";
``chunk`` runs per job, ``workers`` processes.

Fig. 1 predicted from the NADs (:mod:`nadcore.chapters.nad_atlas.prediction`): scored against the
published maps of the paper's five, and against the cells of campaign ``campaign``: the paper's
big networks at the campaign's widths, and the atlas architectures of ``predict_models`` (label ->
their claims' id part) on the cells chosen for them before training.
"""

_PAPER_FIVE = {
    "LogReg": "logreg",
    "LeNet": "lenet",
    "VGG-11": "vgg11",
    "ResNet-18": "resnet18",
    "DenseNet-121": "densenet121",
}
_MODERN = {
    "ViT/4": "timm:vit_tiny_patch16_224?patch_size=4&depth=4",
    "ViT/8": "timm:vit_tiny_patch16_224?patch_size=8&depth=4",
    "MLP-Mixer/4": "timm:mixer_s16_224?patch_size=4&num_blocks=2&embed_dim=32&hub_head_std=0.02",
    "ResMLP/4": "timm:resmlp_12_224?patch_size=4&num_blocks=2&embed_dim=32&hub_head_std=0.02&hub_layer_scale=1.0",
    "ConvNeXt": "timm:convnext_atto?patch_size=2&depths=(2,2,2,2)&dims=(24,48,96,192)&ls_init_value=1.0",
    "ConvMixer/2": "timm:convmixer_768_32?dim=128&depth=8&patch_size=2&kernel_size=7",
    "Swin": (
        "timm:swin_tiny_patch4_window7_224?patch_size=2&window_size=4&embed_dim=48&depths=(2,2,2)&num_heads=(2,4,8)"
    ),
    "EfficientNet-B0": "timm:efficientnet_b0?channel_multiplier=0.5&depth_multiplier=0.5",
    "MobileNetV3-S": "timm:mobilenetv3_small_100",
    "RegNetX-200MF": "timm:regnetx_002?zero_init_last=False",
    "PoolFormer": "timm:poolformer_s12?depths=(2,2,2,2)&dims=(32,64,128,256)&layer_scale_init_values=1.0",
    "MobileViT-XXS": "timm:mobilevit_xxs?zero_init_last=False",
    "PVT-v2": "timm:pvt_v2_b0?depths=(1,1,1,1)",
}
FAMILIES = {
    "LogReg": "linear",
    "LeNet": "CNN (paper)",
    "VGG-11": "CNN (paper)",
    "ResNet-18": "CNN (paper)",
    "DenseNet-121": "CNN (paper)",
    "ViT/4": "transformer",
    "ViT/8": "transformer",
    "MLP-Mixer/4": "MLP",
    "ResMLP/4": "MLP",
    "ConvNeXt": "modern CNN",
    "ConvMixer/2": "modern CNN",
    "Swin": "hierarchical transformer",
    "EfficientNet-B0": "mobile CNN",
    "MobileNetV3-S": "mobile CNN",
    "RegNetX-200MF": "modern CNN",
    "PoolFormer": "MetaFormer",
    "MobileViT-XXS": "hybrid",
    "PVT-v2": "hierarchical transformer",
}
#: the data the chapter reads (checked by the build before the first chapter runs)
DATA = ("published NADs",)

PAPER = dict(
    architectures={**_PAPER_FIVE, **_MODERN},
    families=FAMILIES,
    from_chapter2=list(_PAPER_FIVE.values()),
    # label -> its claims' id part: the atlas architectures whose predicted Fig. 1 the
    # campaign tests on trained cells (nadcore.chapters.nad_atlas.prediction.ATLAS_CELLS)
    predict_models={"MLP-Mixer/4": "mixer", "ResMLP/4": "resmlp", "ViT/8": "vit8", "ConvNeXt": "convnext"},
    networks={"default": 10000},
    secant_networks={"LogReg": 10000, "LeNet": 10000},
    k=16,
    clusters=5,
    patch_models={"ViT/4": 4, "ViT/8": 8, "MLP-Mixer/4": 4, "ResMLP/4": 4},
    index_models={"MLP-Mixer/4": "mixer", "ResMLP/4": "resmlp"},  # label -> its claims' id part
    index_indices=sorted(set(range(0, 16)) | set(range(16, 1024, 32)) | {1023}),
    index_random=32,
    first=4,
    seeds=3,
    n_train=10000,
    n_test=10000,
    sigma=3.0,
    epsilon=1.0,
    signal="paper",
    index_train=dict(epochs=20, max_lr=0.05, momentum=0.9, weight_decay=0.0, batch_size=128),
    chunk=8,
    workers=1,
    campaign="cpu",
)
#: the cpu profile's 14 architectures (its budget is minutes on 2 cores: every estimate also costs a
#: few seconds of 1024 x 1024 linear algebra); the paper profile takes all 18
_CPU_ARCHS = [
    "LogReg",
    "LeNet",
    "VGG-11",
    "ResNet-18",
    "DenseNet-121",
    "ViT/4",
    "ViT/8",
    "MLP-Mixer/4",
    "ResMLP/4",
    "ConvNeXt",
    "ConvMixer/2",
    "Swin",
    "EfficientNet-B0",
    "MobileNetV3-S",
]
CPU = dict(
    architectures={k: {**_PAPER_FIVE, **_MODERN}[k] for k in _CPU_ARCHS},
    networks={"default": 256},
    secant_networks={"LeNet": 256},
    index_indices=[0, 1, 2, 3, 4, 6, 8, 12, 16, 32, 64, 128, 256, 512, 768, 1023],
    index_random=8,
    n_train=768,
    n_test=1000,
    sigma=1.0,
    index_train=dict(epochs=4, max_lr=0.1, momentum=0.9, weight_decay=0.0, batch_size=128),
    workers=2,
)
SMOKE = dict(
    networks={"default": 16},
    secant_networks={"LeNet": 16},
    k=4,
    clusters=3,
    architectures={"LeNet": "lenet", **{k: _MODERN[k] for k in ("ViT/4", "ViT/8", "MLP-Mixer/4", "ResMLP/4")}},
    index_indices=[0, 1, 500, 1000],
    index_random=2,
    seeds=2,
    n_train=256,
    n_test=256,
    index_train=dict(epochs=1, max_lr=0.05, momentum=0.9, weight_decay=0.0, batch_size=128),
    workers=1,
)
