"""The Scorecard page writer (nadcore.book.scorecard) on a fixture scorecard: no book build."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest

from nadcore.book import scorecard as sc
from nadcore.book.evidence import CLAIM_KEYS, KINDS, VERDICTS, Claim, Criterion, exact_value

FIXTURE = Path(__file__).parent / "fixtures" / "scorecard.json"


@pytest.fixture
def card():
    return json.loads(FIXTURE.read_text())


@pytest.fixture
def page(card, tmp_path):
    path = sc.write_page(card, tmp_path)
    return path.read_text()


def test_fixture_has_the_current_schema(card):
    for c in card["claims"]:
        assert tuple(c) == CLAIM_KEYS
        assert c["kind"] in KINDS and c["verdict"] in VERDICTS
    kinds = {c["kind"] for c in card["claims"]}
    assert kinds == set(KINDS), "the fixture should exercise every kind"
    assert any(c["profile"] == "paper" for c in card["claims"])
    assert any(c["groups"] for c in card["claims"]) and any(c["mc_fraction"] for c in card["claims"])


def test_numpy_reprs_are_written_as_numbers():
    assert sc.clean_text("l in [np.int64(32), np.int64(64)]") == "l in [32, 64]"
    assert sc.clean_text("x = np.float64(0.123456)") == "x = 0.123"
    assert sc.clean_text("np.float32(2.0) and np.True_, np.str_('a')") == "2 and True, a"
    assert sc.clean_text(None) == ""
    # a criterion built from numpy values never shows a repr in the first place
    assert str(Criterion(f"accuracy at l in {[np.int64(32)]}", ">=", np.float64(0.5))).endswith(">= 0.5")


@pytest.mark.parametrize(
    "text, want",
    [
        ("top-16 overlap >= 0.8", ("top-16 overlap", ">=", 0.8)),
        ("|tilt - 26.6| at v1 = v2 = u_0, degrees <= 10", ("|tilt - 26.6| at v1 = v2 = u_0, degrees", "<=", 10.0)),
        ("a minus b (paired per seed) > 0", ("a minus b (paired per seed)", ">", 0.0)),
        ("largest relative difference <= 1e-09", ("largest relative difference", "<=", 1e-9)),
        ("x < -0.05", ("x", "<", -0.05)),
        (
            "largest Bayes accuracy at l in [np.int64(32), np.int64(64)] <= 0.5",
            ("largest Bayes accuracy at l in [32, 64]", "<=", 0.5),
        ),
        ("no comparison here", ("no comparison here", None, None)),
    ],
)
def test_parse_criterion(text, want):
    assert sc.parse_criterion(text) == want


def test_headline_and_counts_per_kind(card, page):
    claims = card["claims"]
    paper = [c for c in claims if c["kind"] == "paper"]
    n_ok = sum(c["verdict"] == "reproduced" for c in paper)
    head = re.search(r'<p class="nad-headline">([^<]*)</p>', page)
    assert head, "the headline comes first, as its own paragraph"
    assert head.group(1).startswith(f"Paper claims reproduced: {n_ok} of {len(paper)}")
    assert page.index("nad-headline") < page.index("## ")  # before any chapter
    follow = [c for c in claims if c["kind"] == "follow-up"]
    assert f"Follow-up claims reproduced: {sum(c['verdict'] == 'reproduced' for c in follow)} of {len(follow)}" in page
    for kind, title in sc.KIND_TITLES.items():
        mine = [c for c in claims if c["kind"] == kind]
        cells = [str(sum(c["verdict"] == v for c in mine)) for v in VERDICTS] + [str(len(mine))]
        assert f"| {title} | " + " | ".join(cells) + " |" in page
    assert "counted apart" in page and "checks and calibrations are no evidence" in page
    assert f"The headline counts the NAD paper's own claims, {len(paper)} of them" in page
    # rows computed elsewhere (a profile or a campaign): counted per profile too
    assert "| computed on |" in page and "| paper | Paper claims | 1 | 0 | 0 | 1 |" in page


def test_no_profile_table_when_every_row_comes_from_one_profile(card, tmp_path):
    card["claims"] = [c for c in card["claims"] if c["profile"] != "paper"]
    text = sc.write_page(card, tmp_path).read_text()
    assert "| computed on |" not in text


def test_one_line_per_claim_badge_first_grouped_by_chapter_and_kind(card, page):
    lines = [l for l in page.splitlines() if l.startswith("::::{dropdown}")]
    assert len(lines) == len(card["claims"])
    for c in card["claims"]:
        line = next(l for l in lines if f"<claim-{c['id']}>`" in l)
        badge = f'::::{{dropdown}} <span class="nad-verdict nad-verdict-{c["verdict"].replace(" ", "-")}"'
        assert line.startswith(badge), line
        assert sc.VERDICT_SIGNS[c["verdict"]] + " " + c["verdict"] + "</span>" in line  # readable in grey
        assert f"{{ref}}`{c['id']} <claim-{c['id']}>`" in line
        assert sc.measured_text(c) in line
        if c["paper_value"] is not None:
            assert f"paper\u00a0{sc.number(c['paper_value'])}" in line
        assert len(re.sub(r"<[^>]+>|\{ref\}`[^<]*<[^>]+>`", "", line)) < 160, "the line stays short"
    # chapters in order, each once; within a chapter, kinds in KINDS order
    chapters = list(dict.fromkeys(c["chapter"] for c in card["claims"]))
    heads = re.findall(r"^## (.+)$", page, re.M)
    assert len([h for h in heads if h != "Not yet run at paper scale"]) == len(chapters)
    order = [page.index(f"<claim-{c['id']}>`") for c in card["claims"]]
    by_chapter = {}
    for c, pos in zip(card["claims"], order):
        by_chapter.setdefault(c["chapter"], []).append((KINDS.index(c["kind"]), pos))
    for stem, rows in by_chapter.items():
        assert [k for k, _ in sorted(rows, key=lambda r: r[1])] == sorted(k for k, _ in rows), stem


def test_details_fold_out(card, page):
    blocks = re.findall(r"^::::\{dropdown\}.*?^::::$", page, re.M | re.S)
    assert len(blocks) == len(card["claims"])
    for c, block in zip(sorted(card["claims"], key=lambda c: page.index(f"<claim-{c['id']}>`")), blocks):
        assert f"<claim-{c['id']}>" in block
        assert "**Criterion**" in block and "**Measured**" in block and "kernel path" in block
        if c["groups"]:
            assert f"{c['groups']} Monte Carlo groups" in block
        elif c["seeds"] and c["seeds"] > 1:
            assert f"{c['seeds']} seeds" in block
        if c["budget_fraction"] is not None:
            assert f"{sc.number(c['budget_fraction'])} of the paper's SGD steps" in block
        if c["mc_fraction"] is not None:
            assert f"{sc.number(c['mc_fraction'])} of the paper's random networks" in block
        if c["paper_value_source"]:
            assert "**The paper's value**" in block


def test_no_numpy_repr_anywhere(card, page):
    assert any("np.int64" in c["criterion"] for c in card["claims"]), "the fixture should carry one"
    assert not re.search(r"np\.\w+\(|np\.(True|False)_|array\(", page)


def test_forest_plot_per_chapter_with_its_data(card, tmp_path):
    (tmp_path / sc.FILES_DIR).mkdir()
    (tmp_path / sc.FILES_DIR / "forest-99_gone.png").write_bytes(b"stale")
    text = sc.write_page(card, tmp_path).read_text()
    assert not (tmp_path / sc.FILES_DIR / "forest-99_gone.png").exists()
    chapters = list(dict.fromkeys(c["chapter"] for c in card["claims"]))
    for stem in chapters:
        png = tmp_path / sc.FILES_DIR / f"forest-{stem}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"]({sc.FILES_DIR}/forest-{stem}.png)" in text
        assert f"{{download}}`data <{sc.FILES_DIR}/forest-{stem}.csv>`" in text
        with open(tmp_path / sc.FILES_DIR / f"forest-{stem}.csv") as fh:
            rows = list(csv.DictReader(fh))
        mine = [c for c in card["claims"] if c["chapter"] == stem]
        assert [r["id"] for r in rows] == [c["id"] for c in mine]
        for r, c in zip(rows, mine):
            assert tuple(r) == sc.FOREST_COLUMNS and r["verdict"] == c["verdict"]
            assert float(r["value"]) == pytest.approx(c["value"], rel=1e-5)
            assert r["op"] in (">=", "<=", ">", "<") and r["threshold"] != ""
            assert (r["paper_value"] == "") == (c["paper_value"] is None)


def test_coverage_section():
    assert sc.coverage_section(([], [])) == [] and sc.coverage_section(None) == []
    sec = "\n".join(sc.coverage_section((["Fig. 1: 2 of 5 networks"], ["Fig. 1 (LeNet, 8x8)", "  ", "Fig. 6"])))
    assert sec.startswith("## The papers' networks") and "- Fig. 1: 2 of 5 networks" in sec
    assert "Not yet computed" in sec and "- Fig. 1 (LeNet, 8x8)" in sec and "- Fig. 6" in sec
    assert sec.count("\n- ") == 3


def test_coverage_section_on_the_page(card, tmp_path):
    text = sc.write_page(
        card, tmp_path, coverage=(["Fig. 6: 1 of 4 networks"], ["Fig. 6, all architectures"])
    ).read_text()
    assert "## The papers' networks" in text and "- Fig. 6, all architectures" in text
    assert text.index("The papers' networks") < text.index("<claim-")
    assert "The papers' networks" not in sc.write_page(card, tmp_path).read_text()


def test_rows_of_the_older_schema(card, tmp_path):
    old_keys = (
        "id",
        "chapter",
        "paper",
        "paper_value",
        "value",
        "ci_low",
        "ci_high",
        "seeds",
        "trained",
        "budget_fraction",
        "verdict",
        "settings",
        "criterion",
        "interval",
        "note",
        "kernel_path",
    )
    old = {"claims": [{k: c[k] for k in old_keys} for c in card["claims"]]}
    text = sc.write_page(old, tmp_path).read_text()
    assert (
        f"Paper claims reproduced: {sum(c['verdict'] == 'reproduced' for c in card['claims'])} "
        f"of {len(card['claims'])}" in text
    )  # no kind: the Claim default, "paper"
    assert text.count("::::{dropdown}") == len(card["claims"])


def test_missing_values_and_markup_in_text(tmp_path):
    c = Claim.evaluate(
        "odd-claim",
        "07_x",
        "A sentence.",
        Criterion("a $b$ *c* <d> | e", ">=", 0.5),
        exact_value(float("nan")),
        trained=True,
        kind="extension",
    ).to_json()
    text = sc.write_page({"claims": [c]}, tmp_path).read_text()
    line = next(l for l in text.splitlines() if l.startswith("::::{dropdown}"))
    assert "no value" in line and "needs\u00a0\u2265\u00a00.5" in line
    assert r"a \$b\$ \*c\* \<d\> \| e" in text  # escaped: no math, emphasis or HTML from a criterion
    assert "Paper claims reproduced" not in text  # no paper claims, no headline about them
    assert "| Extensions | 0 | 0 | 1 | 1 |" in text


def test_empty_scorecard(tmp_path):
    text = sc.write_page({"claims": []}, tmp_path).read_text()
    assert text.startswith("# Reproduction scorecard") and "No chapter has been executed yet" in text
    assert not (tmp_path / sc.FILES_DIR).exists() or not list((tmp_path / sc.FILES_DIR).iterdir())


def test_chapter_title_from_the_executed_notebook(card, tmp_path):
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Pooling makes networks anisotropic\n\ntext")])
    nbformat.write(nb, str(tmp_path / "01_pooling.ipynb"))
    text = sc.write_page(card, tmp_path).read_text()
    assert "## Pooling makes networks anisotropic" in text and "{doc}`the chapter <01_pooling>`" in text
    assert "## 2. Nads" in text and "<02_nads>" not in text  # not executed here: no link


def test_calibrations_say_what_was_fitted(card, page):
    cal = [c for c in card["claims"] if c["kind"] == "calibration"]
    assert cal and all(c["settings"]["fitted"] for c in cal)
    assert page.count("**Calibration, not evidence**") == len(cal)
    assert "| Calibrations (against data a setting was fitted to) |" in page


def test_five_counts_add_up_to_the_headline(card, page):
    from nadcore.book.claim_rows import settled_counts

    claims = [dict(c) for c in card["claims"]]
    paper = [c for c in claims if c["kind"] == "paper"]
    paper[0]["at_paper_settings"], paper[0]["reduced"] = True, []  # one row at the paper's settings
    n = settled_counts(claims)
    five = [
        n[k]
        for k in (
            "reproduced_paper",
            "reproduced_reduced",
            "not_reproduced_paper",
            "not_reproduced_reduced",
            "undecided",
        )
    ]
    assert sum(five) == n["total"] == len(paper)
    assert n["reproduced_paper"] + n["reproduced_reduced"] == sum(c["verdict"] == "reproduced" for c in paper)
    decided_at_paper = [c for c in paper if c["at_paper_settings"] and c["verdict"] != "inconclusive"]
    assert n["reproduced_paper"] + n["not_reproduced_paper"] == len(decided_at_paper) >= 1
    # the page: the five counts under the headline, for the paper and for the follow-up
    text = sc.page_text({"claims": claims})
    assert f"Paper claims: {n['reproduced_paper']} reproduced at the paper's settings" in text
    assert "Follow-up claims: " in text and "undecided" in text
    assert text.index("nad-headline") < text.index("Paper claims: ")


def test_details_say_the_papers_settings_what_would_settle_and_revisions(card):
    claims = [dict(c) for c in card["claims"]]
    open_row = next(c for c in claims if c.get("to_settle") and c["to_settle"].get("need"))
    open_row["to_settle"] = dict(open_row["to_settle"], hours=1.5)
    claims[0]["revised"] = "was '>= 0.3', a reading stronger than the sentence"
    text = sc.page_text({"claims": claims})
    assert "**At the paper's settings**: no: " in text
    assert f"**To settle**: {open_row['to_settle']['need']} seeds in all" in text and "about 1.5 hours on" in text
    assert "## Criteria revised" in text and f"`{claims[0]['id']} <claim-{claims[0]['id']}>`" in text
    assert "stronger than the sentence" in text


def test_details_give_the_reading_of_the_sentence(card, page):
    c = card["claims"][0]
    assert c["reading"] and f"**Reading of the sentence**: {sc.md_escape(c['reading'])}" in page
