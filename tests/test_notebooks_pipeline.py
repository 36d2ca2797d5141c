"""Tests of the book pipeline itself (scripts/build_book.py), on throwaway chapters in tmp_path."""

from __future__ import annotations

import json
import textwrap

import pytest
from conftest import _load_build_book

bb = _load_build_book()

CHAPTER = textwrap.dedent("""\
    # %% [markdown]
    # # Throwaway

    # %% tags=["parameters"]
    profile = "cpu"
    seed = 0
    device = "auto"
    model = "lenet"
    knob = None

    # %%
    print(f"profile={profile} model={model} knob={knob!r}")

    # %%
    def boom(x):
        return x / 0

    boom(seed)
    """)


@pytest.fixture
def book(tmp_path):
    (tmp_path / "chapters").mkdir()
    (tmp_path / "chapters" / "01_demo.py").write_text(CHAPTER)
    (tmp_path / "chapters" / "02_other.py").write_text(CHAPTER.replace('model = "lenet"\n', ""))
    return tmp_path


def test_select_chapters(book):
    chapters = bb.list_chapters(book / "chapters")
    assert [c.stem for c in bb.select_chapters(chapters, None)] == ["01_demo", "02_other"]
    assert [c.stem for c in bb.select_chapters(chapters, "02,01_demo")] == ["01_demo", "02_other"]
    assert [c.stem for c in bb.select_chapters(chapters, "chapters/02_other.py")] == ["02_other"]
    with pytest.raises(bb.ChapterError, match="matches no chapter"):
        bb.select_chapters(chapters, "07")
    with pytest.raises(bb.ChapterError, match="ambiguous"):
        bb.select_chapters(chapters, "0")


def test_parameters_and_values(book):
    nb = bb.read_chapter(book / "chapters" / "01_demo.py")
    assert bb.parameter_defaults(nb) == {"profile": "cpu", "seed": 0, "device": "auto", "model": "lenet", "knob": None}
    assert bb.parse_value("3") == 3 and bb.parse_value("0.5") == 0.5
    assert bb.parse_value("None") is None and bb.parse_value("[1, 2]") == [1, 2]
    assert bb.parse_value("resnet18") == "resnet18"
    assert bb.parse_value("mypkg.nets:MyNet") == "mypkg.nets:MyNet"
    used, missing = bb.split_parameters(
        book / "chapters" / "02_other.py", bb.read_chapter(book / "chapters" / "02_other.py"), {"model": "x", "knob": 1}
    )
    assert used == {"knob": 1} and missing == ["model"]


def test_partial_toc_round_trip(tmp_path):
    (tmp_path / "_toc.yml").write_text(bb.toc_text(["01_a", "02_b"]))
    assert bb.toc_stems(tmp_path / "_toc.yml") == ["01_a", "02_b"]
    assert f"book/executed/{bb.SCORECARD}" in bb.toc_text([]) and "chapters:" in bb.toc_text([])


def test_scorecard_page_links_every_claim_and_refuses_duplicates(tmp_path):
    import json

    from nadcore.book.evidence import Claim, Criterion, exact_value, write_claims

    c = Claim.evaluate("a-claim", "01_demo", "Fig. 9: a | b.", Criterion("x", ">=", 0), exact_value(1.0), trained=False)
    write_claims(tmp_path / "claims" / "01_demo.json", "01_demo", [c])
    card = bb.write_scorecard(tmp_path, ["01_demo", "02_never_run"])
    assert [x["id"] for x in card["claims"]] == ["a-claim"]
    assert json.loads((tmp_path / "scorecard.json").read_text()) == card
    page = (tmp_path / "scorecard.md").read_text()
    assert "{ref}`a-claim <claim-a-claim>`" in page and "Fig. 9: a | b." in page
    assert 'data-verdict="reproduced"' in page and "Paper claims reproduced: 1 of 1" in page
    assert (tmp_path / "scorecard_files" / "forest-01_demo.png").exists()
    write_claims(tmp_path / "claims" / "02_never_run.json", "02_never_run", [c])
    with pytest.raises(bb.ChapterError, match="unique"):
        bb.write_scorecard(tmp_path, ["01_demo", "02_never_run"])


def test_cli_usage_errors(book, capsys):
    assert bb.main(["--root", str(book), "--chapters", "09", "--no-html"]) == 2
    assert "matches no chapter" in capsys.readouterr().err
    assert bb.main(["--root", str(book), "-p", "modle", "x", "--no-html"]) == 2
    assert "no selected chapter has a parameter 'modle'" in capsys.readouterr().err
    # a checkout without `bash scripts/install.sh` would render pages without MathJax: refused
    # before any chapter runs, not after them
    assert bb.main(["--root", str(book)]) == 2
    err = capsys.readouterr().err
    assert "run `bash scripts/install.sh` first" in err and "mathjax/tex-mml-chtml.js" in err
    assert not (book / "book" / "executed").exists()


def test_failing_cell_names_chapter_cell_and_line(book, tmp_path):
    chapter = book / "chapters" / "01_demo.py"
    out = tmp_path / "out" / "01_demo.ipynb"
    with bb.chapter_environment(tmp_path / "cache"):
        with pytest.raises(bb.ChapterFailed) as info:
            bb.execute_chapter(
                chapter,
                out,
                {"profile": "smoke", "knob": 7},
                work_dir=tmp_path / "running",
                cwd=book,
                progress_bar=False,
            )
    err = info.value
    assert err.ename == "ZeroDivisionError"
    assert err.line == CHAPTER.splitlines().index("def boom(x):") + 1
    text = str(err)
    assert "01_demo.py" in text and "ZeroDivisionError" in text and "boom(seed)" in text
    assert not out.exists(), "a failed chapter must not land in the executed folder"
    partial = json.loads(err.partial.read_text())
    printed = "".join("".join(o.get("text", "")) for c in partial["cells"] for o in c.get("outputs", []))
    assert "profile=smoke model=lenet knob=7" in printed
