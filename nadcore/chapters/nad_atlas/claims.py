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
_PATCH = ("chapter 1's theory (paper eq. (1), Theorem 1) applied to a stride-{patch} patch embedding: "
          "the top-{k} NADs of {arch} put most of their Fourier energy on the {alias_count} pixel "
          "frequencies folded onto the token grid's zero frequency")

CLAIMS = [
    ClaimSpec(id="atlas-patch-vit4", kind="extension", source=_SRC,
              statement=_PATCH.replace("{arch}", "ViT/4").replace("{patch}", "4"),
              quantity="fraction of the top-{k} NAD energy of ViT/4 on the p=4 alias set", op=">=",
              threshold=0.5, bounds=(0.0, 1.0), trained=False),
    ClaimSpec(id="atlas-patch-vit8", kind="extension", source=_SRC,
              statement=_PATCH.replace("{arch}", "ViT/8").replace("{patch}", "8"),
              quantity="fraction of the top-{k} NAD energy of ViT/8 on the p=8 alias set", op=">=",
              threshold=0.5, bounds=(0.0, 1.0), trained=False),
    ClaimSpec(id="atlas-patch-mixer", kind="extension", source=_SRC,
              statement=_PATCH.replace("{arch}", "MLP-Mixer/4").replace("{patch}", "4"),
              quantity="fraction of the top-{k} NAD energy of MLP-Mixer/4 on the p=4 alias set", op=">=",
              threshold=0.5, bounds=(0.0, 1.0), trained=False),
    ClaimSpec(id="atlas-patch-size-moves", kind="extension", source=_SRC,
              statement="Changing the patch size moves the NAD energy as the theory says: ViT/8 puts more "
                        "of its top-{k} NAD energy than ViT/4 on the frequencies that a stride-8 embedding "
                        "folds onto the token grid's zero frequency and a stride-4 one does not",
              quantity="ViT/8 minus ViT/4 energy fraction on the p=8-but-not-p=4 alias set", op=">",
              threshold=0.0, bounds=(-1.0, 1.0), trained=False),
    ClaimSpec(id="atlas-signature", kind="extension", source=_SRC,
              statement="NADs are a signature of an architecture: most of the {n_arch} architectures are "
                        "farther (top-{k} subspace distance) from every other one than their own two "
                        "half estimates are from each other",
              quantity="fraction of architectures farther from all others than from themselves", op=">=",
              threshold=0.8, bounds=(0.0, 1.0), trained=False),
    ClaimSpec(id="atlas-index-mixer-ranks", kind="extension", source="Sec. 4.1, Fig. 6, on a modern architecture",
              statement="Fig. 6 for MLP-Mixer/4: the larger the eigenvalue of a NAD, the higher the test "
                        "accuracy on D(u_i) ({n_idx} NAD indices, {n_seeds} seeds)",
              quantity="Spearman correlation of eigenvalue and test accuracy", op=">", threshold=0.0,
              bounds=(-1.0, 1.0)),
    ClaimSpec(id="atlas-index-mixer-vs-random", kind="extension", source="Sec. 4.1, Fig. 6, on a modern architecture",
              statement="MLP-Mixer/4 learns D(u_i) on its first {first} NADs better than on random "
                        "directions (the control, {n_random} per seed)",
              quantity="accuracy on the first NADs minus accuracy on random directions", op=">",
              threshold=0.0, bounds=(-1.0, 1.0)),
    ClaimSpec(id="atlas-index-resmlp-ranks", kind="extension", source="Sec. 4.1, Fig. 6, on a modern architecture",
              statement="Fig. 6 for ResMLP/4: the larger the eigenvalue of a NAD, the higher the test "
                        "accuracy on D(u_i) ({n_idx} NAD indices, {n_seeds} seeds)",
              quantity="Spearman correlation of eigenvalue and test accuracy", op=">", threshold=0.0,
              bounds=(-1.0, 1.0)),
    ClaimSpec(id="atlas-index-resmlp-vs-random", kind="extension", source="Sec. 4.1, Fig. 6, on a modern architecture",
              statement="ResMLP/4 learns D(u_i) on its first {first} NADs better than on random "
                        "directions (the control, {n_random} per seed)",
              quantity="accuracy on the first NADs minus accuracy on random directions", op=">",
              threshold=0.0, bounds=(-1.0, 1.0)),
]
