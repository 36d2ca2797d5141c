"""Chapter 7, a NAD atlas: predictions beyond the paper, with their criteria fixed before the run.

The paper's Sec. 5 proposes NADs as "a signature" of an architecture and leaves "other families
of architectures like ... transformers" for later. These claims are this book's predictions for
them (kind ``extension``):

* ``atlas-patch-*``: chapter 1's theory of linear pooling applied to patch embeddings
  (:mod:`nadcore.theory.patches`): a network that treats its tokens alike sees only the pixel
  frequencies a stride-p embedding folds onto the token grid's zero frequency. "Where the theory
  says" is read as: most (at least half) of the Fourier energy of the top-k NADs on that set,
  which holds p^2 of the 1024 frequencies (1.6% for p = 4, 6.25% for p = 8). Changing the patch
  size must move the energy: ViT/8 puts more of it than ViT/4 on the frequencies that p = 8 folds
  onto zero and p = 4 does not (the multiples of 4 that are not multiples of 8).
* ``atlas-signature``: NADs tell architectures apart: for most architectures (at least 80%) the
  nearest other architecture is farther than the architecture's own two half estimates are from
  each other.
* ``atlas-index-*``: the paper's Fig. 6 on small modern architectures: the larger the eigenvalue
  of a NAD, the better the network learns D(u_i) (a positive rank correlation over the trained
  indices), and the first NADs are learned better than random directions (the control: a NAD's
  index should matter, not merely that it is a direction).
"""

from nadcore.book.evidence import ClaimSpec

_SRC = "Sec. 5 (future work: other families of architectures, NADs as a signature)"
_PATCH = (
    "chapter 1's theory (paper eq. (1), Theorem 1) applied to a stride-{patch} patch embedding: "
    "the top-{k} NADs of {arch} put most of their Fourier energy on the {alias_count} pixel "
    "frequencies folded onto the token grid's zero frequency"
)

CLAIMS = [
    ClaimSpec(
        id="atlas-patch-vit4",
        kind="extension",
        source=_SRC,
        statement=_PATCH.replace("{arch}", "ViT/4").replace("{patch}", "4"),
        quantity="fraction of the top-{k} NAD energy of ViT/4 on the p=4 alias set",
        op=">=",
        threshold=0.5,
        bounds=(0.0, 1.0),
        trained=False,
    ),
    ClaimSpec(
        id="atlas-patch-vit8",
        kind="extension",
        source=_SRC,
        statement=_PATCH.replace("{arch}", "ViT/8").replace("{patch}", "8"),
        quantity="fraction of the top-{k} NAD energy of ViT/8 on the p=8 alias set",
        op=">=",
        threshold=0.5,
        bounds=(0.0, 1.0),
        trained=False,
    ),
    ClaimSpec(
        id="atlas-patch-mixer",
        kind="extension",
        source=_SRC,
        statement=_PATCH.replace("{arch}", "MLP-Mixer/4").replace("{patch}", "4"),
        quantity="fraction of the top-{k} NAD energy of MLP-Mixer/4 on the p=4 alias set",
        op=">=",
        threshold=0.5,
        bounds=(0.0, 1.0),
        trained=False,
    ),
    ClaimSpec(
        id="atlas-patch-size-moves",
        kind="extension",
        source=_SRC,
        statement="Changing the patch size moves the NAD energy as the theory says: ViT/8 puts more "
        "of its top-{k} NAD energy than ViT/4 on the frequencies that a stride-8 embedding "
        "folds onto the token grid's zero frequency and a stride-4 one does not",
        quantity="ViT/8 minus ViT/4 energy fraction on the p=8-but-not-p=4 alias set",
        op=">",
        threshold=0.0,
        bounds=(-1.0, 1.0),
        trained=False,
    ),
    ClaimSpec(
        id="atlas-signature",
        kind="extension",
        source=_SRC,
        statement="NADs are a signature of an architecture: most of the {n_arch} architectures are "
        "farther (top-{k} subspace distance) from every other one than their own two "
        "half estimates are from each other",
        quantity="fraction of architectures farther from all others than from themselves",
        op=">=",
        threshold=0.8,
        bounds=(0.0, 1.0),
        trained=False,
    ),
    ClaimSpec(
        id="atlas-index-mixer-ranks",
        kind="extension",
        source="Sec. 4.1, Fig. 6, on a modern architecture",
        statement="Fig. 6 for MLP-Mixer/4: the larger the eigenvalue of a NAD, the higher the test "
        "accuracy on D(u_i) ({n_idx} NAD indices, {n_seeds} seeds)",
        quantity="Spearman correlation of eigenvalue and test accuracy",
        op=">",
        threshold=0.0,
        bounds=(-1.0, 1.0),
    ),
    ClaimSpec(
        id="atlas-index-mixer-vs-random",
        kind="extension",
        source="Sec. 4.1, Fig. 6, on a modern architecture",
        statement="MLP-Mixer/4 learns D(u_i) on its first {first} NADs better than on random "
        "directions (the control, {n_random} per seed)",
        quantity="accuracy on the first NADs minus accuracy on random directions",
        op=">",
        threshold=0.0,
        bounds=(-1.0, 1.0),
    ),
    ClaimSpec(
        id="atlas-index-resmlp-ranks",
        kind="extension",
        source="Sec. 4.1, Fig. 6, on a modern architecture",
        statement="Fig. 6 for ResMLP/4: the larger the eigenvalue of a NAD, the higher the test "
        "accuracy on D(u_i) ({n_idx} NAD indices, {n_seeds} seeds)",
        quantity="Spearman correlation of eigenvalue and test accuracy",
        op=">",
        threshold=0.0,
        bounds=(-1.0, 1.0),
    ),
    ClaimSpec(
        id="atlas-index-resmlp-vs-random",
        kind="extension",
        source="Sec. 4.1, Fig. 6, on a modern architecture",
        statement="ResMLP/4 learns D(u_i) on its first {first} NADs better than on random "
        "directions (the control, {n_random} per seed)",
        quantity="accuracy on the first NADs minus accuracy on random directions",
        op=">",
        threshold=0.0,
        bounds=(-1.0, 1.0),
    ),
]

# ------------------------------------------------------------------ Fig. 1 predicted from the NADs
# The paper's thesis as a tool (nadcore.nads.predict): a direction's predicted learnability is the
# energy of the gradient covariance along it, relative to an average direction; no parameter is
# fitted. What a useful predictor needs, fixed here before the book's own NADs and the atlas's
# trained cells were scored: an AUC of at least 0.9 between the learnable cells (accuracy >= 0.9)
# and the chance cells (<= 0.6), and a rank correlation of at least 0.5 with the accuracy over the
# distinct cells of the map. (The AUC bound was set with the tool; the rank bound after a first
# look at the scores on the authors' NADs.)
USEFUL_AUC, USEFUL_RANK = 0.9, 0.5
_PRED_SRC = "Secs. 3-4 (the thesis: a network learns easily the directions its NADs favour), as a predictor"
_NETS = {
    "logreg": "LogReg",
    "lenet": "LeNet",
    "resnet18": "ResNet-18",
    "vgg11": "VGG-11",
    "densenet121": "DenseNet-121",
}
#: the NADs behind each set of predictions and the map they are scored against
_PRED_SOURCES = {
    "": ("the authors' published NADs", "the published Fig. 1 map"),
    "own-": (
        "this book's {estimator} NADs of the full-width network ({networks_own} networks)",
        "the published Fig. 1 map",
    ),
    "narrow-": (
        "this book's exact-gradient NADs of the network at the campaign's width",
        "the campaign's Fig. 1 cells of the same narrow network ({cells} distinct cells)",
    ),
}
_AUC_READING = (
    "'predicts what it can learn': a learnable cell (accuracy >= 0.9) scores above a chance cell "
    "(<= 0.6) in at least 90% of the pairs, the cells in between left out"
)
_RANK_READING = (
    "'orders the directions': a rank correlation of at least 0.5 over the map's distinct cells "
    "(144 on the published map: it mirrors k2 -> -k2)"
)


def _prediction_claims(prefix: str, net: str, what: tuple, criteria=("auc", "rank"), name: str = "") -> list:
    nads, against = what
    name = name or _NETS[net]
    out = []
    if "auc" in criteria:
        out.append(
            ClaimSpec(
                id=f"predict-{prefix}{net}-auc",
                kind="extension",
                source=_PRED_SRC,
                statement=f"{name}'s Fig. 1 predicted from {nads} separates the directions it learns from those it "
                f"does not, on {against}",
                quantity="AUC of the predicted score, learnable (>= 0.9) against chance (<= 0.6) cells",
                op=">=",
                threshold=USEFUL_AUC,
                bounds=(0.0, 1.0),
                trained=prefix == "narrow-",
                tolerance=_AUC_READING,
            )
        )
    if "rank" in criteria:
        out.append(
            ClaimSpec(
                id=f"predict-{prefix}{net}-rank",
                kind="extension",
                source=_PRED_SRC,
                statement=f"{name}'s Fig. 1 predicted from {nads} orders the directions as the network's accuracy "
                f"does, on {against}",
                quantity="Spearman correlation of the predicted score and the test accuracy",
                op=">=",
                threshold=USEFUL_RANK,
                bounds=(-1.0, 1.0),
                trained=prefix == "narrow-",
                tolerance=_RANK_READING,
            )
        )
    return out


for _prefix in ("", "own-"):
    CLAIMS.append(
        ClaimSpec(
            id=f"predict-{_prefix}logreg-flat",
            kind="extension",
            source=_PRED_SRC,
            statement=f"LogReg learns every direction of Fig. 1, and its map predicted from "
            f"{_PRED_SOURCES[_prefix][0]} favours none: every direction within a factor of 2 of an "
            "average one",
            quantity="largest over smallest predicted score on the grid",
            op="<=",
            threshold=2.0,
            bounds=(1.0, float("inf")),
            trained=False,
            tolerance="'favours none': a factor of 2 between the most and the least favoured direction, where the "
            "big networks' maps span factors of 100 to 100,000",
        )
    )
    CLAIMS += _prediction_claims(_prefix, "lenet", _PRED_SOURCES[_prefix], ("rank",))  # no cell >= 0.9
    for _net in ("resnet18", "vgg11", "densenet121"):
        CLAIMS += _prediction_claims(_prefix, _net, _PRED_SOURCES[_prefix])
for _net in ("resnet18", "vgg11", "densenet121"):
    CLAIMS += _prediction_claims("narrow-", _net, _PRED_SOURCES["narrow-"])

#: the atlas architectures trained on their cells (settings' ``predict_models``: label -> id part)
_ATLAS_WHAT = (
    "its exact-gradient NADs ({nad_networks} networks)",
    "{cells} cells chosen before training to span the predicted range, trained with the authors' "
    "recipe (campaign {campaign})",
)
for _label, _slug in (("MLP-Mixer/4", "mixer"), ("ResMLP/4", "resmlp"), ("ViT/8", "vit8"), ("ConvNeXt", "convnext")):
    CLAIMS += _prediction_claims("atlas-", _slug, _ATLAS_WHAT, name=_label)
