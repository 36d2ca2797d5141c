"""Claims of the results run at the paper's scale on a GPU (``results/paper``, the ``paper``
profile's rows of the scorecard), registered before any such run, by chapter.

They test the statements that only the big networks can test (issue 27): the same quantities
and criteria as the cpu claims of chapter 3 where those exist, one claim per architecture
(ids end in ``-<arch>-paper``). The quantities come from :mod:`nadcore.book.paper_results`.
"""
from __future__ import annotations

from nadcore.book.evidence import ClaimSpec

__all__ = ["CLAIMS", "ARCHS", "claim_id"]

#: the architectures with paper-scale claims (LeNet and LogReg are trained by the cpu build)
ARCHS = ("resnet18", "vgg11", "densenet121", "lenet", "logreg")


def claim_id(base: str, arch: str) -> str:
    return f"{base}-{arch}-paper"


def _fig1(arch: str) -> list[ClaimSpec]:
    out = [ClaimSpec(
        claim_id("fig1-frequency-gap", arch), "paper", "Sec. 2, Fig. 1",
        f"{arch} generalises on low-frequency directions and not on high-frequency ones, although "
        "every D(v) is linearly separable (paper scale).",
        f"mean test accuracy of {arch} on max(|k1|,|k2|) <= {{low}} minus on >= {{high}}", ">=", 0.05,
        bounds=(-1.0, 1.0))]
    if arch != "lenet":
        out.append(ClaimSpec(
            claim_id("fig1-train-fit", arch), "paper", "Sec. 2, Fig. 1",
            f"All networks except LeNet reach nearly 100% train accuracy on every D(v): {arch} "
            "(paper scale).",
            f"mean training accuracy of {arch} over the Fig. 1 cells (last epoch)", ">=", 0.95,
            bounds=(0.0, 1.0), paper_value=1.0,
            paper_value_source="Sec. 2: 'all networks (except LeNet) achieve nearly 100% train accuracy'",
            tolerance="'nearly 100%' read as at least 95%"))
    return out


def _fig6(arch: str) -> list[ClaimSpec]:
    return [ClaimSpec(
        claim_id("fig6-first-vs-beyond", arch), "paper", "Sec. 4.1, Fig. 6",
        f"{arch} learns D(u_i) on its first (secant) NADs and not past index 700 (paper scale).",
        f"mean test accuracy on secant NADs 0-9 minus on NADs past 700 ({arch})", ">=", 0.2,
        bounds=(-1.0, 1.0), paper_value="{published}",
        paper_value_source="the authors' published Fig. 6 data, same indices"),
        ClaimSpec(
        claim_id("fig6-eigenvalue-ranks-accuracy", arch), "paper", "Sec. 4.1, Fig. 6",
        f"The larger the eigenvalue of a (secant) NAD, the better {arch} learns D(u_i) (paper scale).",
        "Spearman(eigenvalue, test accuracy) over the trained secant NADs", ">=", 0.5,
        bounds=(-1.0, 1.0), paper_value="{published}",
        paper_value_source="the authors' published Fig. 6 data, same indices")]


CLAIMS = {"03_linear_separability": [s for a in ARCHS for s in _fig1(a)]
          + [s for a in ARCHS if a not in ("logreg",) for s in _fig6(a)]}
