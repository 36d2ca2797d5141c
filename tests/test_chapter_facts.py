"""Facts about the chapters' smoke runs that must hold whatever the random draws: the claims and
figure data they write, the scorecard built from them, and results that are exact (theory checked
against closed forms) and therefore reproduced even on the smoke profile.

The chapters run once per session (tests/conftest.py's papermill reference runs, shared with the
nbval items); these tests read what those runs wrote beside the executed notebooks.
"""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

import pytest
from reference_outputs import differences

from nadcore.book.evidence import CLAIM_KEYS, VERDICTS

REPO = Path(__file__).resolve().parents[1]
CHAPTERS = sorted(p.stem for p in (REPO / "chapters").glob("[0-9][0-9]_*.py"))
DOWNLOAD = re.compile(r"\{download\}`data <data/([^/]+)/([^>]+\.csv)>`")

#: claims that hold at any scale: exact computations, Theorem 1 against Monte Carlo (a z-score),
#: and LogReg's secant NADs equal to its gradient NADs (a linear model)
EXACT = {
    "01_pooling": ["thm1-blind", "thm1-anisotropic", "thm1-monte-carlo", "lemma1-hessian"],
    "02_nads": ["logreg-secant-equals-gradient"],
    "06_open_questions": ["oq5-eq4-eq5-exact"],
}
#: columns a reader's script may rely on
COLUMNS = {
    ("03_linear_separability", "fig1"): {"model", "k1", "k2", "seed", "test_acc", "train_acc"},
    ("04_cifar10", "fig8"): {"model", "representation", "seed", "train_acc", "test_acc"},
    ("06_open_questions", "fig1_maps"): {"variant", "seed", "k1", "k2", "test_acc", "train_acc"},
    ("07_nad_atlas", "fingerprints"): {"a", "b", "k", "overlap", "distance", "family_a", "family_b"},
    ("07_nad_atlas", "architectures"): {"architecture", "family", "spec", "parameters", "networks", "seconds"},
}


def _run(smoke, stem):
    ref = smoke.reference(REPO / "chapters" / f"{stem}.py")
    if ref.notebook is None:
        pytest.fail(f"{stem} failed on the smoke profile: {ref.error}")
    return ref.notebook


def _claims(smoke, stem):
    _run(smoke, stem)
    path = smoke.executed / "claims" / f"{stem}.json"
    assert path.exists(), f"{stem} wrote no claims file ({path}): every chapter records its claims"
    return json.loads(path.read_text())["claims"]


@pytest.mark.parametrize("stem", CHAPTERS)
def test_claims_are_complete_and_shown_on_the_page(smoke, stem):
    nb = json.loads(Path(_run(smoke, stem)).read_text())
    shown = "".join(
        "".join(o.get("data", {}).get("text/markdown", ""))
        for c in nb["cells"]
        if c["cell_type"] == "code"
        for o in c.get("outputs", [])
    )
    for c in _claims(smoke, stem):
        assert set(c) >= set(CLAIM_KEYS), f"{c['id']} lacks {set(CLAIM_KEYS) - set(c)}"
        assert c["chapter"] == stem and c["verdict"] in VERDICTS
        assert c["criterion"] and c["paper"], c["id"]
        if c["value"] is not None and c["ci_low"] is not None and c["ci_high"] is not None:
            assert c["ci_low"] <= c["value"] <= c["ci_high"], c["id"]
        assert f"(claim-{c['id']})=" in shown, f"{c['id']} has no label on the page"


@pytest.mark.parametrize("stem", CHAPTERS)
def test_the_reference_run_prints_the_committed_references(smoke, stem):
    """The papermill run computed every result from scratch (a fresh cache): its checked cells
    print what the committed references say (within the tolerance of tests/reference_outputs.py).
    The nbval items then re-run the chapter cell by cell from the same cache."""
    import nbformat

    nb = nbformat.read(str(_run(smoke, stem)), as_version=4)
    assert differences(stem, nb) == []


@pytest.mark.parametrize("stem", ["04_cifar10", "05_underspecification", "06_open_questions"])
def test_rows_trained_on_fewer_cifar10_images_than_the_papers_say_so(smoke, stem):
    """The smoke profile caps CIFAR-10 (max_train): every row whose runs trained on it names its
    images against the papers' 50,000 and why, beside its SGD steps; a campaign's rows, trained
    on the whole subset, say that."""
    on_cifar = [
        c
        for c in _claims(smoke, stem)
        if c["kind"] in ("paper", "follow-up", "extension") and any("training samples" in r for r in c["reduced"])
    ]
    assert on_cifar, f"{stem}: no row says it trained on fewer CIFAR-10 images than the papers"
    for c in on_cifar:
        phrase = next(r for r in c["reduced"] if "training samples" in r)
        why = "all of the CIFAR-10 subset" if c["profile"].startswith("campaign") else "the profile's max_train"
        assert f"(paper 50,000): {why}" in phrase, (c["id"], phrase)


@pytest.mark.parametrize("stem", sorted(EXACT))
def test_exact_claims_reproduce_even_on_the_smoke_profile(smoke, stem):
    verdicts = {c["id"]: c["verdict"] for c in _claims(smoke, stem)}
    for cid in EXACT[stem]:
        assert verdicts.get(cid) == "reproduced", f"{stem}: {cid} is {verdicts.get(cid)!r}"


@pytest.mark.parametrize("stem", CHAPTERS)
def test_every_figure_data_link_points_to_a_csv(smoke, stem):
    nb = json.loads(Path(_run(smoke, stem)).read_text())
    text = json.dumps(nb)
    links = DOWNLOAD.findall(text.replace("\\n", "\n"))
    for chapter, name in links:
        path = smoke.executed / "data" / chapter / name
        assert path.exists(), f"{stem} links to missing {path}"
        with path.open() as fh:
            rows = list(csv.DictReader(fh))
        assert rows, f"{path} is empty"
        want = COLUMNS.get((chapter, Path(name).stem))
        if want:
            assert want <= set(rows[0]), f"{path}: missing columns {want - set(rows[0])}"
        for row in rows[:50]:
            for v in row.values():
                if v not in ("", None):
                    try:
                        assert not math.isinf(float(v))
                    except ValueError:
                        pass


#: the paper's claims whose runs this build makes and prices: what one more seed (or Monte Carlo
#: group) of them costs, from the seconds their jobs measured when they ran
PRICED = re.compile(r"(fig5-secant|sec3-gradient|sec3-random|fig[12678]-|us-fig[23]-|oq5-lenet|oq5-gradient|oq6-)")


def test_undecided_rows_of_this_build_say_what_settling_them_costs(smoke):
    """Every inconclusive paper or follow-up row among them that more runs would decide gives
    the hours those runs take (as the campaign's rows do from their bundle's ledger)."""
    open_rows = [
        c
        for stem in CHAPTERS[1:6]
        for c in _claims(smoke, stem)
        if c["kind"] in ("paper", "follow-up")
        and not c["profile"].startswith("campaign")
        and PRICED.match(c["id"])
        and (c.get("to_settle") or {}).get("need") is not None
    ]
    assert open_rows, "no undecided row of this build to price: the test checks nothing"
    unpriced = [c["id"] for c in open_rows if not (c["to_settle"].get("hours") or 0) > 0]
    assert not unpriced, f"undecided rows without the hours that would settle them: {unpriced}"
    assert all(c["to_settle"]["on"] == "the CPU that ran this build's jobs" for c in open_rows)


def test_scorecard_gathers_every_claim_once(smoke, tmp_path):
    total = sum(len(_claims(smoke, s)) for s in CHAPTERS)
    assert total >= 20, f"only {total} claims across the book"
    card = smoke.bb.write_scorecard(smoke.executed, CHAPTERS)
    ids = [c["id"] for c in card["claims"]]
    assert len(ids) == total == len(set(ids))
    page = (smoke.executed / "scorecard.md").read_text()
    for cid in ids:
        assert f"<claim-{cid}>" in page


def test_chapter_alone_equals_chapter_in_the_build(smoke, tmp_path):
    """Chapter 4 reads chapter 2's NADs from the cache. Run alone with an empty cache (it then
    computes them itself, without chapter 2's running estimates), it gives the very claims it
    gives after chapter 2 in the session's shared cache: the same key holds the same bits,
    however the value was computed."""
    _run(smoke, "02_nads")  # the session's runs go in chapter order: chapter 2 fills the cache first
    in_build = _claims(smoke, "04_cifar10")
    out = tmp_path / "alone"
    with smoke.bb.chapter_environment(tmp_path / "cache", out):
        smoke.bb.execute_chapter(
            REPO / "chapters" / "04_cifar10.py",
            out / "04_cifar10.ipynb",
            {"profile": "smoke"},
            work_dir=tmp_path / "running",
            cwd=REPO,
            progress_bar=False,
        )
    alone = json.loads((out / "claims" / "04_cifar10.json").read_text())["claims"]
    keys = ("id", "value", "ci_low", "ci_high", "verdict")
    assert [{k: c[k] for k in keys} for c in alone] == [{k: c[k] for k in keys} for c in in_build]
